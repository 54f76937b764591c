"""A file written all at once: a temporary file beside it, fsync, rename.

Every file a command writes whole (a checkpoint, a key, the OTLP export,
``project --output``, export's marker) is written here: a reader never sees
half of it, and a failure or an early stop leaves nothing behind. (``repair``
rewrites a log with its own steps: a backup, a sidecar and a lock.)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

from ract_cli.errors import LogIOError, UsageError

_T = TypeVar("_T")


class AtomicFile:
    """The file ``atomic_output`` is writing: ``write`` bytes to it."""

    __slots__ = ("_path", "_stream")

    def __init__(self, path: str | os.PathLike[str], stream: BinaryIO) -> None:
        self._path = path
        self._stream = stream

    def write(self, data: bytes) -> None:
        """Append ``data``; a failure (a full disk) is a ``LogIOError`` naming the file."""
        _ours(self._path, lambda: self._stream.write(data))


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str], *, mode: int = 0o644, overwrite: bool = True) -> Iterator[AtomicFile]:
    """A file whose bytes become ``path`` once the ``with`` block ends without an exception.

    The temporary file is made on entry, so a ``path`` that cannot be written
    fails before any work (``LogIOError``; a directory is a ``UsageError``).
    ``mode``: the file's permissions (``mkstemp``'s 0600 would keep other
    readers out). ``overwrite=False`` never replaces an existing file, even one
    created meanwhile (the temporary file is hard-linked into place, which
    fails if the name is taken): ``UsageError`` then.
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not overwrite and (target.exists() or target.is_symlink()):
        raise UsageError(f"{path} already exists (use --force to replace it)")
    if target.is_dir():
        raise UsageError(f"{path} is a directory")
    fd, tmp = _ours(path, lambda: tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory))
    try:
        stream = os.fdopen(fd, "wb")
        try:
            _ours(path, lambda: os.fchmod(fd, mode))
            yield AtomicFile(path, stream)
            _ours(path, stream.flush)
            _ours(path, lambda: os.fsync(fd))
        finally:
            with contextlib.suppress(OSError):  # (after a failed flush, close fails the same way: said above)
                stream.close()
        if overwrite:
            _ours(path, lambda: os.replace(tmp, target))
        else:
            try:
                os.link(tmp, target)
            except FileExistsError:
                raise UsageError(f"{path} already exists (use --force to replace it)") from None
            except OSError as exc:
                raise LogIOError(f"cannot write {path}: {exc.strerror or exc}") from None
            with contextlib.suppress(OSError):  # (the file is in place: a stray temporary name is all that is left)
                os.unlink(tmp)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(directory)


def write_atomic(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o644, overwrite: bool = True) -> None:
    """Write ``data`` to ``path`` all at once (``atomic_output``)."""
    with atomic_output(path, mode=mode, overwrite=overwrite) as file:
        file.write(data)


def _ours(path: str | os.PathLike[str], step: Callable[[], _T]) -> _T:
    """One of our own steps of writing ``path``: its ``OSError`` is a ``LogIOError`` (exit 5). What the
    caller's block raises passes as it is."""
    try:
        return step()
    except OSError as exc:
        raise LogIOError(f"cannot write {path}: {exc.strerror or exc}") from None


def fsync_dir(directory: Path) -> None:
    """Make the rename durable (best effort: some file systems refuse to open a directory)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
