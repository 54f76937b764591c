"""The next read of a log, done by the native core's helper thread while it checks the read before.

With ``--jobs 2`` on one large log, the native chain mode checks each read
(``framing.BLOCK_BYTES``) in two threads, but the read itself (a copy out of
the page cache) was the calling thread's alone, between two blocks, while
the helper thread did not run. ``check_block(read_ahead=(fd, offset, size))``
has the helper ``pread`` the next read first, while the calling thread
checks; ``frame_blocks`` then takes those bytes instead of reading them
(``ReadAhead.read``). They are the file's bytes at that offset, as the read
would have returned them a moment later. Anything short of a whole read (the
end of the file, an error, no helper) is read again here as before, so
errors and the last read are met exactly where they were.
"""

from __future__ import annotations

import stat

from ract_cli.read.files import own_descriptor

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import BinaryIO


class ReadAhead:
    """The reads of one regular file for ``framing.frame_blocks``, of which C may have done the next early."""

    __slots__ = ("f", "fd", "size", "_asked", "_at", "_data", "last")

    def __init__(self, f: BinaryIO, fd: int, size: int) -> None:
        self.f, self.fd, self.size = f, fd, size
        self._asked = False  # the next read was asked for (once a read: a block may take several calls)
        self._at = 0  # where it starts
        self._data: bytes | None = None  # what C read there
        #: the last read (the bytes of the block ``frame_blocks`` makes of it; a line across two reads is a
        #: block of its own, made of other bytes)
        self.last = b""

    @classmethod
    def of(cls, f: BinaryIO, size: int) -> ReadAhead | None:
        """For a regular file's own handle (not gzip's, stdin's or a ``BytesIO``'s); else None."""
        own = own_descriptor(f)
        return cls(f, own[0], size) if own is not None and stat.S_ISREG(own[1].st_mode) else None

    def want(self) -> tuple[int, int, int] | None:
        """``check_block``'s ``read_ahead=``: the next read's (fd, offset, size); None once asked."""
        if self._asked:
            return None
        self._asked = True
        self._at = self.f.tell()
        return self.fd, self._at, self.size

    def got(self, data: bytes | None) -> None:
        """What ``check_block`` answered: the whole next read, or None (then it is read here)."""
        self._data = data

    def read(self, size: int) -> bytes:
        """``f.read(size)``: the bytes C read ahead when it read them all, ``f`` moved past them (kept as ``last``)."""
        data, self._data, self._asked = self._data, None, False
        if data is not None and size == self.size:
            self.f.seek(self._at + size)
        else:
            data = self.f.read(size)
        self.last = data
        return data
