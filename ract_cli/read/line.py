"""One line of a RACT log, judged alone (SPEC §2.1-2.6): parse, envelope, canonical hash, kind and payload.

Pure functions of a line's bytes: they know nothing of other lines.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeAlias, cast

import orjson

from ract_cli.findings import ERROR
from ract_cli.format.canonical import CanonicalizationError, chain_hash, orjson_is_jcs
from ract_cli.format.json_types import Event, JSONObject, Payload
from ract_cli.format.kinds import KINDS_BY_NAME, LATEST_SCHEMA_VERSION, VALIDATORS, kinds_for_version
from ract_cli.format.model import ENVELOPE_KEYS, HEX32, HEX64, MAX_TIMESTAMP_NS
from ract_cli.format.text import short
from ract_cli.read import fastpath

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
#: A line longer than this is judged without any whole copy of it (issue 15, item 8): the reader hands
#: it over as a view (``line_body``), the native core reads the view, and the Python path parses it
#: once and streams its canonical hash (``_parse_big``). Shorter lines take the usual paths, whose
#: copies of a line cost a few times its size at most.
BIG_LINE_BYTES = fastpath.BIG_LINE_BYTES
#: a line's bytes without its ending: ``bytes``, or (a line longer than BIG_LINE_BYTES) a view of them
Body: TypeAlias = bytes | memoryview
_SORT = orjson.OPT_SORT_KEYS
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_HASH_PREFIX = b'{"hash":"'  # sorted keys put "hash" first in a valid envelope


@dataclass(slots=True)
class Problem:
    """A finding of one line, before it knows its file and position."""

    code: str
    message: str
    expected: str | None = None
    actual: str | None = None
    severity: str = ERROR


@dataclass(slots=True)
class LineResult:
    """What ``analyze_line`` learned from one line."""

    event: Event | None  # the parsed object when it is a usable envelope
    stored_hash: str | None  # the line's own "hash" when it is 64 lowercase hex
    problems: list[Problem]
    parsed: bool = True  # False: not one JSON object (malformed, torn, too long)


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


def parse_object(body: Body) -> tuple[JSONObject, bytes, bool] | LineResult:
    """SPEC §2.1 parse rules, shared by both dialects: exactly one JSON object,
    no duplicate key, exact 64-bit integers.

    Returns ``(object, orjson's sorted dump, fast)`` where ``fast`` means the
    line is byte-identical to that dump and the dump is already JCS; or the
    failing ``LineResult``. A line longer than ``BIG_LINE_BYTES`` is never
    dumped (``_parse_big``: ``(object, b"", False)``, the same verdicts).
    """
    if len(body) > BIG_LINE_BYTES:
        return _parse_big(body)
    if type(body) is not bytes:
        body = bytes(body)
    if len(body) > MAX_LINE_NODES and too_many_nodes(body):
        return LineResult(None, None, [_too_many_nodes_problem()], parsed=False)
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        reason = "blank line" if not body.strip() else (_invalid_utf8(body) or _describe_json_error(exc))
        return LineResult(None, None, [Problem("MALFORMED_LINE", f"not valid JSON: {reason}")], parsed=False)
    if type(obj) is not dict:
        kind = _VALUE_NAMES.get(type(obj), "a bare value")
        return LineResult(None, None, [Problem("MALFORMED_LINE", f"line is {kind}, not a JSON object")], parsed=False)
    try:
        dumped = orjson.dumps(obj, option=_SORT)
    except orjson.JSONEncodeError:  # nested deeper than orjson writes (it reads deeper): exact path
        if too_deep(body, obj):
            return LineResult(None, None, [_too_deep_problem()], parsed=False)
        dumped = b""
    fast = dumped == body and orjson_is_jcs(dumped)
    if not fast:
        # Foreign formatting or a number orjson rounds: re-read exactly.
        try:
            obj = parse_exact(body)
        except _DuplicateKey as exc:
            return LineResult(None, None, [_duplicate_key_problem(exc.args[0])], parsed=False)
        except (ValueError, RecursionError) as exc:
            return LineResult(
                None, None, [Problem("MALFORMED_LINE", f"not valid JSON: {_describe_json_error(exc)}")], parsed=False
            )
    return obj, dumped, fast


def _duplicate_key_problem(key: str) -> Problem:
    return Problem("DUPLICATE_KEY", f"duplicate key {short(key)} in an object")


def _parse_big(body: Body) -> tuple[JSONObject, bytes, bool] | LineResult:
    """``parse_object`` for a line longer than ``BIG_LINE_BYTES``: the same verdicts, no whole copy of the line.

    orjson parses it once (its values are the event; nothing else the size
    of the line is made). What ``parse_exact`` would add -- a duplicate key,
    an integer outside 64 bits, found in the order ``json.loads`` meets them
    -- comes from a scan of the bytes (``_inexact``) instead of a second
    parse of a decoded copy. The caller then hashes the object with
    ``chain_hash(exact=True)``, streamed: the same bytes as the exact path.
    """
    if too_many_nodes(body):
        return LineResult(None, None, [_too_many_nodes_problem()], parsed=False)
    try:
        obj = _loads_big(body)
    except orjson.JSONDecodeError as exc:  # its ``doc`` is a decoded copy of the line: keep only the words
        message: str | None = _describe_json_error(exc)
    else:
        message = None
    if message is not None:
        reason = "blank line" if _BLANK(body) else (_invalid_utf8(body) or message)
        return LineResult(None, None, [Problem("MALFORMED_LINE", f"not valid JSON: {reason}")], parsed=False)
    if type(obj) is not dict:
        kind = _VALUE_NAMES.get(type(obj), "a bare value")
        return LineResult(None, None, [Problem("MALFORMED_LINE", f"line is {kind}, not a JSON object")], parsed=False)
    if too_deep(body, obj):
        return LineResult(None, None, [_too_deep_problem()], parsed=False)
    problem = _inexact(body)
    if problem is not None:
        return LineResult(None, None, [problem], parsed=False)
    return obj, b"", False


_BIG_STRING = 1 << 20  # a string value longer than this (in the line) is decoded by ``_loads_big`` itself
_CONTROL = re.compile(rb"[\x00-\x1f]").search
_KEY_AFTER = re.compile(rb"[ \t\r\n]*+:").match


def _loads_big(body: Body) -> object:
    """``orjson.loads(body)``, the same value or the same error, without orjson's copy of a huge string.

    orjson reads a document into a pool about as large as the document
    before it builds the values: on a line that is one huge string, that is
    the line once more. So the string values longer than ``_BIG_STRING`` are
    cut out first: the rest of the line (every other value, with a unique
    placeholder string in each cut) is parsed by orjson, and each cut string
    is decoded on its own -- straight from the line into its ``str`` when it
    holds no escape (strict UTF-8 and no control character: what orjson
    accepts), by orjson when it does. A string token of the line as found
    by ``_TOKEN`` is one JSON string token, so when the rest parses and every
    cut string is valid, the line parses to exactly that value. Whenever any
    part fails (or a placeholder does not come back exactly once), the
    whole line goes to ``orjson.loads``, which raises its own error.
    """
    cuts: list[tuple[int, int]] = []
    for m in _TOKEN.finditer(body):
        start, end = m.span()
        if end - start > max(_BIG_STRING, 1) and body[start] == 0x22 and _KEY_AFTER(body, end) is None:
            cuts.append((start, end))  # a whole string token (a stray quote is one byte; a run has no quote)
    if not cuts:
        return orjson.loads(body)
    view = memoryview(body)
    mark = f"\0ract-cut-{os.urandom(8).hex()}-"
    parts: list[bytes | memoryview] = []
    strings: list[str] = []
    obj: object = None
    at = 0
    try:
        for i, (start, end) in enumerate(cuts):
            parts += (view[at:start], b'"\\u0000' + mark[1:].encode() + str(i).encode() + b'"')
            at = end
            if _BACKSLASH(body, start, end) is None and _CONTROL(body, start + 1, end - 1) is None:
                strings.append(str(view[start + 1 : end - 1], "utf-8"))
            else:
                strings.append(_decode_string(view, start + 1, end - 1))
        parts.append(view[at:])
        obj = orjson.loads(b"".join(parts))
        if _put_back(obj, mark, strings):
            return obj
    except (UnicodeDecodeError, orjson.JSONDecodeError):
        pass
    strings.clear()  # (let them go before orjson's own try: its error holds a copy of the line)
    parts.clear()
    obj = None
    return orjson.loads(body)


#: string text (between the quotes) orjson accepts, but for what ``_decode_string`` checks apart
_STRING_TEXT = re.compile(rb'(?:[^"\\\x00-\x1f]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+').fullmatch
#: what ``unicode_escape`` reads otherwise than JSON: a byte past ASCII (read as Latin-1), ``\\/`` (kept),
#: a surrogate's escape (not paired) -- or a look-alike after an escaped backslash, which only costs memory
_NOT_LIKE_PYTHON = re.compile(rb"[\x80-\xff]|\\/|\\u[dD][89a-fA-F]").search


def _decode_string(view: memoryview, start: int, end: int) -> str:
    """The value of the JSON string whose text (between its quotes) is ``view[start:end]``, as orjson decodes it.

    ASCII text whose escapes Python's ``unicode_escape`` reads as JSON does
    (a checked subset) is decoded by it straight into the value: the only
    copy. Anything else goes to orjson (which holds a copy of the text while
    it decodes). Raises ``orjson.JSONDecodeError`` where orjson refuses it.
    """
    if _NOT_LIKE_PYTHON(view, start, end) is None and _STRING_TEXT(view, start, end) is not None:
        return codecs.unicode_escape_decode(view[start:end])[0]
    decoded: str = orjson.loads(view[start - 1 : end + 1])
    return decoded


def _put_back(obj: object, mark: str, strings: list[str]) -> bool:
    """Replace each placeholder ``mark + str(i)`` among ``obj``'s values by ``strings[i]``; True when each came once."""
    used = [False] * len(strings)
    stack = [obj]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            pairs: Iterable[tuple[object, object]] = node.items()
        elif type(node) is list:
            pairs = enumerate(node)
        else:
            continue
        for key, value in pairs:
            if type(value) is dict or type(value) is list:
                stack.append(value)
            elif type(value) is str and value.startswith(mark):
                index = value[len(mark) :]
                i = int(index) if index.isascii() and index.isdigit() else len(used)
                if i >= len(used) or used[i]:
                    return False
                used[i] = True
                cast("dict[object, object]", node)[key] = strings[i]  # a value replaced in place (list or dict)
    return all(used)


#: the tokens ``_inexact`` looks at: 1 a string (2: the ':' after it, a key), a number (3 its fraction, 4 its
#: exponent; an integer has no group), 5 a brace. Everything else (',', '[', ']', blanks, literals) is
#: skipped by the search. (A string is read once, whether it is a key or not.)
_EXACT_TOKEN = re.compile(
    rb'("[^"\\]*+(?:\\.[^"\\]*+)*+")(?:[ \t\r\n]*+(:))?'
    rb"|-?[0-9]++(\.[0-9]++)?([eE][-+]?[0-9]++)?|([{}])"
)
_BACKSLASH = re.compile(rb"\\").search
_LONG_KEY = 1 << 12  # a key longer than this is kept as a view of the line, not a copy
_INT_DIGITS = 18  # an integer token of at most this many characters is inside the signed 64-bit range


def _inexact(body: Body) -> Problem | None:
    """The finding ``parse_exact`` gives a line orjson parsed as an object, or ``None`` (it would give the same values).

    ``parse_exact`` differs from orjson's parse in two ways only: a
    duplicate key (raised when its object closes, for the first key seen a
    second time) and an integer outside the signed 64-bit range (raised
    when the number is read). The first of those in the order of the text
    is its finding; this scan meets them in the same order. Keys are
    compared decoded (a key with an escape is decoded on its own).
    """
    keys: list[set[object]] = []
    first_dup: list[tuple[int, int] | None] = []
    for m in _EXACT_TOKEN.finditer(body):
        group = m.lastindex
        if group == 2:  # a key of the innermost open object
            start, end = m.span(1)
            if _BACKSLASH(body, start, end) is not None:
                decoded: str = orjson.loads(body[start:end])
                ident: object = decoded.encode("utf-8")
            elif end - start > _LONG_KEY:
                ident = memoryview(body)[start + 1 : end - 1]  # (hashable, equal to the same bytes)
            else:
                ident = body[start + 1 : end - 1]
            seen = keys[-1]
            if ident in seen:
                if first_dup[-1] is None:
                    first_dup[-1] = (start, end)
            else:
                seen.add(ident)
        elif group == 5:
            if body[m.start()] == 0x7B:  # "{"
                keys.append(set())
                first_dup.append(None)
            else:
                keys.pop()
                dup = first_dup.pop()
                if dup is not None:
                    return _duplicate_key_problem(orjson.loads(body[dup[0] : dup[1]]))
        elif group is None:  # an integer (no fraction, no exponent)
            start, end = m.span()
            if end - start > _INT_DIGITS:
                try:
                    _exact_int(str(body[start:end], "ascii"))
                except ValueError as exc:
                    return Problem("MALFORMED_LINE", f"not valid JSON: {_describe_json_error(exc)}")
    return None


def line_body(raw: bytes) -> tuple[Body, bool]:
    """``framing.split_line_ending`` for ``analyze_line``: a line longer than ``BIG_LINE_BYTES`` is not copied.

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


def hash_without_hash_key(obj: JSONObject, fast: bool) -> str | Problem:
    """SPEC §2.4 (``format.canonical.chain_hash``) of a parsed line, or the MALFORMED_LINE it is.

    ``fast``: ``parse_object`` found orjson's form already JCS; otherwise the
    canonical bytes are built on the exact path at once.
    """
    try:
        return chain_hash(obj, exact=not fast)
    except CanonicalizationError as exc:
        return Problem("MALFORMED_LINE", str(exc))
    except RecursionError:
        return Problem("MALFORMED_LINE", "nesting too deep to canonicalize")


def analyze_line(body: Body, schema_version: int = LATEST_SCHEMA_VERSION, *, fast: bool = True) -> LineResult:
    """Check one line (without its line ending). Pure: no file, no neighbours.

    ``body`` may be a view (``line_body``) of a line longer than
    ``BIG_LINE_BYTES``: it is never copied whole. ``fast=False`` skips the
    fast path (fastpath.py) -- for tests that prove both paths agree, and
    for a caller that asked it already; the verdict is the same either way.
    """
    if type(body) is not bytes and len(body) <= BIG_LINE_BYTES:
        body = bytes(body)
    if fast and (len(body) <= MAX_LINE_NODES or not too_many_nodes(body)):  # (else parse_object says so)
        proven = fastpath.prove(body, schema_version)  # a fully valid event, proven cheaply (either core)
        if proven is not None:
            return LineResult(proven[0], proven[1], [])
    parsed = parse_object(body)
    if isinstance(parsed, LineResult):
        return parsed
    obj, dumped, is_canonical = parsed

    problems = _check_envelope(obj)
    stored = obj.get("hash")
    stored_hash = stored if type(stored) is str and HEX64.fullmatch(stored) else None
    if problems:
        return LineResult(None, stored_hash, problems)

    # Canonical bytes without "hash": in the fast path they are the line itself
    # minus its leading "hash" member (sorted keys put it first).
    computed: str | Problem
    if is_canonical and dumped.startswith(_HASH_PREFIX) and dumped[73:75] == b'",':
        computed = hashlib.sha256(b"{" + dumped[75:]).hexdigest()
    else:
        computed = hash_without_hash_key(obj, is_canonical)
        if isinstance(computed, Problem):
            return LineResult(None, stored_hash, [computed], parsed=False)
    if computed != stored_hash:
        problems.append(
            Problem(
                "HASH_MISMATCH",
                "stored hash differs from the canonical hash of the event",
                expected=computed,
                actual=stored,
            )
        )

    kind = obj["kind"]
    if kind not in kinds_for_version(schema_version):
        known = kind in KINDS_BY_NAME
        detail = f"added in schema version {KINDS_BY_NAME[kind].version}" if known else "not in the vocabulary"
        problems.append(Problem("UNKNOWN_KIND", f"kind {kind!r} is {detail} (schema version {schema_version})"))
    else:
        for message in VALIDATORS[kind](obj["payload"]):
            problems.append(Problem("PAYLOAD_INVALID", f"{kind}: {message}"))
    return LineResult(obj, stored_hash, problems)


def _check_envelope(obj: JSONObject) -> list[Problem]:
    """SPEC §2.2: exactly nine keys, each of its type."""
    problems: list[Problem] = []
    keys = obj.keys()
    if keys != ENVELOPE_KEYS:
        missing = sorted(ENVELOPE_KEYS - keys)
        extra = sorted(keys - ENVELOPE_KEYS)
        if missing:
            problems.append(Problem("ENVELOPE_ERROR", f"missing key(s): {', '.join(missing)}"))
        if extra:
            problems.append(Problem("ENVELOPE_ERROR", f"extra key(s) not covered by the schema: {', '.join(extra)}"))
    for name in ("id", "run_id"):
        value = obj.get(name)
        if name in obj and not (type(value) is str and HEX32.fullmatch(value)):
            problems.append(
                Problem("ENVELOPE_ERROR", f"{name} must be 32 lowercase hex characters", actual=short(value))
            )
    for name in ("step_id", "parent_id"):
        value = obj.get(name)
        if name in obj and value is not None and not (type(value) is str and HEX32.fullmatch(value)):
            problems.append(
                Problem("ENVELOPE_ERROR", f"{name} must be 32 lowercase hex characters or null", actual=short(value))
            )
    if "timestamp_ns" in obj:
        ts = obj["timestamp_ns"]
        if type(ts) is not int or not 0 <= ts < MAX_TIMESTAMP_NS:
            problems.append(Problem("ENVELOPE_ERROR", "timestamp_ns must be an integer in [0, 2^63)", actual=short(ts)))
    if "kind" in obj and type(obj["kind"]) is not str:
        problems.append(Problem("ENVELOPE_ERROR", "kind must be a string", actual=short(obj["kind"])))
    if "payload" in obj and type(obj["payload"]) is not dict:
        problems.append(Problem("ENVELOPE_ERROR", "payload must be an object", actual=short(obj["payload"])))
    for name in ("prev_hash", "hash"):
        value = obj.get(name)
        if name in obj and not (type(value) is str and HEX64.fullmatch(value)):
            problems.append(
                Problem("ENVELOPE_ERROR", f"{name} must be 64 lowercase hex characters", actual=short(value))
            )
    return problems


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


@dataclass(slots=True)
class LogEvent:
    """One usable event of a log, where it is, and whether it is still trusted."""

    line: int  # 1-based
    offset: int  # byte offset of the line's first byte
    raw: bytes  # the line's bytes exactly as in the file, line ending included
    event: Event
    trusted: bool  # no integrity failure at or before this line

    @property
    def kind(self) -> str:
        return cast(str, self.event["kind"])  # a usable event's kind is a string (SPEC §2.2)

    @property
    def payload(self) -> Payload:
        return cast(Payload, self.event["payload"])  # and its payload an object
