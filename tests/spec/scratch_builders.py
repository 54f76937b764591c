"""Logs built with the second oracle, ``jcs_from_scratch.py``; tests use this module as ``scratch``.

Nothing from ``ract_cli``'s writer or canonicalizer, and nothing from
``tests/independent_jcs.py``, builds a log here: ids, chaining, line
spelling and hashing are this module's own. The CLI runners are the shared
ones of ``builders.py`` (running a command involves no oracle).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .builders import ract, sub
from .jcs_from_scratch import ehash, es_number, jcs

__all__ = [
    "RUN",
    "RUN2",
    "SEC",
    "T0",
    "ZERO",
    "base",
    "chain",
    "closed_run",
    "edit",
    "ehash",
    "errors",
    "es_number",
    "ev",
    "jcs",
    "line",
    "logpath",
    "nid",
    "offsets",
    "ract",
    "sub",
    "verify_json",
    "write",
]

ZERO = "0" * 64
RUN = "ab" * 16
RUN2 = "cd" * 16
T0 = 1_764_000_000_000_000_000  # 2025-11-24T16:00:00Z, above 2^53
SEC = 1_000_000_000

_ids = [0]


def nid() -> str:
    _ids[0] += 1
    return hashlib.sha1(b"conformance-2/%d" % _ids[0]).hexdigest()[:32]


def ev(kind, payload=None, *, step=None, parent=None, ts=None, run=RUN) -> dict:
    return {
        "id": nid(),
        "run_id": run,
        "step_id": step,
        "parent_id": parent,
        "timestamp_ns": ts,
        "kind": kind,
        "payload": {} if payload is None else payload,
        "prev_hash": None,
        "hash": None,
    }


def chain(evs, *, start=ZERO, t0=T0, step_ns=1000):
    prev = start
    for i, e in enumerate(evs):
        if e["timestamp_ns"] is None:
            e["timestamp_ns"] = t0 + i * step_ns
        e["prev_hash"] = prev
        e["hash"] = ehash(e)
        prev = e["hash"]
    return evs


def line(e: dict) -> bytes:
    return jcs(e, line_form=True).encode("utf-8") + b"\n"


def write(path: Path, evs=None, *, raw: bytes | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw if raw is not None else b"".join(line(e) for e in evs))
    return path


def logpath(root: Path, name: str = "log", run: str = RUN) -> Path:
    return root / name / run / "events.jsonl"


def closed_run(n_reaped: int = 0) -> list[dict]:
    """run.started, step.started, n x process.reaped, step.committed, run.completed: no open handle."""
    s = nid()
    evs = [ev("run.started", {"intent_id": "x"}), ev("step.started", {"parent_snapshot": "a" * 40}, step=s)]
    evs += [ev("process.reaped", {"reason": "exit", "reap_latency_ms": i}, step=s) for i in range(n_reaped)]
    evs += [ev("step.committed", {"outcome": "COMMITTED"}, step=s), ev("run.completed", {"final_decision": "done"})]
    return chain(evs)


def base():
    """A closed run and its lines."""
    evs = closed_run()
    return evs, [line(e) for e in evs]


def offsets(lines):
    """The byte offset of each line."""
    out, n = [], 0
    for one in lines:
        out.append(n)
        n += len(one)
    return out


def edit(e, **payload):
    """Change the event's payload after it was hashed."""
    e["payload"].update(payload)


def verify_json(capsys, *args):
    rc, out, _err = ract(capsys, "verify", "--format", "json", *args)
    return rc, json.loads(out)


def errors(report, i=0):
    return [(f["code"], f["line"], f["offset"]) for f in report["files"][i]["findings"] if f["severity"] == "error"]
