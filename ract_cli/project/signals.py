"""The other auditor signals: process reaps, assumptions, budgets, ``*_error`` events, one-line flags."""

from __future__ import annotations

from collections.abc import Iterable

from ract_cli.format.json_types import Event, JSONObject, Payload
from ract_cli.project.flags import Flags
from ract_cli.project.grouping import FoldRules, ListedRules, group, listed, past_caps
from ract_cli.project.handler import Handler
from ract_cli.project.tallies import Items, tally
from ract_cli.project.values import as_int, label, text
from ract_cli.read.handles import OpenHandle

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import Any

#: budget kinds -> their counter in the report's ``budgets`` block
_BUDGET_COUNTERS = {
    "budget.declared": "declared",
    "budget.clamp_refused": "clamp_refused",
    "budget.adjusted_by_probes": "adjusted_by_probes",
    "state.budget_capped": "state_capped",
}
_ASSUMPTION_COUNTERS = ("assumption.proposed", "assumption.accepted", "assumption.discharged")
#: kinds that raise one flag each -> (flag code, the payload key the message shows)
SIMPLE_FLAGS = {
    "whisperer.contract_violation": ("WHISPERER_CONTRACT_VIOLATION", "trigger"),
    "substrate.subagent.pid_reuse_detected": ("PID_REUSE_DETECTED", "stored_pid"),
    "runtime.run_id.env_stripped_from_parent": ("RUN_ID_ENV_STRIPPED", "stripped_key"),
    "sidecar.header.mismatch_refused": ("SIDECAR_MISMATCH_REFUSED", "path"),
    "manifest.ledger.refused": ("MANIFEST_LEDGER_REFUSED", "reason"),
}


class AuditSignals:
    """Events an auditor wants listed or flagged, each kept in a capped list."""

    def __init__(self, flags: Flags, max_items: int) -> None:
        self.flags = flags
        self.reap_reasons: dict[str, int] = {}
        self.reaps = Items(max_items)
        self.assumptions = {"proposed": 0, "accepted": 0, "discharged": 0}
        self.violated = Items(max_items)
        self.budgets = dict.fromkeys(_BUDGET_COUNTERS.values(), 0)
        self.exceeded = Items(max_items)
        self.error_kinds: dict[str, int] = {}
        self.errors = Items(max_items)

    def handlers(self) -> dict[str, Handler]:
        table: dict[str, Handler] = {"process.reaped": self._reaped}
        table.update(dict.fromkeys(_ASSUMPTION_COUNTERS, self._assumption))
        table["assumption.violated"] = self._assumption_violated
        table.update(dict.fromkeys(_BUDGET_COUNTERS, self._budget))
        table["budget.exceeded"] = self._budget_exceeded
        table.update(dict.fromkeys(SIMPLE_FLAGS, self._simple_flag))
        return table

    def _reaped(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._reasons_n(payload, 1)
        self.reaps.add(
            {
                "line": line,
                "step_id": event.get("step_id"),
                "pid": as_int(payload.get("pid")),
                "argv0": text(payload.get("argv0")),
                "reason": text(payload.get("reason")),
                "reap_latency_ms": as_int(payload.get("reap_latency_ms")),
            }
        )

    def fold_rules(self) -> FoldRules:
        """The native fold's groups of the counted kinds (``project.grouping``); the listed ones are left."""
        rules: FoldRules = {
            kind: (group(), lambda g: self._assumptions_n(g.kind, g.n)) for kind in _ASSUMPTION_COUNTERS
        }
        rules.update({kind: (group(), lambda g: self._budgets_n(g.kind, g.n)) for kind in _BUDGET_COUNTERS})
        return rules

    def fold_listed(self, error_kinds: Iterable[str]) -> ListedRules:
        """The listed and flagged kinds (and ``error_kinds``, the ``*_error`` kinds no handler claims), once
        their lists and the flags are full: counted (a reap's reason too)."""
        flags = self.flags
        rules: ListedRules = {
            "process.reaped": past_caps(listed("reason"), self.reaps, then=lambda g: self._reasons_n(g.payload, g.n)),
            "assumption.violated": past_caps(listed(), self.violated, flags),
            "budget.exceeded": past_caps(listed(), self.exceeded, flags),
        }
        rules.update({kind: past_caps(listed(), flags) for kind in SIMPLE_FLAGS})
        rules.update({kind: past_caps(listed(), self.errors, flags, then=self._error_kind_n) for kind in error_kinds})
        return rules

    def _error_kind_n(self, g: Any) -> None:
        tally(self.error_kinds, label(g.kind), g.n)

    def _reasons_n(self, payload: Payload, n: int) -> None:
        tally(self.reap_reasons, label(payload.get("reason")), n)

    def _assumption(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._assumptions_n(event["kind"], 1)

    def _assumptions_n(self, kind: str, n: int) -> None:
        self.assumptions[kind.rpartition(".")[2]] += n

    def _assumption_violated(
        self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None
    ) -> None:
        aid, root = text(payload.get("assumption_id")), text(payload.get("root_id"))
        self.violated.add({"line": line, "event_id": event["id"], "assumption_id": aid, "root_id": root})
        self.flags.flag("ASSUMPTION_VIOLATED", line, event, f"assumption {aid or '?'} violated (root {root or '?'})")

    def _budget(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._budgets_n(event["kind"], 1)

    def _budgets_n(self, kind: str, n: int) -> None:
        self.budgets[_BUDGET_COUNTERS[kind]] += n

    def _budget_exceeded(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        item = {
            "line": line,
            "event_id": event["id"],
            "function": text(payload.get("function")),
            "section_name": text(payload.get("section_name")),
            "delta": as_int(payload.get("delta")),
            "boundary": text(payload.get("boundary")),
        }
        self.exceeded.add(item)
        self.flags.flag(
            "BUDGET_EXCEEDED",
            line,
            event,
            f"budget exceeded: {item['function'] or '?'}/{item['section_name'] or '?'} "
            f"by {item['delta'] if item['delta'] is not None else '?'} ({item['boundary'] or '?'})",
        )

    def error_event(self, event: Event, payload: Payload, line: int) -> None:
        """A ``*_error`` kind (any kind ending so that no handler claims): listed and flagged."""
        kind = label(event["kind"])
        tally(self.error_kinds, kind)  # (past the caps: ``_error_kind_n``)
        item = {
            "line": line,
            "event_id": event["id"],
            "kind": kind,
            "error_kind": text(payload.get("error_kind")),
            "message": text(payload.get("message")),
        }
        if "index" in payload:
            item["index"] = text(payload.get("index"))
        self.errors.add(item)
        self.flags.flag("ERROR_EVENT", line, event, f"{kind}: {item['error_kind'] or '?'}: {item['message'] or ''}")

    def _simple_flag(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        code, key = SIMPLE_FLAGS[event["kind"]]
        value = payload.get(key)
        shown = text(value) if type(value) is str else as_int(value)
        self.flags.flag(code, line, event, f"{event['kind']} ({key}: {shown if shown is not None else '?'})")

    def sections(self) -> JSONObject:
        """The report's ``process_reaps``, ``assumptions``, ``budgets`` and ``errors`` blocks."""
        return {
            "process_reaps": dict(self.reaps.to_dict(), by_reason=dict(sorted(self.reap_reasons.items()))),
            "assumptions": dict(self.assumptions, violated=self.violated.to_dict()),
            "budgets": dict(self.budgets, exceeded=self.exceeded.to_dict()),
            "errors": dict(self.errors.to_dict(), by_kind=dict(sorted(self.error_kinds.items()))),
        }
