"""Crash safety (issue 9): a writer killed with SIGKILL at random points.

A real writer process appends events with ``fsync`` on every event and
prints each event's id (flushed) only after ``append`` returned. The test
kills it with SIGKILL at a random moment (often in the middle of writing a
multi-megabyte line), then checks:

* the log verifies (exit 0, open run as a warning) or has only a torn tail
  (exit 4, and ``TORN_TAIL`` is its only error);
* every event whose append returned (every id printed) is in the log;
* ``ract trace repair`` (when it exists) fixes the torn tail and open
  handles: the result verifies, the torn bytes are kept in a sidecar, and
  every acknowledged event is still there byte for byte.

Repair itself killed at random points is covered by
``tests/test_repair_crash.py`` (owned by the repair work).
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from hardening_support import LONG, PYTHON, ROOT, assert_no_traceback, run_inprocess, run_subprocess, trace_commands

from ract_cli.read.reader import ChainReader
from ract_cli.verify.verifier import verify_file

SEED = int(os.environ.get("RACT_SEED", "20261129"))
KILLS = int(os.environ.get("RACT_CRASH_KILLS", "200" if LONG else "6"))

BIG = "50,2000,100000,1000000,3000000"  # event sizes: multi-MB lines get cut by SIGKILL now and then
SMALL = "50,300"
WRITER = textwrap.dedent("""
    import random, sys
    from ract_cli.writer.event_writer import EventWriter
    path, seed = sys.argv[1], int(sys.argv[2])
    SIZES = [int(x) for x in sys.argv[3].split(",")]
    rng = random.Random(seed)
    step = "5" * 32
    with EventWriter(path, run_id="c4" * 16, fsync="every") as w:
        ev = w.append("run.started", {"intent_id": "1" * 32})
        print(ev["id"], flush=True)
        n = 0
        while True:
            size = rng.choice(SIZES)
            if n % 3 == 0:
                ev = w.append("step.started", {"parent_snapshot": "c" * 40, "timeout_seconds": 600}, step_id=step)
            else:
                ev = w.append("tool.called", {"tool": "t", "arguments": {"blob": "x" * size, "n": n}}, step_id=step)
            print(ev["id"], flush=True)
            n += 1
""")


def _kill_writer_at_random(path: Path, rng: random.Random) -> list[str]:
    """Start the writer, SIGKILL it at a random moment; return the ids it acknowledged."""
    proc = subprocess.Popen(
        [PYTHON, "-c", WRITER, str(path), str(rng.randrange(2**31)), BIG],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    acked: list[str] = []
    buf = b""
    want = rng.randint(1, 12)  # kill after this many acknowledgements ...
    extra_delay = rng.uniform(0, 0.05)  # ... plus a random moment into the next append
    deadline = time.monotonic() + 30
    while len(acked) < want:
        assert time.monotonic() < deadline, "writer made no progress"
        ready, _, _ = select.select([proc.stdout], [], [], 1)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 65536)
            assert chunk, proc.stderr.read().decode()[-2000:]
            buf += chunk
            *done, buf = buf.split(b"\n")
            acked += [d.decode() for d in done]
    time.sleep(extra_delay)
    proc.send_signal(signal.SIGKILL)
    rest, err = proc.communicate(timeout=30)
    acked += [d.decode() for d in (buf + rest).split(b"\n") if d]
    assert proc.returncode == -signal.SIGKILL, err.decode()[-2000:]
    return acked


def _check_killed_log(path: Path, acked: list[str]) -> tuple[int, bool]:
    report = verify_file(path)
    errors = [f for f in report.findings if f.severity == "error"]
    assert report.exit_code in (0, 4), [(f.code, f.message) for f in errors]
    if report.exit_code == 4:
        assert [f.code for f in errors] == ["TORN_TAIL"], errors
    ids = [ev.event["id"] for ev in ChainReader(path)]
    missing = [i for i in acked if i not in ids]
    assert not missing, f"acknowledged events lost: {missing}"
    return int(report.exit_code), report.exit_code == 4


def test_writer_killed_at_random_points(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    has_repair = "repair" in trace_commands()
    outcomes = {0: 0, 4: 0}
    for i in range(KILLS):
        path = tmp_path / f"run{i}" / "events.jsonl"
        path.parent.mkdir()
        acked = _kill_writer_at_random(path, rng)
        original = path.read_bytes()
        code, torn = _check_killed_log(path, acked)
        outcomes[code] += 1
        if not has_repair:
            continue
        code, _out, err = run_inprocess(["trace", "repair", str(path)])
        assert_no_traceback(err, "repair")
        assert code == 0, (i, err[-1000:])
        after = verify_file(path)
        assert after.exit_code == 0, [(f.code, f.message) for f in after.findings]
        assert "OPEN_RUN" not in {f.code for f in after.findings}  # the run is closed now
        # every complete original line is kept byte for byte, in place
        complete = original[: original.rfind(b"\n") + 1]
        assert path.read_bytes().startswith(complete)
        ids = [ev.event["id"] for ev in ChainReader(path)]
        assert all(a in ids for a in acked)
        if torn:
            sidecars = [
                p for p in path.parent.iterdir() if p.name not in ("events.jsonl",) and not p.name.endswith(".bak")
            ]
            torn_bytes = original[len(complete) :]
            assert any(p.read_bytes() == torn_bytes for p in sidecars), (
                f"torn tail bytes not kept in a sidecar: {[p.name for p in sidecars]}"
            )
        again = run_inprocess(["trace", "repair", "--check", str(path)])
        assert again[0] == 0, "repair is idempotent: nothing left to repair"
    print(f"seed={SEED} kills={KILLS} outcomes: clean {outcomes[0]}, torn tail {outcomes[4]}")
    assert outcomes[0] + outcomes[4] == KILLS


def _whole_lines_after_kill(path: Path, *, seed: int, acked: int) -> bytes:
    """Run the writer on small events, SIGKILL it once it has acknowledged ``acked`` events,
    and return the log's complete lines (the material the cut tests slice)."""
    proc = subprocess.Popen(
        [PYTHON, "-c", WRITER, str(path), str(seed), SMALL], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
    )
    for _ in range(acked):
        assert proc.stdout.readline(), proc.stderr.read().decode()[-2000:]  # the writer died
    proc.kill()
    proc.communicate()
    data = path.read_bytes()
    return data[: data.rfind(b"\n") + 1]


