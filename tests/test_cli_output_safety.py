"""stdout that is closed or whose reader went away, log bytes on a terminal, and honest stderr counts.

Real subprocesses with real pipes (the read end closed before the child writes, so the first write
fails with EPIPE deterministically), ``sh -c 'exec ... >&-'`` for a closed stdout, a real
pseudo-terminal for what a terminal shows, and real log files written by ``EventWriter``.

The exit-code rule checked here (docs/exit-codes.md): grep, ``--help`` and ``--version`` exit 141
(128 + SIGPIPE) when stdout is closed or its reader is gone; verify, project and replay, whose exit
code is a verdict on the logs, keep that verdict. Never 1 (TAMPERED) from rich or typer, never a
traceback. A finding line is printed as it is (``PATH:100:`` is never read as rich's ``:100:`` emoji
code), and a usage error on a value holding a quote keeps click's wording.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hardening_support import ROOT, assert_no_traceback, run_on_pty

from ract_cli.cli.app import main
from ract_cli.grep.search import GrepOptions, build_filter, grep_paths
from ract_cli.testing.synth import fixture_path
from ract_cli.writer.event_writer import EventWriter, FsyncPolicy

FIXTURES = ROOT / "fixtures"
OK_LOG = str(fixture_path(FIXTURES, "completed"))  # verifies: exit 0
TAMPERED_LOG = str(fixture_path(FIXTURES, "tampered"))  # exit 1
BROKEN_PIPE_EXIT = 141
FIXTURE = FIXTURES / "runs" / "120d7eae7ee0c9c181816e553722e2fe"  # the completed fixture's run directory
COMPLETED = FIXTURE / "events.jsonl"


def ract_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "ract_cli", *args]


def ract(*args: str, stdout=subprocess.PIPE, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m ract_cli ARGS`` as a user runs it (its own process), stderr piped, stdout a pipe unless given."""
    return subprocess.run(ract_argv(*args), stdout=stdout, stderr=subprocess.PIPE, cwd=cwd, timeout=120)


def run_piped(args: list[str]) -> subprocess.CompletedProcess:
    """``ract ARGS`` with stdout a pipe that is read to the end (the reference exit code)."""
    return subprocess.run(ract_argv(*args), capture_output=True, cwd=ROOT, timeout=120)


def run_stdout_closed(args: list[str]) -> subprocess.CompletedProcess:
    """``ract ARGS >&-``: the process starts without a file descriptor 1 (sys.stdout is None)."""
    return subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", *ract_argv(*args)], stderr=subprocess.PIPE, cwd=ROOT, timeout=120
    )


