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
from subprocess import CompletedProcess

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


# --- ``trace verify -q`` answered before the CLI is imported (cli/launch.py) -------------------------------


def _quiet_verify_targets(tmp_path: Path) -> list[list[str]]:
    """Every fixture, a fleet of them, journals, and what is not a log or not there."""
    runs = sorted(str(p) for p in (FIXTURES / "runs").glob("*/events.jsonl"))
    journals = sorted(str(p) for p in (FIXTURES / "journals").glob("*.jsonl"))
    (tmp_path / "readme.txt").write_text("not a log\n")
    (tmp_path / "empty").mkdir()
    return [
        *([r] for r in runs),
        *([j] for j in journals),
        [str(FIXTURES / "runs")],
        runs[:2],
        [str(tmp_path / "readme.txt")],
        [str(tmp_path / "empty")],
        [str(tmp_path / "missing" / "events.jsonl")],
        [""],
    ]


@pytest.mark.parametrize("env", [{}, {"RACT_CORE": "python"}, {"RACT_CORE": "bogus"}], ids=["native", "python", "bad"])
def test_quiet_verify_before_the_cli_is_the_cli_s_verdict(tmp_path: Path, env: dict[str, str]) -> None:
    """Every verdict the quick path gives is the CLI's, and a failure it cannot say is the CLI's to say:
    ``--max-findings 1000`` (the default, spelled out) sends the same run through typer."""
    for paths in _quiet_verify_targets(tmp_path):
        for jobs in ([], ["--jobs", "2"]):
            quick = run_subprocess(["trace", "verify", "-q", *jobs, *paths], env=env)
            full = run_subprocess(["trace", "verify", "-q", "--max-findings", "1000", *jobs, *paths], env=env)
            assert (quick.returncode, quick.stdout, quick.stderr) == (full.returncode, full.stdout, full.stderr), paths


def _as_the_cli(command: str, default: list[str], argv: list[str], env: dict[str, str]) -> CompletedProcess[bytes]:
    """``trace COMMAND ARGV`` (the quick path) and the same with a default option spelled out (``default``:
    typer's path) give the same exit code and bytes; returns the quick run."""
    quick = run_subprocess(["trace", command, *argv], env=env)
    full = run_subprocess(["trace", command, *default, *argv], env=env)
    assert (quick.returncode, quick.stdout, quick.stderr) == (full.returncode, full.stdout, full.stderr), argv
    return quick


#: output forms the quick path prints itself (``cli/verify_report.py``), and ``--require-closed``
VERIFY_OUTPUTS = [[], ["--format", "json"], ["--format=GitHub"], ["--require-closed", "--format", "text"]]


@pytest.mark.parametrize("env", [{}, {"RACT_CORE": "python"}], ids=["native", "python"])
def test_printed_verify_before_the_cli_prints_what_the_cli_prints(tmp_path: Path, env: dict[str, str]) -> None:
    """``trace verify`` with its verdicts on stderr (a pipe here), its JSON report or its annotations on stdout:
    the quick path's bytes and exit code are the CLI's (``--max-findings 1000``, the default, sends the same run
    through typer)."""
    seen_err = seen_out = False
    for paths, output in zip(_quiet_verify_targets(tmp_path), itertools.cycle(VERIFY_OUTPUTS)):
        for form in {tuple(output), ()}:
            quick = _as_the_cli("verify", ["--max-findings", "1000"], [*form, *paths], env)
            seen_err |= b"FAIL " in quick.stderr
            seen_out |= quick.stdout.startswith(b"{") or quick.stdout.startswith(b"::error")
    assert seen_err and seen_out  # (verdicts and reports were compared, not two empty outputs)


PROJECT_FORMS = [[], ["--format", "json"], ["-q"], ["--require-closed"], ["--format=json", "-q"]]


@pytest.mark.parametrize("env", [{}, {"RACT_CORE": "python"}], ids=["native", "python"])
def test_piped_project_before_the_cli_prints_what_the_cli_prints(tmp_path: Path, env: dict[str, str]) -> None:
    """``trace project`` into a pipe (its JSON report on stdout, verdicts on stderr): the quick path's bytes
    and exit code are the CLI's (``--max-items 1000``, the default, sends the same run through typer)."""
    seen_err = seen_out = False
    for paths, form in zip(_quiet_verify_targets(tmp_path), itertools.cycle(PROJECT_FORMS)):
        quick = _as_the_cli("project", ["--max-items", "1000"], [*form, *paths], env)
        seen_err |= b"FAIL (" in quick.stderr
        seen_out |= quick.stdout.startswith(b"{")
    assert seen_err and seen_out  # (verdicts and reports were compared, not two empty outputs)


def test_quick_project_defaults_are_the_cli_s() -> None:
    """The quick path's project options (``ProjectOptions()``, bar ``--require-closed``) are the command's."""
    import typer.main

    from ract_cli.cli.app import _register_commands, app
    from ract_cli.project.options import ProjectOptions

    _register_commands(["trace", "project"])
    project = typer.main.get_command(app).commands["trace"].commands["project"]  # type: ignore[attr-defined]
    defaults = {p.name: p.default for p in project.params}
    options = ProjectOptions()
    assert defaults["schema_version"] == options.schema_version
    assert defaults["require_closed"] is options.require_closed is False
    assert defaults["max_line_bytes"] == options.max_line_bytes
    assert defaults["max_items"] == options.max_items
    assert str(getattr(defaults["dialect"], "value", defaults["dialect"])) == options.dialect
    assert defaults["output"] is None and defaults["format"] is None
    assert defaults["jobs"] is None  # (the command picks the number: the quick path passes AUTO_JOBS too)


def test_quiet_verify_defaults_are_the_cli_s() -> None:
    """The quick path's options are the verify command's defaults (what it does not parse it leaves so)."""
    import typer.main

    from ract_cli.cli.app import _register_commands, app
    from ract_cli.cli.launch import quick_verify_options
    from ract_cli.read.parallel import AUTO_JOBS

    _register_commands(["trace", "verify"])
    verify = typer.main.get_command(app).commands["trace"].commands["verify"]  # type: ignore[attr-defined]
    defaults = {p.name: p.default for p in verify.params}
    options = quick_verify_options(None)  # (no --jobs given)
    assert defaults["max_findings"] == options.max_findings
    assert defaults["schema_version"] == options.schema_version
    assert defaults["require_closed"] is options.require_closed is False
    assert defaults["expect_head"] is options.expect_head is None
    assert defaults["max_line_bytes"] == options.max_line_bytes
    assert defaults["jobs"] is None and options.jobs == AUTO_JOBS  # verify_paths picks the number
    assert str(getattr(defaults["dialect"], "value", defaults["dialect"])) == options.dialect
    assert not defaults["checkpoint"] and not options.checkpoints and not defaults["vkey"] and not options.vkeys
