"""What every reader hands out and shares, kept apart from how a line is judged (``read/line.py``).

The usable event (``LogEvent``), the line-length limits and a line's body
(``line_body``), the HASH_MISMATCH finding and the NOT_A_LOG test. The native
core's chain mode, the framer and the commands import these; none of them
imports orjson, the Python line analysis or the canonical form, so a verify
that the native core answers whole loads none of them (start-up, issue 14:
orjson's import alone is ~14 ms of a ~50 ms call, as it imports dataclasses,
uuid and datetime).
"""

from __future__ import annotations

import re

from ract_cli.format.json_types import Event, Payload
from ract_cli.read.json_rules import Body, LineResult, Problem
from ract_cli.records import Record

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
#: A line longer than this is judged without any whole copy of it (issue 15, item 8): the reader hands
#: it over as a view (``line_body``), the native core reads the view, and the Python path parses it
#: once and streams its canonical hash (``long_line.parse_big``); the Python fast path never proves it (the
#: sorted dump it compares against would be a second copy of the line). Shorter lines take the usual
#: paths, whose copies of a line cost a few times its size at most.
BIG_LINE_BYTES = 4 << 20


def line_body(raw: bytes) -> tuple[Body, bool]:
    """``framing.split_line_ending`` for ``line.analyze_line``: a line longer than ``BIG_LINE_BYTES`` is not copied.

    Returns the body without ``\\n`` / ``\\r\\n`` and whether it had ``\\n``;
    the body of a long line is a view of ``raw``.
    """
    has_newline = raw[-1:] == b"\n"
    end = len(raw) - has_newline
    if has_newline and raw[end - 1 : end] == b"\r":
        end -= 1
    if end > BIG_LINE_BYTES:
        return memoryview(raw)[:end], has_newline
    return (raw[:end] if end < len(raw) else raw), has_newline


def hash_mismatch(computed: str, stored: str | None) -> Problem:
    """HASH_MISMATCH: ``expected`` the canonical hash, ``actual`` the stored one (also worded from the native
    core's answer on a long line whose one fault is its hash: ``chain_mode``)."""
    return Problem(
        "HASH_MISMATCH", "stored hash differs from the canonical hash of the event", expected=computed, actual=stored
    )


# --- is it a log at all? (NOT_A_LOG) ---------------------------------------

_OPENS_OBJECT = re.compile(rb"[ \t\r\n]*\{").match
#: a key of either dialect's records, as a broken line (one that does not parse) names it
_RECORD_KEY = re.compile(rb'"(?:kind|type|hash|prev_hash|id|run_id|step_id|parent_id|timestamp_ns|payload)"[ \t\r\n]*:')
_REPARSE_BYTES = 1 << 20  # a line up to this long that opens an object is parsed again to read its keys


def has_record_shape(raw: bytes | None, result: LineResult) -> bool:
    """Whether a line is, or was meant to be, a record of either dialect (``ChainState.finish_file``).

    True for a usable event or record that has ``kind`` or ``type``; for a
    JSON object with a ``kind`` or ``type`` key whatever else is wrong with it
    (a bad envelope, a duplicate key); for a line opening an object that does
    not parse (an integer past 64 bits, NaN) or is too long to parse again,
    when it names a key of a RACT envelope or ``type``, or when it is the
    last line, without its newline (a record cut short: a torn first write);
    and for a line longer than ``max_line_bytes`` (never called "not a log"
    unseen).
    Cheap: a line that does not open an object costs one regex match.
    """
    if raw is None:
        return True
    event = result.event
    if event is not None:
        return "kind" in event or "type" in event
    if _OPENS_OBJECT(raw) is None:
        return False
    if len(raw) <= _REPARSE_BYTES:
        import orjson  # (here: verifying a log with the native core never needs it, and it costs ~14 ms to import)

        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            obj = None
        if type(obj) is dict:
            return "kind" in obj or "type" in obj
    # It does not parse (or is too long to parse again). A last line without its newline that
    # opens an object is a record cut short (a writer killed within its first bytes: ``{"ha``).
    return raw[-1:] != b"\n" or _RECORD_KEY.search(raw) is not None


# --- a usable event ------------------------------------------------------


class LogEvent(Record):
    """One usable event of a log, where it is, and whether it is still trusted."""

    __slots__ = ("line", "offset", "raw", "event", "trusted")
    line: int  # 1-based
    offset: int  # byte offset of the line's first byte
    raw: bytes  # the line's bytes exactly as in the file, line ending included
    event: Event
    trusted: bool  # no integrity failure at or before this line

    def __init__(self, line: int, offset: int, raw: bytes, event: Event, trusted: bool) -> None:
        self.line = line
        self.offset = offset
        self.raw = raw
        self.event = event
        self.trusted = trusted

    @property
    def kind(self) -> str:
        kind: str = self.event["kind"]  # a usable event's kind is a string (SPEC §2.2)
        return kind

    @property
    def payload(self) -> Payload:
        payload: Payload = self.event["payload"]  # and its payload an object
        return payload
