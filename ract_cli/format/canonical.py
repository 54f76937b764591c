"""Canonical serialization, SPEC §2.3: RFC 8785 (JCS) with exact integers.

Two paths give the same bytes:

* ``jcs_exact`` is a direct transcription of RFC 8785 (sections cited
  inline). It is the definition.
* ``canonical_bytes`` first asks orjson for sorted compact output and keeps
  it when a cheap scan proves it already equals JCS; otherwise it falls back
  to ``jcs_exact``. orjson's string escaping equals JCS's (measured in
  tests); where they differ is float notation (``2.0``, ``-0.0``,
  ``1e+16``, ``1e-6``), integers past 64 bits, and key order when keys mix
  astral-plane characters with U+E000..U+FFFF (UTF-8 byte order vs UTF-16
  code-unit order). ``orjson_is_jcs`` flags every such case; a flag on a
  lookalike inside a string only costs speed, never correctness.

``chain_hash`` is SPEC §2.4, the one hash of the chain: SHA-256 of those
bytes for the object without its ``hash`` key. The writer (``event_hash``),
the journal encoder (``record_hash``) and the reader
(``read.line.hash_without_hash_key``) all call it. The reader's fast paths
(``read/line.py``, ``read/fastpath.py``) hash the very same bytes without
building them: a line that is already canonical, minus its leading
``"hash"`` member.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping

import orjson


class CanonicalizationError(ValueError):
    """The value has no canonical form (NaN, infinity, non-JSON type, bad string)."""


# Sorted keys; refuse (TypeError, then the exact path refuses too) what JSON
# has no type for but orjson would serialize natively: subclasses of
# str/int/dict/list, datetimes, dataclasses.
_SORT = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)

# Number tokens orjson writes differently from JCS. Each check is a separate
# pattern with a literal or one-charset prefix, so ``re`` can skip ahead
# quickly (one alternation of all three was ~4x slower on a typical event).
# They may fire on lookalikes inside strings: that only costs speed.
_EXPONENT = re.compile(rb"e[+-]")  # "1e+16", "1e-6": JCS writes some of these in plain form
_INTEGRAL_FLOAT = re.compile(rb"\.0(?:[,}\]]|\Z)")  # "2.0", "-0.0": JCS writes "2", "0"
# 19-digit integers from 9e18 and any 20+ digit integer: past the signed
# 64-bit range (or close to it) the reader must re-parse exactly.
_BIG_INT = re.compile(rb"[:,\[]-?(?:9\d{18}|\d{20,})(?:[,}\]]|\Z)")


def orjson_is_jcs(dumped: bytes) -> bool:
    """True when orjson's sorted compact output ``dumped`` is already JCS.

    False for any exponent or integral float form, for integers of 19 digits
    from 9e18 or of 20+ digits (so a reader re-parses them exactly), for a
    bare top-level number, and when keys may mix U+E000..U+FFFF with
    astral-plane characters (UTF-8 byte order differs from UTF-16 order).
    """
    if dumped[:1] in b"-0123456789":  # also true for b""
        return False  # a bare number: the exact path is as cheap, and never wrong
    if _EXPONENT.search(dumped) or _INTEGRAL_FLOAT.search(dumped) or _BIG_INT.search(dumped):
        return False
    if dumped.isascii():
        return True
    # UTF-8 lead bytes: 0xEE/0xEF start U+E000..U+FFFF, 0xF0..0xF4 start U+10000..
    if b"\xee" in dumped or b"\xef" in dumped:
        return not (
            b"\xf0" in dumped or b"\xf1" in dumped or b"\xf2" in dumped or b"\xf3" in dumped or b"\xf4" in dumped
        )
    return True


def canonical_bytes(value: object) -> bytes:
    """The canonical (JCS, exact-integer) UTF-8 bytes of a JSON value.

    Raises ``CanonicalizationError`` for what has no JSON form (NaN,
    infinities, non-str keys, lone surrogates, sets, bytes...). Exception:
    values orjson serializes natively that are not JSON types (``uuid.UUID``,
    ``enum.Enum`` members) get orjson's form here, where ``jcs_exact`` refuses.
    """
    try:
        dumped = orjson.dumps(value, option=_SORT)
    except (TypeError, orjson.JSONEncodeError):
        # orjson refuses ints past 64 bits and non-str keys; the exact path decides.
        return jcs_exact(value)
    if not orjson_is_jcs(dumped):
        return jcs_exact(value)
    # orjson writes NaN and infinities as null: when a null is present, prove
    # by round trip that each one was a real None (else the exact path raises).
    if b"null" in dumped and orjson.loads(dumped) != value:
        return jcs_exact(value)
    return dumped


def chain_hash(obj: Mapping[str, object], *, exact: bool = False) -> str:
    """SPEC §2.4: the SHA-256 hex of the canonical bytes of ``obj`` without its ``hash`` key.

    ``exact=True`` hashes ``jcs_exact``'s bytes directly (the same bytes for
    any parsed JSON value; the reader uses it where orjson's form is already
    known not to be JCS, and for every line too long for a whole copy), fed to
    SHA-256 in pieces as they are written: memory stays bounded (about
    ``_PIECE_CHARS`` characters) however long the value. Raises
    ``CanonicalizationError`` (or ``RecursionError`` for nesting too deep to
    serialize) like the functions it calls.
    """
    unhashed = {k: v for k, v in obj.items() if k != "hash"}
    if exact:
        return jcs_sha256(unhashed)
    return hashlib.sha256(canonical_bytes(unhashed)).hexdigest()


# --- the exact path ------------------------------------------------------


def jcs_exact(value: object) -> bytes:
    """RFC 8785 serialization, with integers written as exact decimals."""
    parts: list[str] = []
    _serialize(value, parts, None)
    try:
        return "".join(parts).encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogate in a string
        raise CanonicalizationError(f"string is not valid Unicode: {exc}") from None


#: A string longer than this many characters is escaped and written piece by piece, and a streamed
#: hash (``jcs_sha256``) is fed after it; the pieces held between two feeds stay under about this size.
_PIECE_CHARS = 1 << 20
_FLUSH_CHARS = 1 << 12  # a string longer than this is fed to the hash at once
_FLUSH_PARTS = 1 << 8  # parts held before a feed (each shorter than _FLUSH_CHARS, or a few bytes)


def jcs_sha256(value: object) -> str:
    """SHA-256 hex of ``jcs_exact(value)``, computed without ever holding those bytes whole.

    The very bytes of ``jcs_exact`` (one serializer writes both), encoded and
    hashed in pieces: what is held at a time is bounded by ``_PIECE_CHARS``
    characters, whatever the size of ``value`` -- so hashing a line of tens of
    megabytes costs no copy of it (issue 15, item 8).
    """
    digest = hashlib.sha256()
    parts: list[str] = []

    def feed() -> None:
        digest.update("".join(parts).encode("utf-8"))
        parts.clear()

    try:
        _serialize(value, parts, feed)
        feed()
    except UnicodeEncodeError:  # a lone surrogate: jcs_exact raises it, worded for the whole string
        jcs_exact(value)
        raise
    return digest.hexdigest()


def _serialize(value: object, out: list[str], feed: Callable[[], None] | None) -> None:
    """Append the JCS text of ``value`` to ``out``; ``feed`` (streamed hashing): called to drain ``out``."""
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif type(value) is int:
        out.append(str(value))  # exact digits (SPEC §2.3 extension)
    elif type(value) is float:
        out.append(format_number(value))
    elif type(value) is str:
        if len(value) <= _FLUSH_CHARS:
            out.append(_quote(value))
        else:
            _long_string(value, out, feed)
    elif type(value) is list or type(value) is tuple:
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _serialize(item, out, feed)
            if feed is not None and len(out) >= _FLUSH_PARTS:
                feed()
        out.append("]")
    elif type(value) is dict:
        ascii_keys = True
        for key in value:
            if type(key) is not str:
                raise CanonicalizationError(f"object key must be a string, got {type(key).__name__}")
            ascii_keys = ascii_keys and key.isascii()
        out.append("{")
        # RFC 8785 §3.2.3: sort by UTF-16 code units (for ASCII keys, the order of the strings).
        for i, key in enumerate(sorted(value) if ascii_keys else sorted(value, key=utf16_key)):
            if i:
                out.append(",")
            if len(key) <= _FLUSH_CHARS:
                out.append(_quote(key))
            else:
                _long_string(key, out, feed)
            out.append(":")
            _serialize(value[key], out, feed)
            if feed is not None and len(out) >= _FLUSH_PARTS:
                feed()
        out.append("}")
    else:
        raise CanonicalizationError(f"{type(value).__name__} is not a JSON value")


def _long_string(text: str, out: list[str], feed: Callable[[], None] | None) -> None:
    """A quoted string of more than ``_FLUSH_CHARS`` characters, escaped ``_PIECE_CHARS`` at a time (escaping is
    per character, so the pieces join to ``_quote(text)``), each piece fed to a streamed hash as it is made."""
    out.append('"')
    for start in range(0, len(text), _PIECE_CHARS):
        piece = text[start : start + _PIECE_CHARS]
        if len(_NEEDS_ESCAPE.findall(piece, 0, 4096)) > 64:  # dense with escapes: one C pass, no callbacks
            out.append(piece.translate(ESCAPE_TABLE))
        else:
            out.append(_NEEDS_ESCAPE.sub(_escape_char, piece))
        if feed is not None:
            feed()
    out.append('"')


def utf16_key(key: str) -> bytes:
    """A key's sort key in JCS's order: its UTF-16 code units (RFC 8785 §3.2.3)."""
    return key.encode("utf-16-be", "surrogatepass")


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group()
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


#: the same escapes as a ``str.translate`` table: every character JCS (and orjson) escapes -> its escape
ESCAPE_TABLE = {code: _ESCAPES.get(chr(code)) or f"\\u{code:04x}" for code in (*range(0x20), 0x22, 0x5C)}


def _quote(text: str) -> str:
    """RFC 8785 §3.2.2.2: escape only '"', '\\' and U+0000..U+001F."""
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, text) + '"'


def format_number(x: float) -> str:
    """ECMAScript Number::toString (RFC 8785 §3.2.2.3) for a finite double."""
    if math.isnan(x) or math.isinf(x):
        raise CanonicalizationError(f"{x!r} has no JSON form")
    if x == 0:
        return "0"  # also -0.0
    sign = "-" if x < 0 else ""
    # repr gives the shortest round-trip digits, as ECMAScript requires.
    mantissa, _, exp_text = repr(abs(x)).partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    all_digits = int_part + frac_part
    significant = all_digits.lstrip("0")
    # value = 0.<digits> x 10^n  (ECMA-262 Number::toString, n as in the spec)
    n = len(int_part) + (int(exp_text) if exp_text else 0) - (len(all_digits) - len(significant))
    digits = significant.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    exp = f"e{'+' if e >= 0 else '-'}{abs(e)}"
    if k == 1:
        return sign + digits + exp
    return sign + digits[0] + "." + digits[1:] + exp
