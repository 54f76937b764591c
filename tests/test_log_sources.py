"""Where a log comes from: standard input (``-``) and gzip-compressed logs (``*.jsonl.gz``).

Both are decoded by ``read/files.py`` under the one chain reader, so every
case here compares a command over the decoded source with the same command
over the plain file: same exit code, same findings (codes, lines, offsets in
the decoded stream), same stdout. Real subprocesses, real pipes, real gzip.
"""

from __future__ import annotations

import gzip
import json
import os
import pty
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from ract_cli.read.files import TRUNCATED_MESSAGE
from ract_cli.testing.synth import FIXTURES, write_benchmark_log, write_fixtures
from ract_cli.testing.synth_raxol import accepted, journal_bytes

RACT = [sys.executable, "-m", "ract_cli", "trace"]


def run(*args: object, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*RACT, *map(str, args)], input=stdin if stdin is not None else b"", capture_output=True, timeout=120, cwd=cwd
    )


def findings(proc: subprocess.CompletedProcess[bytes]) -> list[tuple[str, int | None, int | None]]:
    """(code, line, offset) of every finding of a ``verify --format json`` run, in order."""
    report = json.loads(proc.stdout)
    return [(f["code"], f["line"], f["offset"]) for file in report["files"] for f in file["findings"]]


def no_traceback(proc: subprocess.CompletedProcess[bytes]) -> None:
    assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_fixtures(tmp_path_factory.mktemp("runs"))


