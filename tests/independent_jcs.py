"""An RFC 8785 (JCS) encoder with SPEC §2.3's exact integers, written apart from ``ract_cli``.

The black-box conformance suites build their logs with this, never with
ract's own writer or canonicalizer, so a bug there cannot hide itself.
Strings and non-integral floats go through the ``rfc8785`` reference package.
"""

from __future__ import annotations

import hashlib

import rfc8785


def jcs(v) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v == int(v) and abs(v) < 2**53:
            return str(int(v))  # -0.0 -> 0, 2.0 -> 2
        return rfc8785.dumps(v).decode()
    if isinstance(v, str):
        return rfc8785.dumps(v).decode()
    if isinstance(v, list):
        return "[" + ",".join(jcs(x) for x in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(jcs(k) + ":" + jcs(v[k]) for k in keys) + "}"
    raise TypeError(type(v))


def rhash(record: dict) -> str:
    """SPEC §2.4: sha256 of the canonical bytes of the record without ``hash``."""
    return hashlib.sha256(jcs({k: v for k, v in record.items() if k != "hash"}).encode("utf-8")).hexdigest()
