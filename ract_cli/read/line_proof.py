"""Lines proven by other processes, for a fold that reads them on trust (the Python core's ``project --jobs 2``).

``ChainReader.fold`` with the Python core proves each line it takes with
``fastpath.fast_analyze``: parse, proof of the layout, canonical dump,
SHA-256, envelope and payload checks, then the fold. Of that work only the
parse is needed to fold. So ``project`` can fold a large log here with
``trusted_analyze`` in place of ``fast_analyze`` while worker processes run
``fast_analyze`` over the same bytes: ``ProofTap`` is handed every read of
the fold's reader (``framing.frame_blocks``' ``tap``), cuts the bytes into
pieces of whole lines and has a worker prove each (``range_proven``).

Why the fold's answer is then exactly the ordinary fold's: when every piece
is proven, every line the fold's chain mode asked about is one
``fast_analyze`` proves, and on such a line ``trusted_analyze`` returns what
``fast_analyze`` returns (the object orjson parses and its ``hash``). Every
other step of the reading is the same code on the same bytes: a worker
reads its piece again from the file the reader has open (its descriptor,
inherited) and answers with the SHA-256 of what it proved, which must be
that of the bytes read here (a log rewritten meanwhile is not proven).
When a piece is not proven, the fold is dropped (``NotProven``) and the
log is read again the ordinary way.

The workers prove a line more slowly than the fold takes it on trust: when
they fall behind (``BEHIND``), the fold proves the next read's lines itself
(``ProofTap.proven_in_fold``: ``fast_analyze`` in place of the stand-in, each
line parsed once), and no piece holds them.
"""

from __future__ import annotations

import hashlib
import os
from collections import deque

import orjson

from ract_cli.format.json_types import Event
from ract_cli.read.event import BIG_LINE_BYTES
from ract_cli.read.fastpath import fast_analyze
from ract_cli.read.files import own_descriptor
from ract_cli.read.python_chain import body_end

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from concurrent.futures import Executor, Future
    from typing import BinaryIO

#: a piece is sent once it holds this many bytes of whole lines (so it holds up to one read more): below a read
#: (``framing.BLOCK_BYTES``), a piece a read. At the end this process waits for up to two pieces (the pool hands a
#: worker its next piece before it is done with one): with 2 MiB pieces that wait was 70-110 ms, ~10 % of the run
PIECE_BYTES = 1 << 19
#: pieces sent and not yet settled, at most: with this many waiting, this process proves the next piece itself
#: (bounded memory; no more workers than this can be kept busy)
IN_FLIGHT = 4
#: with this many pieces sent and not yet answered, the fold proves the next read's lines itself (``fast_analyze``
#: in its loop: each line parsed once, where a piece proven here is parsed twice); so it does near the end, once
#: the pieces waiting hold as many bytes as are left to read (the wait at the end fell from ~30 ms to ~4 ms).
#: At 2 or 3 this process proved so much that it fell behind the worker (docs/performance.md)
BEHIND = 4


class NotProven(Exception):
    """A piece of the log holds a line ``fast_analyze`` does not prove: the fold on trust is dropped."""


def trusted_analyze(body: bytes | memoryview, schema_version: int) -> tuple[Event, str] | None:
    """``fast_analyze``'s answer on a line it proves, without proving it: the parsed object and its ``hash``.

    Only for lines ``lines_proven`` proved. ``None`` (as ``fast_analyze``
    answers too) for a body longer than ``BIG_LINE_BYTES``, which
    ``lines_proven`` leaves unproven, and wherever no such answer can be
    built; any other nonsense a line holds is the proof's to find.
    """
    if len(body) > BIG_LINE_BYTES:  # (``schema_version``: unused, the signature is ``fast_analyze``'s)
        return None
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict:
        return None
    stored = obj.get("hash")
    return (obj, stored) if type(stored) is str else None


