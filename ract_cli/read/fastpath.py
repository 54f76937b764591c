"""The verifier's fast path: prove a line is a fully valid event, cheaply.

``verdict.line_result`` and ``line.analyze_line`` first ask ``core.prove``
(this module's ``fast_analyze`` when the Python core is chosen, else
``core.native_analyze``, SPEC §11). ``fast_analyze`` returns a result only for
a line with no finding at all -- values whose canonical bytes orjson's sorted
dump gives exactly (in any key order, with any JSON whitespace, and any
escapes: ``json.dumps``' ``\\u`` escapes, ``\\/``, upper-case hex), orjson's
form already JCS, a valid envelope, the hash matching, a kind of the
vocabulary and a payload its validator accepts. For anything else it returns
``None`` and the reference path in ``analyze_line`` decides (and words the
findings). So the fast path can only ever change speed, never a verdict:
``tests/test_parallel.py`` checks both paths agree.

Why each shortcut is exact:

* ``orjson.dumps(orjson.loads(body), OPT_SORT_KEYS) == body``, or the
  unsorted dump (its non-ASCII characters ``\\u``-escaped when the line is
  ASCII) equals the line once JSON whitespace is deleted from both (and, in a
  line escaped another way, each escape written as orjson writes it): the line
  is orjson's form of its values in some key order, whitespace aside (no
  duplicate keys, numbers spelled as the values parsed round-trip:
  ``_written_as_orjson_would`` says why), so the sorted dump is its canonical
  form. orjson parses integers outside [-2^63, 2^64) as floats, which never
  dump back to the same integer token, so such lines leave the fast path here.
* A float below 1e-4 is spelled by repr (``json.dumps``) with an exponent
  (``4.3e-05``) where orjson writes ``0.000043``: a line that differs only
  there is compared with ``json.dumps``' compact text of its values instead,
  the same proof (repr's digits read back as the values). Any other spelling
  of a float (Java's ``5.0E-4``, ``1.50``) is compared token by token, as the
  value Python's ``float`` reads, which the reference path's parse is
  (``_floats_agree``).
* orjson's form equals JCS unless a number token has one of the exponents
  where ECMAScript writes plain digits (``e+16`` to ``e+20``: from 1e16 to
  1e21; ``e-6``: orjson writes some numbers from 1e-6 to 1e-5 so, JCS
  ``0.00000...``; ``e-1`` to ``e-5`` are matched too, though orjson writes
  none), is an integral float (``2.0``), or keys mix U+E000..U+FFFF with
  astral-plane characters; each of those sends the line to the reference
  path, but for such floats in the payload: JCS writes ``2.0`` and ``-0.0`` as ``2`` and
  ``0``, the integer of the same value, and a float from 1e-4 down or from
  1e16 up as ``format_number`` (the reference path's) does, so the sorted
  dump of the event with those floats so (ints, and ``orjson.Fragment``s of
  that text) is the canonical form (``_jcs_numbers``; it leaves a float from
  1e-4 to 1e16 to orjson, whose text of it is JCS's: ``tests/test_fast_path.py``
  holds orjson to that over every magnitude). The payload's text is
  searched, strings included: ``claude-3-5`` or ``v1.0,`` in a string then
  costs that dump, which changes nothing (it once sent every line naming such
  a model to the reference path), and a float outside the payload fails the
  envelope's type checks. A runtime writing Python floats (a score of
  ``1.0``, a latency of ``0.0``, a price of ``3e-06`` a token) writes such
  lines often: on the reference path they cost ~25 times a line.
* Integers in [2^63, 2^64) (which orjson parses exactly but SPEC §2.1 calls
  malformed) can only sit in the payload of an otherwise valid envelope:
  ``OPT_STRICT_INTEGER`` finds any payload integer past 2^53, and only then is
  the exact big-integer pattern consulted.
* The canonical bytes without ``hash`` are the line minus its leading
  ``"hash":"<64 hex>",`` member (sorted keys put it first); a computed hash
  equal to the stored one proves the stored one is 64 lowercase hex.
* Payload checks are generated from the same ``KindDef`` fields that
  ``model.compile_validator`` reads, as straight-line code that answers only
  "certainly valid" (True) or "ask the validator" (False).
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any, cast

import orjson

from ract_cli.format.json_types import Event, Payload
from ract_cli.format.kinds import KINDS, kinds_for_version
from ract_cli.format.model import HEX32, HEX64, MAX_TIMESTAMP_NS, Field, KindDef
from ract_cli.read.event import BIG_LINE_BYTES
from ract_cli.read.json_rules import MAX_LINE_NODES, too_many_nodes

_loads = orjson.loads
_json_dumps = json.dumps  # (orjson imports json: no start-up of its own)
_dumps = orjson.dumps
_SORT = orjson.OPT_SORT_KEYS
_STRICT = orjson.OPT_STRICT_INTEGER
_sha256 = hashlib.sha256
_HEX32 = HEX32.fullmatch
_HEX64 = HEX64.fullmatch
_PREFIX = b'{"hash":"'
#: the exponents orjson writes where JCS (ECMAScript) writes plain digits; its other exponent forms (below 1e-6,
#: from 1e21 on) are JCS's own (``tests/test_fast_path.py`` measures it over every magnitude)
_EXPONENT = re.compile(rb"e(?:\+(?:1[6-9]|20)|-[1-6])(?![0-9])").search
_INTEGRAL_FLOAT = re.compile(rb"\.0[,}\]]").search
_BIG_INT = re.compile(rb"[:,\[]-?(?:9\d{18}|\d{20,})[,}\]]").search
_ASTRAL_LEADS = (0xF0, 0xF1, 0xF2, 0xF3, 0xF4)  # (bytes as ints: ``in`` is then one memchr, ~8 x faster)


# --- payload checks generated from the kind definitions ---------------------

_TYPE_TESTS = {
    "string": "t is str",
    "integer": "(t is int or (t is float and v.is_integer()))",
    "number": "(t is int or t is float)",
    "boolean": "t is bool",
    "object": "t is dict",
    "array": "t is list",
    "null": "v is None",
}


def _item_test(json_type: str) -> str:
    return _TYPE_TESTS[json_type].replace("t is", "type(i) is").replace("v.", "i.").replace("v is", "i is")


def _field_code(f: Field, n: int, env: dict[str, object]) -> list[str]:
    """Lines of code returning False when field ``f`` of payload ``p`` may be invalid."""
    lines = [
        f"v = p.get({f.name!r}, _MISSING)",
        "if v is not _MISSING:",
        "    t = type(v)",
        f"    if not ({' or '.join(_TYPE_TESTS[t] for t in f.types)}): return False",
    ]
    if f.enum is not None:
        env[f"_ENUM{n}"] = frozenset(f.enum)
        lines.append(f"    if v not in _ENUM{n}: return False")
    if f.minimum is not None:
        lines.append(f"    if (t is int or t is float) and v < {f.minimum!r}: return False")
    if f.maximum is not None:
        lines.append(f"    if (t is int or t is float) and v > {f.maximum!r}: return False")
    if f.max_length is not None:
        lines.append(f"    if t is str and len(v) > {f.max_length!r}: return False")
    if f.pattern is not None:
        env[f"_PAT{n}"] = re.compile(f.pattern).fullmatch
        lines.append(f"    if t is str and not _PAT{n}(v): return False")
    if f.max_items is not None:
        lines.append(f"    if t is list and len(v) > {f.max_items!r}: return False")
    if f.items is not None:
        lines.append("    if t is list:")
        lines.append("        for i in v:")
        lines.append(f"            if not ({_item_test(f.items)}): return False")
    return lines


#: a generated payload check: True when the payload is certainly valid, False to ask the validator
FastCheck = Callable[[Payload], bool]


def compile_fast_check(kind: KindDef) -> FastCheck:
    """payload -> True when ``VALIDATORS[kind.name](payload)`` is certainly empty."""
    env: dict[str, object] = {"_MISSING": object(), "_INVARIANTS": tuple(inv.check for inv in kind.invariants)}
    body: list[str] = []
    for n, f in enumerate(kind.fields):
        body.extend(_field_code(f, n, env))
    if kind.invariants:
        body.append("for check in _INVARIANTS:")
        body.append("    if not check(p): return False")
    body.append("return True")
    source = "def check(p):\n    try:\n" + "\n".join("        " + line for line in body) + "\n"
    source += "    except Exception:\n        return False\n"
    exec(compile(source, f"<fast check {kind.name}>", "exec"), env)
    return cast(FastCheck, env["check"])  # the function the source above defines


@functools.cache
def fast_checks() -> dict[str, FastCheck]:
    """Every kind's fast check, compiled on first use (~13 ms: a run on the native core never needs them)."""
    return {k.name: compile_fast_check(k) for k in KINDS}


