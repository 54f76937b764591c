"""CLI polish: -q on project/replay, --version, the --jobs bound, usage-error wording, non-blocking reads.

In-process through ``ract_cli.cli.app.main`` (capsys), plus a few real
subprocesses. Logs are the committed fixtures, real files in ``tmp_path`` and
real git repositories; ``/proc/kmsg`` is the real blocking "regular" file.
"""

from __future__ import annotations

import errno
import fcntl
import importlib.metadata
import io
import os
import select
import stat
import time
from pathlib import Path

import pytest
from git_support import GitRepo
from hardening_support import (
    assert_no_traceback,
    command_argv,
    hang_guard,
    read_only_commands,
    run_inprocess,
    run_subprocess,
)

from ract_cli.read import files as reader
from ract_cli.cli.app import main
from ract_cli.cli.options import MAX_JOBS
from ract_cli.read.files import open_log
from ract_cli.read.framing import LineFramer
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


# --- 1. -q on project and replay: nothing printed, the same exit code ----------

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
    paced = sum(min((b - a) / 1e9, MAX_PACE_SLEEP_S) for a, b in zip(stamps, stamps[1:]))
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


# --- 2. --version ------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(capsys, flag: str) -> None:
    expected = importlib.metadata.version("ract-cli")
    assert run(capsys, flag) == (0, f"ract {expected}\n", "")


def test_version_subprocess_wins_over_a_command() -> None:
    # eager: printed before anything else is looked at, even with a command after it
    proc = run_subprocess(["--version", "trace", "verify", "/nonexistent"], timeout=60)
    assert proc.returncode == 0 and proc.stderr == b""
    assert proc.stdout.decode() == f"ract {importlib.metadata.version('ract-cli')}\n"


def test_version_is_listed_in_help(capsys) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "-V, --version" in out


# --- 3. the --jobs bound -------------------------------------------------------


def commands_with_jobs(capsys) -> list[str]:
    found = []
    for command in read_only_commands():
        code, out, _ = run(capsys, "trace", command, "--help")
        assert code == 0
        if "--jobs" in out:
            found.append(command)
    return found


@pytest.mark.parametrize("value", ["0", "-1", str(MAX_JOBS + 1), "100000", "9" * 40])
def test_jobs_out_of_range_is_a_usage_error(capsys, value: str) -> None:
    commands = commands_with_jobs(capsys)
    assert "verify" in commands
    for command in commands:
        code, out, err = run(capsys, *command_argv(command, fixture("completed"), "--jobs", value))
        assert code == 2 and out == "", (command, err)
        assert f"is not in the range 1<=x<={MAX_JOBS}." in err, (command, err)
        assert value[:40] in err or value[:77] in err


def test_jobs_at_the_bound_runs(capsys) -> None:
    assert run(capsys, "trace", "verify", "-q", "--jobs", str(MAX_JOBS), fixture("completed")) == (0, "", "")
    assert run(capsys, "trace", "verify", "-q", "-j", "1", fixture("tampered")) == (1, "", "")


def test_jobs_bound_is_in_the_help(capsys) -> None:
    _, out, _ = run(capsys, "trace", "verify", "--help")
    assert f"1<=x<={MAX_JOBS}" in out


# --- 4. usage errors read like a CLI -------------------------------------------

