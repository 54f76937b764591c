"""SPEC §2.1 framing: lines, line endings, over-long lines, torn tails; the unverified line stream of grep --no-verify."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from ract_cli.format.json_types import JSONObject
from ract_cli.read import core
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES
from ract_cli.read.files import TRUNCATED_MESSAGE, is_decoded, open_log, truncated
from ract_cli.read.json_rules import (
    MAX_LINE_NODES,
    Problem,
    _describe_json_error,
    _too_deep_problem,
    _too_many_nodes_problem,
    too_deep,
    too_many_nodes,
)
from ract_cli.records import Record

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import BinaryIO

    from ract_cli.read.read_ahead import ReadAhead


def split_line_ending(raw: bytes) -> tuple[bytes, bool]:
    """The line's body without ``\\n`` / ``\\r\\n``, and whether it had ``\\n``."""
    if raw.endswith(b"\n"):
        body = raw[:-1]
        if body.endswith(b"\r"):
            body = body[:-1]
        return body, True
    return raw, False


def within_limit(raw: bytes, max_line_bytes: int) -> bytes | None:
    """``raw`` as ``LineFramer`` yields it: ``None`` when its body is longer than ``max_line_bytes``."""
    return None if len(raw) > max_line_bytes and len(split_line_ending(raw)[0]) > max_line_bytes else raw


def lines_of(
    data: bytes, pos: int, size: int, line_no: int, offset: int, max_line_bytes: int
) -> Iterator[tuple[int, int, bytes | None]]:
    """The lines of a block's ``data`` from byte ``pos`` (line ``line_no``) to ``size``, as ``LineFramer``
    yields them; ``offset``: the file offset of ``data[0]``."""
    while pos < size:
        end = data.index(b"\n", pos) + 1
        yield line_no, offset + pos, within_limit(data[pos:end], max_line_bytes)
        pos, line_no = end, line_no + 1


def cut_archive(f: BinaryIO, torn: bool) -> Problem | None:
    """TORN_TAIL for a gzip log cut short, even when the cut fell between two lines (docs/reader.md), unless
    the last line already was a torn tail (``torn``); its place is line ``framer.lines + 1`` at ``framer.end``."""
    return Problem("TORN_TAIL", TRUNCATED_MESSAGE) if not torn and truncated(f) else None


def _torn_tail_problem(raw: bytes) -> Problem:
    return Problem("TORN_TAIL", f"last line ({len(raw)} bytes, no newline) does not parse: torn tail")


class LineFramer:
    """SPEC §2.1 framing, shared by ``ChainReader`` and ``iter_lines_unverified``.

    Iterate it for ``(line_no, offset, raw)``: ``raw`` is the line's exact bytes
    with its ending, or ``None`` for a line longer than ``max_line_bytes`` (its
    rest is skipped, never held in memory). A read failure ends the iteration
    and is left in ``read_error`` / ``error_line`` / ``error_offset``.

    ``needles``: when given, a complete line (one ending in ``\n``) holding
    none of these byte strings is counted but not yielded -- the raw-bytes
    prefilter of ``grep --no-verify``. A last line without ``\n`` and an
    over-long line are always yielded.
    """

    def __init__(
        self, f: BinaryIO, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, needles: tuple[bytes, ...] | None = None
    ) -> None:
        self.f = f
        self.max_line_bytes = max_line_bytes
        self.needles = needles
        self.read_error: str | None = None
        self.error_line: int | None = None
        self.error_offset: int | None = None
        #: bytes and lines framed, once iteration has ended at end of file
        self.end = 0
        self.lines = 0

    def __iter__(self) -> Iterator[tuple[int, int, bytes | None]]:
        if self.needles is not None and not any(b"\n" in n or not n for n in self.needles):
            yield from _frame_prefiltered(self)
            return
        f, limit, needles = self.f, self.max_line_bytes, self.needles
        readline = f.readline
        size = limit + 2  # +2: room for "\r\n" after a maximal body
        offset = 0
        line_no = 0
        single = needles[0] if needles is not None and len(needles) == 1 else None
        while True:
            try:
                raw = readline(size)
            except OSError as exc:
                self.read_error = f"read failed: {exc.strerror or exc}"
                self.error_line, self.error_offset = line_no + 1, offset
                return
            if not raw:
                self.end, self.lines = offset, line_no
                return
            line_no += 1
            start = offset
            offset += len(raw)
            if needles is not None and raw[-1:] == b"\n":
                if single is not None:
                    if single not in raw:
                        continue
                elif not any(n in raw for n in needles):
                    continue
            if len(raw) >= size - 1 and len(split_line_ending(raw)[0]) > limit:
                # over the limit: a body of limit+1 bytes then "\n" fits the read but not the limit
                if len(raw) == size and raw[-1:] != b"\n":
                    try:
                        offset += self._skip_rest_of_line(f)
                    except OSError as exc:
                        self.read_error = f"read failed: {exc.strerror or exc}"
                        self.error_line, self.error_offset = line_no, start
                        return
                yield line_no, start, None
                continue
            yield line_no, start, raw
            if raw[-1:] != b"\n":
                # End of file mid-line: the file ends here, as read now. A writer may be
                # appending the rest this instant; reading on would split its line in two.
                self.end, self.lines = offset, line_no
                return

    @staticmethod
    def _skip_rest_of_line(f: BinaryIO) -> int:
        skipped = 0
        while True:
            chunk = f.readline(1 << 16)  # small chunks: the skipped line is never held
            skipped += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                return skipped