_CHECKS_BY_VERSION: dict[int, dict[str, FastCheck]] = {}


def checks_for_version(schema_version: int) -> dict[str, FastCheck]:
    """Fast payload checks of the kinds in that version's vocabulary (a kind outside it is absent)."""
    checks = _CHECKS_BY_VERSION.get(schema_version)
    if checks is None:
        vocabulary = kinds_for_version(schema_version)
        checks = _CHECKS_BY_VERSION[schema_version] = {k: c for k, c in fast_checks().items() if k in vocabulary}
    return checks


# --- one line ------------------------------------------------------------------

_UNSET = object()  # equal to no value a line can hold
#: strings already proven well-formed on an earlier line: [run_id, step_id, last hash]. Only a
#: cache: a string equal to one that passed the same check passes it again.
_seen: list[object] = [_UNSET, _UNSET, _UNSET]
# The payload sits between these offsets of a canonical envelope line (every byte before is
# the fixed-format hash/id/kind/parent_id members, every byte after prev_hash/run_id/step_id/
# timestamp_ns), so number-form scans can skip the rest: those values are type-checked anyway.
_PAYLOAD_FROM = 150
_PAYLOAD_BEFORE_END = 156


def fast_analyze(body: bytes | memoryview, schema_version: int) -> tuple[Event, str] | None:
    """``(event, hash)`` when the line is a fully valid event; else ``None`` (ask the reference path).

    Any key order and ``json.dumps``' default separators take this path: see
    ``_written_as_orjson_would`` for why such a line's orjson parse is exact.
    A line longer than ``BIG_LINE_BYTES`` is left to the reference path.
    """
    if len(body) > BIG_LINE_BYTES or (len(body) > MAX_LINE_NODES and too_many_nodes(body)):
        return None  # (the second: the reference path's MALFORMED_LINE, which its callers check first)
    if type(body) is not bytes:
        body = bytes(body)
    try:
        obj = _loads(body)
    except orjson.JSONDecodeError:
        return None
    # Exactly nine keys, and each of the nine envelope keys is read below (a KeyError
    # leaves the fast path): together, exactly the envelope keys.
    if type(obj) is not dict or len(obj) != 9:
        return None
    try:
        canonical = _dumps(obj, option=_SORT)
        if canonical != body and not _written_as_orjson_would(obj, body):
            return None
    # nested deeper than orjson writes (it reads deeper), or json.dumps' second chance called with the stack
    # already deep: the reference path
    except (orjson.JSONEncodeError, RecursionError):
        return None
    try:
        return _checked(obj, canonical, schema_version)
    except (KeyError, RecursionError):  # (RecursionError: _jcs_numbers, as above)
        return None


