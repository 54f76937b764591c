"""Steps: started, committed, rolled back, their outcomes and durations, the first ``max_items`` itemized."""

from __future__ import annotations

from array import array

from ract_cli.format.json_types import Event, JSONObject, Payload
from ract_cli.project.grouping import STEP_CLOSE, STEP_OPEN, FoldRules, group
from ract_cli.project.handler import Handler
from ract_cli.project.tallies import percentiles, tally
from ract_cli.project.values import is_synthesized, label, text
from ract_cli.read.handles import OpenHandle


class StepTally:
    """``step.started``, ``step.committed``, ``step.rolled_back``; closes pair with opens by the HandleTracker."""

    def __init__(self, max_items: int) -> None:
        self.max_items = max_items
        self.started = self.committed = self.rolled_back = self.unpaired_closes = 0
        self.outcomes: dict[str, int] = {}
        self.durations = array("q")
        self.items: dict[str, JSONObject] = {}  # open event id -> item (the first max_items steps)

    def handlers(self) -> dict[str, Handler]:
        return {"step.started": self._started, "step.committed": self._closed, "step.rolled_back": self._closed}

    def fold_rules(self) -> FoldRules:
        """The native fold's groups: counts and outcomes (items and durations come from C's pairing)."""
        return {
            "step.started": (group(step=STEP_OPEN), lambda g: self._started_n(g.n)),
            "step.committed": (group("outcome", step=STEP_CLOSE), lambda g: self.closes_n(g.kind, g.payload, g.n)),
            "step.rolled_back": (
                group("outcome", step=STEP_CLOSE),
                lambda g: self.closes_n(g.kind, g.payload, g.n),
            ),
        }

    def _started(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._started_n(1)
        if len(self.items) < self.max_items:
            self.add_item(event["id"], event.get("step_id"), line)

    def _started_n(self, n: int) -> None:
        self.started += n

    def add_item(self, event_id: str, step_id: object, line: int) -> None:
        """Itemize the step the event ``event_id`` opens (one of the first ``max_items``)."""
        self.items[event_id] = {
            "step_id": step_id,
            "line": line,
            "status": "open",
            "outcome": None,
            "reason": None,
            "close_line": None,
            "duration_ns": None,
            "synthesized": False,
        }

    def _closed(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self.closes_n(event["kind"], payload, 1)
        self.paired_close(event["kind"], payload, line, ts, paired)

    def closes_n(self, kind: str, payload: Payload, n: int) -> None:
        """``n`` closes of ``kind`` with ``payload``'s outcome: the counts."""
        if kind == "step.committed":
            self.committed += n
        else:
            self.rolled_back += n
        tally(self.outcomes, label(payload.get("outcome")), n)

    def paired_close(self, kind: str, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        """A close's pairing (``paired``: its open, or None): its duration, and its item's end."""
        if paired is None:
            self.unpaired_closes += 1
            return
        duration = ts - paired.event["timestamp_ns"]
        self.durations.append(duration)
        self.close_item(paired.event_id, kind, payload, line, duration)

    def close_item(self, open_id: str, kind: str, payload: Payload, line: int, duration: int) -> None:
        """The item of the step ``open_id`` opened, when it is one, closed by ``payload`` on ``line``."""
        item = self.items.get(open_id)
        if item is not None:
            item.update(
                status="committed" if kind == "step.committed" else "rolled_back",
                outcome=text(payload.get("outcome")),
                reason=text(payload.get("reason")),
                close_line=line,
                duration_ns=duration,
                synthesized=is_synthesized(payload),
            )

    def section(self, open_steps: int) -> JSONObject:
        """The report's ``steps`` block; ``open_steps``: steps the HandleTracker still holds open."""
        items = list(self.items.values())
        duration = percentiles(self.durations, 1e6)
        if duration is not None:
            duration["total_ms"] = round(sum(self.durations) / 1e6, 3)
        return {
            "started": self.started,
            "committed": self.committed,
            "rolled_back": self.rolled_back,
            "open": open_steps,
            "unpaired_closes": self.unpaired_closes,
            "by_outcome": dict(sorted(self.outcomes.items())),
            "duration": duration,
            "items": items,
            "omitted": self.started - len(items),
        }
