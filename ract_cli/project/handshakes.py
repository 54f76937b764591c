"""Handshakes: how many were requested, how they resolved, and which are still pending."""

from __future__ import annotations

from ract_cli.format.json_types import Event, JSONObject, Payload
from ract_cli.project.grouping import FoldRules, group
from ract_cli.project.handler import Handler
from ract_cli.project.tallies import tally
from ract_cli.project.values import is_synthesized, label
from ract_cli.read.handles import OpenHandle


class HandshakeTally:
    """``handshake.requested`` and ``handshake.resolved`` (by status; interrupted when repair closed it)."""

    def __init__(self) -> None:
        self.requested = 0
        self.by_status: dict[str, int] = {}

    def handlers(self) -> dict[str, Handler]:
        return {"handshake.requested": self._requested, "handshake.resolved": self._resolved}

    def fold_rules(self) -> FoldRules:
        """The native fold's groups (``project.grouping``); a synthesized resolution makes it give up."""
        return {
            "handshake.requested": (group(), lambda g: self._requested_n(g.n)),
            "handshake.resolved": (
                group("status", bit=("resolution", "interrupted")),
                lambda g: self._resolved_n(g.payload, g.n),
            ),
        }

    def _requested(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._requested_n(1)

    def _requested_n(self, n: int) -> None:
        self.requested += n

    def _resolved(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._resolved_n(payload, 1)

    def _resolved_n(self, payload: Payload, n: int) -> None:
        if payload.get("resolution") == "interrupted" or is_synthesized(payload):
            tally(self.by_status, "interrupted", n)
        else:
            tally(self.by_status, label(payload.get("status")), n)

    def section(self, pending: list[JSONObject]) -> JSONObject:
        """The report's ``handshakes`` block; ``pending``: the requests still open."""
        by_status = dict(self.by_status)
        if pending:
            by_status["pending"] = len(pending)
        return {"requested": self.requested, "by_status": dict(sorted(by_status.items())), "pending": pending}