#: JSON's whitespace (RFC 8259): the only bytes a line may hold outside its tokens
_BLANKS = b" \t\n\r"


def _json_u_escapes(error: UnicodeError) -> tuple[str, int]:
    """Codec error handler: the run of characters ASCII cannot encode as JSON ``\\uXXXX`` escapes, lowercase,
    a surrogate pair past U+FFFF (``json.dumps``' form)."""
    assert isinstance(error, UnicodeEncodeError)
    run = error.object[error.start : error.end]
    return "\\u" + run.encode("utf-16-be").hex("-", 2).replace("-", "\\u"), error.end


codecs.register_error("ract.json_u_escapes", _json_u_escapes)


def _written_as_orjson_would(obj: Event, body: bytes) -> bool:
    """Whether ``body`` is orjson's compact form of ``obj`` in the line's own key order, but for JSON
    whitespace and, in an ASCII line, ``\\u`` escapes of the non-ASCII characters and DEL (``json.dumps``' form);
    or, in a line holding ``e-``, ``json.dumps``' compact text of ``obj`` but for JSON whitespace (repr's
    spelling of its floats: ``4.3e-05``, where orjson writes ``0.000043``).

    Then the line holds no duplicate key and every number is spelled as orjson
    spells the value it parsed (a round trip, so the parse was exact): its
    canonical form is orjson's sorted dump, which ``_checked`` then treats
    exactly like a line written that way. Why comparing with every blank
    deleted is exact: in a valid line a ``\\`` is never followed by a blank,
    so the quotes that open and close strings sit at the same places of both
    texts once blanks are gone, and outside strings every two adjacent tokens
    are split by a structural character: equal texts without blanks have the
    same tokens, so the same members (none dropped as a duplicate) and the
    same number tokens. Blanks inside strings are deleted from both alike.

    A line escaped some other way is compared again with each ``\\/`` written
    ``/`` and, an ASCII line of values that are not, without regard to the
    case of letters (upper-case hex); failing that (Go's ``\\u003c``, any
    character escaped or raw), once each escape is written as orjson writes
    its character (``_as_orjson_escape``): that rewrites only the inside of
    strings, keeps every ``"`` that delimits one, and keeps each string's
    value, so the argument above holds for the rewritten text, whose strings
    then are orjson's. (Past ``_MAX_REWRITES`` escapes the reference path is
    the cheaper, and decides.)
    """
    plain = _dumps(obj)
    if plain == body:  # another key order, compact (the schema's field order, say)
        return True
    stripped = body.translate(None, _BLANKS) if 9 in body or 13 in body else body.replace(b" ", b"")  # (tab, CR)
    # orjson's compact text holds no blank but spaces inside strings (it escapes tab, CR and LF there):
    # deleting its spaces deletes its blanks, at a third of ``translate``'s cost
    ascii_line = body.isascii()
    escaped = None  # json.dumps' text of an ASCII line whose values are not: orjson's, \u-escaped
    if ascii_line and not plain.isascii():  # orjson writes raw UTF-8
        escaped = ascii_escaped(plain).replace(b" ", b"")
        if stripped == escaped:
            return True
    plain_blank = plain.replace(b" ", b"")  # (after json.dumps' ASCII lines are proven: they never need it)
    if escaped is None and (
        stripped == plain_blank
        or (0x7F in plain and stripped == ascii_escaped(plain).replace(b" ", b""))  # json.dumps escapes DEL
    ):
        return True
    if 0x5C in stripped:  # a backslash
        # PHP's \/ (orjson writes "/") and, in an ASCII line of values that are not, .NET's upper-case hex:
        # two rewrites at C's speed first. Deleting the backslash of each \/ and changing the case of letters
        # move no string's bounds (a quote's escape is the run of backslashes right before it; a letter
        # delimits nothing), so equal texts still have the same tokens. (Only a try: in \\/ the \/ is no
        # escape.)
        rewritten = stripped.replace(b"\\/", b"/")
        if escaped is None:
            if rewritten is not stripped and rewritten == plain_blank:  # (no \/: compared above)
                return True
        elif rewritten.lower() == escaped.lower():
            return True
        if stripped.count(b"\\") > _MAX_REWRITES:
            return False
        # Another writer's escapes (Go's ``\u003c``, a raw character here, an escaped one there): each escape
        # as orjson writes its character, then the same comparison.
        stripped = _ESCAPE.sub(_as_orjson_escape, stripped).replace(b" ", b"")
        if stripped == plain_blank:
            return True
        ascii_line = False  # (raw UTF-8 now)
    # A float below 1e-4 as repr spells it (4.3e-05; orjson: 0.000043): compared with json.dumps' own
    # text of the values, which a Python runtime writes. The same proof: its numbers are repr's, which
    # read back as the values (so orjson's parse was exact), and its text holds no blank but spaces.
    if b"e-" in stripped:
        text = _json_dumps(obj, ensure_ascii=ascii_line, separators=(",", ":"))
        if stripped == text.encode("utf-8", "surrogatepass").replace(b" ", b""):
            return True
    return _floats_agree(stripped, plain_blank)  # (escapes rewritten above: a line holding any)


