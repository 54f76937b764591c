"""``Projector``: fold events one at a time into a run report (SPEC §7), readable at any moment.

Each concern of the report is one part (``run``, ``steps``, ``tools``...),
owning its counters and the handlers of its kinds; the projector routes
each event to the one handler of its kind, and ``report()`` assembles the
parts' blocks, with what the reader's ``HandleTracker`` still holds open.
"""

from __future__ import annotations

from ract_cli.format.json_types import Event, JSONObject, Payload, Report
from ract_cli.format.kinds import KINDS
from ract_cli.project.flags import Flags, flag_order, make_flag
from ract_cli.project.handler import Handler
from ract_cli.project.handshakes import HandshakeTally
from ract_cli.project.options import DEFAULT_MAX_ITEMS
from ract_cli.project.predicates import PredicateTable
from ract_cli.project.providers import ProviderTable
from ract_cli.project.run import RunLifecycle
from ract_cli.project.sandbox import SandboxTally
from ract_cli.project.signals import AuditSignals
from ract_cli.project.steps import StepTally
from ract_cli.project.tallies import tally
from ract_cli.project.tools import ToolTable
from ract_cli.project.values import label, text
from ract_cli.read.handles import CLOSE_FOR_OPEN, CLOSE_KINDS, HandleTracker, OpenHandle, is_synthesized_close

#: kinds the HandleTracker pairs (opens and closes)
_PAIRED_KINDS = frozenset(CLOSE_FOR_OPEN) | CLOSE_KINDS
#: ``Projector.error_kinds``, once worked out
_ERROR_KINDS: tuple[str, ...] | None = None


class _Open:
    """What the HandleTracker still holds open when a report is made, by concern."""

    __slots__ = ("pending", "prompts", "steps", "tools")

    def __init__(self) -> None:
        self.steps = 0
        self.tools: dict[str, int] = {}  # tool name -> open calls
        self.prompts: dict[str, int] = {}  # provider name -> unanswered prompts
        self.pending: list[JSONObject] = []  # handshakes never resolved


