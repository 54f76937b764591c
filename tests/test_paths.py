"""Hostile paths (issue 9): IO findings (exit 5) without hanging, in every command.

Missing files and directories, directories named like logs, symlink loops,
dangling symlinks, FIFOs, sockets, character devices, a path through a
regular file, a name too long, a regular file whose read fails (EIO from
``/proc/self/mem``) and a file unreadable by permission (the tests run as
root, which bypasses permissions: that case runs in a forked child that
drops to ``nobody`` first), a "regular" file whose read blocks
(``/proc/kmsg``: an IO error, never a hang or a silent end of file) and a
directory name that is not UTF-8 (a report, not a traceback).

Each case runs in-process for every command (under a SIGALRM guard) and as
a real subprocess for ``verify`` (under a timeout): a FIFO must never block.
"""

from __future__ import annotations

import errno
import fcntl
import io
import json
import os
import select
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hardening_support import (
    NOT_ON_LOGS,
    ROOT,
    assert_no_traceback,
    command_argv,
    hang_guard,
    read_only_commands,
    run_inprocess,
    run_subprocess,
    trace_commands,
    write_small_log,
)

from ract_cli.read import files as reader
from ract_cli.read.files import open_log
from ract_cli.read.framing import LineFramer
from ract_cli.testing.synth import fixture_path
from ract_cli.verify.verifier import verify_file

FIXTURES = ROOT / "fixtures"
COMPLETED = fixture_path(FIXTURES, "completed")


def fixture(name: str) -> str:
    return str(fixture_path(FIXTURES, name))