#: a JSON string token, escapes whole (a split keeps it: the pieces alternate between and in strings)
_STRING = re.compile(rb'("[^"\\]*(?:\\.[^"\\]*)*")', re.DOTALL)
#: a JSON number token (a split keeps it)
_NUMBER = re.compile(rb"(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)")


def _floats_agree(line: bytes, orjsons: bytes) -> bool:
    """Whether two JSON texts without blanks, strings spelled alike, are the same but for float tokens
    spelled another way (Java's ``5.0E-4``, Go's ``1e+21``, ``1.50``) where each reads back (Python's
    ``float``, the reference path's parse) as the value orjson's token spells, sign included.

    The texts outside strings are compared token by token: strings as text,
    numbers as text or, when both are float tokens, as values. Then the line
    holds orjson's tokens, so no duplicate key, and numbers orjson parsed
    exactly: the proof of ``_written_as_orjson_would``. An integer token must
    be orjson's own (a float token for one is a big integer orjson parsed as
    a float). Only lines no comparison before proved get here.
    """
    pieces = _differing(_STRING.split, line, orjsons)
    if pieces is None:
        return False
    rewrites = _MAX_REWRITES
    for at, mine, its in pieces:
        numbers = _differing(_NUMBER.split, mine, its)
        if at & 1 or numbers is None:  # (odd pieces: strings)
            return False
        rewrites -= len(numbers)
        if rewrites < 0:
            return False
        for k, a, b in numbers:
            if not k & 1 or not _is_float(a) or not _is_float(b) or float(a) != float(b):
                return False
            if (a[:1] == b"-") != (b[:1] == b"-"):  # (-0.0 == 0.0)
                return False
    return True