def gzip_copy(src: Path, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(gzip.compress(src.read_bytes(), mtime=0))
    return dst


# --- standard input ------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_verify_stdin_gives_the_file_verdict_named_dash(runs: dict[str, Path], name: str) -> None:
    log = runs[name]
    plain = run("verify", "--format", "json", log)
    piped = run("verify", "--format", "json", "-", stdin=log.read_bytes())
    no_traceback(piped)
    assert piped.returncode == plain.returncode
    assert findings(piped) == findings(plain)
    assert [f["path"] for f in json.loads(piped.stdout)["files"]] == ["-"]


def test_verify_stdin_names_dash_in_findings(runs: dict[str, Path]) -> None:
    proc = run("verify", "-", stdin=runs["tampered"].read_bytes())
    assert proc.returncode == 1
    assert b"\n-:" in b"\n" + proc.stderr


def test_grep_stdin_prints_matching_lines_byte_for_byte(runs: dict[str, Path]) -> None:
    log = runs["completed"]
    piped = run("grep", "--kind", "step.*", "-", stdin=log.read_bytes())
    assert piped.returncode == 0, piped.stderr
    wanted = [line for line in log.read_bytes().splitlines(keepends=True) if b'"kind":"step.' in line]
    assert wanted and piped.stdout == b"".join(wanted)


@pytest.mark.parametrize(
    "command",
    [
        ("project", "--format", "json"),
        ("replay", "--until", "12"),
        ("grep", "--kind", "*", "--no-verify"),
        ("export", "--format", "otlp-json", "--output", "-"),
    ],
    ids=lambda c: c[0] + ("-no-verify" if "--no-verify" in c else ""),
)
def test_commands_read_stdin_as_they_read_the_file(runs: dict[str, Path], command: tuple[str, ...]) -> None:
    log = runs["completed"]
    plain = run(*command, log)
    piped = run(*command, "-", stdin=log.read_bytes())
    no_traceback(piped)
    assert piped.returncode == plain.returncode == 0, piped.stderr
    assert piped.stdout.replace(b'"-"', b"PATH") == plain.stdout.replace(json.dumps(str(log)).encode(), b"PATH")


def test_diff_takes_one_side_from_stdin(runs: dict[str, Path]) -> None:
    log = runs["completed"]
    same = run("diff", "-", log, stdin=log.read_bytes())
    assert same.returncode == 0, same.stderr
    other = run("diff", "-", runs["aborted"], stdin=log.read_bytes())
    assert other.returncode == 8, other.stderr


def test_a_raxol_journal_on_stdin_is_detected(tmp_path: Path) -> None:
    data = journal_bytes(accepted())
    path = tmp_path / "journal.jsonl"
    path.write_bytes(data)
    plain = run("verify", "--format", "json", path)
    piped = run("verify", "--format", "json", "-", stdin=data)
    assert piped.returncode == plain.returncode == 0
    assert findings(piped) == findings(plain)
    assert run("verify", "--dialect", "ract", "-", stdin=data).returncode != 0  # so it was read as raxol


def test_stdin_longer_than_what_is_kept_for_a_second_look(tmp_path: Path) -> None:
    """Past the 16 MB kept for dialect detection, stdin streams on: the whole log is read once."""
    log = tmp_path / "big" / "events.jsonl"
    log.parent.mkdir()
    events = write_benchmark_log(log, events=45_000)
    assert log.stat().st_size > 17 << 20
    plain = run("verify", "--format", "json", log)
    piped = run("verify", "--format", "json", "-", stdin=log.read_bytes())
    assert piped.returncode == plain.returncode
    assert json.loads(piped.stdout)["files"][0]["events"] == events


def test_stdin_on_a_terminal_is_refused_not_waited_on(runs: dict[str, Path]) -> None:
    main, child = pty.openpty()
    try:
        proc = subprocess.run([*RACT, "verify", "-"], stdin=child, capture_output=True, timeout=60)
    finally:
        os.close(main)
        os.close(child)
    assert proc.returncode == 5
    assert b"standard input is a terminal" in proc.stderr


def test_stdin_given_twice_is_read_once(runs: dict[str, Path]) -> None:
    proc = run("verify", "--format", "json", "-", "-", stdin=runs["completed"].read_bytes())
    assert proc.returncode == 0, proc.stderr
    assert [f["path"] for f in json.loads(proc.stdout)["files"]] == ["-"]


def test_repair_refuses_stdin(runs: dict[str, Path]) -> None:
    proc = run("repair", "-", stdin=runs["interrupted"].read_bytes())
    no_traceback(proc)
    assert proc.returncode == 2


# --- gzip ----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_a_gzip_log_verifies_like_its_plain_log(runs: dict[str, Path], name: str, tmp_path: Path) -> None:
    log = runs[name]
    packed = gzip_copy(log, tmp_path / log.parent.name / "events.jsonl.gz")
    plain = run("verify", "--format", "json", log)
    decoded = run("verify", "--format", "json", packed)
    no_traceback(decoded)
    assert decoded.returncode == plain.returncode
    assert findings(decoded) == findings(plain)  # RUN_DIR_MISMATCH too: events.jsonl.gz is the run's log


def test_gzip_on_stdin_is_decoded(runs: dict[str, Path]) -> None:
    proc = run("verify", "-", stdin=gzip.compress(runs["completed"].read_bytes()))
    assert proc.returncode == 0, proc.stderr


def test_a_gzip_log_without_the_suffix_is_decoded(runs: dict[str, Path], tmp_path: Path) -> None:
    misnamed = gzip_copy(runs["completed"], tmp_path / "events.jsonl")
    assert run("verify", misnamed).returncode == 0


def test_directory_search_finds_gzip_logs(runs: dict[str, Path], tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for name in ("completed", "aborted"):
        log = runs[name]
        gzip_copy(log, tree / log.parent.name / "events.jsonl.gz")
    proc = run("verify", "--format", "json", tree)
    assert proc.returncode == 0, proc.stderr
    paths = sorted(Path(f["path"]).name for f in json.loads(proc.stdout)["files"])
    assert paths == ["events.jsonl.gz", "events.jsonl.gz"]
    counts = run("grep", "-c", "--kind", "run.started", tree).stdout.decode().split()
    assert [c.rsplit(":", 1)[1] for c in counts] == ["1", "1"]


def test_grep_of_a_gzip_log_prints_decoded_lines(runs: dict[str, Path], tmp_path: Path) -> None:
    log = runs["completed"]
    packed = gzip_copy(log, tmp_path / "x" / "events.jsonl.gz")
    for extra in ((), ("--no-verify",)):
        assert run("grep", "--kind", "*", *extra, packed).stdout == log.read_bytes()


def test_concatenated_members_and_zero_padding_read_as_one_log(runs: dict[str, Path], tmp_path: Path) -> None:
    data = runs["completed"].read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    path = tmp_path / "events.jsonl.gz"
    path.write_bytes(gzip.compress(data[:cut]) + gzip.compress(data[cut:]) + b"\0" * 512)
    assert run("verify", path).returncode == 0


def _flushed_gzip(lines: list[bytes]) -> tuple[bytes, list[int]]:
    """A gzip stream with a full flush after each line, and the compressed offset just after each flush."""
    z = zlib.compressobj(wbits=31)
    out = bytearray(z.compress(b""))
    marks = []
    for line in lines:
        out += z.compress(line) + z.flush(zlib.Z_FULL_FLUSH)
        marks.append(len(out))
    out += z.flush()
    return bytes(out), marks


def test_a_cut_between_two_lines_is_still_a_torn_tail(runs: dict[str, Path], tmp_path: Path) -> None:
    """Every line decoded is a good event, but the archive lacks its end: INCOMPLETE, never a PASS."""
    lines = runs["completed"].read_bytes().splitlines(keepends=True)
    data, marks = _flushed_gzip(lines)
    path = tmp_path / "events.jsonl.gz"
    path.write_bytes(data[: marks[9]])  # ten whole lines, then nothing
    proc = run("verify", "--format", "json", path)
    assert proc.returncode == 4
    offset = sum(map(len, lines[:10]))
    assert ("TORN_TAIL", 11, offset) in findings(proc)
    assert TRUNCATED_MESSAGE.encode() in proc.stdout
    nv = run("grep", "--no-verify", "--kind", "*", path)
    assert nv.returncode == 4 and nv.stdout == b"".join(lines[:10])


@pytest.mark.parametrize("fraction", [0.0, 0.01, 0.1, 0.33, 0.5, 0.77, 0.99])
def test_a_truncated_archive_is_incomplete(runs: dict[str, Path], tmp_path: Path, fraction: float) -> None:
    data = gzip.compress(runs["completed"].read_bytes())
    path = tmp_path / "events.jsonl.gz"
    path.write_bytes(data[: max(1, int(len(data) * fraction))])
    proc = run("verify", "--format", "json", path)
    no_traceback(proc)
    assert proc.returncode == 4
    assert any(code == "TORN_TAIL" for code, _, _ in findings(proc))


@pytest.mark.parametrize("where", [10, 0.25, 0.5, 0.75, -6, -2])
def test_corrupt_gzip_data_is_a_finding_never_a_pass(runs: dict[str, Path], tmp_path: Path, where: float) -> None:
    """A flipped byte: what decodes wrong is TAMPERED (1), what cannot be decoded an IO_ERROR (5)."""
    data = bytearray(gzip.compress(runs["completed"].read_bytes()))
    i = int(where) if isinstance(where, int) else int(len(data) * where)
    data[i] ^= 0x55
    path = tmp_path / "events.jsonl.gz"
    path.write_bytes(bytes(data))
    proc = run("verify", "--format", "json", path)
    no_traceback(proc)
    assert proc.returncode in (1, 5)
    report = json.loads(proc.stdout)
    assert all(f["path"] == str(path) for f in report["files"][0]["findings"])
    io = [f for f in report["files"][0]["findings"] if f["code"] == "IO_ERROR"]
    assert all("corrupt gzip data" in f["message"] and f["offset"] is not None for f in io)


@pytest.mark.parametrize(
    "data",
    [b"", b"not gzip at all\n", b"\x1f\x8b", b"\x1f\x8b\x08\x00" + b"\xff" * 40],
    ids=["empty", "plain-text", "magic-only", "bad-header"],
)
def test_what_is_named_gzip_but_is_not(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "events.jsonl.gz"
    path.write_bytes(data)
    proc = run("verify", path)
    no_traceback(proc)
    assert proc.returncode in (0, 4, 5) and (proc.returncode != 0 or not data)


def test_trailing_garbage_after_the_archive_is_an_io_error(runs: dict[str, Path], tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl.gz"
    path.write_bytes(gzip.compress(runs["completed"].read_bytes()) + b"garbage")
    proc = run("verify", "--format", "json", path)
    assert proc.returncode == 5
    errors = [f["code"] for f in json.loads(proc.stdout)["files"][0]["findings"] if f["severity"] == "error"]
    assert errors == ["IO_ERROR"]


def test_a_gzip_bomb_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """200 MB of one unending line, 200 KB compressed: decoded as a stream, never held."""
    path = tmp_path / "events.jsonl.gz"
    z = zlib.compressobj(9, wbits=31)
    block = b"a" * (1 << 20)
    path.write_bytes(b"".join(z.compress(block) for _ in range(200)) + z.flush())
    assert path.stat().st_size < 1 << 20
    launcher = (  # a fresh process measures its one child: pytest's own children do not count
        "import resource, subprocess, sys; "
        "done = subprocess.run(sys.argv[1:], capture_output=True); "
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, b'Traceback' in done.stderr)"
    )
    out = subprocess.run(
        [sys.executable, "-c", launcher, *RACT, "verify", str(path)], capture_output=True, text=True, timeout=300
    )
    code, peak_kib, traceback = out.stdout.split()
    assert traceback == "False"
    assert int(code) in (1, 4)
    assert int(peak_kib) < 200 * 1024  # KiB: the bound the hostile-input issue sets per line


def test_repair_refuses_a_gzip_log(runs: dict[str, Path], tmp_path: Path) -> None:
    packed = gzip_copy(runs["interrupted"], tmp_path / "r" / "events.jsonl.gz")
    before = packed.read_bytes()
    proc = run("repair", packed)
    no_traceback(proc)
    assert proc.returncode == 2
    assert b"gunzip" in proc.stderr
    assert packed.read_bytes() == before
    assert sorted(p.name for p in packed.parent.iterdir()) == ["events.jsonl.gz"]


def test_verify_jobs_never_splits_a_stream(tmp_path: Path) -> None:
    """A large gzip log with --jobs is read front to back, as the sequential reader reads it."""
    log = tmp_path / "big" / "events.jsonl"
    log.parent.mkdir()
    write_benchmark_log(log, events=30_000)
    packed = tmp_path / "gz" / "events.jsonl.gz"
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(log.read_bytes(), compresslevel=0))  # stored: as large as the log
    assert packed.stat().st_size > 8 << 20  # past the size from which a plain log is split
    one = run("verify", "--format", "json", packed)
    two = run("verify", "--format", "json", "--jobs", "2", packed)
    assert one.returncode == two.returncode
    assert one.returncode == 0 and findings(one) == findings(two)
