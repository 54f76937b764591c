"""What a repair killed midway leaves behind, and how the next repair deals with it.

A repair writes, in order: the torn tail's sidecar, the backup (a hard link),
a temp file ``.<log name>.<random>.repair.tmp`` in the target's directory, and
renames the temp file over the log. Killed before the rename, it leaves the
log untouched but may leave those files. The next repair:

* **removes the temp files it owns**: names ``.<log name>.*.repair.tmp`` in
  the target's directory that are regular files (never a symlink), belong to
  this user, are older than this repair (last modified before it started) and
  are not locked (a repair holds an exclusive ``flock`` on its temp file from
  its creation until it has been renamed into place, so a repair still
  running is never touched);
* **reuses** the backup and the sidecar the killed repair made instead of
  adding ``.bak.1`` / ``.torn.1``: a ``<log>.bak`` (or ``.bak.N``) that is the
  same inode as the log (the hard link made just before a rename that never
  came), and a ``<log>.torn`` (or ``.torn.N``) holding exactly the torn bytes
  it would write. Nothing is lost by reusing them: they hold those very bytes.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

TEMP_SUFFIX = ".repair.tmp"


def temp_prefix(target: Path) -> str:
    """The name prefix of the temp files a repair of ``target`` creates next to it."""
    return f".{target.name}."


def _numbered(base: Path) -> Iterator[Path]:
    """``base``, ``base.1``, ``base.2``... as long as they exist (how ``_unique_path`` names files)."""
    candidate, n = base, 0
    while os.path.lexists(candidate):
        yield candidate
        n += 1
        candidate = base.with_name(f"{base.name}.{n}")


def remove_stale_temps(target: Path, started_ns: int) -> list[Path]:
    """Remove the stale temp files of repairs of ``target`` (see the module docstring); the ones removed."""
    prefix = temp_prefix(target)
    removed: list[Path] = []
    try:
        names = os.listdir(target.parent)
    except OSError:
        return removed
    for name in sorted(names):
        if not (name.startswith(prefix) and name.endswith(TEMP_SUFFIX) and len(name) > len(prefix + TEMP_SUFFIX)):
            continue
        path = target.parent / name
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mtime_ns >= started_ns:
                continue
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held by a repair still writing it: leave it
            again = os.lstat(path)
            if (again.st_dev, again.st_ino) == (st.st_dev, st.st_ino):
                os.unlink(path)
                removed.append(path)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def reusable_backup(base: Path, src: os.stat_result) -> Path | None:
    """An existing ``base`` / ``base.N`` that is a hard link to the log itself (``src``), else None."""
    for candidate in _numbered(base):
        try:
            st = os.lstat(candidate)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == (src.st_dev, src.st_ino):
            return candidate
    return None


def reusable_sidecar(base: Path, src_fd: int, start: int, length: int) -> Path | None:
    """An existing ``base`` / ``base.N`` holding exactly ``length`` bytes of ``src_fd`` from ``start``."""
    for candidate in _numbered(base):
        try:
            st = os.lstat(candidate)
            if not stat.S_ISREG(st.st_mode) or st.st_size != length:
                continue
            if _same_bytes(candidate, src_fd, start, length):
                return candidate
        except OSError:
            continue
    return None


def _same_bytes(path: Path, src_fd: int, start: int, length: int) -> bool:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        offset = 0
        while offset < length:
            chunk = min(length - offset, 1 << 20)
            mine, theirs = os.pread(fd, chunk, offset), os.pread(src_fd, chunk, start + offset)
            if not mine or mine != theirs:
                return False
            offset += len(mine)
        return os.pread(fd, 1, length) == b""
    finally:
        os.close(fd)
