"""Issue 15 item 19: the repair after one killed by SIGKILL cleans up after it.

A real child process runs a real repair and is killed with SIGKILL at the
worst moment: the sidecar, the backup and a complete log-sized temp file
written, the rename not done. (The child pauses itself just before
``os.replace`` so the kill lands there every time; nothing is mocked in the
parent or in the repair that follows.) The next repair removes the stale
``.events.jsonl.*.repair.tmp``, reuses the ``.bak`` and ``.torn`` the killed
one made (no ``.bak.1``/``.torn.1``), and ends at the repaired bytes.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ract_cli.repair.repairer import RepairOptions, repair_file
from ract_cli.testing.synth import write_benchmark_log

CHILD = """
import os, sys
from ract_cli.repair.repairer import repair_file
real_replace = os.replace
def paused(src, dst):
    if str(src).endswith(".repair.tmp"):
        print("at-replace", flush=True)
        sys.stdin.readline()  # killed here
    real_replace(src, dst)
os.replace = paused
repair_file(sys.argv[1])
print("done", flush=True)
"""


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes, bytes]:
    """(original, repaired, torn bytes) of a log cut inside a step, with a torn last line."""
    tmp = tmp_path_factory.mktemp("leftovers-src")
    full = tmp / "full.jsonl"
    write_benchmark_log(full, events=1500, seed=5)
    lines = full.read_bytes().splitlines(keepends=True)
    cut = len(lines) - 7
    torn = lines[cut][: len(lines[cut]) // 2]
    original = b"".join(lines[:cut]) + torn
    ref = tmp / "ref" / "events.jsonl"
    ref.parent.mkdir()
    ref.write_bytes(original)
    assert repair_file(ref, RepairOptions(backup=False)).torn is not None
    return original, ref.read_bytes(), torn


def _killed_at_the_rename(path: Path) -> list[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "at-replace"
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=60) == -signal.SIGKILL
    child.stdout.close()
    assert child.stdin is not None
    child.stdin.close()
    return sorted(p.name for p in path.parent.iterdir())


def test_after_a_sigkill_the_next_repair_removes_the_temp_file_and_adds_no_numbered_sidecars(
    tmp_path: Path, interrupted: tuple[bytes, bytes, bytes]
) -> None:
    original, repaired, torn = interrupted
    path = tmp_path / "run" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(original)
    names = _killed_at_the_rename(path)
    temps = [n for n in names if n.startswith(".events.jsonl.") and n.endswith(".repair.tmp")]
    assert len(temps) == 1 and names == sorted(["events.jsonl", "events.jsonl.bak", "events.jsonl.torn", *temps])
    assert (path.parent / temps[0]).stat().st_size == len(repaired)  # log-sized: what item 19 is about
    assert path.read_bytes() == original

    result = repair_file(path)
    assert result.stale_temps_removed == [path.parent / temps[0]]
    assert result.backup == path.parent / "events.jsonl.bak"
    assert result.torn is not None and result.torn.sidecar == path.parent / "events.jsonl.torn"
    assert sorted(p.name for p in path.parent.iterdir()) == ["events.jsonl", "events.jsonl.bak", "events.jsonl.torn"]
    assert path.read_bytes() == repaired
    assert (path.parent / "events.jsonl.bak").read_bytes() == original
    assert (path.parent / "events.jsonl.torn").read_bytes() == torn


def test_a_completed_repairs_backup_and_sidecar_are_never_reused(
    tmp_path: Path, interrupted: tuple[bytes, bytes, bytes]
) -> None:
    original, _, torn = interrupted
    path = tmp_path / "run" / "events.jsonl"
    path.parent.mkdir()
    (path.parent / "events.jsonl.bak").write_bytes(b"an older backup\n")  # not a link to this log
    (path.parent / "events.jsonl.torn").write_bytes(torn[:-1])  # other bytes
    path.write_bytes(original)
    result = repair_file(path)
    assert result.backup == path.parent / "events.jsonl.bak.1"
    assert result.torn is not None and result.torn.sidecar == path.parent / "events.jsonl.torn.1"
    assert (path.parent / "events.jsonl.bak").read_bytes() == b"an older backup\n"


def test_temp_files_that_are_locked_new_or_not_regular_files_are_left_alone(
    tmp_path: Path, interrupted: tuple[bytes, bytes, bytes]
) -> None:
    original, repaired, _ = interrupted
    path = tmp_path / "run" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(original)
    old = time.time() - 3600
    stale = path.parent / ".events.jsonl.aaaa.repair.tmp"
    locked = path.parent / ".events.jsonl.bbbb.repair.tmp"
    link = path.parent / ".events.jsonl.cccc.repair.tmp"
    other = path.parent / ".other.jsonl.dddd.repair.tmp"
    for p in (stale, locked, other):
        p.write_bytes(b"x" * 100)
        os.utime(p, (old, old))
    link.symlink_to(path)
    fd = os.open(locked, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a repair still writing it
        result = repair_file(path, RepairOptions(backup=False))
    finally:
        os.close(fd)
    assert result.stale_temps_removed == [stale]
    assert not stale.exists() and locked.exists() and link.is_symlink() and other.exists()
    assert path.read_bytes() == repaired


def test_check_removes_nothing(tmp_path: Path, interrupted: tuple[bytes, bytes, bytes]) -> None:
    original, _, _ = interrupted
    path = tmp_path / "run" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(original)
    stale = path.parent / ".events.jsonl.aaaa.repair.tmp"
    stale.write_bytes(b"x")
    os.utime(stale, (0, 0))
    assert repair_file(path, RepairOptions(check=True)).stale_temps_removed == []
    assert stale.exists()
