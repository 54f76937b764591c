"""``ract_cli.atomic``: a file appears whole or not at all, and a failure leaves nothing behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ract_cli.atomic import AtomicFile, atomic_output, write_atomic
from ract_cli.errors import LogIOError, UsageError


def _left(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_the_bytes_land_whole_with_the_mode_asked(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    with atomic_output(target, mode=0o640) as file:
        file.write(b"{")
        assert not target.exists()  # (only the temporary file so far)
        file.write(b"}\n")
    assert target.read_bytes() == b"{}\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _left(tmp_path) == ["out.json"]


def test_write_atomic_replaces_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "key"
    target.write_bytes(b"old")
    write_atomic(target, b"new", mode=0o600)
    assert target.read_bytes() == b"new" and stat.S_IMODE(target.stat().st_mode) == 0o600


@pytest.mark.parametrize("error", [ValueError("the caller's"), KeyboardInterrupt()])
def test_a_failing_block_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path: Path, error: BaseException) -> None:
    target = tmp_path / "report.html"
    target.write_bytes(b"before")
    with pytest.raises(type(error)), atomic_output(target) as file:
        file.write(b"half of it")
        raise error
    assert target.read_bytes() == b"before"
    assert _left(tmp_path) == ["report.html"]


def test_no_overwrite_refuses_an_existing_name(tmp_path: Path) -> None:
    target = tmp_path / "checkpoint"
    target.write_bytes(b"kept")
    with pytest.raises(UsageError, match="already exists"):
        write_atomic(target, b"other", overwrite=False)
    assert target.read_bytes() == b"kept" and _left(tmp_path) == ["checkpoint"]


def test_no_overwrite_loses_a_race_to_a_file_made_meanwhile(tmp_path: Path) -> None:
    """The name is taken while the block runs: the link fails, the other file stays."""
    target = tmp_path / "checkpoint"
    with pytest.raises(UsageError, match="already exists"), atomic_output(target, overwrite=False) as file:
        file.write(b"ours")
        target.write_bytes(b"theirs")
    assert target.read_bytes() == b"theirs" and _left(tmp_path) == ["checkpoint"]


def test_a_directory_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a directory"):
        write_atomic(tmp_path, b"x")


def test_a_missing_directory_fails_before_the_block_runs(tmp_path: Path) -> None:
    ran = False
    with pytest.raises(LogIOError, match="cannot write"), atomic_output(tmp_path / "no" / "such" / "file"):
        ran = True
    assert not ran


def test_a_full_disk_is_a_log_io_error(tmp_path: Path) -> None:
    """``/dev/full`` stands in for a full file system: its writes fail with ENOSPC."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "wb", buffering=0) as full:
        file = AtomicFile("/dev/full", full)  # type: ignore[arg-type]  # (unbuffered: each write reaches the device)
        with pytest.raises(LogIOError, match="No space left on device"):
            file.write(b"x")