def run_reader_gone(args: list[str]) -> subprocess.CompletedProcess:
    """``ract ARGS`` writing into a pipe whose read end is already closed (``| head -c0``, deterministic)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(ract_argv(*args), stdout=write_end, stderr=subprocess.PIPE, cwd=ROOT, timeout=120)
    finally:
        os.close(write_end)


def assert_quiet_failure(proc: subprocess.CompletedProcess, context: object) -> None:
    err = proc.stderr.decode("utf-8", "replace")
    assert_no_traceback(err, context)
    for noise in ("BrokenPipeError", "Exception ignored", "AttributeError", "Broken pipe"):
        assert noise not in err, f"{context}: {noise} on stderr:\n{err[-2000:]}"


# --- -q never touches stdout; without -q a closed stdout is an ordinary failure -----------------------

QUIET_COMMANDS = [
    ["trace", "grep", "-q"],
    ["trace", "grep", "-q", "--kind", "no.such.kind"],
    ["trace", "project", "-q"],
    ["trace", "replay", "-q"],
    ["trace", "verify", "-q"],
    ["trace", "repair", "-q", "--check"],
]


@pytest.mark.parametrize("log", [OK_LOG, TAMPERED_LOG], ids=["ok", "tampered"])
@pytest.mark.parametrize("command", QUIET_COMMANDS, ids=lambda c: " ".join(c[1:]))
def test_quiet_with_stdout_closed_is_the_verdict(command: list[str], log: str) -> None:
    args = [*command, log]
    expected = run_piped(args)
    assert expected.stdout == b"", f"{args}: -q printed on stdout"
    closed = run_stdout_closed(args)
    assert_quiet_failure(closed, args)
    assert closed.returncode == expected.returncode
    assert closed.stderr == expected.stderr  # -q: nothing but what -q would say anyway (here: nothing)


# (arguments, exit code with stdout closed: None = the verdict of the same run piped, "said": a note on stderr)
CLOSED_CASES = [
    (["trace", "grep"], BROKEN_PIPE_EXIT, True),
    (["trace", "grep", "--format", "table"], BROKEN_PIPE_EXIT, True),
    (["trace", "grep", "--format", "json"], BROKEN_PIPE_EXIT, True),
    (["trace", "grep", "-c"], BROKEN_PIPE_EXIT, True),
    (["trace", "grep", "-l"], BROKEN_PIPE_EXIT, True),
    (["trace", "project"], None, True),
    (["trace", "project", "--format", "text"], None, True),
    (["trace", "replay"], None, True),
    (["trace", "replay", "--format", "jsonl"], None, True),
    (["trace", "verify", "--format", "json"], None, True),
    (["trace", "verify", "--format", "github"], None, True),
    (["trace", "verify"], None, False),  # text: everything on stderr, stdout never needed
    (["trace", "repair", "--check"], None, False),
]


@pytest.mark.parametrize("log", [OK_LOG, TAMPERED_LOG], ids=["ok", "tampered"])
@pytest.mark.parametrize(
    ("command", "code", "said"), CLOSED_CASES, ids=lambda c: " ".join(c[1:]) if isinstance(c, list) else None
)
def test_stdout_closed_without_quiet(command: list[str], code: int | None, said: bool, log: str) -> None:
    args = [*command, log]
    closed = run_stdout_closed(args)
    assert_quiet_failure(closed, args)
    expected = run_piped(args).returncode if code is None else code
    assert closed.returncode == expected, closed.stderr.decode(errors="replace")
    assert (b"stdout is closed" in closed.stderr) is said


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--version"],
        ["-V"],
        ["trace", "--help"],
        ["trace", "grep", "--help"],
        ["trace", "replay", "--help"],
    ],
    ids=" ".join,
)
def test_help_and_version_with_stdout_closed(args: list[str]) -> None:
    assert run_piped(args).returncode == 0
    closed = run_stdout_closed(args)
    assert_quiet_failure(closed, args)
    assert closed.returncode == BROKEN_PIPE_EXIT
    assert b"stdout is closed" in closed.stderr


# --- a reader that went away: 141 for grep/help/version, the verdict for the verdict commands ---------

GONE_CASES = [
    (["trace", "grep", "--format", "table", OK_LOG], BROKEN_PIPE_EXIT),
    (["trace", "grep", "--format", "jsonl", OK_LOG], BROKEN_PIPE_EXIT),
    (["trace", "grep", "--format", "json", OK_LOG], BROKEN_PIPE_EXIT),
    (["trace", "grep", "--format", "table", "--jobs", "2", str(FIXTURES / "runs")], BROKEN_PIPE_EXIT),
    (["trace", "grep", "-c", OK_LOG], BROKEN_PIPE_EXIT),
    (["trace", "grep", "-l", OK_LOG], BROKEN_PIPE_EXIT),
    (["--help"], BROKEN_PIPE_EXIT),
    (["--version"], BROKEN_PIPE_EXIT),
    (["-V"], BROKEN_PIPE_EXIT),
    (["trace", "--help"], BROKEN_PIPE_EXIT),
    (["trace", "grep", "--help"], BROKEN_PIPE_EXIT),
    (["trace", "verify", "--help"], BROKEN_PIPE_EXIT),
    (["trace", "verify", "--format", "json", OK_LOG], 0),
    (["trace", "verify", "--format", "json", TAMPERED_LOG], 1),
    (["trace", "verify", "--format", "github", TAMPERED_LOG], 1),
    (["trace", "project", "--format", "json", OK_LOG], 0),
    (["trace", "project", "--format", "text", OK_LOG], 0),
    (["trace", "project", "--format", "markdown", TAMPERED_LOG], 1),
    (["trace", "replay", OK_LOG], 0),
    (["trace", "replay", "--format", "jsonl", OK_LOG], 0),
    (["trace", "replay", TAMPERED_LOG], 1),
]


@pytest.mark.parametrize(("args", "code"), GONE_CASES, ids=lambda c: " ".join(c[:4]) if isinstance(c, list) else None)
def test_reader_gone(args: list[str], code: int) -> None:
    proc = run_reader_gone(args)
    assert_quiet_failure(proc, args)
    assert proc.returncode == code, proc.stderr.decode(errors="replace")[-2000:]


def run_stderr_reader_gone(args: list[str]) -> int:
    """``ract ARGS 2>&1 >/dev/null | head -c0``: stderr's reader is gone before the first verdict line."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            ract_argv(*args), stdout=subprocess.DEVNULL, stderr=write_end, cwd=ROOT, timeout=120
        ).returncode
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["trace", "verify", OK_LOG], 0),  # the PASS line cannot be written: still a pass (rich exited 1)
        (["trace", "verify", TAMPERED_LOG], 1),
        (["trace", "project", OK_LOG], 0),
        (["trace", "replay", OK_LOG], 0),
        (["trace", "repair", "--check", OK_LOG], 0),
        (["trace", "grep", "--kind", "no.such.kind", OK_LOG], 7),  # the unknown-kind warning is not written
        (["trace", "grep", "--jobs", "x", OK_LOG], 2),  # a usage error stays 2
        (["trace", "grep", "--no-such-option", OK_LOG], 2),
    ],
    ids=lambda c: " ".join(c[:3]) if isinstance(c, list) else None,
)
def test_stderr_reader_gone_keeps_the_exit_code(args: list[str], code: int) -> None:
    assert run_stderr_reader_gone(args) == code