def test_torn_tail_is_the_only_damage_a_kill_can_do(tmp_path: Path) -> None:
    """Every prefix of a valid log (a kill at every byte) verifies or is a torn tail: never 'tampered'."""
    rng = random.Random(SEED)
    data = _whole_lines_after_kill(tmp_path / "full.jsonl", seed=7, acked=6)
    cut_path = tmp_path / "cut.jsonl"
    cuts = range(len(data) + 1) if LONG else sorted(rng.sample(range(len(data) + 1), min(400, len(data) + 1)))
    for cut in cuts:
        cut_path.write_bytes(data[:cut])
        report = verify_file(cut_path)
        assert report.exit_code in (0, 4), (cut, [(f.code, f.message) for f in report.findings])
        if cut and data[cut - 1 : cut] != b"\n" and report.exit_code == 0:
            # a cut just before a line's newline leaves a complete event without it: a warning only
            assert "MISSING_FINAL_NEWLINE" in {f.code for f in report.findings}, cut


def test_repair_fixes_every_kind_of_torn_tail(tmp_path: Path) -> None:
    """A kill mid-line at random byte positions (deterministic cuts): repair moves the torn bytes aside.

    Through the real CLI (subprocess), so the repaired file is written by the
    shipped entry point.
    """
    if "repair" not in trace_commands():
        pytest.skip("no repair command yet")
    rng = random.Random(SEED)
    data = _whole_lines_after_kill(tmp_path / "src.jsonl", seed=11, acked=8)
    newlines = [i for i, b in enumerate(data) if b == 0x0A]
    for n in range(4 if not LONG else 40):
        line_end = rng.choice(newlines[1:])
        line_start = data.rfind(b"\n", 0, line_end) + 1
        cut = rng.randrange(line_start + 1, line_end - 1)  # strictly inside the line: it cannot parse
        path = tmp_path / f"cut{n}" / "events.jsonl"
        path.parent.mkdir()
        path.write_bytes(data[:cut])
        assert verify_file(path).exit_code == 4
        proc2 = run_subprocess(["trace", "repair", str(path)], timeout=120)
        assert_no_traceback(proc2.stderr, "repair")
        assert proc2.returncode == 0, proc2.stderr.decode()[-800:]
        assert verify_file(path).exit_code == 0
        assert path.read_bytes().startswith(data[:line_start])
        others = [p for p in path.parent.iterdir() if p.name != "events.jsonl"]
        assert any(p.read_bytes() == data[line_start:cut] for p in others), [p.name for p in others]
