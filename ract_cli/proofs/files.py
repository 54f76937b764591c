"""Small file helpers of the proofs package: atomic writes, bounded reads."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from ract_cli.errors import LogIOError, UsageError

#: the largest checkpoint, proof or key file read (a checkpoint is ~200 bytes, a proof of 2^63 leaves ~4 KB
#: plus its event line, which may be as long as a log line)
MAX_INPUT_BYTES = 64 << 20


def read_small(path: str | os.PathLike[str], what: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a small input file, or ``LogIOError`` (exit 5) saying why not."""
    p = Path(path)
    try:
        if p.is_dir():
            raise LogIOError(f"{what} {path} is a directory")
        if p.exists() and not p.is_file():
            raise LogIOError(f"{what} {path} is not a regular file")
        with open(p, "rb") as f:
            data = f.read(limit + 1)
    except FileNotFoundError:
        raise LogIOError(f"{what} {path}: no such file") from None
    except OSError as exc:
        raise LogIOError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise LogIOError(f"{what} {path} is larger than {limit} bytes")
    return data


def write_atomic(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o644, overwrite: bool = True) -> None:
    """Write ``data`` to ``path`` all at once: a temporary file in the same directory, fsync, rename.

    ``overwrite=False`` never replaces an existing file, even one created
    meanwhile (the temporary file is hard-linked into place, which fails if
    the name is taken): ``UsageError`` then. Nothing is left behind on failure.
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not overwrite and (target.exists() or target.is_symlink()):
        raise UsageError(f"{path} already exists (use --force to replace it)")
    if target.is_dir():
        raise UsageError(f"{path} is a directory")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise LogIOError(f"cannot write in {directory}: {exc.strerror or exc}") from None
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        if overwrite:
            os.replace(tmp, target)
        else:
            try:
                os.link(tmp, target)
            except FileExistsError:
                raise UsageError(f"{path} already exists (use --force to replace it)") from None
            os.unlink(tmp)
        _fsync_dir(directory)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise LogIOError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