def test_reader_gone_mid_table(tmp_path: Path) -> None:
    """The reader leaves after the first bytes of a long table (``| head -c 100``): 141, not rich's 1."""
    src = Path(OK_LOG).read_bytes()
    for i in range(30):
        (tmp_path / f"r{i}").mkdir()
        (tmp_path / f"r{i}" / "events.jsonl").write_bytes(src)
    proc = subprocess.Popen(
        ract_argv("trace", "grep", "--format", "table", str(tmp_path)),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(100)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == BROKEN_PIPE_EXIT
    assert_no_traceback(err, "table into head")


# --- replay --format jsonl on a terminal is escaped; piped it is byte for byte ------------------------

HOSTILE = "\u202eSSAP\u202c \u009b2J \u009d0;title\u009c \x1b[2J \u2066iso\u2069 nel\u0085 ls\u2028 del\x7f"


def write_hostile_log(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with EventWriter(path, run_id="cd" * 16, fsync=FsyncPolicy.NEVER) as w:
        run = w.append("run.started", {"intent_id": "1" * 32, "compiler_version": HOSTILE})
        w.append("run.aborted", {"termination_cause": HOSTILE, "reason": HOSTILE}, parent_id=run["id"])
    return path


def test_replay_jsonl_is_escaped_on_a_terminal(tmp_path: Path) -> None:
    log = write_hostile_log(tmp_path / "run" / "events.jsonl")
    raw = log.read_bytes()
    for seq in ("\u202e", "\u009b", "\u009d", "\u2066", "\u0085", "\u2028"):  # the log holds them as UTF-8
        assert seq.encode() in raw
    code, shown = run_on_pty(["trace", "replay", "--format", "jsonl", str(log)], cwd=tmp_path)
    assert_no_traceback(shown, "replay jsonl on a pty")
    assert code == 0
    text = shown.decode("utf-8", "replace")
    for ch in ("\u202e", "\u202c", "\u009b", "\u009d", "\u009c", "\u2066", "\u2069", "\u0085", "\u2028", "\x7f"):
        assert ch not in text, f"U+{ord(ch):04X} reached the terminal"
    assert b"\x1b[2J" not in shown
    assert "\\u202e" in text and "\\x9b" in text
    assert text.count('"kind":"run.') == 2  # one line per event, still readable JSON text


def test_replay_jsonl_piped_is_byte_for_byte(tmp_path: Path) -> None:
    log = write_hostile_log(tmp_path / "run" / "events.jsonl")
    proc = subprocess.run(
        ract_argv("trace", "replay", "--format", "jsonl", str(log)), capture_output=True, cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == log.read_bytes()


# --- usage errors: a value holding a quote is reworded too, with its quotes kept ---------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("x", "'x'"),
        ("it's", '"it\'s"'),
        ('say "hi"', "'say \"hi\"'"),
        ('it\'s "both"', "'it\\'s \"both\"'"),  # repr escapes the ' inside single quotes
        ("'" + "y" * 200, "\"'" + "y" * 76 + '..."'),
        ("z" * 200, "'" + "z" * 77 + "...'"),
    ],
)
@pytest.mark.parametrize("option", ["--jobs", "--max-line-bytes", "--schema-version"])
def test_bad_integer_keeps_its_quotes(capsys: pytest.CaptureFixture[str], option: str, value: str, shown: str) -> None:
    capsys.readouterr()
    code = main(["trace", "grep", option, value, OK_LOG])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{shown} is not a valid integer." in err, err
    assert "int range" not in err


def test_max_items_help_names_its_value_n() -> None:
    proc = run_piped(["trace", "project", "--help"])
    assert proc.returncode == 0
    assert re.search(rb"--max-items N\b", proc.stdout), proc.stdout.decode()


# --- grep's stderr counts say what they count --------------------------------------------------------


def write_clock_regressions(path: Path, events: int) -> Path:
    """A verifying run whose clock goes backwards at every event: one CLOCK_REGRESSION warning each."""
    path.parent.mkdir(parents=True, exist_ok=True)
    clock = iter(range(10**18, 0, -(10**9)))
    with EventWriter(path, run_id="ef" * 16, fsync=FsyncPolicy.NEVER, clock=lambda: next(clock)) as w:
        run = w.append("run.started", {"intent_id": "1" * 32})
        for _ in range(events - 2):
            w.append("prompt.sent", {"provider": "p", "response_shape": "action", "intent_id": "1" * 32})
        w.append("run.completed", {"final_decision": "accept"}, parent_id=run["id"])
    return path


def _grep_stderr(log: Path) -> tuple[int, str]:
    proc = subprocess.run(
        ract_argv("trace", "grep", "--kind", "run.started", str(log)), capture_output=True, cwd=ROOT, timeout=120
    )
    return proc.returncode, proc.stderr.decode()


def test_suppressed_warnings_are_not_called_more_findings(tmp_path: Path) -> None:
    log = write_clock_regressions(tmp_path / "run" / "events.jsonl", 160)
    search = grep_paths([str(log)], build_filter(kinds=["run.started"]), GrepOptions())
    results = [item for item in search if not hasattr(item, "raw")]
    (result,) = results
    assert result.suppressed > 0 and all(f.severity == "warning" for f in result.findings)  # the premise
    code, err = _grep_stderr(log)
    assert code == 0
    assert "more finding" not in err and "more error" not in err  # nothing was listed: nothing is "more"
    assert (
        f"{result.suppressed} further finding(s), errors or warnings, past the first {len(result.findings)} not kept"
    ) in err


def test_hidden_errors_are_counted_as_errors(tmp_path: Path) -> None:
    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir(parents=True)
    with EventWriter(log, run_id="ab" * 16, fsync=FsyncPolicy.NEVER, strict=False) as w:  # unknown kinds: exit 3
        run = w.append("run.started", {"intent_id": "1" * 32})
        for i in range(14):
            w.append(f"no.such.kind{i}", {"i": i})
        w.append("run.completed", {"final_decision": "accept"}, parent_id=run["id"])
    search = grep_paths([str(log)], build_filter(kinds=["run.started"]), GrepOptions())
    (result,) = [item for item in search if not hasattr(item, "raw")]
    errors = [f for f in result.findings if f.severity == "error"]
    assert len(errors) > 10 and result.suppressed == 0  # the premise: more errors than grep lists
    code, err = _grep_stderr(log)
    assert code == int(result.exit_code)
    assert err.count("UNKNOWN_KIND") == 10
    assert f"{len(errors) - 10} more error(s) not shown" in err
    assert "further finding" not in err


def test_json_report_still_counts_suppressed(tmp_path: Path) -> None:
    log = write_clock_regressions(tmp_path / "run" / "events.jsonl", 160)
    proc = subprocess.run(
        ract_argv("trace", "grep", "--format", "json", "--kind", "run.started", str(log)),
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    data = json.loads(proc.stdout)
    assert data["files"][0]["suppressed_findings"] > 0


# --- -q with stdout closed, and a reader gone: every command, every format ------------------------


@pytest.mark.parametrize("command", [["grep"], ["project"], ["replay"]])
def test_quiet_needs_no_stdout(command: list[str]) -> None:
    """Regression (review of session 2's commits 7e6c4a0..63e83a1, bug 3): -q with
    stdout closed gave a traceback and exit 1 (verify -q exited 0).
    """
    args = ["trace", *command, "-q", str(FIXTURE / "events.jsonl")]
    expected = ract(*args).returncode
    closed = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "ract_cli", *args],
        stderr=subprocess.PIPE,
        timeout=120,
    )
    assert b"Traceback" not in closed.stderr
    assert closed.returncode == expected


