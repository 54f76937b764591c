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


ZERO = "0" * 64  # the genesis prev_hash
T0 = 1_764_000_000_000_000_000  # above 2^53: exact digits required


def chain(events: list[dict], start: str = ZERO) -> list[dict]:
    """Fill in timestamps (when None), prev_hash and hash, in order: a valid chain from ``start``."""
    prev = start
    for i, e in enumerate(events):
        if e["timestamp_ns"] is None:
            e["timestamp_ns"] = T0 + i * 1000
        e["prev_hash"] = prev
        e["hash"] = rhash(e)
        prev = e["hash"]
    return events


def line(e: dict) -> bytes:
    """One record as a canonical log line."""
    return (jcs(e) + "\n").encode("utf-8")


_issued = [0]


def new_id() -> str:
    """A fresh 32-hex event id (a counter's md5: distinct within a test run, and repeatable)."""
    _issued[0] += 1
    return hashlib.md5(str(_issued[0]).encode()).hexdigest()


def event(
    kind: str,
    payload: dict | None = None,
    *,
    run: str,
    step: str | None = None,
    parent: str | None = None,
    ts: int | None = None,
    eid: str | None = None,
) -> dict:
    """An unchained envelope; ``chain`` fills in timestamps (when None), prev_hash and hash."""
    return {
        "id": eid or new_id(),
        "run_id": run,
        "step_id": step,
        "parent_id": parent,
        "timestamp_ns": ts,
        "kind": kind,
        "payload": payload if payload is not None else {},
        "prev_hash": None,
        "hash": None,
    }