WORDING = [
    (["verify", "--jobs", "x"], "Invalid value for '--jobs' / '-j': 'x' is not a valid integer."),
    (["verify", "-j", "1.5"], "Invalid value for '--jobs' / '-j': '1.5' is not a valid integer."),
    (["verify", "--max-findings", "ten"], "Invalid value for '--max-findings': 'ten' is not a valid integer."),
    (["verify", "--schema-version", "99"], "Invalid value for '--schema-version': 99 is not in the range 1<=x<=9."),
    (["verify", "--schema-version", "0"], "Invalid value for '--schema-version': 0 is not in the range 1<=x<=9."),
    (["project", "--max-items", "0"], "Invalid value for '--max-items': 0 is not in the range x>=1."),
    (["project", "--max-line-bytes", "-5"], "Invalid value for '--max-line-bytes': -5 is not in the range x>=1."),
    (["project", "--format", "yaml"], "Invalid value for '--format': 'yaml' is not one of 'text', 'json', 'markdown'."),
    (["verify", "--dialect", "foo"], "Invalid value for '--dialect': 'foo' is not one of 'auto', 'ract', 'raxol'."),
    (["replay", "--format", "csv"], "Invalid value for '--format': 'csv' is not one of 'text', 'jsonl'."),
    (["repair", "--max-line-bytes", "lots"], "Invalid value for '--max-line-bytes': 'lots' is not a valid integer."),
    (
        ["verify", "--jobs", "\x1b[31mPASS\u202e"],
        "Invalid value for '--jobs' / '-j': "
        r"'\x1b[31mPASS\u202e' is not a valid integer.",
    ),
    (
        ["verify", "--jobs", "7" * 300],
        "Invalid value for '--jobs' / '-j': " + "7" * 77 + "... is not in the range 1<=x<=64.",
    ),
]


@pytest.mark.parametrize("argv,message", WORDING, ids=[" ".join(a)[:40] for a, _ in WORDING])
def test_usage_error_wording(capsys, argv: list[str], message: str) -> None:
    code, out, err = run(capsys, "trace", *argv, fixture("completed"))
    assert code == 2 and out == ""
    assert f"Error: {message}\n" in err, err
    assert "Input should" not in err and "Value error," not in err
    assert f"Usage: ract trace {argv[0]} [OPTIONS]" in err
    assert not any(ch in err for ch in "\x1b\u202e"), "a value from the command line reached the terminal raw"