@pytest.mark.parametrize("fmt", ["table", "jsonl", "json"])
def test_broken_pipe_exit_code_is_141_for_every_format(fmt: str) -> None:
    """Regression (review of session 2's commits 7e6c4a0..63e83a1, bug 4): grep
    --format table into a closed pipe exited 1 (TAMPERED), not 141.
    """
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write: EPIPE, deterministically
    try:
        proc = ract("trace", "grep", "--format", fmt, str(FIXTURE), stdout=write_end)
    finally:
        os.close(write_end)
    assert proc.returncode == 141, proc.stderr.decode(errors="replace")


# --- a finding line is printed as it is, never read as rich markup --------------------------------


@pytest.fixture
def bad_line_100(tmp_path: Path) -> Path:
    lines = COMPLETED.read_bytes().splitlines(keepends=True)
    log = tmp_path / "120d7eae7ee0c9c181816e553722e2fe" / "events.jsonl"
    log.parent.mkdir()
    log.write_bytes(b"".join(lines[:99]) + b"garbage\n" + b"".join(lines[99:]))
    return log


@pytest.mark.parametrize("command", ["verify", "replay", "grep", "project"])
def test_a_finding_on_line_100_is_printed_as_line_100_not_an_emoji(bad_line_100: Path, command: str) -> None:
    """Regression (found reading the CLI as a newcomer, fixed in 0685145): rich read the
    ":100:" of "PATH:100:" as an emoji code and printed a 💯.
    """
    argv = ["trace", command, str(bad_line_100)]
    if command == "project":
        argv += ["--format", "text"]
    result = ract(*argv, cwd=bad_line_100.parent)
    err = result.stderr.decode()
    assert result.returncode == 1
    expected = "line 100" if command == "project" else f"{bad_line_100}:100:"
    assert expected in err, err[-600:]
    assert "\N{HUNDRED POINTS SYMBOL}" not in err + result.stdout.decode("utf-8", "replace")


