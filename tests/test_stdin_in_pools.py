"""Standard input in a fleet with ``--jobs N``: read by this process, never by a worker.

A worker that read it and then died (the OOM killer) would leave it spent: the log given back to this
process to read again would be empty, a false verdict. Every command with a pool of processes over
several logs (verify, grep, project, export) is run here on a real pool, with fd 0 a real file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hardening_support import ROOT

from ract_cli.export.rows import ExportOptions, stage_rows
from ract_cli.grep.results import FileResult
from ract_cli.grep.search import GrepOptions, build_filter, grep_paths
from ract_cli.project.options import ProjectOptions
from ract_cli.project.report import project_paths
from ract_cli.read import files
from ract_cli.testing.synth import fixture_path
from ract_cli.verify.verifier import VerifyOptions, verify_paths

FIXTURES = ROOT / "fixtures"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """150 copies of one run: the pool gets several tasks."""
    root = tmp_path_factory.mktemp("fleet")
    one = fixture_path(FIXTURES, "completed").read_bytes()
    for i in range(150):
        (root / "copies" / f"{i:03d}").mkdir(parents=True)
        (root / "copies" / f"{i:03d}" / "events.jsonl").write_bytes(one)
    return root


@pytest.fixture()
def stdin_log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[bytes]:
    """Standard input (fd 0) reading one fixture's bytes, in this process. A file, not a pipe: a forked
    worker shares its offset, so a worker that read it leaves nothing here (a pipe's write end, held by a
    writer thread here, would be the worker's too: its read would never end)."""
    data = fixture_path(FIXTURES, "completed").read_bytes()
    (tmp_path / "stdin").write_bytes(data)
    monkeypatch.setattr(files, "_stdin", None)  # (a fresh standard input: nothing read from it yet)
    saved = os.dup(0)
    with open(tmp_path / "stdin", "rb") as source:
        os.dup2(source.fileno(), 0)
    try:
        yield data
    finally:
        os.dup2(saved, 0)
        os.close(saved)


@pytest.mark.parametrize("command", ["project", "verify", "grep", "export"])
def test_standard_input_is_read_here_never_by_a_worker(
    fleet: Path, stdin_log: bytes, command: str, tmp_path: Path
) -> None:
    # a worker that read it and died would leave it spent: this process would then see an empty log
    paths = [str(fleet / "copies"), "-", str(fixture_path(FIXTURES, "completed"))]
    if command == "project":
        result = project_paths(paths, ProjectOptions(jobs=2))
        assert len(result.runs) == 152 and result.exit_code == 0
    elif command == "grep":
        found = [item for item in grep_paths(paths, build_filter(kinds=["*"]), GrepOptions(jobs=2))]
        done = [item for item in found if isinstance(item, FileResult)]
        assert [f.path for f in done].count("-") == 1 and len(done) == 152
        assert {f.matches for f in done} == {done[0].matches} and len(found) == 152 * (1 + done[0].matches)
    elif command == "export":
        staged = stage_rows(paths, ExportOptions(jobs=2), tmp_path)
        assert len(staged.logs) == 152 and staged.exit_code == 0
    else:
        report = verify_paths(paths, VerifyOptions(jobs=2))
        assert [f.path for f in report.files].count("-") == 1 and len(report.files) == 152
        assert report.exit_code == 0 and {f.events for f in report.files} == {report.files[0].events}
    source = files._stdin
    assert source is not None and source.frontier == len(stdin_log)  # (read in this process, whole)
