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
  code-unit order). ``_NEEDS_EXACT`` flags every such case; a flag on a
  lookalike inside a string only costs speed, never correctness.
"""

from __future__ import annotations

import math
import re

import orjson


class CanonicalizationError(ValueError):
    """The value has no canonical form (NaN, infinity, non-JSON type, bad string)."""


_SORT = orjson.OPT_SORT_KEYS

# Number tokens orjson writes differently from JCS: any exponent form,
# an integral float ("2.0", "-0.0"), and 64-bit-plus integers.
_NEEDS_EXACT = re.compile(
    rb"\de[+-]|\d\.0[,}\]]|[:,\[]-?(?:9\d{18}|\d{20,})[,}\]]"
)
_BMP_HIGH = re.compile(rb"[\xee\xef]")  # UTF-8 lead bytes of U+E000..U+FFFF
_ASTRAL = re.compile(rb"[\xf0-\xf4]")  # UTF-8 lead bytes of U+10000..


def orjson_is_jcs(dumped: bytes) -> bool:
    """True when orjson's sorted compact output ``dumped`` is already JCS."""
    if _NEEDS_EXACT.search(dumped):
        return False
    if dumped.isascii():
        return True
    return not (_BMP_HIGH.search(dumped) and _ASTRAL.search(dumped))


def canonical_bytes(value: object) -> bytes:
    """The canonical (JCS, exact-integer) UTF-8 bytes of a JSON value."""
    try:
        dumped = orjson.dumps(value, option=_SORT)
    except (TypeError, orjson.JSONEncodeError):
        # orjson refuses ints past 64 bits and non-str keys; the exact path decides.
        return jcs_exact(value)
    if orjson_is_jcs(dumped):
        return dumped
    return jcs_exact(value)


# --- the exact path ------------------------------------------------------

def jcs_exact(value: object) -> bytes:
    """RFC 8785 serialization, with integers written as exact decimals."""
    parts: list[str] = []
    _serialize(value, parts)
    try:
        return "".join(parts).encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogate in a string
        raise CanonicalizationError(f"string is not valid Unicode: {exc}") from None


def _serialize(value: object, out: list[str]) -> None:
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
        out.append(_quote(value))
    elif type(value) is list or type(value) is tuple:
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _serialize(item, out)
        out.append("]")
    elif type(value) is dict:
        for key in value:
            if type(key) is not str:
                raise CanonicalizationError(f"object key must be a string, got {type(key).__name__}")
        out.append("{")
        # RFC 8785 §3.2.3: sort by UTF-16 code units.
        for i, key in enumerate(sorted(value, key=_utf16_key)):
            if i:
                out.append(",")
            out.append(_quote(key))
            out.append(":")
            _serialize(value[key], out)
        out.append("}")
    else:
        raise CanonicalizationError(f"{type(value).__name__} is not a JSON value")


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group()
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


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