def _differing(
    split: Callable[[bytes], list[bytes]], text: bytes, other: bytes
) -> list[tuple[int, bytes, bytes]] | None:
    """The pieces two texts cut into by ``split`` (a pattern's split, its group kept) that differ, with their
    index; None when they cut into different numbers of pieces."""
    pieces, others = split(text), split(other)
    if len(pieces) != len(others):
        return None
    return [(at, a, b) for at, (a, b) in enumerate(zip(pieces, others, strict=True)) if a != b]


def _is_float(token: bytes) -> bool:
    return b"." in token or b"e" in token or b"E" in token


#: escapes rewritten one at a time, or float tokens compared by value, in one line at most: each costs ~1 µs of
#: Python, and past this many the reference path (a line of 100,000 ``\\u003c``: 3 ms, the rewriting 34-59 ms)
#: is the cheaper. (``\\/`` and upper-case hex are first rewritten all at once, at C's speed.)
_MAX_REWRITES = 128
#: one escape in a JSON string, matched from the left: a surrogate pair, another ``\\u`` escape, or a
#: one-character escape (``\\\\`` too, so that no match starts at the second backslash of one)
_ESCAPE = re.compile(rb"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)", re.DOTALL)


def _as_orjson_escape(match: re.Match[bytes]) -> bytes:
    """An escape of a valid line as orjson writes its character: raw UTF-8, but ``"``, ``\\`` and control
    characters escaped (``\\n``, lower-case ``\\u001f``). A lone surrogate stays as it is: orjson writes none."""
    escape = match[0]
    if len(escape) == 2:
        return b"/" if escape == b"\\/" else escape  # (the others are orjson's own: \" \\ \b \f \n \r \t)
    if len(escape) == 12:
        code = 0x10000 + ((int(escape[2:6], 16) - 0xD800) << 10) + int(escape[8:], 16) - 0xDC00
        return chr(code).encode()
    code = int(escape[2:], 16)
    if code < 0x20 or code == 0x22 or code == 0x5C:
        from ract_cli.format.canonical import ESCAPE_TABLE  # (~1 ms of start-up: only such an escape needs it)

        return ESCAPE_TABLE[code].encode()
    return escape if 0xD800 <= code < 0xE000 else chr(code).encode()


def ascii_escaped(text: bytes) -> bytes:
    """orjson's JSON text with each non-ASCII character and DEL as ``json.dumps`` escapes them: ``\\u``
    and four lowercase hex digits, a surrogate pair past U+FFFF."""
    escaped = text.decode().encode("ascii", "ract.json_u_escapes")
    return escaped.replace(b"\x7f", b"\\u007f")  # (ASCII: no codec escapes it; only ever inside a string)


