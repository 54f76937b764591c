"""Predicates: each predicate's latest verdict, and the gate check when the run completes."""

from __future__ import annotations

from ract_cli.format.json_types import Event, JSONObject, Payload
from ract_cli.project.flags import Flags
from ract_cli.project.handler import Handler
from ract_cli.project.options import MAX_KEYS, OTHER
from ract_cli.project.values import label, text
from ract_cli.read.handles import OpenHandle


class PredicateTable:
    """``predicate.evaluated``: the latest verdict per predicate id; ``GATE_INCONSISTENT`` at completion."""

    def __init__(self, flags: Flags) -> None:
        self.flags = flags
        self.latest: dict[str, JSONObject] = {}
        self.evaluations = 0
        self.failing_at_completion: list[str] | None = None

    def handlers(self) -> dict[str, Handler]:
        return {"predicate.evaluated": self._evaluated}

    def _evaluated(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self.evaluations += 1
        key = label(payload.get("predicate_id"))
        previous = self.latest.get(key)
        if previous is None and len(self.latest) >= MAX_KEYS:
            key, previous = OTHER, self.latest.get(OTHER)
        required, ok = payload.get("required"), payload.get("ok")
        self.latest[key] = {
            "kind": text(payload.get("kind")),
            "required": required if type(required) is bool else None,
            "ok": ok if type(ok) is bool else None,
            "reason": text(payload.get("reason")),
            "line": line,
            "evaluations": (previous["evaluations"] if previous else 0) + 1,
        }

    def failing_required(self) -> list[str]:
        """Required predicates whose latest verdict failed, sorted."""
        return sorted(pid for pid, p in self.latest.items() if p["required"] is True and p["ok"] is False)

    def at_completion(self, event: Event, line: int) -> None:
        """A ``run.completed`` written by the run: flag it when a required predicate's latest verdict failed."""
        failing = self.failing_required()
        self.failing_at_completion = failing
        if failing:
            shown = ", ".join(failing[:10]) + (f" and {len(failing) - 10} more" if len(failing) > 10 else "")
            self.flags.flag(
                "GATE_INCONSISTENT", line, event, f"run completed while required predicate(s) failed: {shown}"
            )

    def section(self) -> JSONObject:
        """The report's ``predicates`` block."""
        return {
            "evaluations": self.evaluations,
            "latest": {k: dict(v) for k, v in sorted(self.latest.items())},
            "failing_required": self.failing_required(),
            "failing_required_at_completion": self.failing_at_completion,
            "gate_inconsistent": bool(self.failing_at_completion),
        }
