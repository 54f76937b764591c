"""The run's state during a replay (SPEC §5), after each event applied.

Open steps, tool calls in flight, unanswered prompts, pending handshakes
(paired by the shared ``HandleTracker``, SPEC §4), live and violated
assumptions, the latest verdict of each predicate.
"""

from __future__ import annotations

from dataclasses import dataclass

from ract_cli.format.json_types import Payload, Report
from ract_cli.read.event import LogEvent
from ract_cli.read.handles import HandleTracker, OpenHandle
from ract_cli.replay.summary import value_key

__all__ = ["AssumptionStatus", "PredicateVerdict", "ReplayState", "ReplayStep"]

_STEP_KINDS = frozenset({"step.started", "step.committed", "step.rolled_back"})


@dataclass(slots=True)
class AssumptionStatus:
    assumption_id: str
    status: str  # proposed | accepted | violated
    line: int
    event_id: str
    root_id: object = None
    text: object = None


@dataclass(slots=True)
class PredicateVerdict:
    predicate_id: str
    ok: object
    required: object
    reason: object
    kind: object
    line: int
    index: int
    event_id: str


def _handle(h: OpenHandle, *keys: str) -> Report:
    """One open handle in ``ReplayState.to_dict()``: where it is, and the payload keys asked for."""
    payload = h.event.get("payload") or {}
    out: Report = {"event_id": h.event_id, "line": h.line, "step_id": h.step_id}
    out.update({k: payload.get(k) for k in keys})
    return out


class ReplayState:
    """The run's state after the events applied so far. Mutable; ``to_dict()`` freezes it."""

    def __init__(self) -> None:
        self.handles = HandleTracker()  # SPEC §4 pairing, shared with verify and repair
        self.index = 0  # replayed events so far (1-based index of the last one)
        self.event: LogEvent | None = None  # the last event applied
        self.first_ts: int | None = None
        # live or violated, in order of first appearance (discharged ones are dropped and counted)
        self.assumptions: dict[str, AssumptionStatus] = {}
        self.discharged = 0
        self.predicates: dict[str, PredicateVerdict] = {}  # latest verdict each, in order of first evaluation
        self._open_steps: dict[str, str | None] = {}  # step.started id -> step_id, in opening order

    def apply(self, ev: LogEvent) -> None:
        event = ev.event
        self.index += 1
        self.event = ev
        if self.first_ts is None:
            self.first_ts = event["timestamp_ns"]
        paired = self.handles.feed(event, ev.line, ev.offset)
        kind = event["kind"]
        if kind == "step.started":
            self._open_steps[event["id"]] = event["step_id"]
        elif paired is not None and paired.kind == "step.started":
            self._open_steps.pop(paired.event_id, None)
        payload = event["payload"]
        if kind.startswith("assumption."):
            self._assumption(kind, payload, ev)
        elif kind == "predicate.evaluated" and "predicate_id" in payload:
            pid = value_key(payload["predicate_id"])
            self.predicates[pid] = PredicateVerdict(
                pid,
                payload.get("ok"),
                payload.get("required"),
                payload.get("reason"),
                payload.get("kind"),
                ev.line,
                self.index,
                event["id"],
            )

    def _assumption(self, kind: str, payload: Payload, ev: LogEvent) -> None:
        if "assumption_id" not in payload:
            return
        aid = value_key(payload["assumption_id"])
        known = self.assumptions.get(aid)
        if kind in ("assumption.proposed", "assumption.accepted"):
            text = payload.get("text", known.text if known else None)
            status = kind.split(".", 1)[1]
            self.assumptions[aid] = AssumptionStatus(aid, status, ev.line, ev.event["id"], text=text)
        elif kind == "assumption.discharged":
            if self.assumptions.pop(aid, None) is not None or known is None:
                self.discharged += 1
        elif kind == "assumption.violated":
            self.assumptions[aid] = AssumptionStatus(
                aid,
                "violated",
                ev.line,
                ev.event["id"],
                root_id=payload.get("root_id"),
                text=known.text if known else None,
            )

    # views
    @property
    def elapsed_ns(self) -> int:
        if self.event is None or self.first_ts is None:
            return 0
        last: int = self.event.event["timestamp_ns"]
        return last - self.first_ts

    @property
    def current_step_id(self) -> str | None:
        """``step_id`` of the most recently started step still open (O(1), unlike ``open_steps``)."""
        return self._open_steps[next(reversed(self._open_steps))] if self._open_steps else None

    def open_of(self, kind: str) -> list[OpenHandle]:
        return [h for h in self.handles.open_handles() if h.kind == kind]

    @property
    def open_steps(self) -> list[OpenHandle]:
        return self.open_of("step.started")

    @property
    def tool_calls(self) -> list[OpenHandle]:
        return self.open_of("tool.called")

    @property
    def prompts(self) -> list[OpenHandle]:
        return self.open_of("prompt.sent")

    @property
    def handshakes(self) -> list[OpenHandle]:
        return self.open_of("handshake.requested")

    @property
    def live_assumptions(self) -> list[AssumptionStatus]:
        return [a for a in self.assumptions.values() if a.status != "violated"]

    @property
    def violated_assumptions(self) -> list[AssumptionStatus]:
        return [a for a in self.assumptions.values() if a.status == "violated"]

    @property
    def run_status(self) -> str:
        """``not started``, ``open``, ``completed``, ``aborted`` (as far as replayed)."""
        closed = self.handles.run_closed_by
        if closed is not None:
            return "completed" if closed.get("kind") == "run.completed" else "aborted"
        return "open" if self.handles.run_started is not None else "not started"

    def to_dict(self) -> Report:
        """The state as plain JSON-able data (documented in docs/replay.md)."""
        ev = self.event
        return {
            "index": self.index,
            "line": ev.line if ev else None,
            "event_id": ev.event["id"] if ev else None,
            "kind": ev.event["kind"] if ev else None,
            "timestamp_ns": ev.event["timestamp_ns"] if ev else None,
            "elapsed_ns": self.elapsed_ns,
            "run": self.run_status,
            "open_steps": [_handle(h, "parent_snapshot", "branch") for h in self.open_steps],
            "tool_calls": [_handle(h, "tool") for h in self.tool_calls],
            "prompts": [_handle(h, "provider", "intent_id") for h in self.prompts],
            "handshakes": [_handle(h, "milestone_id", "description") for h in self.handshakes],
            "assumptions": self._assumptions_dict(),
            "predicates": [
                {
                    "predicate_id": p.predicate_id,
                    "ok": p.ok,
                    "required": p.required,
                    "reason": p.reason,
                    "line": p.line,
                    "event_id": p.event_id,
                }
                for p in self.predicates.values()
            ],
        }

    def _assumptions_dict(self) -> Report:
        return {
            "live": [
                {"assumption_id": a.assumption_id, "status": a.status, "line": a.line, "event_id": a.event_id}
                for a in self.live_assumptions
            ],
            "violated": [
                {"assumption_id": a.assumption_id, "root_id": a.root_id, "line": a.line, "event_id": a.event_id}
                for a in self.violated_assumptions
            ],
            "discharged": self.discharged,
        }


@dataclass(slots=True)
class ReplayStep:
    """One replayed event and the state right after it (``state`` is live: it moves on)."""

    index: int  # 1-based among replayed events
    event: LogEvent
    state: ReplayState

    @property
    def depth(self) -> int:
        """Nesting on a timeline: 1 for an event inside a step, else 0 (run-level, step open/close)."""
        event = self.event.event
        return 1 if event["step_id"] is not None and event["kind"] not in _STEP_KINDS else 0
