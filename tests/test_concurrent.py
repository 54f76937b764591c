"""Concurrent writer (issue 9): reading a log another process is appending to.

A real writer process (``EventWriter``) appends events of mixed sizes (up to
hundreds of KiB, so a reader often catches a line half written) while
verify, grep and project read the same file over and over. They must never
report tampering (exit 1): at most a torn tail (4) or an open run (warning).
"""

from __future__ import annotations

import os
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from hardening_support import (
    LONG,
    PYTHON,
    ROOT,
    assert_no_traceback,
    command_argv,
    read_only_commands,
    run_inprocess,
    run_subprocess,
)

from ract_cli.read.framing import LineFramer
from ract_cli.verify.verifier import verify_file

SEED = int(os.environ.get("RACT_SEED", "20261129"))
DURATION = float(os.environ.get("RACT_CONCURRENT_SECONDS", "30" if LONG else "3"))

WRITER = textwrap.dedent("""
    import random, sys, time
    from ract_cli.writer.event_writer import EventWriter
    path, seed, seconds, fsync = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    rng = random.Random(seed)
    end = time.monotonic() + seconds
    with EventWriter(path, run_id="c0" * 16, fsync=fsync) as w:
        w.append("run.started", {"intent_id": "1" * 32})
        n = 0
        written = 0
        while time.monotonic() < end:
            size = rng.choice([10, 100, 1000, 20_000, 300_000])
            if written + size > 10 << 20:  # enough for --jobs to split (8 MiB); then small events only
                size = rng.choice([10, 100, 1000])
            w.append("tool.called", {"tool": "t", "arguments": {"blob": "x" * size, "n": n}}, step_id="5" * 32)
            written += size
            n += 1
            if n % 64 == 0:
                time.sleep(0.002)  # a steady writer, not a disk-filling one
        w.append("run.completed", {"event_count": n + 2})
    print(n + 2, flush=True)
""")


def _start_writer(path: Path, seconds: float, fsync: str = "never") -> subprocess.Popen:
    return subprocess.Popen(
        [PYTHON, "-c", WRITER, str(path), str(SEED), str(seconds), fsync],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )


def _finish(writer: subprocess.Popen) -> int:
    out, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err.decode()[-2000:]
    return int(out)


@pytest.mark.parametrize("fsync", ["never", "every"])
def test_library_readers_during_appends(fsync: str, tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    writer = _start_writer(path, DURATION, fsync)
    seen: dict[int, int] = {}
    reads = 0
    try:
        while writer.poll() is None:
            if not path.exists():
                continue
            report = verify_file(path)
            reads += 1
            seen[int(report.exit_code)] = seen.get(int(report.exit_code), 0) + 1
            bad = [f for f in report.findings if f.exit_code == 1]
            assert not bad, f"seed={SEED} read {reads}: tampering reported on a live log: {bad[:3]}"
            assert report.exit_code in (0, 4), report.findings
            torn = [f for f in report.findings if f.code == "TORN_TAIL"]
            assert all(f.line == report.events + 1 for f in torn), "a torn tail is only ever the last line"
    finally:
        total = _finish(writer)
    print(f"seed={SEED} fsync={fsync}: {reads} reads during appends, exit codes {seen}")
    assert reads >= 5
    final = verify_file(path)
    assert final.exit_code == 0 and final.events == total


def test_every_command_during_appends(tmp_path: Path) -> None:
    """verify, grep and project (and replay, repair --check) in-process while the writer runs."""
    path = tmp_path / "events.jsonl"
    writer = _start_writer(path, DURATION)
    # repair --check: exit 5 while locked; diff, prove and verify-proof judge the log against another file,
    # so their exit code is not the live log's verdict
    commands = [c for c in read_only_commands() if c not in ("repair", "diff", "prove", "verify-proof")]
    seen: dict[str, set] = {c: set() for c in [*commands, "verify --jobs", "grep --no-verify"]}
    try:
        while writer.poll() is None:
            if not path.exists():
                continue
            for command in [*commands, "verify --jobs", "grep --no-verify"]:
                argv = command_argv(command, path)
                if command == "grep":
                    argv = ["trace", "grep", "--count", str(path)]
                if command == "verify --jobs":  # the parallel byte-range scan (files of 8 MiB and more)
                    argv = ["trace", "verify", "--jobs", "2", str(path)]
                if command == "grep --no-verify":  # the block prefilter framing
                    argv = ["trace", "grep", "--no-verify", "--kind", "tool.*", "--count", str(path)]
                code, _out, err = run_inprocess(argv)
                assert_no_traceback(err, command)
                if command == "checkpoint" and code == 1:
                    # a torn tail read mid-append: checkpoint refuses what verify calls INCOMPLETE (exit 1,
                    # docs/checkpoints.md: repair first), never for tampering
                    assert "does not verify (verify: exit 4 INCOMPLETE)" in err, err[-800:]
                    code = 4
                assert code in (0, 4, 7), f"seed={SEED} {command} exit {code} on a live log: {err[-800:]}"
                seen[command].add(code)
    finally:
        _finish(writer)
    print(f"seed={SEED}: exit codes seen {seen}; final size {path.stat().st_size >> 20} MiB (--jobs splits from 8 MiB)")
    assert all(seen.values()), seen


def test_repair_refuses_while_the_writer_holds_the_lock(tmp_path: Path) -> None:
    if "repair" not in read_only_commands():
        pytest.skip("no repair command yet")
    path = tmp_path / "events.jsonl"
    writer = _start_writer(path, 1.5)
    try:
        deadline = time.monotonic() + 10
        while not path.exists() or path.stat().st_size == 0:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        before_codes = set()
        while writer.poll() is None:
            proc = run_subprocess(["trace", "repair", str(path)], timeout=60)
            assert_no_traceback(proc.stderr, "repair")
            if writer.poll() is None:
                before_codes.add(proc.returncode)
    finally:
        _finish(writer)
    assert before_codes <= {5}, before_codes  # refused: a writer holds the lock
    assert verify_file(path).exit_code == 0


def test_subprocess_verify_during_appends(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    writer = _start_writer(path, DURATION)
    codes = []
    try:
        while writer.poll() is None:
            if path.exists():
                proc = run_subprocess(["trace", "verify", str(path)], timeout=60)
                assert_no_traceback(proc.stderr)
                assert proc.returncode in (0, 4), proc.stderr.decode()[-800:]
                codes.append(proc.returncode)
    finally:
        _finish(writer)
    assert codes


def test_framer_stops_at_a_line_still_being_written(tmp_path: Path) -> None:
    """Deterministic version of the race, on a real file.

    The framer reads a last line without ``\n`` (end of file mid-line); the
    writer then appends the rest of that line and more. Regression: the
    framer read on and yielded the rest as a line of its own, so a live log
    got a MALFORMED_LINE (exit 1, "tampered"). Now the file ends where the
    reader found its end: a torn tail (4) at most.
    """
    path = tmp_path / "events.jsonl"
    _finish(_start_writer(path, 0.2))
    lines = path.read_bytes().splitlines(keepends=True)
    half = len(lines[1]) // 2
    path.write_bytes(lines[0] + lines[1][:half])
    with open(path, "rb") as f:
        framer = iter(LineFramer(f))
        assert next(framer)[:2] == (1, 0)
        line_no, _offset, raw = next(framer)
        assert (line_no, raw) == (2, lines[1][:half])
        with open(path, "ab") as w:  # the writer completes its line while we read
            w.write(lines[1][half:] + b"".join(lines[2:]))
        assert list(framer) == []
    # and a reader started now sees the whole, valid log
    assert verify_file(path).exit_code == 0
