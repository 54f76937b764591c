"""The committed fixtures (``fixtures/runs``): rebuilt by the seeded generator, each with its verdict.

``fixtures/README.md`` documents what each run shows; this file pins it. When
the generator changes on purpose, run ``make fixtures`` and commit the result.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ract_cli.errors import ExitCode
from ract_cli.format.kinds import KINDS
from ract_cli.read.reader import ChainReader
from ract_cli.testing.synth import FIXTURES, fixture_path, fixture_run_id, write_fixtures


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_fixtures(tmp_path_factory.mktemp("fixtures"))


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_committed_fixture_matches_the_generator(regenerated: dict[str, Path], repo_root: Path, name: str) -> None:
    committed = fixture_path(repo_root / "fixtures", name)
    fresh = regenerated[name]
    assert fresh.relative_to(fresh.parents[2]) == committed.relative_to(repo_root / "fixtures")
    assert committed.is_file(), f"{committed} is missing: run `make fixtures` and commit fixtures/"
    assert committed.read_bytes() == fresh.read_bytes(), (
        f"fixtures/{committed.relative_to(repo_root / 'fixtures')} differs from what ract_cli.synth writes: "
        "run `make fixtures` and commit the result"
    )


def test_no_stray_run_fixtures(repo_root: Path) -> None:
    expected = {fixture_run_id(name) for name in FIXTURES}
    present = {p.name for p in (repo_root / "fixtures" / "runs").iterdir()}
    assert present == expected, "fixtures/runs holds runs the generator does not write: run `make fixtures`"


def test_generator_is_deterministic(tmp_path: Path, regenerated: dict[str, Path]) -> None:
    again = write_fixtures(tmp_path)
    for name, path in again.items():
        assert path.read_bytes() == regenerated[name].read_bytes(), name


def _read(repo_root: Path, name: str) -> ChainReader:
    reader = ChainReader(fixture_path(repo_root / "fixtures", name))
    reader.events = [ev for ev in reader]  # type: ignore[attr-defined]
    return reader


def _codes(reader: ChainReader, severity: str) -> list[str]:
    return [f.code for f in reader.findings if f.severity == severity]


def test_completed_run(repo_root: Path) -> None:
    reader = _read(repo_root, "completed")
    assert reader.findings == []
    assert reader.exit_code == ExitCode.OK
    kinds = {ev.kind for ev in reader.events}
    # every kind a completed run can hold: all but run.aborted, its other close (fixtures/README.md)
    assert kinds == {k.name for k in KINDS} - {"run.aborted"}, sorted({k.name for k in KINDS} - kinds)
    assert reader.events[0].kind == "run.started" and reader.events[-1].kind == "run.completed"
    assert reader.handles.open_handles() == []
    assert reader.events[-1].payload["event_count"] == len(reader.events)


def test_every_kind_is_in_some_fixture(repo_root: Path) -> None:
    seen = {ev.kind for name in FIXTURES for ev in _read(repo_root, name).events}
    assert seen == {k.name for k in KINDS}


def test_aborted_run(repo_root: Path) -> None:
    reader = _read(repo_root, "aborted")
    assert reader.findings == []
    assert reader.exit_code == ExitCode.OK
    kinds = [ev.kind for ev in reader.events]
    assert kinds[-1] == "run.aborted"
    assert "step.rolled_back" in kinds and "process.reaped" in kinds


def test_interrupted_run(repo_root: Path) -> None:
    reader = _read(repo_root, "interrupted")
    assert reader.exit_code == ExitCode.INCOMPLETE
    assert _codes(reader, "error") == ["TORN_TAIL"]
    torn = next(f for f in reader.findings if f.code == "TORN_TAIL")
    path = fixture_path(repo_root / "fixtures", "interrupted")
    data = path.read_bytes()
    assert not data.endswith(b"\n")
    assert torn.line == data.count(b"\n") + 1 and torn.offset == data.rindex(b"\n") + 1
    warnings = [f for f in reader.findings if f.severity == "warning"]
    assert sorted(f.code for f in warnings) == ["OPEN_HANDLE"] * 4 + ["OPEN_RUN"]
    open_kinds = sorted(f.message.split()[0] for f in warnings if f.code == "OPEN_HANDLE")
    assert open_kinds == ["handshake.requested", "prompt.sent", "step.started", "tool.called"]
    assert next(h.kind for h in reader.handles.open_handles()) == "run.started"


def test_tampered_run(repo_root: Path) -> None:
    reader = _read(repo_root, "tampered")
    assert reader.exit_code == ExitCode.TAMPERED
    assert _codes(reader, "error") == ["HASH_MISMATCH"]  # re-anchored: no chain break after it
    assert _codes(reader, "warning") == []
    f = reader.findings[0]
    line = fixture_path(repo_root / "fixtures", "tampered").read_bytes().split(b"\n")[f.line - 1]
    event = json.loads(line)
    assert event["kind"] == "tool.result" and event["payload"]["ok"] is True
    assert f.actual == event["hash"] and f.expected != f.actual


def test_foreign_format_run(repo_root: Path) -> None:
    reader = _read(repo_root, "foreign-format")
    assert reader.findings == []
    assert reader.exit_code == ExitCode.OK
    data = fixture_path(repo_root / "fixtures", "foreign-format").read_bytes()
    lines = data.split(b"\r\n")[:-1]
    assert data.endswith(b"\r\n") and len(lines) == len(reader.events)
    assert all(line.startswith(b'{"timestamp_ns": ') for line in lines)  # reversed key order, spaces
    assert any(b"\\u" in line for line in lines)  # non-ASCII written as \u escapes
    assert data.isascii()


@pytest.mark.parametrize(
    ("name", "exit_code"),
    [("completed", 0), ("aborted", 0), ("interrupted", 4), ("tampered", 1), ("foreign-format", 0)],
)
def test_documented_verdicts(repo_root: Path, name: str, exit_code: int) -> None:
    assert int(_read(repo_root, name).exit_code) == exit_code
    readme = (repo_root / "fixtures" / "README.md").read_text(encoding="utf-8")
    row = next((line for line in readme.splitlines() if line.startswith(f"| `{name}`")), None)
    assert row is not None, f"fixtures/README.md has no table row for {name}"
    assert fixture_run_id(name) in row
    assert row.rstrip(" |").endswith(str(exit_code)), row
