"""``-q`` / ``--quiet`` on every command: nothing printed, the same exit code.

A quiet run still checks what it would have reported (replay's workspace),
skips what only a reader needs (replay's pacing), and still explains a bad
command line on stderr. In-process through ``ract_cli.cli.app.main`` (capsys)
and as real subprocesses; logs are the committed fixtures and real git
repositories. (``-q`` with stdout closed: ``tests/test_cli_output_safety.py``.)
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
from git_support import GitRepo
from hardening_support import hang_guard, run_subprocess

from ract_cli.cli.app import main
from ract_cli.replay.session import MAX_PACE_SLEEP_S
from ract_cli.testing.synth import fixture_path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def run(capsys, *argv: object) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def fixture(name: str) -> str:
    return str(fixture_path(FIXTURES, name))


QUIET_CASES = [
    # (command, fixture or path, extra args, expected exit code)
    ("project", "completed", [], 0),
    ("project", "tampered", [], 1),
    ("project", "interrupted", ["--require-closed"], 4),
    ("project", "/nonexistent/events.jsonl", [], 5),
    ("project", "tampered", ["--format", "json"], 1),
    ("project", "completed", ["--format", "markdown"], 0),
    ("replay", "completed", [], 0),
    ("replay", "tampered", [], 1),
    ("replay", "interrupted", [], 4),
    ("replay", "/nonexistent/events.jsonl", [], 5),
    ("replay", "", [], 5),  # an empty path: a LogIOError raised before the walk
    ("replay", "completed", ["--format", "jsonl"], 0),
    ("replay", "completed", ["--until", "3"], 0),
]


@pytest.mark.parametrize(
    "command,target,extra,expected",
    QUIET_CASES,
    ids=[f"{c}-{t or 'empty'}-{'-'.join(e)}" for c, t, e, _ in QUIET_CASES],
)
@pytest.mark.parametrize("flag", ["-q", "--quiet"])
def test_quiet_prints_nothing_and_keeps_the_exit_code(capsys, command, target, extra, expected, flag) -> None:
    path = fixture(target) if target and not target.startswith("/") else target
    loud = run(capsys, "trace", command, *extra, path)
    assert loud[0] == expected, loud[2][-800:]
    assert loud[1] or loud[2], "the loud run must print something, or the quiet run proves nothing"
    assert run(capsys, "trace", command, flag, *extra, path) == (expected, "", "")


def test_quiet_replay_still_checks_the_workspace(capsys, tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit("a.txt")  # HEAD is not the fixture's initial snapshot
    args = ["trace", "replay", "--workspace", str(repo.root), "--strict-head", fixture("completed")]
    code, _, err = run(capsys, *args)
    assert code == 6 and "HEAD_DIVERGED" in err
    assert run(capsys, *args[:2], "-q", *args[2:]) == (6, "", "")


def test_quiet_replay_does_not_pace(capsys) -> None:
    """-q has nothing to show, so --pace has nothing to pace: the recorded gaps are not slept."""
    import orjson

    path = fixture("completed")
    stamps = [orjson.loads(line)["timestamp_ns"] for line in Path(path).read_bytes().splitlines()]
    paced = sum(min((b - a) / 1e9, MAX_PACE_SLEEP_S) for a, b in itertools.pairwise(stamps))
    assert paced > 6, "the fixture must take a while to replay at real speed for this test to mean anything"
    started = time.monotonic()
    with hang_guard(paced / 2, "replay -q --pace realtime"):
        code, out, err = run(capsys, "trace", "replay", "-q", "--pace", "realtime", path)
    assert (code, out, err) == (0, "", "")
    assert time.monotonic() - started < paced / 2


@pytest.mark.parametrize(
    "command,argv,needle",
    [
        ("replay", ["--until", "zz"], "--until takes an event index"),
        ("replay", ["--pace", "fast"], "--pace takes"),
        ("replay", ["--format", "xml"], "'xml' is not one of"),
        ("project", ["--format", "xml"], "'xml' is not one of"),
        ("project", ["--max-items", "0"], "0 is not in the range x>=1."),
        ("grep", ["-c", "-l"], "cannot be combined"),
        ("grep", ["--where", "payload.ok"], "no operator"),
        ("grep", ["--since", "yesterday"], "cannot read time"),
    ],
)
def test_quiet_still_explains_a_bad_command_line(capsys, command, argv, needle) -> None:
    code, out, err = run(capsys, "trace", command, "-q", *argv, fixture("completed"))
    assert code == 2 and out == ""
    assert needle in err


def test_quiet_subprocess_project_and_replay() -> None:
    for command in ("project", "replay"):
        proc = run_subprocess(["trace", command, "-q", fixture("tampered")], timeout=60)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, b"", b""), (command, proc.stderr[-500:])
