"""Opening a log: regular files only, never a read that blocks (FIFOs, /proc/kmsg, devices).

Two sources are decoded here, so every command reads them through the one
chain reader: ``-`` (standard input) and gzip-compressed logs (a ``.gz``
name, or a file that starts with gzip's magic bytes, which no plain log
can). Offsets in findings are then offsets in the decoded byte stream.
"""

from __future__ import annotations

import errno as _errno
import io as _io
import os
import stat as _stat
import zlib

from ract_cli.errors import LogIOError

#: the PATH that names standard input
STDIN_PATH = "-"
#: the file-name ending of a gzip-compressed log (read transparently)
GZIP_SUFFIX = ".gz"


def is_stdin(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is ``-``: the log comes from standard input."""
    return os.fspath(path) == STDIN_PATH


#: the first two bytes of every gzip member (RFC 1952); no plain log starts with 0x1f
GZIP_MAGIC = b"\x1f\x8b"


def is_compressed(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is read as a gzip-compressed log: a ``.gz`` name, or a file starting with gzip's magic."""
    if is_stdin(path):
        return False
    if os.fspath(path).endswith(GZIP_SUFFIX):
        return True
    try:
        with open(path, "rb", buffering=0, opener=lambda n, f: os.open(n, f | os.O_NONBLOCK)) as f:
            if not _stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return False
            return f.read(2) == GZIP_MAGIC
    except OSError:
        return False


def log_size(path: str | os.PathLike[str]) -> int:
    """The bytes a progress bar counts for ``path``: 0 for stdin or a path that cannot be seen.

    For a gzip log this is its compressed size (what ``ChainReader.progress``
    reports for it is the compressed position too).
    """
    if is_stdin(path):
        return 0
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import Any, BinaryIO

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
    """Open a log for reading (``-``: standard input; gzip decoded), every OS failure a ``LogIOError``."""
    return _open_stdin() if is_stdin(path) else _open_plain(path)


def open_log_bytes(path: str | os.PathLike[str]) -> _io.BufferedReader:
    """Open a log file's own bytes for reading, turning every OS failure into ``LogIOError``.

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


def _open_plain(path: str | os.PathLike[str]) -> BinaryIO:
    """``open_log`` for a path: the regular-file checks, a non-blocking read, gzip decoded when it is gzip."""
    buffered = open_log_bytes(path)
    try:
        gzipped = os.fspath(path).endswith(GZIP_SUFFIX) or buffered.peek(2)[:2] == GZIP_MAGIC
    except OSError:
        gzipped = False  # the framer meets the same read error and reports it where it happens
    return _DecodedLog(_GzipStream(buffered)) if gzipped else buffered


class _GzipStream(_io.RawIOBase):
    """A gzip file decompressed as it is read: bounded memory, every member, each failure an ``OSError``.

    zlib checks each member's header, CRC-32 and length (``wbits=31``). A
    stream that ends inside a member sets ``truncated`` and reads as end of
    file, so the bytes decoded before the cut are judged like any log's (the
    reader then reports the cut as a torn tail). Corrupt data is an
    ``OSError`` at the point reached: the framer's ``IO_ERROR``.
    Concatenated members (``cat a.gz b.gz``) read as one stream; zero bytes
    padding the end are ignored, as gzip(1) does; anything else after a
    member is corrupt data.
    """

    _CHUNK = 1 << 14  # small: data decoded before a failing CRC check is handed out first

    def __init__(self, source: BinaryIO) -> None:
        self._source = source
        self._salvaged = b""  # decoded before a failure, handed out before the failure is raised
        self._failure: OSError | None = None
        self._z = zlib.decompressobj(wbits=31)
        self._in = b""  # compressed bytes read from the source, not yet taken by zlib
        self._fresh = True  # no byte of the current member given to zlib yet
        self._members = 0
        self._done = False
        self.truncated = False
        self.consumed = 0  # compressed bytes read so far (what progress counts)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        try:
            self._source.close()
        finally:
            super().close()

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        if self._salvaged:
            n = min(len(view), len(self._salvaged))
            view[:n], self._salvaged = self._salvaged[:n], self._salvaged[n:]
            return n
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        want = len(view)
        while not self._done and want:
            if self._fresh and self._members:
                self._in = self._in.lstrip(b"\0")
            if not self._in:
                self._in = self._source.read(self._CHUNK)
                self.consumed += len(self._in)
                if not self._in:
                    self._done = True
                    self.truncated = not self._fresh
                    break
                continue
            before = self._z.copy()  # (~1 us a call of up to _CHUNK: what a failure below starts again from)
            try:
                out = self._z.decompress(self._in, want)
            except zlib.error as exc:
                self._done = True
                failure = OSError(_errno.EIO, f"corrupt gzip data ({exc})")
                # zlib drops what this call decoded before the failure (a bad CRC at a member's end: the
                # member's last lines); decoded again a byte at a time, it is handed out first, as gzip -dc does
                self._salvaged = _decoded_before_failure(before, self._in, want)
                if not self._salvaged:
                    raise failure from None
                self._failure = failure
                return self.readinto(buffer)
            self._fresh = False
            if self._z.eof:
                self._in = self._z.unused_data
                self._z = zlib.decompressobj(wbits=31)
                self._fresh = True
                self._members += 1
            else:
                self._in = self._z.unconsumed_tail
            if out:
                view[: len(out)] = out
                return len(out)
        return 0


def _decoded_before_failure(z: Any, data: bytes, limit: int) -> bytes:
    """What ``z`` (a copy of the decompressor from before a failing call) decodes of ``data`` before it
    fails, at most ``limit`` bytes: fed a byte at a time, so no output is lost with the failure."""
    out = bytearray()
    for i in range(len(data)):
        try:
            out += z.decompress(data[i : i + 1], limit - len(out))
        except zlib.error:
            break
        if len(out) >= limit or z.unconsumed_tail:
            break
    return bytes(out)


class _DecodedLog(_io.BufferedReader):
    """A log decoded on the fly (gzip): reads like a file; its progress is counted in source bytes."""

    def __init__(self, raw: _GzipStream) -> None:
        super().__init__(raw, buffer_size=1 << 20)
        self.stream = raw


class _StdinSource:
    """Standard input, readable from its start again while it has only been peeked at.

    The reader looks at a log's first lines (its dialect, gzip's magic)
    before reading it from the start, and a pipe cannot seek: what is read
    from fd 0 is kept, up to ``KEEP`` bytes, and given again to a later
    opener. Past that it is dropped (bounded memory), and a further open is
    an IO error.
    """

    KEEP = 16 << 20

    def __init__(self) -> None:
        self.kept = bytearray()
        self.frontier = 0  # bytes read from fd 0 so far
        self.spent = False  # ``kept`` was dropped: only the reader at the frontier can go on

    def read_at(self, pos: int, n: int) -> bytes:
        if pos < self.frontier:
            if self.spent:
                raise OSError(_errno.EIO, "standard input was already read")
            return bytes(self.kept[pos : pos + n])
        data = os.read(0, n)
        self.frontier += len(data)
        if not self.spent:
            if len(self.kept) + len(data) <= self.KEEP:
                self.kept += data
            else:
                self.spent = True
                self.kept = bytearray()
        return data


class _StdinStream(_io.RawIOBase):
    """One reading of standard input from its first byte (see ``_StdinSource``)."""

    def __init__(self, source: _StdinSource) -> None:
        self._source = source
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self._source.read_at(self._pos, len(view))
        view[: len(data)] = data
        self._pos += len(data)
        return len(data)


_stdin: _StdinSource | None = None


def _open_stdin() -> BinaryIO:
    """``open_log("-")``: standard input from its start; gzip is decoded when it starts with gzip's magic."""
    global _stdin
    if os.isatty(0):
        raise LogIOError("standard input is a terminal, not a log: pipe one in (... | ract trace verify -)")
    if _stdin is None:
        _stdin = _StdinSource()
    if _stdin.spent:
        raise LogIOError("standard input was already read (a log on stdin can be given once)")
    buffered = _io.BufferedReader(_StdinStream(_stdin), buffer_size=1 << 20)
    try:
        gzipped = buffered.peek(2)[:2] == GZIP_MAGIC
    except OSError:
        gzipped = False  # the framer meets the same read error and reports it
    return _DecodedLog(_GzipStream(buffered)) if gzipped else buffered


