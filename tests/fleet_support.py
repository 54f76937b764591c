"""A small fleet of runs for the export and sql tests, written apart from ract's own writer.

Every log is built with ``independent_jcs`` (its own RFC 8785 encoder and
hash), in several byte layouts, so the tables are checked against logs ract
did not write. The runs are chosen so that the auditor questions of issue 16
have non-trivial answers:

- ``reaped``: completed, three ``process.reaped`` for ``dispose_unsuccessful``
  (the one run reaped for it more than twice) -- written in a foreign layout
  (reversed keys, spaces, ``\\u`` escapes, CRLF);
- ``gate``: ``run.completed`` while the required predicate's latest verdict
  failed (GATE_INCONSISTENT), one dispose_unsuccessful reap;
- ``recovered``: the required predicate failed, then passed: not flagged;
  two dispose_unsuccessful reaps (not more than twice); no final newline;
- ``open``: never closed (OPEN_RUN, a warning: exit 0);
- ``tampered``: a copy of ``recovered`` whose line ``TAMPERED_LINE`` was edited
  *and rehashed*: the next line's ``prev_hash`` no longer links (CHAIN_BREAK),
  so trust ends at the edited line itself.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from independent_jcs import T0, chain, event, line, rhash
from kind_examples import VALID

SECOND = 1_000_000_000
TAMPERED_LINE = 6  # 1-based line of the edited event in the tampered run
#: tool -> tool.result duration_ns samples, per run (the p99 question)
TOOL_DURATIONS = {
    "reaped": {"pytest": [100, 200, 300], "ruff": [10]},
    "gate": {"pytest": [400, 500]},
    "recovered": {"pytest": [50], "ruff": [20, 30]},
}


def run_id(name: str) -> str:
    return hashlib.sha256(f"ract.test.fleet:{name}".encode()).hexdigest()[:32]


def _step_id(name: str, n: int) -> str:
    return hashlib.sha256(f"ract.test.fleet:{name}:step{n}".encode()).hexdigest()[:32]


def _events(name: str, *, reaps: int, verdicts: list[bool], close: bool, day: int = 0) -> list[dict]:
    run = run_id(name)
    step = _step_id(name, 1)
    start = T0 + day * 86_400 * SECOND
    evs = [
        event("run.started", VALID["run.started"], run=run, ts=start),
        event("step.started", VALID["step.started"], run=run, step=step, ts=start + 1 * SECOND),
    ]
    t = start + 2 * SECOND
    for tool, durations in TOOL_DURATIONS.get(name, {}).items():
        for d in durations:
            called = event("tool.called", {"tool": tool, "arguments": {"n": d}}, run=run, step=step, ts=t)
            evs.append(called)
            evs.append(
                event(
                    "tool.result",
                    {"tool": tool, "ok": True, "duration_ns": d * 1_000_000},
                    run=run,
                    step=step,
                    parent=called["id"],
                    ts=t + d * 1_000_000,
                )
            )
            t += SECOND
    for _ in range(reaps):
        evs.append(event("process.reaped", VALID["process.reaped"], run=run, step=step, ts=t))
        t += SECOND
    for ok in verdicts:
        payload = dict(VALID["predicate.evaluated"], ok=ok, reason="passed" if ok else "1 failed")
        evs.append(event("predicate.evaluated", payload, run=run, step=step, ts=t))
        t += SECOND
    evs.append(event("step.committed", VALID["step.committed"], run=run, step=step, ts=t))
    if close:
        evs.append(event("run.completed", VALID["run.completed"], run=run, ts=t + SECOND))
    return chain(evs)


def _foreign(e: dict) -> bytes:
    """Another writer's layout: keys reversed, spaces after separators, non-ASCII escaped, CRLF."""
    reordered = dict(reversed(list(e.items())))
    return (json.dumps(reordered, ensure_ascii=True, separators=(", ", ": ")) + "\r\n").encode()


def write_fleet(root: Path) -> dict[str, Path]:
    """Write the fleet under ``root/<run_id>/events.jsonl``; return name -> log path."""
    runs = {
        "reaped": _events("reaped", reaps=3, verdicts=[True], close=True),
        "gate": _events("gate", reaps=1, verdicts=[True, False], close=True, day=1),
        "recovered": _events("recovered", reaps=2, verdicts=[False, True], close=True, day=2),
        "open": _events("open", reaps=0, verdicts=[True], close=False, day=3),
    }
    paths: dict[str, Path] = {}
    for name, evs in runs.items():
        path = root / run_id(name) / "events.jsonl"
        path.parent.mkdir(parents=True)
        if name == "reaped":
            data = b"".join(_foreign(e) for e in evs)
        else:
            data = b"".join(line(e) for e in evs)
            if name == "recovered":
                data = data[:-1]  # no final newline (a warning: still exit 0)
        path.write_bytes(data)
        paths[name] = path
    # tampered: "recovered" under another run directory name would be RUN_DIR_MISMATCH; give it its own run
    evs = _events("tampered", reaps=2, verdicts=[False, True], close=True, day=2)
    edited = evs[TAMPERED_LINE - 1]
    edited["payload"] = dict(edited["payload"], edited=True)

    edited["hash"] = rhash(edited)  # rehashed: the edited line is self-consistent; the next one breaks
    path = root / run_id("tampered") / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(line(e) for e in evs))
    paths["tampered"] = path
    return paths


def event_count(path: Path) -> int:
    """Lines holding a JSON object (every line of these logs is a usable event)."""
    return sum(1 for raw in path.read_bytes().splitlines() if raw.strip())
