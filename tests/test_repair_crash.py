"""A repair killed with SIGKILL at any moment leaves the original or the complete repaired log.

Real processes, real signals, no test hooks: several children each repair
their own copy of a few-MB interrupted log and are killed at random times
spread over the whole repair (more of them near its end, where the writes
happen). After each kill the log must hold exactly the original bytes or
exactly the repaired bytes; when repaired, the torn bytes are in a sidecar
and the original in the backup; and running repair again always ends at the
repaired bytes.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ract_cli.repair.repairer import RepairOptions, repair_file
from ract_cli.testing.synth import write_benchmark_log

CHILD = """
import sys
from ract_cli.cli.app import _register_commands, main
_register_commands()
print("ready", flush=True)
sys.stdin.readline()
sys.exit(main(["trace", "repair", sys.argv[1]]))
"""

BUDGET_SECONDS = 3.0
CHILDREN_PER_ROUND = max(2, min(4, os.cpu_count() or 2))  # about one per core: kills land where timed


@pytest.fixture(scope="module")
def interrupted_log(tmp_path_factory) -> tuple[bytes, bytes, bytes]:
    """(original bytes, repaired bytes, torn bytes) of a ~3 MB log cut inside a step."""
    tmp = tmp_path_factory.mktemp("crash-src")
    full = tmp / "full.jsonl"
    write_benchmark_log(full, events=6000, seed=11)
    lines = full.read_bytes().splitlines(keepends=True)
    cut = len(lines) - 9
    torn = lines[cut][: len(lines[cut]) // 2]
    original = b"".join(lines[:cut]) + torn
    ref = tmp / "ref" / "events.jsonl"
    ref.parent.mkdir()
    ref.write_bytes(original)
    result = repair_file(ref, RepairOptions(backup=False))
    assert result.closes and result.torn is not None
    return original, ref.read_bytes(), torn


def _spawn(path: Path) -> subprocess.Popen:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdout.readline().strip() == "ready"
    return child


def _full_repair_seconds(tmp: Path, original: bytes) -> float:
    path = tmp / "timing" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(original)
    child = _spawn(path)
    start = time.perf_counter()
    child.stdin.write("go\n")
    child.stdin.flush()
    assert child.wait(timeout=120) == 0
    return time.perf_counter() - start


def test_sigkill_during_repair_leaves_original_or_repaired(tmp_path, interrupted_log):
    original, repaired, torn = interrupted_log
    full = _full_repair_seconds(tmp_path, original)
    rng = random.Random(20261129)
    outcomes = {"original": 0, "repaired": 0}
    deadline = time.monotonic() + BUDGET_SECONDS
    round_no = 0
    while round_no < 2 or time.monotonic() < deadline:
        round_no += 1
        work = []
        for i in range(CHILDREN_PER_ROUND):
            path = tmp_path / f"r{round_no}c{i}" / "events.jsonl"
            path.parent.mkdir()
            path.write_bytes(original)
            late = i % 2 == 1  # half of the kills near the end, where the files are written
            delay = rng.uniform(0.5 * full, 1.5 * full) if late else rng.uniform(0, full)
            work.append((delay, path, _spawn(path)))
        start = time.perf_counter()
        for _, _, child in work:
            child.stdin.write("go\n")
            child.stdin.flush()
        for delay, _path, child in sorted(work, key=lambda w: w[0]):
            pause = delay - (time.perf_counter() - start)
            if pause > 0:
                time.sleep(pause)
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=60)
            child.stdout.close()
            child.stdin.close()
        for _, path, _ in work:
            data = path.read_bytes()
            assert data in (original, repaired), f"{path}: neither the original nor the repaired bytes"
            directory = sorted(p.name for p in path.parent.iterdir())
            if data == repaired:
                outcomes["repaired"] += 1
                assert (path.parent / "events.jsonl.torn").read_bytes() == torn
                assert (path.parent / "events.jsonl.bak").read_bytes() == original
            else:
                outcomes["original"] += 1
            for name in directory:
                assert name in ("events.jsonl", "events.jsonl.torn", "events.jsonl.bak") or (
                    name.startswith(".events.jsonl.") and name.endswith(".repair.tmp")
                ), name
            # recovery: repairing again always ends at the repaired bytes
            repair_file(path, RepairOptions(backup=False))
            assert path.read_bytes() == repaired
    assert sum(outcomes.values()) >= 2 * CHILDREN_PER_ROUND