def ract(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m ract_cli ARGS`` in its own process, stdout and stderr piped."""
    return subprocess.run([sys.executable, "-m", "ract_cli", *args], capture_output=True, cwd=cwd, timeout=120)


def _commands() -> list[str]:
    return [c for c in trace_commands() if c not in NOT_ON_LOGS]


def _argv(command: str, path: Path | str) -> list[str]:
    # repair for real (not --check): a bad path must be refused before anything is written
    if command == "repair":
        return ["trace", "repair", str(path)]
    return command_argv(command, path)


def make_case(kind: str, root: Path) -> Path:
    """Build one hostile path under ``root``; return the path to hand to ract."""
    root.mkdir(parents=True, exist_ok=True)
    if kind == "missing-file":
        return root / "nope" / "events.jsonl"
    if kind == "missing-dir":
        return root / "no-such-dir"
    if kind == "dir-named-like-a-log":
        (root / "x" / "events.jsonl").mkdir(parents=True)
        return root / "x" / "events.jsonl"
    if kind == "dir-holding-only-a-dir-named-like-a-log":
        (root / "x" / "events.jsonl").mkdir(parents=True)
        return root / "x"
    if kind == "empty-dir":
        (root / "empty").mkdir()
        return root / "empty"
    if kind == "symlink-loop":
        os.symlink(root / "b", root / "a")
        os.symlink(root / "a", root / "b")
        return root / "a"
    if kind == "symlink-loop-in-run-dir":
        run = root / "runs" / "r1"
        run.mkdir(parents=True)
        os.symlink(run / "loop2", run / "events.jsonl")
        os.symlink(run / "events.jsonl", run / "loop2")
        return root / "runs"
    if kind == "dir-symlink-loop":
        (root / "d").mkdir()
        os.symlink(root / "d", root / "d" / "self")  # a directory containing a link to itself
        return root / "d"
    if kind == "dangling-symlink":
        os.symlink(root / "gone.jsonl", root / "events.jsonl")
        return root / "events.jsonl"
    if kind == "fifo":
        os.mkfifo(root / "events.jsonl")
        return root / "events.jsonl"
    if kind == "fifo-in-run-dir":
        (root / "runs" / "r1").mkdir(parents=True)
        os.mkfifo(root / "runs" / "r1" / "events.jsonl")
        return root / "runs"
    if kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(root / "events.jsonl"))
        _SOCKETS.append(sock)
        return root / "events.jsonl"
    if kind == "dev-zero":
        return Path("/dev/zero")
    if kind == "dev-null":
        return Path("/dev/null")
    if kind == "dev-urandom":
        return Path("/dev/urandom")
    if kind == "through-a-file":
        (root / "file").write_bytes(b"x")
        return root / "file" / "events.jsonl"
    if kind == "name-too-long":
        return root / ("x" * 300) / "events.jsonl"
    if kind == "read-fails-eio":
        return Path("/proc/self/mem")  # a regular file whose read at offset 0 fails with EIO
    raise AssertionError(kind)


_SOCKETS: list[socket.socket] = []
CASES = [
    "missing-file",
    "missing-dir",
    "dir-named-like-a-log",
    "dir-holding-only-a-dir-named-like-a-log",
    "empty-dir",
    "symlink-loop",
    "symlink-loop-in-run-dir",
    "dangling-symlink",
    "fifo",
    "fifo-in-run-dir",
    "socket",
    "dev-zero",
    "dev-null",
    "dev-urandom",
    "through-a-file",
    "name-too-long",
    "read-fails-eio",
]
# a directory holding only a link to itself has no log: also exit 5, and the walk must terminate
CASES.append("dir-symlink-loop")


@pytest.mark.parametrize("kind", CASES)
def test_hostile_path_every_command_inprocess(kind: str, tmp_path: Path) -> None:
    path = make_case(kind, tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*")) if kind != "dir-symlink-loop" else None
    for command in _commands():
        with hang_guard(15, (command, kind)):
            code, _out, err = run_inprocess(_argv(command, path))
        assert_no_traceback(err, (command, kind))
        assert code == 5, (command, kind, code, err[-500:])
        assert err.strip(), (command, kind, "an IO failure must be explained on stderr")
    if before is not None:
        assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing created (no .bak, no sidecar)


@pytest.mark.parametrize(
    "kind",
    ["fifo", "fifo-in-run-dir", "dev-zero", "symlink-loop", "dir-named-like-a-log", "read-fails-eio", "missing-file"],
)
def test_hostile_path_subprocess_verify(kind: str, tmp_path: Path) -> None:
    path = make_case(kind, tmp_path)
    proc = run_subprocess(["trace", "verify", "--format", "json", str(path)], timeout=30)
    assert_no_traceback(proc.stderr, kind)
    assert proc.returncode == 5, (kind, proc.stderr[-500:])
    report = json.loads(proc.stdout)
    codes = {f["code"] for file in report["files"] for f in file["findings"]}
    assert codes == {"IO_ERROR"}, codes


def test_fifo_with_a_writer_waiting_does_not_block(tmp_path: Path) -> None:
    """Even with a writer holding the FIFO open (so an open would succeed), ract refuses it unread."""
    fifo = tmp_path / "events.jsonl"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # keep a writer end open
    try:
        for command in _commands():
            with hang_guard(15, command):
                code, _out, _err = run_inprocess(_argv(command, fifo))
            assert code == 5, (command, code)
    finally:
        os.close(fd)


def test_one_bad_path_among_good_logs(tmp_path: Path) -> None:
    """The good log is still verified and reported; the exit is the lowest non-zero code (5)."""
    good = tmp_path / "good" / "events.jsonl"
    good.parent.mkdir()
    write_small_log(good)
    os.mkfifo(tmp_path / "fifo.jsonl")
    proc = run_subprocess(
        [
            "trace",
            "verify",
            "--format",
            "json",
            str(good),
            str(tmp_path / "fifo.jsonl"),
            str(tmp_path / "missing.jsonl"),
        ],
        timeout=30,
    )
    assert proc.returncode == 5
    files = {f["path"]: f for f in json.loads(proc.stdout)["files"]}
    assert files[str(good)]["ok"] is True and files[str(good)]["events"] == 8
    assert files[str(tmp_path / "fifo.jsonl")]["exit_code"] == 5
    assert files[str(tmp_path / "missing.jsonl")]["exit_code"] == 5


def test_empty_file_is_not_an_io_error(tmp_path: Path) -> None:
    """An empty regular file is a log with no event (warning), not an IO failure."""
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"")
    report = verify_file(path)
    assert report.exit_code == 0 and [f.code for f in report.findings] == ["EMPTY_LOG"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("how", ["file-mode-000", "parent-dir-not-searchable"])
def test_unreadable_by_permission(how: str) -> None:
    """A log the user may not read (EACCES on open, or on stat): exit 5 in every command.

    Root bypasses file permissions, so when the tests run as root the check
    runs in a forked child that drops to uid/gid 65534 (nobody) first, with
    every module already imported.
    """
    root = Path(tempfile.mkdtemp(prefix="ract-perm-"))  # under /tmp: traversable by nobody
    try:
        _check_unreadable(root, how)
    finally:
        for p in [root, *root.rglob("*")]:
            os.chmod(p, 0o755) if p.is_dir() else None
        shutil.rmtree(root, ignore_errors=True)


def _check_unreadable(root: Path, how: str) -> None:
    os.chmod(root, 0o755)
    log = root / "run" / "events.jsonl"
    log.parent.mkdir()
    write_small_log(log)
    commands = _commands()
    for command in commands:  # warm every lazy import while we still can read site-packages
        run_inprocess(command_argv(command, log))
    if how == "file-mode-000":
        os.chmod(log, 0)
        os.chmod(log.parent, 0o755)
    else:
        os.chmod(log.parent, 0o600)  # readable listing, no search: stat/open fail with EACCES
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        results = {}
        try:
            os.close(read_fd)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            for command in commands:
                try:
                    code, _out, err = run_inprocess(_argv(command, log))
                    results[command] = [code, "Traceback" in err, err[-300:]]
                except BaseException:
                    import traceback as tb

                    results[command] = [-1, True, tb.format_exc()[-3000:]]
        finally:
            os.write(write_fd, json.dumps(results).encode())
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as r:
        data = r.read()
    os.waitpid(pid, 0)
    results = json.loads(data)
    assert set(results) == set(commands)
    for command, (code, traceback, err) in results.items():
        assert not traceback, (command, err)
        assert code == 5, (command, code, err)
        assert "ermission" in err, (command, err)


def test_cases_are_what_they_claim(tmp_path: Path) -> None:
    """Guard against a case silently degrading into a plain missing file."""
    assert stat.S_ISFIFO(os.lstat(make_case("fifo", tmp_path / "f")).st_mode)
    assert stat.S_ISSOCK(os.lstat(make_case("socket", tmp_path / "s")).st_mode)
    assert stat.S_ISCHR(os.stat("/dev/zero").st_mode)
    loop = make_case("symlink-loop", tmp_path / "l")
    with pytest.raises(OSError):
        os.stat(loop)
    assert stat.S_ISREG(os.stat("/proc/self/mem").st_mode)


@pytest.mark.parametrize("target", ["fifo", "socket", "char-device", "symlink-to-device", "dangling-symlink"])
def test_repair_output_never_replaces_a_special_file(target: str, tmp_path: Path) -> None:
    """``repair --output X`` where X is not a regular file: refused (2), X left as it was.

    Regression: the atomic rename replaced the node, so ``--output /dev/full``
    turned the system's /dev/full into a regular file. (The device here is a
    private node made with mknod, so a regression cannot harm the system.)
    """
    if "repair" not in _commands():
        pytest.skip("no repair command yet")
    from ract_cli.testing.synth import fixture_path

    log = tmp_path / "run" / "events.jsonl"
    log.parent.mkdir()
    log.write_bytes(fixture_path(ROOT / "fixtures", "interrupted").read_bytes())
    before = log.read_bytes()
    out = tmp_path / "out"
    if target == "fifo":
        os.mkfifo(out)
    elif target == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(out))
        _SOCKETS.append(sock)
    elif target in ("char-device", "symlink-to-device"):
        dev = tmp_path / "null-device"
        try:
            os.mknod(dev, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("mknod needs root")
        if target == "char-device":
            out = dev
        else:
            os.symlink(dev, out)
    else:
        os.symlink(tmp_path / "gone", out)
    mode = os.lstat(out).st_mode
    with hang_guard(15, target):
        code, _stdout, err = run_inprocess(["trace", "repair", "--output", str(out), str(log)])
    assert_no_traceback(err, target)
    assert code == 2, (target, code, err)
    assert os.lstat(out).st_mode == mode, "the special file was replaced"
    assert log.read_bytes() == before


def test_empty_path_is_not_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ract trace verify "$LOG"`` with LOG unset must not verify whatever lies under the cwd.

    Regression: ``Path("")`` is ``.``, so an empty argument searched the
    current directory (verify, grep, project) or took ``./events.jsonl``
    (replay, and repair, which rewrote it). Now exit 5 everywhere.
    """
    from ract_cli.testing.synth import fixture_path

    good = tmp_path / "run" / "events.jsonl"
    good.parent.mkdir()
    write_small_log(good)
    here = tmp_path / "events.jsonl"  # an interrupted log right in the cwd: repair would rewrite it
    here.write_bytes(fixture_path(ROOT / "fixtures", "interrupted").read_bytes())
    before = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.chdir(tmp_path)
    for command in _commands():
        argv = command_argv(command, "")  # repair: --check
        with hang_guard(15, command):
            code, _out, err = run_inprocess(argv)
        assert_no_traceback(err, command)
        assert code == 5, (command, code, err[-300:])
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no .bak, no sidecar: nothing repaired


# --- a "regular" file whose read blocks (/proc/kmsg), and the non-blocking reader -----------------


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


# --- a directory name that is not UTF-8 -----------------------------------------------------------


@pytest.mark.skipif(sys.platform != "linux", reason="needs a file system that takes non-UTF-8 names")
@pytest.mark.parametrize(
    "argv",
    [
        ["project", "--format", "json"],
        ["grep", "--format", "json", "--kind", "run.started"],
        ["verify", "--format", "json"],
    ],
)
def test_a_non_utf8_directory_name_gives_a_report_not_a_traceback(tmp_path: Path, argv: list[str]) -> None:
    """Regression (found reading the CLI as a newcomer, fixed in 0685145): a directory name
    that is not UTF-8 broke the JSON reports with a traceback.
    """
    odd = os.fsencode(tmp_path) + b"/run\xff"
    os.makedirs(odd)
    shutil.copyfile(COMPLETED, os.path.join(odd, b"events.jsonl"))
    result = ract("trace", *argv, str(tmp_path))
    assert b"Traceback" not in result.stderr
    assert result.returncode == 0, result.stderr[-600:]
    document = json.loads(result.stdout)  # still one valid JSON document
    assert document