# --- a bad value holding a quote keeps click's wording --------------------------------------------


@pytest.mark.parametrize("value", ["it's", "'" + "x" * 200])
def test_bad_integer_with_a_quote_is_reworded(value: str) -> None:
    """Regression (review of session 2's commits 7e6c4a0..63e83a1, bug 6): a bad
    integer holding a quote lost click's wording ("is not a valid integer."), and a long one
    was printed whole.
    """
    proc = ract("trace", "grep", "--jobs", value, str(FIXTURE))
    message = proc.stderr.decode()
    assert proc.returncode == 2
    assert "is not a valid integer." in message
    assert "int range" not in message
    assert "x" * 100 not in message  # a long value is cut, as a single-quoted one is


# --- a stdout or stderr that cannot be written, and a stdout that only takes ASCII ---------------------------

#: (argv, the same call through typer): verify and project print before typer (cli/launch.py) or in the CLI
WRITTEN_BOTH_WAYS = [
    (["trace", "verify", "--format", "json"], ["trace", "verify", "--max-findings", "1000", "--format", "json"]),
    (["trace", "verify", "--format", "github"], ["trace", "verify", "--max-findings", "1000", "--format", "github"]),
    (["trace", "project"], ["trace", "project", "--max-items", "1000"]),
]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("quick,full", WRITTEN_BOTH_WAYS, ids=lambda argv: "-".join(argv))
def test_a_full_stdout_is_exit_5_said_on_stderr(quick: list[str], full: list[str]) -> None:
    """A report that cannot be written (ENOSPC) is lost: exit 5 (IO) and one line on stderr, no traceback,
    the quick path and the CLI alike."""
    seen = []
    for argv in (quick, full):
        with open("/dev/full", "wb") as sink:
            proc = subprocess.run(ract_argv(*argv, str(FIXTURES / "runs")), stdout=sink, stderr=subprocess.PIPE)
        assert_no_traceback(proc.stderr, argv)
        assert proc.returncode == 5 and b": cannot write to stdout: No space left on device\n" in proc.stderr
        seen.append(proc.stderr)
    assert seen[0] == seen[1]


