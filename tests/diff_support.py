"""Logs for the ``ract trace diff`` tests: runs written from a symbolic spec, and faithful re-runs.

Every log is written by the real ``EventWriter`` (so it verifies), with ids
from a seeded RNG and time from a fake clock: the same spec written with two
seeds is the same run with fresh ids, run_id and timestamps -- what a
faithful replay looks like to ``diff``.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ract_cli import ChainReader, EventWriter

BASE_TS = 1_764_000_000_000_000_000


@dataclass(frozen=True)
class Ev:
    """One event of a spec: ``step`` is a step label, ``parent`` the ``name`` of an earlier event.

    Payload strings ``"@step:LABEL"``, ``"@event:NAME"``, ``"@run"`` and ``"@gen:NAME"`` (a generated
    id, e.g. a call id) are replaced by the ids of the run being written.
    """

    kind: str
    payload: dict[str, Any] = field(default_factory=dict)
    step: str | None = None
    parent: str | None = None
    name: str | None = None


def with_payload(ev: Ev, **changes: Any) -> Ev:
    return replace(ev, payload={**ev.payload, **changes})


def base_run() -> list[Ev]:
    """A small completed run: one step with two tool calls (the second fails), a predicate, a commit."""
    return [
        Ev("run.started", {"intent_id": "d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6", "predicate_count": 1}, name="run"),
        Ev("step.started", {"parent_snapshot": "a" * 40, "timeout_seconds": 600}, step="s1", name="st1"),
        Ev("retrieval.requested", {"budget": 4000, "call_id": "@gen:q1"}, step="s1"),
        Ev("retrieval.satisfied", {"call_id": "@gen:q1", "total_tokens": 900, "step_id": "@step:s1"}, step="s1"),
        Ev("prompt.sent", {"provider": "anthropic", "prompt_chars": 5120}, step="s1", name="p1"),
        Ev("response.received", {"provider": "anthropic", "preview": "plan: run the tests"}, step="s1", parent="p1"),
        Ev("tool.invocation.pre", {"run_id": "@run", "tool_id": "pytest", "budget_used": 1}, step="s1"),
        Ev(
            "tool.called",
            {"tool": "pytest", "arguments": {"argv": ["pytest", "-x"], "env": {"LANG": "C"}}},
            step="s1",
            name="c1",
        ),
        Ev("tool.result", {"tool": "pytest", "ok": True, "duration_ns": 1_500_000}, step="s1", parent="c1"),
        Ev("tool.called", {"tool": "ruff", "arguments": {"argv": ["ruff", "check"]}}, step="s1", name="c2"),
        Ev("tool.result", {"tool": "ruff", "ok": False, "duration_ns": 700_000}, step="s1", parent="c2"),
        Ev("process.reaped", {"pid": 4242, "argv0": "ruff", "reason": "exited", "reap_latency_ms": 3}, step="s1"),
        Ev(
            "predicate.evaluated",
            {"predicate_id": "tests-pass", "kind": "test", "required": True, "ok": True, "duration_ns": 9_000},
            step="s1",
        ),
        Ev(
            "step.committed",
            {"outcome": "COMMITTED", "parent_snapshot_before": "a" * 40, "parent_snapshot_after": "b" * 40},
            step="s1",
            parent="st1",
        ),
        Ev("run.completed", {"final_decision": "accept", "duration_ns": 9_000_000, "event_count": 15}),
    ]


def _hex(rng: random.Random) -> str:
    return f"{rng.getrandbits(128):032x}"


def write_run(path: Path, spec: list[Ev], *, seed: int = 1, step_ms: int = 100) -> Path:
    """Write ``spec`` as a log at ``path`` with ids and times drawn from ``seed``; returns ``path``."""
    rng = random.Random(seed)
    run_id = _hex(rng)
    ids: dict[str, str] = {}
    steps: dict[str, str] = {}
    generated: dict[str, str] = {}
    clock = iter(range(BASE_TS + seed * 10**9, BASE_TS + seed * 10**9 + 10**15, step_ms * 10**6 + seed))

    def subst(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("@"):
            if value == "@run":
                return run_id
            ns, _, name = value[1:].partition(":")
            if ns == "step":
                return steps.setdefault(name, _hex(rng))
            if ns == "event":
                return ids[name]
            if ns == "gen":
                return generated.setdefault(name, _hex(rng))
        if isinstance(value, dict):
            return {k: subst(v) for k, v in value.items()}
        if isinstance(value, list):
            return [subst(v) for v in value]
        return value

    path.parent.mkdir(parents=True, exist_ok=True)
    with EventWriter(
        path, run_id=run_id, fsync="never", redaction=None, new_id=lambda: _hex(rng), clock=lambda: next(clock)
    ) as w:
        for ev in spec:
            step_id = steps.setdefault(ev.step, _hex(rng)) if ev.step else None
            parent = ids[ev.parent] if ev.parent else None
            written = w.append(ev.kind, subst(copy.deepcopy(ev.payload)), step_id=step_id, parent_id=parent)
            if ev.name:
                ids[ev.name] = written["id"]
    return path


#: payload fields that hold ids of the run (remapped by ``rerun(..., payload_ids=True)``)
ID_FIELDS = frozenset(
    {
        "step_id",
        "step_id_ref",
        "call_id",
        "assumption_id",
        "root_id",
        "plan_id",
        "run_id",
        "header_run_id",
        "expected_run_id",
        "source_event_id",
        "synthetic_run_id",
    }
)
TIME_FIELDS = ("duration_ns", "latency_ms", "reap_latency_ms", "creation_time_ns", "gap_ms")
PID_FIELDS = ("pid", "child_pid", "stored_pid")


def rerun(
    src: Path, dst: Path, *, seed: int = 99, payload_ids: bool = False, jitter: bool = False, edit: Any = None
) -> Path:
    """A faithful re-run of ``src`` at ``dst``: new run_id, event ids, step ids and timestamps, same
    kinds and payloads (``payload_ids``: ids inside payloads renamed too; ``jitter``: durations,
    latencies and pids changed). ``edit(index, kind, payload)`` may return a new payload for one event.
    """
    rng = random.Random(seed)
    events = [ev.event for ev in ChainReader(src)]
    run_id = _hex(rng)
    renamed: dict[str, str] = {events[0]["run_id"]: run_id} if events else {}

    def new(old: Any) -> Any:
        if not isinstance(old, str):
            return old
        if old not in renamed:
            renamed[old] = _hex(rng)
        return renamed[old]

    clock = iter(range(BASE_TS + 7 * 10**12, BASE_TS + 10**16, 123_456_789))
    with EventWriter(dst, run_id=run_id, fsync="never", redaction=None, clock=lambda: next(clock)) as w:
        for index, event in enumerate(events):
            payload = copy.deepcopy(event["payload"])
            if payload_ids:
                for key in ID_FIELDS & payload.keys():
                    payload[key] = new(payload[key])
            if jitter:
                for key in TIME_FIELDS:
                    if type(payload.get(key)) in (int, float):
                        payload[key] = payload[key] * 3 + 1
                for key in PID_FIELDS:
                    if type(payload.get(key)) is int:
                        payload[key] = payload[key] + 1000
                if type(payload.get("pids")) is list:
                    payload["pids"] = [p + 1 for p in payload["pids"]]
            if edit is not None:
                payload = edit(index, event["kind"], payload) or payload
            w.append(
                event["kind"],
                payload,
                step_id=new(event["step_id"]) if event["step_id"] else None,
                parent_id=new(event["parent_id"]) if event["parent_id"] else None,
                event_id=new(event["id"]),
            )
    return dst


def journal_records(path: Path) -> list[dict[str, Any]]:
    import json

    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_journal(path: Path, records: list[dict[str, Any]]) -> Path:
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def kind_blocks(blocks: list[list[str]], tag: str) -> list[Ev]:
    """A run whose middle is ``blocks`` of events of the given kinds, each block followed by a separator
    event both sides share (``budget.declared``). Every block event's payload is unique (``tag``, block,
    position), so no event of one side equals one of the other: each block is one run of deletions and
    insertions, paired by kind alone (the shape that made the old pairing cubic)."""
    spec = [Ev("run.started", {}), Ev("step.started", {}, step="s", name="st")]
    for h, kinds in enumerate(blocks):
        spec.extend(Ev(kind, {"n": f"{tag}{h}.{i}"}, step="s") for i, kind in enumerate(kinds))
        spec.append(Ev("budget.declared", {"sep": h}, step="s"))
    spec.append(Ev("step.committed", {}, step="s", parent="st"))
    spec.append(Ev("run.completed", {}))
    return spec