#: bytes per read of the block framings (``frame_blocks``; the prefilter of ``grep --no-verify``)
BLOCK_BYTES = PREFILTER_BLOCK_BYTES = 1 << 20
#: (also when C checks a block in two threads: 4 MiB, which starts and joins a thread a quarter as often,
#: was no faster on a quiet machine and 15-25 % slower with the other core busy; docs/performance.md)


class Block(Record):
    """Complete lines of one read, as ``frame_blocks`` yields them: ``data[lo:hi]``, each line ending in
    ``\\n`` (no ``\\n`` after ``hi``); ``data[0]`` is at file offset ``base``, ``data[lo]`` starts line
    ``line_no``. A line in it may still be longer than ``max_line_bytes``: the reader judges each line
    it looks at. ``lines``: the consumer that counted the block's lines (C did) says how many, so that
    ``frame_blocks`` does not count them again."""

    __slots__ = ("line_no", "base", "data", "lo", "hi", "lines")
    line_no: int
    base: int
    data: bytes
    lo: int
    hi: int
    lines: int | None

    def __init__(self, line_no: int, base: int, data: bytes, lo: int, hi: int, lines: int | None = None) -> None:
        self.line_no = line_no
        self.base = base
        self.data = data
        self.lo = lo
        self.hi = hi
        self.lines = lines


#: what ``frame_blocks`` yields: a block of lines, or one line as ``LineFramer`` yields it
Frame = Block | tuple[int, int, bytes | None]


