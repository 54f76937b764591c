"""One line of a RACT log, judged alone (SPEC §2.1-2.6): parse, envelope, canonical hash, kind and payload.

Pure functions of a line's bytes: they know nothing of other lines.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

import orjson

from ract_cli.findings import ERROR
from ract_cli.format.canonical import CanonicalizationError, chain_hash, orjson_is_jcs
from ract_cli.format.json_types import Event, JSONObject, Payload
from ract_cli.format.kinds import KINDS_BY_NAME, LATEST_SCHEMA_VERSION, VALIDATORS, kinds_for_version
from ract_cli.format.model import ENVELOPE_KEYS, HEX32, HEX64, MAX_TIMESTAMP_NS
from ract_cli.format.text import short
from ract_cli.read import fastpath

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
_SORT = orjson.OPT_SORT_KEYS
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_HASH_PREFIX = b'{"hash":"'  # sorted keys put "hash" first in a valid envelope
_ENVELOPE_ORDER = ("id", "run_id", "step_id", "parent_id", "timestamp_ns", "kind", "payload", "prev_hash", "hash")


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


def _invalid_utf8(body: bytes) -> str | None:
    """What is wrong with bytes that are not UTF-8 (orjson calls every such line "surrogates not allowed")."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 at byte {exc.start + 1} of the line ({exc.reason})"
    return None


def _describe_json_error(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 200 else text[:200] + "..."


#: The deepest nesting of arrays and objects a line may have (the line's own object is level 1).
#: SPEC §2.1 sets no bound; without one, Python's recursion limit would decide past ~900 levels, and
#: how much of it is left depends on the caller's stack -- one process would accept a line another
#: calls malformed. Deeper is MALFORMED_LINE everywhere. (orjson alone reads 1024 and writes 254.)
MAX_NESTING = 512
_ORJSON_WRITES = 254  # a line with fewer '[' and '{' bytes than this cannot be nested deeper


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


def too_deep(body: bytes, obj: object) -> bool:
    """Whether a parsed line nests deeper than ``MAX_NESTING`` (cheap unless it might)."""
    if body.count(b"[") + body.count(b"{") <= _ORJSON_WRITES:
        return False
    return nesting_depth(obj) > MAX_NESTING


def _too_deep_problem() -> Problem:
    return Problem("MALFORMED_LINE", f"nested deeper than {MAX_NESTING} levels of arrays and objects")


#: The most values one line may hold: its ``,``, ``[`` and ``{`` bytes outside strings (issue 15, item 8).
#: Parsing builds one Python object per value (~60-80 bytes each whatever its size in the line: a
#: 24 MB line of ``[0],`` held 1.3 GiB), so without a bound the memory of one line is ~20x its
#: bytes. A million is far above any real event (the payloads of the kinds table hold tens of
#: values; a 1,536-float embedding ~1,500), and keeps a line's parsed tree under ~80 MB. More is
#: MALFORMED_LINE, decided before any parse, the same by both cores.
MAX_LINE_NODES = 1_000_000
_STRUCTURAL = (b",", b"[", b"{")
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[^"]+|"')  # a string, a run outside strings, a stray quote


def too_many_nodes(body: bytes) -> bool:
    """Whether a line holds more than ``MAX_LINE_NODES`` values (no parse; bounded extra memory).

    A line of fewer bytes cannot (one byte per value at least); else the
    bytes ``,``, ``[``, ``{`` are counted, and only when there are more than
    the bound anywhere are those inside strings left out (a long string full
    of commas is one value), token by token, stopping once past it.
    """
    if len(body) <= MAX_LINE_NODES:
        return False
    count = body.count
    if sum(count(c) for c in _STRUCTURAL) <= MAX_LINE_NODES:
        return False
    nodes = 0
    for m in _TOKEN.finditer(body):
        start, end = m.span()
        if body[start] != 0x22:  # outside strings ('"' starts a string or is a stray quote)
            nodes += count(b",", start, end) + count(b"[", start, end) + count(b"{", start, end)
            if nodes > MAX_LINE_NODES:
                return True
    return False


def _too_many_nodes_problem() -> Problem:
    return Problem(
        "MALFORMED_LINE",
        f"line holds more than {MAX_LINE_NODES:,} values (bounded so that checking one line "
        "needs bounded memory; see docs/reader.md)",
    )


#: what a line that parses to something other than an object is, for MALFORMED_LINE
_VALUE_NAMES: dict[type[object], str] = {list: "an array", str: "a string"}


def parse_object(body: bytes) -> tuple[JSONObject, bytes, bool] | LineResult:
    """SPEC §2.1 parse rules, shared by both dialects: exactly one JSON object,
    no duplicate key, exact 64-bit integers.

    Returns ``(object, orjson's sorted dump, fast)`` where ``fast`` means the
    line is byte-identical to that dump and the dump is already JCS; or the
    failing ``LineResult``.
    """
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
            return LineResult(
                None, None, [Problem("DUPLICATE_KEY", f"duplicate key {str(exc)!r} in an object")], parsed=False
            )
        except (ValueError, RecursionError) as exc:
            return LineResult(
                None, None, [Problem("MALFORMED_LINE", f"not valid JSON: {_describe_json_error(exc)}")], parsed=False
            )
    return obj, dumped, fast


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


def analyze_line(body: bytes, schema_version: int = LATEST_SCHEMA_VERSION, *, fast: bool = True) -> LineResult:
    """Check one line (without its line ending). Pure: no file, no neighbours.

    ``fast=False`` skips the fast path (fastpath.py) -- for tests that prove
    both paths agree; the verdict is the same either way.
    """
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