#: every command's stdout, on a full disk: exit 5 and one line on stderr, never a traceback or a 1
FULL_STDOUT = [
    ["trace", "project", "--format", "markdown", str(FIXTURE)],
    ["trace", "project", "--format", "html", str(FIXTURE)],
    ["trace", "project", "--format", "text", str(FIXTURE)],
    ["trace", "grep", "--kind", "run.*", str(FIXTURE)],
    ["trace", "grep", "--format", "table", "--kind", "run.*", str(FIXTURE)],
    ["trace", "replay", "--format", "jsonl", str(FIXTURE)],
    ["trace", "diff", str(FIXTURE), str(FIXTURE)],
    ["trace", "sql", "SELECT 1 AS one", str(FIXTURE)],
    ["--help"],
    ["--version"],
]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "argv", FULL_STDOUT, ids=lambda argv: "-".join(a for a in argv if a.startswith("-") or a.isalpha())
)
def test_every_command_on_a_full_stdout_is_exit_5(argv: list[str]) -> None:
    with open("/dev/full", "wb") as sink:
        proc = subprocess.run(ract_argv(*argv), stdout=sink, stderr=subprocess.PIPE, cwd=ROOT)
    assert_no_traceback(proc.stderr, argv)
    assert proc.returncode == 5 and proc.stderr.endswith(b": No space left on device\n"), proc.stderr[-300:]
    with open("/dev/full", "wb") as sink:  # and with nowhere to say it
        proc = subprocess.run(ract_argv(*argv), stdout=sink, stderr=sink, cwd=ROOT)
    assert proc.returncode == 5


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_stdout_still_gets_the_verdicts_on_stderr() -> None:
    """``--format github`` into a full stdout: the annotations are lost (exit 5), the verdicts are said."""
    with open("/dev/full", "wb") as sink:
        proc = subprocess.run(
            ract_argv("trace", "verify", "--format", "github", TAMPERED_LOG), stdout=sink, stderr=subprocess.PIPE
        )
    assert proc.returncode == 5 and proc.stderr.startswith(b"FAIL ")
    assert proc.stderr.endswith(b"ract trace verify: cannot write to stdout: No space left on device\n")


