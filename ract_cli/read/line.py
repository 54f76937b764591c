"""One line of a RACT log, judged alone (SPEC §2.1-2.6): parse, envelope, canonical hash, kind and payload.

Pure functions of a line's bytes: they know nothing of other lines.
"""

from __future__ import annotations

import hashlib

import orjson

from ract_cli.format.canonical import CanonicalizationError, chain_hash, orjson_is_jcs
from ract_cli.format.json_types import JSONObject
from ract_cli.format.kinds import KINDS_BY_NAME, LATEST_SCHEMA_VERSION, VALIDATORS, kinds_for_version
from ract_cli.format.model import ENVELOPE_KEYS, HEX32, HEX64, MAX_TIMESTAMP_NS
from ract_cli.format.text import short
from ract_cli.read import core
from ract_cli.read.event import BIG_LINE_BYTES, hash_mismatch
from ract_cli.read.json_rules import (
    _VALUE_NAMES,
    MAX_LINE_NODES,
    Body,
    LineResult,
    Problem,
    _describe_json_error,
    _duplicate_key_problem,
    _DuplicateKey,
    _invalid_utf8,
    _too_deep_problem,
    _too_many_nodes_problem,
    parse_exact,
    too_deep,
    too_many_nodes,
)
from ract_cli.read.long_line import parse_big

_SORT = orjson.OPT_SORT_KEYS
_HASH_PREFIX = b'{"hash":"'  # sorted keys put "hash" first in a valid envelope


def parse_object(body: Body) -> tuple[JSONObject, bytes, bool] | LineResult:
    """SPEC §2.1 parse rules, shared by both dialects: exactly one JSON object,
    no duplicate key, exact 64-bit integers.

    Returns ``(object, orjson's sorted dump, fast)`` where ``fast`` means the
    line is byte-identical to that dump and the dump is already JCS; or the
    failing ``LineResult``. A line longer than ``BIG_LINE_BYTES`` is never
    dumped (``long_line.parse_big``: ``(object, b"", False)``, the same verdicts).
    """
    if len(body) > BIG_LINE_BYTES:
        return parse_big(body)
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
        proven = core.prove(body, schema_version)  # a fully valid event, proven cheaply (either core)
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
        problems.append(hash_mismatch(computed, stored_hash))  # (a valid envelope: the stored value)

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