def frame_blocks(
    framer: LineFramer,
    block_size: int = BLOCK_BYTES,
    tap: Callable[[bytes], None] | None = None,
    ahead: ReadAhead | None = None,
) -> Iterator[Frame]:
    """``LineFramer``'s framing, a read at a time, for the native chain mode and the prefilter.

    Yields a ``Block`` for the complete lines of each read, the read itself
    (never copied), and a one-line ``Block`` for the line that straddles two
    reads. Yields ``(line_no, offset, raw)`` for one line as ``LineFramer``
    yields it: ``None`` for a line longer than ``max_line_bytes`` that no block
    holds (it is skipped, never held whole), a line that took more than two
    reads (so that it is never copied out of a block), or the last line,
    without its ``\\n``. Memory: one read plus the line being assembled. Read
    errors, ``end`` and ``lines`` are left in ``framer`` as ``LineFramer``
    leaves them. ``tap`` is handed every read, as read (the empty one at the
    end too), before its lines are framed. ``ahead``: ``framer.f``'s reads, of which the native core may
    have read the next early (``read_ahead``).
    """
    f, limit = framer.f, framer.max_line_bytes
    # A decoded log (gzip) is read one decode at a time (``read1``): what was decoded before a failure is
    # framed, as ``LineFramer``'s reads frame it. A whole read of ``block_size`` dropped it with the error
    # (a corrupt archive: 0 events read where reading line by line read 400).
    read = f.read1 if is_decoded(f) else f.read if ahead is None else ahead.read  # type: ignore[attr-defined]
    carry = b""  # the start of a line begun in the read before (at file offset ``base``)
    base = 0  # file offset of the first byte not yet yielded
    line_no = 0  # lines yielded (or skipped) so far
    skipping = False  # inside an over-long line already reported: drop bytes up to its newline
    # a line longer than a read, as it is assembled: one growing buffer (a list of reads joined at the end
    # left their memory in the heap, counted in the peak RSS while the line was checked)
    long: bytearray | None = None
    while True:
        try:
            chunk = read(block_size)
        except OSError as exc:
            framer.read_error = f"read failed: {exc.strerror or exc}"
            framer.error_line, framer.error_offset = line_no + 1, base
            return
        if tap is not None:
            tap(chunk)
        if not chunk:  # what is left is a last line without its newline
            rest = carry if long is None else bytes(long)
            framer.end, framer.lines = base + len(rest), line_no + (1 if rest else 0)
            if rest:
                yield line_no + 1, base, None if len(rest) > limit else rest
            return
        pos = 0  # the chunk's first byte not framed yet
        if skipping or long is not None or carry:
            nl = chunk.find(b"\n")
            if nl < 0:  # still inside the line
                if skipping:
                    base += len(chunk)
                    continue
                if long is None:
                    long = bytearray(carry)
                    carry = b""
                long += chunk
                if len(long) > limit + 2:  # no newline yet and already over the limit
                    line_no += 1
                    yield line_no, base, None
                    base += len(long)
                    long, skipping = None, True
                continue
            pos = nl + 1
            if skipping:
                base += pos
                skipping = False
            elif long is not None:  # a line read in several pieces, whole at last: yielded alone
                long += memoryview(chunk)[:pos]
                line, long = bytes(long), None
                line_no += 1
                yield line_no, base, within_limit(line, limit)
                base += len(line)
                line = b""
            else:  # the line across two reads: a block of its own
                line, carry = carry + chunk[:pos], b""
                yield Block(line_no + 1, base, line, 0, len(line))
                line_no += 1
                base += len(line)
                line = b""
        end = chunk.rfind(b"\n", pos) + 1
        if end:
            block = Block(line_no + 1, base - pos, chunk, pos, end)
            yield block
            line_no += chunk.count(b"\n", pos, end) if block.lines is None else block.lines
            base += end - pos
            pos = end
        held = len(chunk) - pos
        if held > limit + 2:  # no newline yet and already over the limit
            line_no += 1
            yield line_no, base, None
            base += held
            skipping = True
        else:
            carry = chunk[pos:] if held else b""
        chunk = b""


def _frame_prefiltered(
    framer: LineFramer, block_size: int = PREFILTER_BLOCK_BYTES
) -> Iterator[tuple[int, int, bytes | None]]:
    """``LineFramer`` with needles, block by block: lines holding no needle are never looked at one by one.

    Jumps from needle to needle in each block of ``frame_blocks`` (``bytes.find``),
    counting the newlines it skips, so line numbers and offsets are those of the
    line-by-line framing. Yields a line holding a needle, the last line when it
    lacks ``\\n``, and over-long lines (``None``).
    """
    limit, needles = framer.max_line_bytes, framer.needles
    assert needles is not None
    native = core.selected()  # (SPEC §11: RACT_CORE=python reads in Python alone)
    for frame in frame_blocks(framer, block_size):
        if not isinstance(frame, Block):
            data = frame[2]
            if data is None or data[-1:] != b"\n" or any(n in data for n in needles):
                yield frame
            continue
        data, base, pos, end = frame.data, frame.base, frame.lo, frame.hi
        if native is not None:  # the same scan in C: memmem, and newlines counted 16 bytes at a time
            found, frame.lines = native.find_lines(data, pos, end, needles)
            first = frame.line_no
            for i in range(0, len(found), 3):
                start, stop = found[i], found[i + 1]
                yield first + found[i + 2], base + start, within_limit(data[start:stop], limit)
            continue
        line_no = frame.line_no - 1  # lines before ``pos``
        hits = [_find(data, n, pos, end) for n in needles]
        while True:
            hit = min((h for h in hits if h >= 0), default=-1)
            if hit < 0:
                break
            start = data.rfind(b"\n", pos, hit) + 1 or pos  # 0: no newline between pos and the hit
            stop = data.find(b"\n", hit) + 1
            line_no += data.count(b"\n", pos, start) + 1
            yield line_no, base + start, within_limit(data[start:stop], limit)
            pos = stop
            hits = [h if h >= pos or h < 0 else _find(data, n, pos, end) for h, n in zip(hits, needles, strict=True)]
        frame.lines = line_no - frame.line_no + 1 + data.count(b"\n", pos, end)


#: ``_find``: how near two backslashes may be, on average, before it leaves the rest of a search to
#: ``bytes.find`` (bytes), and the credit it starts with (bytes: 16 backslashes side by side)
BACKSLASH_GAP = 256
BACKSLASH_CREDIT = 16 * BACKSLASH_GAP