@pytest.mark.parametrize(
    ("encoding", "name", "written"),
    [
        ("latin-1", "r→😀", b"\\u2192\\ud83d\\ude00"),  # what Latin-1 cannot hold: its JSON escape, the same value
        ("ascii", "é", "é".encode()),  # UTF-8, as typer.echo wrote it on an ASCII stdout
    ],
)
def test_json_on_a_narrow_stdout_keeps_its_paths(tmp_path: Path, encoding: str, name: str, written: bytes) -> None:
    run = tmp_path / name
    run.mkdir()
    (run / "events.jsonl").write_bytes(COMPLETED.read_bytes())
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    for argv in (["trace", "verify", "--format", "json"], ["trace", "project"]):
        proc = subprocess.run(ract_argv(*argv, str(run / "events.jsonl")), capture_output=True, env=env)
        assert proc.returncode == 0 and proc.stderr == b"" and written in proc.stdout, proc.stderr[-500:]
        report = json.loads(proc.stdout)
        path = report["path"] if argv[1] == "project" else report["files"][0]["path"]
        assert path == str(run / "events.jsonl")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["trace", "verify"], ["trace", "verify", "--max-findings", "1000"]])
def test_a_full_stderr_keeps_the_verdict(argv: list[str]) -> None:
    with open("/dev/full", "wb") as sink:
        proc = subprocess.run(ract_argv(*argv, TAMPERED_LOG), stdout=subprocess.PIPE, stderr=sink)
    assert (proc.returncode, proc.stdout) == (1, b"")


@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "utf-8"])
def test_stdout_text_is_encoded_as_click_encodes_it(encoding: str) -> None:
    """``render.write_stdout`` writes what ``typer.echo`` wrote on an ASCII stdout (UTF-8, a lone surrogate as
    ``?``); where click raised (a character the stream's encoding cannot hold: a lone surrogate in UTF-8, a
    check mark in Latin-1) it writes ``?`` for it."""
    text = "path é/\udcff/✓\n"
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    ours = subprocess.run(
        [sys.executable, "-c", f"from ract_cli.cli.render import write_stdout; write_stdout({text!r})"],
        capture_output=True,
        env=env,
    )
    theirs = subprocess.run(
        [sys.executable, "-c", f"import typer; typer.echo({text!r}, nl=False)"], capture_output=True, env=env
    )
    assert ours.returncode == 0 and ours.stderr == b""
    if encoding == "ascii":  # click wrote UTF-8
        assert (ours.stdout, theirs.returncode) == (theirs.stdout, 0)
        assert ours.stdout == "path é/?/✓\n".encode()
    else:  # click: UnicodeEncodeError
        assert theirs.returncode == 1 and b"UnicodeEncodeError" in theirs.stderr
        assert ours.stdout == ("path é/?/✓\n" if encoding == "utf-8" else "path é/?/?\n").encode(encoding)


@pytest.mark.parametrize(
    "argv",
    [
        ["trace", "verify", "--jobs", "1" * 5000, str(FIXTURE)],
        ["trace", "grep", "--kind", "run.*", "--jobs", "9" * 5000, str(FIXTURE)],
    ],
    ids=["verify", "grep"],
)
def test_a_huge_jobs_value_is_the_cli_s_usage_error(argv: list[str]) -> None:
    proc = subprocess.run(ract_argv(*argv), capture_output=True)
    assert_no_traceback(proc.stderr, argv[:2])
    assert proc.returncode == 2 and b"is not a valid integer" in proc.stderr


def test_a_completion_request_is_typer_s() -> None:
    """With ``_RACT_COMPLETE`` set, even a call the quick paths take is the CLI's (typer's completion)."""
    env = {**os.environ, "_RACT_COMPLETE": "bash_complete"}
    for argv in (["trace", "verify", str(FIXTURE)], ["trace", "project", str(FIXTURE)]):
        quick = subprocess.run(ract_argv(*argv), capture_output=True, env=env)
        full = subprocess.run(ract_argv(argv[0], argv[1], "-j", "1", *argv[2:]), capture_output=True, env=env)
        assert (quick.returncode, quick.stdout, quick.stderr) == (full.returncode, full.stdout, full.stderr)
        assert b"PASS" not in quick.stderr and not quick.stdout.startswith(b"{")