def lines_proven(data: bytes, schema_version: int) -> bool:
    """Whether ``fast_analyze`` proves every line of ``data`` (whole lines, each ending in ``\\n``) whose body
    is at most ``BIG_LINE_BYTES``. The body is what ``python_chain`` hands the proof (its ``body_end``): the
    line without its ``\\n`` and a ``\\r`` before it. A worker's task (and this process's, for a piece it proves itself)."""
    pos, size = 0, len(data)
    find = data.find
    while pos < size:
        end = find(b"\n", pos)
        if end < 0:
            return False  # (a piece holds whole lines: only a file cut short since it was read here)
        stop = body_end(data, end)
        if stop - pos <= BIG_LINE_BYTES and fast_analyze(data[pos:stop], schema_version) is None:
            return False
        pos = end + 1
    return True


def range_proven(source: tuple[int, int, int], start: int, size: int, schema_version: int) -> tuple[bool, bytes]:
    """A worker's task: whether ``lines_proven`` holds for the ``size`` bytes at ``start`` of the file the reader
    has open, and the SHA-256 of the bytes it read (the reader compares it with that of the bytes it folded).

    ``source``: the reader's descriptor, inherited by the forked worker, and the device and inode it had
    there. The file is read at its offset (``pread``: the reader's own position is not moved), never opened
    again by its path: a path renamed, removed or replaced (by a FIFO, say) meanwhile changes nothing. A
    descriptor that is not that file here (a worker not forked) proves nothing."""
    fd, device, inode = source
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (device, inode):
            return False, b""
        parts = []
        while size > 0:
            part = os.pread(fd, size, start)
            if not part:
                break
            parts.append(part)
            start += len(part)
            size -= len(part)
    except OSError:
        return False, b""
    data = b"".join(parts)
    return lines_proven(data, schema_version), hashlib.sha256(data).digest()


#: a piece sent to a worker: its answer, its bytes (as parts: this process proves it if no worker starts it),
#: and the SHA-256 of its bytes
_Sent = tuple["Future[tuple[bool, bytes]]", list["bytes | memoryview"], bytes]


