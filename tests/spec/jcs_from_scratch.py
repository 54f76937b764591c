"""A second JCS (RFC 8785) with SPEC §2.3's exact integers, written from scratch.

The second oracle of the conformance tests. ``tests/independent_jcs.py``
hands strings and non-integral floats to the ``rfc8785`` package; this one
writes the ECMAScript ``Number::toString`` form and the string escapes by
hand and shares no code with it, with ``rfc8785`` or with ``ract_cli``, so a
mistake common to two of them still shows. ``scratch_builders.py`` builds logs
with it.
"""

from __future__ import annotations

import hashlib
import math


def es_number(x: float) -> str:
    """ECMAScript Number::toString of a finite double (what JCS writes)."""
    if math.isnan(x) or math.isinf(x):
        raise ValueError(x)
    if x == 0:
        return "0"
    r = repr(x)  # Python's repr is the shortest round-trip digit string
    neg = r.startswith("-")
    r = r.lstrip("-")
    mant, _, exp = r.partition("e")
    ip, _, fp = mant.partition(".")
    allz = ip + fp
    digits = allz.lstrip("0")
    n = len(ip) + int(exp or 0) - (len(allz) - len(digits))  # value = 0.DIGITS x 10^n
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        s = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return ("-" if neg else "") + s


_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def jstr(s: str) -> str:
    return '"' + "".join(_SHORT.get(c, f"\\u{ord(c):04x}" if ord(c) < 0x20 else c) for c in s) + '"'


def jcs(v, *, line_form: bool = False) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if line_form and v == int(v) and 2**63 <= abs(v) < 1e21:
            # JCS writes these as bare digits, which SPEC §2.1 reads as an
            # integer outside 64 bits: a line must keep a float spelling
            return repr(v)
        return es_number(v)
    if isinstance(v, str):
        return jstr(v)
    if isinstance(v, list):
        return "[" + ",".join(jcs(x, line_form=line_form) for x in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(jstr(k) + ":" + jcs(v[k], line_form=line_form) for k in keys) + "}"
    raise TypeError(type(v))


def ehash(e: dict) -> str:
    """SPEC §2.4: sha256 of the canonical bytes of the event without ``hash``."""
    return hashlib.sha256(jcs({k: x for k, x in e.items() if k != "hash"}).encode("utf-8")).hexdigest()
