"""SPEC §2.1's rules for the JSON of one line, and the bounds on what one line may cost (issue 15).

What a finding on a line is (``Problem``, ``LineResult``), the exact parse
(``parse_exact``: duplicate keys, 64-bit integers, no NaN), where bad UTF-8
is, the bounds on nesting and on values per line, checked before any parse.
Shared by the line checks (``line.py``), the long-line parse
(``long_line.py``) and the framing of ``grep --no-verify``.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable

from ract_cli.findings import ERROR
from ract_cli.format.json_types import Event, JSONObject
from ract_cli.format.text import short
from ract_cli.records import Record

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import TypeAlias

#: a line's bytes without its ending: ``bytes``, or (a line longer than BIG_LINE_BYTES) a view of them
Body: TypeAlias = bytes | memoryview
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class Problem(Record):
    """A finding of one line, before it knows its file and position."""

    __slots__ = ("code", "message", "expected", "actual", "severity")
    code: str
    message: str
    expected: str | None
    actual: str | None
    severity: str

    def __init__(
        self,
        code: str,
        message: str,
        expected: str | None = None,
        actual: str | None = None,
        severity: str = ERROR,
    ) -> None:
        self.code = code
        self.message = message
        self.expected = expected
        self.actual = actual
        self.severity = severity


class LineResult(Record):
    """What ``analyze_line`` learned from one line."""

    __slots__ = ("event", "stored_hash", "problems", "parsed")
    event: Event | None  # the parsed object when it is a usable envelope
    stored_hash: str | None  # the line's own "hash" when it is 64 lowercase hex
    problems: list[Problem]
    parsed: bool  # False: not one JSON object (malformed, torn, too long)

    def __init__(
        self, event: Event | None, stored_hash: str | None, problems: list[Problem], parsed: bool = True
    ) -> None:
        self.event = event
        self.stored_hash = stored_hash
        self.problems = problems
        self.parsed = parsed


# --- one line ------------------------------------------------------------


class _DuplicateKey(ValueError):
    pass


def _pairs_no_duplicates(pairs: list[tuple[str, object]]) -> JSONObject:
    result: JSONObject = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _exact_int(text: str) -> int:
    value = int(text)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"integer {text[:40]} is outside the signed 64-bit range")
    return value


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def parse_exact(body: bytes) -> object:
    """Parse with exact integers, rejecting duplicate keys and 64-bit overflow.

    Used when orjson's fast result cannot be trusted to be exact: foreign
    formatting (possible duplicate keys) or number tokens orjson rounds.
    """
    import json  # (the reference path's: a log the native core proves whole never loads it)

    return json.loads(
        body.decode("utf-8"),
        object_pairs_hook=_pairs_no_duplicates,
        parse_int=_exact_int,
        parse_constant=_reject_constant,
    )


_PIECE_BYTES = 1 << 20  # a long line is scanned this many bytes at a time (bounded copies)


def _invalid_utf8(body: Body) -> str | None:
    """What is wrong with bytes that are not UTF-8 (orjson calls every such line "surrogates not allowed").

    Decoded a piece at a time (an incremental decoder reports what one
    decode of the whole would, at the same byte): never a decoded copy of
    the whole line.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    size = len(body)
    for start in range(0, size, _PIECE_BYTES):
        held = len(decoder.getstate()[0])  # bytes of a sequence begun in the previous piece
        try:
            decoder.decode(body[start : start + _PIECE_BYTES], start + _PIECE_BYTES >= size)
        except UnicodeDecodeError as exc:
            return f"invalid UTF-8 at byte {start - held + exc.start + 1} of the line ({exc.reason})"
    return None


_BLANK = re.compile(rb"[ \t\n\r\x0b\x0c]*+").fullmatch  # what ``bytes.strip`` strips, and nothing else


def _counts(body: Body, subs: tuple[bytes, ...], start: int = 0, end: int | None = None) -> int:
    """How often the one-byte strings ``subs`` occur in ``body[start:end]`` (a view: read in bounded pieces)."""
    if isinstance(body, bytes):
        count = body.count
        return sum(count(c, start, end) for c in subs)
    stop = len(body) if end is None else end
    total = 0
    for at in range(start, stop, _PIECE_BYTES):
        piece = body[at : min(at + _PIECE_BYTES, stop)].tobytes()
        total += sum(piece.count(c) for c in subs)
    return total


