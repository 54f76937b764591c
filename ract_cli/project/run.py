"""The run itself: where it starts, how it closes, its status, and the closes ``repair`` wrote."""

from __future__ import annotations

from ract_cli.format.json_types import Event, JSONObject, Payload
from ract_cli.project.flags import Flags
from ract_cli.project.handler import Handler
from ract_cli.project.predicates import PredicateTable
from ract_cli.project.tallies import Items
from ract_cli.project.values import as_int, is_synthesized, iso, text
from ract_cli.read.handles import OpenHandle


class RunLifecycle:
    """``run.started``, ``run.completed``/``run.aborted``, and every synthesized close."""

    def __init__(self, flags: Flags, predicates: PredicateTable, max_items: int) -> None:
        self.flags = flags
        self.predicates = predicates
        self.started: tuple[int, int] | None = None  # (line, timestamp)
        self.close: JSONObject | None = None  # the run's closing event, as a summary
        self.synthesized = Items(max_items)

    def handlers(self) -> dict[str, Handler]:
        return {"run.started": self._started, "run.completed": self._closed, "run.aborted": self._closed}

    def _started(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        if self.started is None:
            self.started = (line, ts)

    def _closed(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        kind = event["kind"]
        synthesized = is_synthesized(payload)
        self.close = {
            "closed_by": kind,
            "line": line,
            "event_id": event["id"],
            "timestamp_ns": ts,
            "synthesized": synthesized,
            "final_decision": text(payload.get("final_decision")),
            "termination_cause": text(payload.get("termination_cause")),
            "reason": text(payload.get("reason")),
            "reported_duration_ns": as_int(payload.get("duration_ns")),
        }
        if kind == "run.completed" and not synthesized:
            self.predicates.at_completion(event, line)

    def synthesized_close(self, event: Event, payload: Payload, kind: str, line: int) -> None:
        """Any close (run, step, tool call...) that ``repair`` wrote: listed and flagged."""
        reason = text(payload.get("reason"))
        self.synthesized.add(
            {
                "line": line,
                "event_id": event["id"],
                "kind": kind,
                "source_event_id": text(payload.get("source_event_id")),
                "reason": reason,
            }
        )
        self.flags.flag("SYNTHESIZED_CLOSE", line, event, f"{kind} synthesized by repair ({reason or 'no reason'})")

    def status(self, events: int, synthesized_closes: int) -> str:
        """SPEC §7 status; precedence: unknown (nothing projected) > repaired > completed/aborted > open."""
        if events == 0:
            return "unknown"
        if synthesized_closes:
            return "repaired"
        if self.close is not None:
            return "completed" if self.close["closed_by"] == "run.completed" else "aborted"
        return "open"

    def outcome(self) -> JSONObject:
        """The report's ``outcome`` block: how the run closed, as far as the projection saw."""
        close = self.close
        return {
            "closed_by": close["closed_by"] if close else None,
            "line": close["line"] if close else None,
            "synthesized": close["synthesized"] if close else False,
            "final_decision": close["final_decision"] if close else None,
            "termination_cause": close["termination_cause"] if close else None,
            "reason": close["reason"] if close else None,
            "reported_duration_ns": close["reported_duration_ns"] if close else None,
        }

    def timing(self, first_ts: int | None, last_ts: int | None) -> JSONObject:
        """The report's ``timing`` block: run.started (else the first event) to the close (else the last)."""
        start_ns = self.started[1] if self.started else first_ts
        end_ns = self.close["timestamp_ns"] if self.close else last_ts
        duration = end_ns - start_ns if start_ns is not None and end_ns is not None else None
        return {
            "start_ns": start_ns,
            "end_ns": end_ns,
            "duration_ns": duration,
            "start": iso(start_ns),
            "end": iso(end_ns),
        }