def _find(data: bytes, needle: bytes, pos: int, end: int) -> int:
    """``data.find(needle, pos, end)``, for a needle that starts with a backslash (the prefilter's ``\\u00``)
    first from backslash to backslash: ``bytes.find`` of one byte is ``memchr`` (~13 GB/s here), of
    ``\\u00`` ~1.5 GB/s (it seldom skips ahead: a log is full of ``0``), and a log written raw holds few
    backslashes.
    Where they come closer than ``BACKSLASH_GAP`` bytes apart on average (escaped text) the rest is
    ``bytes.find``'s: the steps in Python stay under one per ``BACKSLASH_GAP`` bytes, whatever the bytes."""
    if needle[:1] == b"\\":
        credit = BACKSLASH_CREDIT
        while credit >= 0:
            at = data.find(0x5C, pos, end)
            if at < 0 or data.startswith(needle, at, end):
                return at
            credit += at - pos - BACKSLASH_GAP  # (a backslash right after the last costs the most)
            pos = at + 1
    return data.find(needle, pos, end)


class RawLine(Record):
    """One line read by ``iter_lines_unverified``: framed and parsed, never checked."""

    __slots__ = ("line", "offset", "raw", "event", "problem")
    line: int  # 1-based
    offset: int  # byte offset of the line's first byte
    raw: bytes  # the line's bytes exactly as in the file, line ending included (b"" when not read)
    event: JSONObject | None  # the parsed JSON object; None when the line is not one
    problem: Problem | None  # why ``event`` is None: MALFORMED_LINE, LINE_TOO_LONG, TORN_TAIL or IO_ERROR

    def __init__(self, line: int, offset: int, raw: bytes, event: JSONObject | None, problem: Problem | None) -> None:
        self.line = line
        self.offset = offset
        self.raw = raw
        self.event = event
        self.problem = problem


def iter_lines_unverified(
    path: str | os.PathLike[str],
    *,
    prefilter: tuple[bytes, ...] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawLine]:
    """The fast, unchecked reading mode (``grep --no-verify``).

    Same framing as ``ChainReader`` (``LineFramer``: line splitting, CRLF,
    ``max_line_bytes``, torn tail, read errors) but no hash, chain, envelope or
    schema check: each yielded line is only parsed as a JSON object. With
    ``prefilter``, complete lines holding none of those byte strings are
    skipped before parsing. Raises ``LogIOError`` when the file cannot be
    opened; a later read failure is yielded as an ``IO_ERROR`` line, last.
    """
    import orjson  # (here: a log the native core proves whole never needs orjson, ~14 ms of start-up)

    handle = open_log(Path(path))
    with handle:
        framer = LineFramer(handle, max_line_bytes, prefilter)
        loads = orjson.loads
        torn = False  # the last line yielded was a torn tail
        for line_no, start, raw in framer:
            if raw is None:
                yield RawLine(
                    line_no,
                    start,
                    b"",
                    None,
                    Problem("LINE_TOO_LONG", f"line is longer than --max-line-bytes ({max_line_bytes} bytes)"),
                )
                continue
            body, has_newline = split_line_ending(raw)
            if len(body) > MAX_LINE_NODES and too_many_nodes(body):  # never parsed: bounded memory
                problem = _torn_tail_problem(raw) if not has_newline else _too_many_nodes_problem()
                torn = not has_newline
                yield RawLine(line_no, start, raw, None, problem)
                continue
            try:
                obj = loads(body)
            except orjson.JSONDecodeError as exc:
                obj = exc
            deep = type(obj) is dict and too_deep(body, obj)  # the same bound as the chain reader
            if type(obj) is dict and not deep:
                yield RawLine(line_no, start, raw, obj, None)
            elif not has_newline:
                torn = True
                yield RawLine(line_no, start, raw, None, _torn_tail_problem(raw))
            elif deep:
                yield RawLine(line_no, start, raw, None, _too_deep_problem())
            else:
                reason = (
                    "blank line"
                    if not body.strip()
                    else (_describe_json_error(obj) if isinstance(obj, Exception) else "not a JSON object")
                )
                yield RawLine(line_no, start, raw, None, Problem("MALFORMED_LINE", f"not valid JSON: {reason}"))
        if framer.read_error is not None:
            yield RawLine(
                framer.error_line or 1, framer.error_offset or 0, b"", None, Problem("IO_ERROR", framer.read_error)
            )
        elif (cut := cut_archive(handle, torn)) is not None:
            yield RawLine(framer.lines + 1, framer.end, b"", None, cut)