def is_decoded(handle: BinaryIO) -> bool:
    """Whether the handle decodes its source (gzip): its offsets are not the source's."""
    return isinstance(handle, _DecodedLog)


def own_descriptor(handle: BinaryIO) -> tuple[int, os.stat_result] | None:
    """The descriptor whose bytes, at the same offsets, the handle reads, and its ``fstat``; None when there
    is none: bytes in memory, standard input's stream, or a decoded (gzip) log, whose descriptor holds other
    bytes. (What another reader of the same bytes may ``pread``: C's read ahead, a proving worker.)"""
    if is_decoded(handle):
        return None
    try:
        fd = handle.fileno()
        return fd, os.fstat(fd)
    except (OSError, ValueError, AttributeError):  # (io.UnsupportedOperation is an OSError and a ValueError)
        return None


def source_offset(handle: BinaryIO, offset: int) -> int:
    """Where a progress bar stands after ``offset`` decoded bytes: the compressed bytes read, for gzip."""
    return handle.stream.consumed if isinstance(handle, _DecodedLog) else offset


def truncated(handle: BinaryIO) -> bool:
    """Whether the handle's gzip stream ended inside a member (a cut archive)."""
    return isinstance(handle, _DecodedLog) and handle.stream.truncated


TRUNCATED_MESSAGE = "the gzip stream ends before its end-of-stream marker: the archive is cut short (torn tail)"