class Projector:
    """Fold events into a run report. Feed events in log order; call ``report()`` any time.

    Pairing of opens and closes is the reader's own ``HandleTracker`` (SPEC §4),
    fed here with exactly the events projected, so the report and ``repair``
    agree on what was left open.
    """

    def __init__(self, *, max_items: int = DEFAULT_MAX_ITEMS, handles: HandleTracker | None = None) -> None:
        self.max_items = max_items
        #: ``handles``: the reader's own tracker, already fed every event (``project.fold``); else one of its own
        self.handles = handles if handles is not None else HandleTracker()
        self.events = 0
        self.kinds: dict[str, int] = {}
        self.run_id: str | None = None
        self.head: str | None = None
        self.first_ts: int | None = None
        self.last_ts: int | None = None
        self.flags = Flags(max_items)
        self.predicates = PredicateTable(self.flags)
        self.run = RunLifecycle(self.flags, self.predicates, max_items)
        self.steps = StepTally(max_items)
        self.tools = ToolTable()
        self.providers = ProviderTable(max_items)
        self.handshakes = HandshakeTally()
        self.sandbox = SandboxTally(self.flags, max_items)
        self.signals = AuditSignals(self.flags, max_items)
        self._dispatch: dict[str, Handler] = {}
        parts = (self.run, self.steps, self.tools, self.providers, self.predicates, self.handshakes)
        for part in (*parts, self.sandbox, self.signals):
            self._dispatch.update(part.handlers())

    def feed(self, event: Event, line: int = 0, offset: int = 0) -> None:
        """Fold one envelope-valid event (as the reader yields it) into the report."""
        kind = event["kind"]
        ts = event["timestamp_ns"]
        self.events += 1
        kinds = self.kinds
        n = kinds.get(kind)
        if n is None:
            tally(kinds, label(kind))
        else:
            kinds[kind] = n + 1
        if self.run_id is None:
            self.run_id = event["run_id"]
        self.head = event.get("hash")
        if self.first_ts is None or ts < self.first_ts:
            self.first_ts = ts
        if self.last_ts is None or ts > self.last_ts:
            self.last_ts = ts
        payload = event["payload"]
        paired = self.handles.feed(event, line, offset) if kind in _PAIRED_KINDS else None
        self._handle(event, kind, payload, line, ts, paired)

    def feed_left(self, event: Event, line: int) -> None:
        """Fold one event the native fold left to Python (``project.fold``): it counted the event, and the
        reader's tracker (this projector's) paired it; no handler of such a kind reads its pairing."""
        self._handle(event, event["kind"], event["payload"], line, event["timestamp_ns"], None)

    def error_kinds(self) -> tuple[str, ...]:
        """The kinds folded as ``*_error`` events (``signals.error_event``): so named, and no handler's (the
        same for every projector: worked out once, as a fleet makes one per run)."""
        global _ERROR_KINDS
        if _ERROR_KINDS is None:
            _ERROR_KINDS = tuple(k.name for k in KINDS if k.name.endswith("_error") and k.name not in self._dispatch)
        return _ERROR_KINDS

    def handles_kind(self, kind: str) -> bool:
        """Whether an event of ``kind`` does more than count: a handler, a pairing, or an error's flag."""
        return kind in self._dispatch or kind in _PAIRED_KINDS or kind.endswith("_error")

    def _handle(self, event: Event, kind: str, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        if kind in _PAIRED_KINDS and is_synthesized_close(kind, payload):
            self.run.synthesized_close(event, payload, kind, line)
        handler = self._dispatch.get(kind)
        if handler is not None:
            handler(event, payload, line, ts, paired)
        elif kind.endswith("_error"):
            self.signals.error_event(event, payload, line)

    @property
    def status(self) -> str:
        """SPEC §7 status; precedence: unknown (nothing projected) > repaired > completed/aborted > open."""
        return self.run.status(self.events, self.handles.synthesized_closes)

    def report(self) -> Report:
        """The projection so far, as a JSON-ready dict (see docs/project.md)."""
        flags = self.flags.copy()
        still_open = self._still_open(flags)
        return {
            "run_id": self.run_id,
            "status": self.status,
            "outcome": self.run.outcome(),
            "timing": self.run.timing(self.first_ts, self.last_ts),
            "events": self.events,
            "events_by_kind": dict(sorted(self.kinds.items())),
            "steps": self.steps.section(still_open.steps),
            "tools": self.tools.section(still_open.tools),
            "providers": self.providers.section(still_open.prompts),
            "predicates": self.predicates.section(),
            "handshakes": self.handshakes.section(still_open.pending),
            "sandbox": self.sandbox.section(),
            **self.signals.sections(),
            "synthesized_closes": self.run.synthesized.to_dict(),
            "audit_flags": flags.to_dict(sorted(flags.items, key=flag_order)),
        }

    def _still_open(self, flags: Flags) -> _Open:
        """Sort the open handles by concern, flagging each (``OPEN_HANDLE``) and an open run (``OPEN_RUN``)."""
        still_open = _Open()
        for h in self.handles.open_handles():
            if h.kind == "run.started":
                continue
            _classify(h, still_open)
            flags.add(make_flag("OPEN_HANDLE", h.line, h.event_id, h.kind, f"{h.kind} was never closed"))
        if self.events and not self.handles.run_is_closed:
            start = self.handles.run_started
            flags.add(
                make_flag(
                    "OPEN_RUN",
                    start.line if start else None,
                    start.event_id if start else None,
                    "run.started" if start else None,
                    "run was never closed (no run.completed or run.aborted)",
                )
            )
        return still_open


def _classify(h: OpenHandle, still_open: _Open) -> None:
    payload = h.event["payload"]
    if h.kind == "step.started":
        still_open.steps += 1
    elif h.kind == "tool.called":
        name = label(payload.get("tool"))
        still_open.tools[name] = still_open.tools.get(name, 0) + 1
    elif h.kind == "prompt.sent":
        name = label(payload.get("provider"))
        still_open.prompts[name] = still_open.prompts.get(name, 0) + 1
    elif h.kind == "handshake.requested":
        still_open.pending.append(
            {
                "line": h.line,
                "event_id": h.event_id,
                "milestone_id": text(payload.get("milestone_id")),
                "description": text(payload.get("description")),
            }
        )