def _jcs_numbers(value: Any) -> Any:
    """A copy of ``value`` with each float orjson may write otherwise than JCS as JCS writes it: an integral
    float below 1e16 as its int (orjson writes ``2.0``), a float from 1e-4 down or from 1e16 up as
    ``format_number``'s text (orjson: ``3e-6``, ``1e+16``; JCS: ``0.000003``, ``10000000000000000``) in an
    ``orjson.Fragment``, which orjson writes as it is. The event itself keeps its floats, as the reference
    path parses them."""
    kind = type(value)
    if kind is float:
        if 1e-4 <= abs(value) < 1e16:
            return int(value) if value.is_integer() else value
        from ract_cli.format.canonical import format_number  # (~1 ms of start-up: only such a float needs it)

        return orjson.Fragment(format_number(value).encode()) if value else 0
    if kind is dict:  # (a leaf is taken as it is, without a call: most are)
        return {key: item if type(item) in _LEAVES else _jcs_numbers(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _LEAVES else _jcs_numbers(item) for item in value]
    return value


#: the types of the JSON values ``_jcs_numbers`` returns as they are
_LEAVES = frozenset((str, int, bool, type(None)))


def _sorted_otherwise(value: Any) -> bool:
    """Whether an object in ``value`` has keys JCS sorts otherwise (by UTF-16 code units) than orjson's sorted
    dump (by code points): one holding a character from U+E000 to U+FFFF against one past U+FFFF. (Only such
    a line's keys are looked at: ``⚠️`` and ``😀`` in its strings are text.)"""
    if type(value) is dict:  # (the largest character of its keys first: most keys are ASCII)
        if len(value) > 1 and max("".join(value)) >= "\ue000":
            from ract_cli.format.canonical import utf16_key  # (~1 ms of start-up: only such keys need it)

            if sorted(value) != sorted(value, key=utf16_key):
                return True
        value = value.values()
    return any(_sorted_otherwise(item) for item in value if type(item) is dict or type(item) is list)


def _checked(obj: Event, body: bytes, schema_version: int) -> tuple[Event, str] | None:
    # ``body`` is orjson's sorted compact form of ``obj``; it must already be JCS (see the module docstring).
    end = len(body) - _PAYLOAD_BEFORE_END
    # The payload's text, strings included: most lines hold neither form anywhere. A form found in a string
    # (``v1.0,``) costs a dump that changes nothing, a third of what emptying the strings first cost (a
    # regular expression's sub). A float outside the payload fails the envelope's type checks below.
    if _EXPONENT(body, _PAYLOAD_FROM, end) or _INTEGRAL_FLOAT(body, _PAYLOAD_FROM, end):
        body = _dumps({**obj, "payload": _jcs_numbers(obj["payload"])}, option=_SORT)
    if (
        not body.isascii()
        and (0xEE in body or 0xEF in body)
        and any(c in body for c in _ASTRAL_LEADS)
        and _sorted_otherwise(obj["payload"])
    ):
        return None
    payload = obj["payload"]
    if type(payload) is not dict:
        return None
    try:
        _dumps(payload, option=_STRICT)
    except TypeError:  # orjson.JSONEncodeError: an integer past 2^53 somewhere in the payload
        if _BIG_INT(body):
            return None
    # The hash: canonical bytes are the line minus its leading "hash" member.
    stored = obj["hash"]
    if body[:9] != _PREFIX or _sha256(b"{" + body[75:]).hexdigest() != stored:
        return None
    # The rest of the envelope (SPEC §2.2).
    seen = _seen
    value = obj["id"]
    if type(value) is not str or not _HEX32(value):
        return None
    value = obj["run_id"]
    if value != seen[0]:
        if type(value) is not str or not _HEX32(value):
            return None
        seen[0] = value
    value = obj["step_id"]
    if value is not None and value != seen[1]:
        if type(value) is not str or not _HEX32(value):
            return None
        seen[1] = value
    value = obj["parent_id"]
    if value is not None and (type(value) is not str or not _HEX32(value)):
        return None
    value = obj["prev_hash"]
    if value != seen[2] and (type(value) is not str or not _HEX64(value)):
        return None
    seen[2] = stored
    value = obj["timestamp_ns"]
    if type(value) is not int or not 0 <= value < MAX_TIMESTAMP_NS:
        return None
    checks = _CHECKS_BY_VERSION.get(schema_version) or checks_for_version(schema_version)
    check = checks.get(obj["kind"]) if type(obj["kind"]) is str else None
    if check is None or not check(payload):
        return None
    return obj, stored