def _describe_json_error(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 200 else text[:200] + "..."


#: The deepest nesting of arrays and objects a line may have (the line's own object is level 1).
#: SPEC §2.1 sets no bound; without one, Python's recursion limit would decide past ~900 levels, and
#: how much of it is left depends on the caller's stack -- one process would accept a line another
#: calls malformed. Deeper is MALFORMED_LINE everywhere. (orjson alone reads 1024 and writes 254.)
MAX_NESTING = 512
_ORJSON_WRITES = 254  # a line with fewer '[' and '{' bytes than this cannot be nested deeper
_OPENERS = (b"[", b"{")


def nesting_depth(value: object) -> int:
    """How deeply arrays and objects nest in a parsed value (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        children: Iterable[object]
        if type(item) is dict:
            children = item.values()
        elif type(item) is list:
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children if type(child) in (dict, list))
    return deepest


def too_deep(body: Body, obj: object) -> bool:
    """Whether a parsed line nests deeper than ``MAX_NESTING`` (cheap unless it might)."""
    if _counts(body, _OPENERS) <= _ORJSON_WRITES:
        return False
    return nesting_depth(obj) > MAX_NESTING


def _too_deep_problem() -> Problem:
    return Problem("MALFORMED_LINE", f"nested deeper than {MAX_NESTING} levels of arrays and objects")


#: The most values and keys one line may hold: its ``,``, ``[``, ``{`` and ``:`` bytes outside strings
#: (issue 15, item 8). Parsing builds Python objects per value and per key (~60-500 bytes each, a
#: key costing most: its str, its dict slot, its sort entry for the canonical form, whatever its
#: size in the line: a 24 MB line of ``[0],`` held 1.3 GiB), so without a bound the memory of one
#: line is many times its bytes. Half a million is far above any real event (the payloads of the
#: kinds table hold tens of values; a 1,536-float embedding ~1,500) and keeps the peak RSS of
#: ``verify`` on any line within the default ``--max-line-bytes`` under 200 MB with either core
#: (docs/security.md). More is MALFORMED_LINE, decided before any parse, the same by both cores.
MAX_LINE_NODES = 500_000
_STRUCTURAL = (b",", b"[", b"{", b":")
#: a string, a run outside strings, a stray quote (possessive: a long string with many escapes is one
#: step each, never a backtracking stack)
_TOKEN = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"|[^"]++|"')


def too_many_nodes(body: Body) -> bool:
    """Whether a line holds more than ``MAX_LINE_NODES`` values and keys (no parse; bounded extra memory).

    A line of fewer bytes cannot (one byte per value at least); else the
    bytes ``,``, ``[``, ``{``, ``:`` are counted, and only when there are more than
    the bound anywhere are those inside strings left out (a long string full
    of commas is one value), token by token, stopping once past it.
    """
    if len(body) <= MAX_LINE_NODES:
        return False
    if _counts(body, _STRUCTURAL) <= MAX_LINE_NODES:
        return False
    nodes = 0
    for m in _TOKEN.finditer(body):
        start, end = m.span()
        if body[start] != 0x22:  # outside strings ('"' starts a string or is a stray quote)
            nodes += _counts(body, _STRUCTURAL, start, end)
            if nodes > MAX_LINE_NODES:
                return True
    return False


def _too_many_nodes_problem() -> Problem:
    return Problem(
        "MALFORMED_LINE",
        f"line holds more than {MAX_LINE_NODES:,} values and keys (bounded so that checking one line "
        "needs bounded memory; see docs/reader.md)",
    )


#: what a line that parses to something other than an object is, for MALFORMED_LINE
_VALUE_NAMES: dict[type[object], str] = {list: "an array", str: "a string"}


def _duplicate_key_problem(key: str) -> Problem:
    return Problem("DUPLICATE_KEY", f"duplicate key {short(key)} in an object")
