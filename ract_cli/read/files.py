"""Opening a log: regular files only, never a read that blocks (FIFOs, /proc/kmsg, devices)."""

from __future__ import annotations

import errno as _errno
import io as _io
import os
import stat as _stat
from typing import TYPE_CHECKING, BinaryIO

from ract_cli.errors import LogIOError

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer


class _NonBlockingFileIO(_io.FileIO):
    """A ``FileIO`` opened with ``O_NONBLOCK`` whose read that would block raises.

    Regular files ignore ``O_NONBLOCK``. A "regular" file that blocks in
    ``read`` (``/proc/kmsg`` with an empty kernel log, some FUSE or network
    files) then fails at once with ``BlockingIOError`` (EAGAIN), an ``OSError``
    the framing reports as an ``IO_ERROR`` finding, instead of hanging. A plain
    non-blocking ``FileIO`` returns ``None`` there, which ``BufferedReader``
    turns into ``b""``: a silent, false end of file.
    """

    def readinto(self, buffer: WriteableBuffer) -> int:
        n = super().readinto(buffer)
        if n is None:
            raise self._would_block()
        return n

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            return self.readall()
        data = super().read(size)
        if data is None:
            raise self._would_block()
        return data

    def readall(self) -> bytes:
        parts: list[bytes] = []
        while data := self.read(1 << 20):
            parts.append(data)
        return b"".join(parts)

    @staticmethod
    def _would_block() -> BlockingIOError:
        return BlockingIOError(_errno.EAGAIN, "the read would block (a kernel, FUSE or network file?)")


def open_log(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a log for reading, turning every OS failure into ``LogIOError``.

    Refuses anything that is not a regular file (directories, FIFOs, devices)
    before opening it, so a FIFO can never block the reader, and again after
    opening it (the path may have been replaced in between). The file is opened
    with ``O_NONBLOCK``: a regular file whose read would block fails with
    ``BlockingIOError`` on read (an ``IO_ERROR`` finding) instead of hanging.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise LogIOError(f"no such file: {path}") from None
    except OSError as exc:
        raise LogIOError(f"cannot stat {path}: {exc.strerror or exc}") from None
    if _stat.S_ISDIR(st.st_mode):
        raise LogIOError(f"{path} is a directory, not a log")
    if not _stat.S_ISREG(st.st_mode):
        raise LogIOError(f"{path} is not a regular file (FIFO, device or socket)")
    try:
        raw = _NonBlockingFileIO(path, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NONBLOCK))
    except OSError as exc:
        raise LogIOError(f"cannot open {path}: {exc.strerror or exc}") from None
    try:
        regular = _stat.S_ISREG(os.fstat(raw.fileno()).st_mode)
    except OSError as exc:
        raw.close()
        raise LogIOError(f"cannot stat {path}: {exc.strerror or exc}") from None
    if not regular:  # replaced (by a FIFO, a device...) between the stat and the open
        raw.close()
        raise LogIOError(f"{path} is not a regular file (FIFO, device or socket)")
    return _io.BufferedReader(raw, buffer_size=1 << 20)
