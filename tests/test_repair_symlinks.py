"""Issue 15 item 18: ``repair`` never follows a symlinked log out of the run directory unasked.

In place, a symlinked ``events.jsonl`` would have its target rewritten (and
``.bak``/``.torn`` created next to the target, wherever it is). Without
``follow_symlinks=True`` (``--follow-symlinks``) repair refuses with exit 5,
naming where it would write, and touches nothing on either side of the link.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ract_cli.errors import ExitCode, LogIOError
from ract_cli.read.reader import ChainReader
from ract_cli.repair.repairer import RepairOptions, repair_file
from ract_cli.testing.synth import fixture_path, fixture_run_id

ROOT = Path(__file__).resolve().parent.parent


def _setup(tmp_path: Path) -> tuple[Path, Path, bytes]:
    data = fixture_path(ROOT / "fixtures", "interrupted").read_bytes()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    real = outside / "target.jsonl"
    real.write_bytes(data)
    run = tmp_path / "runs" / fixture_run_id("interrupted")
    run.mkdir(parents=True)
    link = run / "events.jsonl"
    link.symlink_to(real)
    return link, real, data


def _names(*dirs: Path) -> list[list[str]]:
    return [sorted(p.name for p in d.iterdir()) for d in dirs]


def test_a_symlinked_log_is_refused_with_exit_5_naming_where_it_would_write(tmp_path: Path) -> None:
    link, real, data = _setup(tmp_path)
    before = _names(link.parent, real.parent)
    for given in (link, link.parent):  # the log, or its run directory
        with pytest.raises(LogIOError) as caught:
            repair_file(given)
        assert caught.value.exit_code == ExitCode.IO
        assert "symbolic link" in caught.value.message and str(real) in caught.value.message
    assert real.read_bytes() == data and link.is_symlink()
    assert _names(link.parent, real.parent) == before  # no .bak, .torn or temp file anywhere


def test_follow_symlinks_repairs_the_target(tmp_path: Path) -> None:
    link, real, _ = _setup(tmp_path)
    result = repair_file(link, RepairOptions(follow_symlinks=True))
    assert result.written_to == real and link.is_symlink()
    assert result.backup is not None and result.backup.parent == real.parent
    reader = ChainReader(real)
    reader.read_all()
    assert reader.exit_code == ExitCode.OK


def test_check_and_output_never_write_the_target_and_are_not_refused(tmp_path: Path) -> None:
    link, real, data = _setup(tmp_path)
    assert repair_file(link, RepairOptions(check=True)).changed
    out = tmp_path / "out.jsonl"
    assert repair_file(link, RepairOptions(output=out)).written_to == out
    assert real.read_bytes() == data and _names(real.parent) == [["target.jsonl"]]


def test_the_cli_refuses_a_symlinked_log_with_exit_5(tmp_path: Path) -> None:
    link, real, data = _setup(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "ract_cli", "trace", "repair", str(link)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 5, proc.stderr
    assert "symbolic link" in proc.stderr and real.read_bytes() == data