class ProofTap:
    """``ChainReader.tap``: the log's reads, cut into pieces of whole lines, proven by ``pool``'s workers.

    A worker reads its piece from the file again (``range_proven``: by the
    reader's own descriptor) and sends back, with its answer, the SHA-256 of
    the bytes it proved: they must be the bytes read here (no copy of the log
    goes through a pipe). A line whose start already passes
    ``BIG_LINE_BYTES`` (plus a ``\\r``) when a read ends is dropped, never held
    whole; a shorter one over the limit is sent, and skipped by the proof
    (``trusted_analyze`` never answers for either). With ``IN_FLIGHT``
    pieces waiting, the next piece is proven here (the workers are behind;
    memory stays bounded); ``finish`` takes back the pieces the pool has not
    handed to a worker yet, newest first, while the workers take the oldest.
    Raises ``NotProven`` as soon as a piece is known unproven.
    """

    def __init__(self, pool: Executor, schema_version: int) -> None:
        self.pool = pool
        self.source: tuple[int, int, int] | None = None  # (descriptor, device, inode) of the log being read
        self.schema_version = schema_version
        self.piece_bytes, self.in_flight = PIECE_BYTES, IN_FLIGHT
        self.read_end = 0  # the file offset after the reads tapped so far
        self.ready: list[bytes | memoryview] = []  # whole lines not sent yet, from file offset ready_at on
        self.ready_at = 0
        self.ready_bytes = 0
        self.open: list[bytes] = []  # the start of the line the last read ended in
        self.open_bytes = 0
        self.skipping = False  # inside a line too long to be trusted: its bytes are dropped
        self.waiting: deque[_Sent] = deque()
        self.behind = BEHIND
        self.size = 0  # the log's size when opened
        self.in_fold: deque[int] = deque()  # offsets of the reads whose blocks the fold proves (``proven_in_fold``)

    def opened(self, f: BinaryIO) -> None:
        """The reader opened the log as ``f``: what the workers will read it by (they are forked once it is
        open). ``NotProven`` for a log with no descriptor of its own: bytes read before, in memory, or a
        decoded (gzip) one, whose descriptor holds other bytes."""
        own = own_descriptor(f)
        if own is None:
            raise NotProven
        fd, st = own
        self.source = (fd, st.st_dev, st.st_ino)
        self.size = st.st_size

    def __call__(self, chunk: bytes) -> None:
        base = self.read_end
        self.read_end += len(chunk)
        if not chunk:  # the end: a last line without its "\n" is never proven (nor taken)
            self._send()
            return
        first = chunk.find(b"\n")
        if first < 0:
            self._hold(chunk)
            return
        own = 0  # where the read's own block starts (``frame_blocks``: a line begun before is a block of its own)
        if self.skipping:  # the long line ends here: the next piece starts after it
            self.skipping = False
            self.ready_at = base + first + 1
            own = first + 1
        elif self.open:  # the line begun in an earlier read ends here
            self.ready += self.open
            self.ready.append(memoryview(chunk)[: first + 1])
            self.ready_bytes += self.open_bytes + first + 1
            own = first + 1
        self.open, self.open_bytes = [], 0
        last = chunk.rfind(b"\n")
        if last >= own:
            if self._behind():  # the workers are behind: the fold proves this read's block itself
                self._send()  # (the lines before it: a piece is one range of the file)
                self.ready_at = base + last + 1
                self.in_fold.append(base)
            else:
                self.ready.append(memoryview(chunk)[own : last + 1])
                self.ready_bytes += last + 1 - own
        if last + 1 < len(chunk):
            self._hold(chunk[last + 1 :])
        if self.ready_bytes >= self.piece_bytes:
            self._send()

    def _behind(self) -> bool:
        """Whether the workers are ``BEHIND`` pieces behind the reads, or hold at least the bytes left to read."""
        waiting = self._answered()
        if len(waiting) >= self.behind:
            return True
        return (
            bool(waiting) and sum(len(part) for _, parts, _ in waiting for part in parts) >= self.size - self.read_end
        )

    def _answered(self) -> deque[_Sent]:
        """Settle the pieces answered (the oldest first, up to one not answered yet); the pieces still waiting."""
        waiting = self.waiting
        while waiting and waiting[0][0].done():
            self._settle(waiting.popleft())
        return waiting

    def proven_in_fold(self, offset: int) -> bool:
        """Whether the fold proves the block of the read at file ``offset`` itself (``fast_analyze``: no piece holds
        its lines), as this tap decided when it was handed that read. Asked for each block, in order."""
        in_fold = self.in_fold
        while in_fold and in_fold[0] < offset:
            in_fold.popleft()
        return bool(in_fold) and in_fold[0] == offset

    def _hold(self, part: bytes) -> None:
        """Keep the start of an unfinished line, unless it is already too long to be trusted."""
        if self.skipping:
            return
        self.open.append(part)
        self.open_bytes += len(part)
        if self.open_bytes > BIG_LINE_BYTES + 1:  # (+ a "\r": the "\n" is never held)
            self._send()  # (the lines before it: a piece is one range of the file)
            self.open, self.open_bytes, self.skipping = [], 0, True

    def _send(self) -> None:
        if self.ready:
            parts, at, size = self.ready, self.ready_at, self.ready_bytes
            self.ready, self.ready_at, self.ready_bytes = [], at + size, 0
            if len(self._answered()) >= self.in_flight:  # the workers are behind: this one is proven here
                self._prove_here(parts)
                return
            if self.source is None:
                raise NotProven  # (read before ``opened``: not by a reader)
            digest = hashlib.sha256()
            for part in parts:
                digest.update(part)
            future = self.pool.submit(range_proven, self.source, at, size, self.schema_version)
            self.waiting.append((future, parts, digest.digest()))

    def _prove_here(self, parts: list[bytes | memoryview]) -> None:
        if not lines_proven(b"".join(parts), self.schema_version):
            raise NotProven

    def _settle(self, sent: _Sent) -> None:
        future, parts, digest = sent
        if future.cancel():
            self._prove_here(parts)
            return
        proven, read = future.result()
        if not proven or read != digest:  # (the file changed since it was read here: no answer for these bytes)
            raise NotProven

    def finish(self) -> None:
        """Wait for every piece (proving here those not handed to a worker, newest first); ``NotProven`` if one is
        not proven."""
        self._send()
        while self.waiting:
            self._settle(self.waiting.pop())