@pytest.mark.parametrize(
    "argv,message",
    [
        (["trace", "verify"], "Error: Missing argument 'PATH...'."),
        (["trace", "nope"], "Error: No such command 'nope'."),
        (["trace", "verify", "--nope", "x"], "Error: No such option: --nope"),
    ],
)
def test_other_usage_errors_unchanged(capsys, argv: list[str], message: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and message in err


def test_usage_error_wording_subprocess() -> None:
    proc = run_subprocess(["trace", "verify", "--jobs", "x", "whatever"], timeout=60)
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"Error: Invalid value for '--jobs' / '-j': 'x' is not a valid integer.\n" in proc.stderr


@pytest.mark.parametrize(
    "command,usage",
    [
        ("verify", "Usage: ract trace verify [OPTIONS] {PATH...}"),
        ("project", "Usage: ract trace project [OPTIONS] {PATH...}"),
        ("grep", "Usage: ract trace grep [OPTIONS] {PATH...}"),
        ("replay", "Usage: ract trace replay [OPTIONS] {PATH}"),
        ("repair", "Usage: ract trace repair [OPTIONS] {PATH}"),
    ],
)
def test_usage_line_names_path(capsys, command: str, usage: str) -> None:
    code, out, _ = run(capsys, "trace", command, "--help")
    assert code == 0 and out.splitlines()[0] == usage


# --- 5. a "regular" file whose read blocks ---------------------------------------


def test_regular_file_reads_unchanged_through_open_log(tmp_path: Path) -> None:
    data = b"".join(b'{"n":%d,"pad":"%s"}\n' % (i, b"x" * (i * 37 % 5000)) for i in range(3000)) + b"torn"
    path = tmp_path / "big.jsonl"
    path.write_bytes(data)
    with open_log(path) as f:
        assert fcntl.fcntl(f.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK  # and regular files ignore it
        lines = list(iter(lambda: f.readline(1 << 16), b""))
    assert b"".join(lines) == data
    with open_log(path) as f:
        assert f.read(10) == data[:10] and f.read() == data[10:]
    with open_log(path) as f:
        framed = [raw for _, _, raw in LineFramer(f)]
    assert b"".join(framed) == data


def test_a_read_that_would_block_raises_instead_of_ending_the_file() -> None:
    """A non-blocking read with no data must be an error, never a silent end of file.

    The read end of a real pipe stands in for a blocking "regular" file (its
    reads block the same way); ``open_log`` itself refuses a FIFO by path.
    """
    r, w = os.pipe()
    try:
        os.set_blocking(r, False)
        os.write(w, b'{"a":1}\n{"b":2}\n{"c"')
        with io.BufferedReader(reader._NonBlockingFileIO(r, "rb", closefd=False), buffer_size=1 << 20) as f:
            framer = LineFramer(f)
            with hang_guard(10, "LineFramer over a would-block read"):
                lines = [raw for _, _, raw in framer]
        assert lines == [b'{"a":1}\n', b'{"b":2}\n']  # the partial third line is not passed off as a torn tail
        assert framer.read_error is not None and "would block" in framer.read_error
        assert framer.error_line == 3
        with reader._NonBlockingFileIO(r, "rb", closefd=False) as raw:
            for read in (lambda: raw.read(10), raw.read, raw.readall, lambda: raw.readinto(bytearray(10))):
                with pytest.raises(BlockingIOError) as caught:
                    read()
                assert caught.value.errno == errno.EAGAIN
    finally:
        os.close(r)
        os.close(w)


def _kmsg_would_block() -> bool:
    """/proc/kmsg is readable and has nothing pending (so reading it blocks, and consumes nothing)."""
    try:
        if not stat.S_ISREG(os.stat("/proc/kmsg").st_mode):
            return False
        fd = os.open("/proc/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return not poller.poll(0)
    finally:
        os.close(fd)


needs_kmsg = pytest.mark.skipif(
    not _kmsg_would_block(),
    reason="/proc/kmsg is not readable here, or has messages pending (reading would consume them)",
)


@needs_kmsg
@pytest.mark.parametrize("command", ["verify", "replay", "project", "grep", "repair"])
def test_blocking_regular_file_is_an_io_error_inprocess(command: str) -> None:
    assert command in read_only_commands()
    with hang_guard(15, (command, "/proc/kmsg")):
        code, out, err = run_inprocess(command_argv(command, "/proc/kmsg"))
    assert_no_traceback(err, command)
    assert code == 5, (command, err[-800:])
    assert "would block" in out + err, (command, out[-300:], err[-800:])


@needs_kmsg
def test_blocking_regular_file_is_an_io_error_subprocess() -> None:
    import json

    proc = run_subprocess(["trace", "verify", "--format", "json", "/proc/kmsg", fixture("completed")], timeout=30)
    assert_no_traceback(proc.stderr, "/proc/kmsg")
    assert proc.returncode == 5, proc.stderr[-500:]
    files = {f["path"]: f for f in json.loads(proc.stdout)["files"]}
    assert [f["code"] for f in files["/proc/kmsg"]["findings"]] == ["IO_ERROR"]
    assert files[fixture("completed")]["exit_code"] == 0  # the other path is still verified


def test_help_lists_commands_in_one_order_whatever_ran_first() -> None:
    """A run of one command imports only its module; help afterwards must still list every command in one order."""
    import subprocess
    import sys

    script = (
        "import contextlib, io\n"
        "from ract_cli.cli.app import main\n"
        "for argv in (['trace', 'project', '--help'], ['trace', 'replay', '--help'], ['trace', '--help']):\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        main(argv)\n"
        "print(out.getvalue())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "100"}
    )
    assert proc.returncode == 0, proc.stderr[-800:]
    listed = [
        line.split()[0]
        for line in proc.stdout.split("Commands:")[1].splitlines()
        if line.startswith("  ") and line.split() and line.split()[0].isalpha()
    ]
    assert listed[:5] == ["verify", "repair", "replay", "grep", "project"], proc.stdout
