"""Open handles: which opens (run, steps, tool calls, prompts, handshakes) are still open.

The pairing rules are SPEC §4's, in its order of precedence. The reader
feeds every event through one ``HandleTracker``; repair, replay and project
read its result, so they all agree on what was left open.
"""

from __future__ import annotations

from ract_cli.format.json_types import Event, Payload
from ract_cli.format.kinds import KINDS_BY_NAME
from ract_cli.format.model import ENVELOPE_ORDER
from ract_cli.records import Record

#: open kind -> close kind that repair synthesizes for it (SPEC §4)
CLOSE_FOR_OPEN: dict[str, str] = {
    "run.started": "run.aborted",
    "step.started": "step.rolled_back",
    "tool.called": "tool.result",
    "prompt.sent": "response.received",
    "handshake.requested": "handshake.resolved",
}
RUN_CLOSES = frozenset({"run.completed", "run.aborted"})
STEP_CLOSES = frozenset({"step.committed", "step.rolled_back"})
#: close kind -> the open kind it closes (the run's closes aside: any of them closes every run.started)
CLOSE_TO_OPEN = {
    "step.committed": "step.started",
    "step.rolled_back": "step.started",
    "tool.result": "tool.called",
    "response.received": "prompt.sent",
    "handshake.resolved": "handshake.requested",
}
#: every kind ``HandleTracker.feed`` acts on (the payloads the native chain mode hands back)
HANDLE_KINDS = frozenset(CLOSE_FOR_OPEN) | RUN_CLOSES | frozenset(CLOSE_TO_OPEN)
#: the closes: what ``repair`` may write, and what the tracker counts as its when it says ``synthesized``
CLOSE_KINDS = RUN_CLOSES | frozenset(CLOSE_TO_OPEN)


def is_synthesized_close(kind: object, payload: object) -> bool:
    """Whether ``repair`` wrote this event: a close whose payload says ``"synthesized": true`` (SPEC §4).

    The one test every command asks (verify's ``REPAIRED``, project, grep ``--synthesized``, export's
    ``synthesized`` column, replay, OTLP): on an open, or any other kind, the field is only a field.
    """
    return type(kind) is str and kind in CLOSE_KINDS and type(payload) is dict and payload.get("synthesized") is True


#: which FIFO queue an open waits in for its close: ("tool", step_id, tool), ("step", step_id)...
QueueKey = tuple[object, ...]


class OpenHandle(Record):
    """An open event that no close has paired with (yet)."""

    __slots__ = ("kind", "event_id", "line", "offset", "step_id", "event", "queue_key")
    kind: str
    event_id: str
    line: int
    offset: int
    step_id: str | None
    event: Event
    queue_key: QueueKey | None

    def __init__(
        self,
        kind: str,
        event_id: str,
        line: int,
        offset: int,
        step_id: str | None,
        event: Event,
        queue_key: QueueKey | None = None,
    ) -> None:
        self.kind = kind
        self.event_id = event_id
        self.line = line
        self.offset = offset
        self.step_id = step_id
        self.event = event
        self.queue_key = queue_key


def _scalar_fields(kind: str) -> frozenset[str]:
    return frozenset(f.name for f in KINDS_BY_NAME[kind].fields if not {"object", "array"} & set(f.types))


#: per open kind, the payload keys a handle keeps: its documented scalar fields
_KEPT_PAYLOAD_KEYS = {kind: _scalar_fields(kind) for kind in CLOSE_FOR_OPEN}


def _payload(event: Event) -> Payload:
    """An event's payload, or ``{}`` when it has none that is an object (an event with findings)."""
    payload = event.get("payload")
    return payload if isinstance(payload, dict) else {}


def _kept(kind: str, event: Event) -> Event:
    """What an open handle keeps of its event: the envelope and the documented scalar payload fields.

    A hostile log can hold millions of opens that never close; keeping whole
    events (tool arguments, free-form dicts, undocumented keys) would let it
    grow memory far beyond the log's own line sizes.
    """
    keep = _KEPT_PAYLOAD_KEYS[kind]
    kept_payload = {k: v for k, v in _payload(event).items() if k in keep}
    # the envelope in the schema's order, whatever the line's (or the native core's compact form's)
    try:
        return {
            "id": event["id"],
            "run_id": event["run_id"],
            "step_id": event["step_id"],
            "parent_id": event["parent_id"],
            "timestamp_ns": event["timestamp_ns"],
            "kind": event["kind"],
            "payload": kept_payload,
            "prev_hash": event["prev_hash"],
            "hash": event["hash"],
        }
    except KeyError:  # (an event with envelope findings may lack some)
        kept = {k: event[k] for k in ENVELOPE_ORDER if k in event}
        kept["payload"] = kept_payload
        return kept


#: what ``HandleTracker.feed`` reads of a payload: its keys per handle kind (an open keeps its
#: ``_KEPT_PAYLOAD_KEYS``; every one may name its queue, its open, or say it was synthesized). The
#: native chain mode builds only these of a handle kind's payload: a huge undocumented value of an
#: open is never built to be dropped (issue 15, item 8).
_READ_KEYS = frozenset({"synthesized", "source_event_id", "tool", "provider", "intent_id", "milestone_id"})
HANDLE_PAYLOAD_KEYS: dict[str, frozenset[str]] = {
    kind: _KEPT_PAYLOAD_KEYS.get(kind, frozenset()) | _READ_KEYS for kind in sorted(HANDLE_KINDS)
}


#: the FIFO queue family of each open and close that has one
_QUEUE_FAMILY = {
    "tool.called": "tool",
    "tool.result": "tool",
    "prompt.sent": "prompt",
    "response.received": "prompt",
    "handshake.requested": "handshake",
    "handshake.resolved": "handshake",
    "step.started": "step",
    "step.committed": "step",
    "step.rolled_back": "step",
}


def _fifo_key(kind: str, event: Event) -> QueueKey | None:
    family = _QUEUE_FAMILY.get(kind)
    if family is None:
        return None
    if family == "step":
        return ("step", event.get("step_id"))
    payload = _payload(event)
    if family == "tool":
        return ("tool", event.get("step_id"), _hashable(payload.get("tool")))
    if family == "prompt":
        return ("prompt", event.get("step_id"), _hashable(payload.get("provider")), _hashable(payload.get("intent_id")))
    return ("handshake", _hashable(payload.get("milestone_id")))


def _hashable(value: object) -> object:
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


class _Fifo:
    """The opens of one FIFO queue in opening order (``entries`` from ``head`` on), closed ones among them.

    An open closed at the head moves the head past it; one closed elsewhere
    (by its id, rules 1 and 2) stays as a stale entry, skipped when it
    reaches the head. Removing it at once would walk the queue: a log
    closing a long queue's opens newest first made that quadratic (40,000
    opens: 15 s). The list is compacted when closed entries outnumber open
    ones, so it stays within twice its open handles. (A list and an index,
    not a deque: a run with a step per tool call has a queue per open, and
    an empty deque alone is 760 bytes.)
    """

    __slots__ = ("entries", "head", "live")

    def __init__(self) -> None:
        self.entries: list[OpenHandle] = []
        self.head = 0
        self.live = 0  # entries still open

    def first(self, still_open: dict[str, OpenHandle]) -> OpenHandle:
        """The oldest open still open (there is one: a queue with none is deleted)."""
        entries, i = self.entries, self.head
        while still_open.get(entries[i].event_id) is not entries[i]:
            i += 1
        self.head = i
        return entries[i]

    def closed(self, handle: OpenHandle, still_open: dict[str, OpenHandle]) -> None:
        entries = self.entries
        if entries[self.head] is handle:
            self.head += 1
        if len(entries) > 2 * self.live + 16:
            self.entries = [h for h in entries[self.head :] if still_open.get(h.event_id) is h]
            self.head = 0


#: the opens a close may take by its ``parent_id`` (SPEC §4 rule 2; any run close closes the run, by no id)
PARENT_OPENS = frozenset(CLOSE_TO_OPEN.values())


def open_handle(kind: str, event: Event, line: int, offset: int) -> OpenHandle:
    """The handle ``HandleTracker.feed`` keeps for an open of ``PARENT_OPENS`` (and, once closed, returns)."""
    return OpenHandle(kind, event["id"], line, offset, event.get("step_id"), _kept(kind, event), _fifo_key(kind, event))


class HandleTracker:
    """Pairs closes with opens; ``open_handles()`` is what remains, in opening order."""

    def __init__(self) -> None:
        self._open: dict[str, OpenHandle] = {}  # insertion order = opening order
        self._queues: dict[QueueKey, _Fifo] = {}
        self.run_started: OpenHandle | None = None
        self.run_closed_by: Event | None = None
        self.synthesized_closes = 0
        self._later_run_starts: list[str] = []  # run.started after the first: closed by the same run close

    def feed(self, event: Event, line: int, offset: int) -> OpenHandle | None:
        """Track one event; for a close, return the open it paired with (else None)."""
        kind = event["kind"]
        if kind in CLOSE_FOR_OPEN:
            self._open_handle(kind, event, line, offset)
        elif kind in RUN_CLOSES:
            self._note_synthesized(kind, _payload(event))
            self.run_closed_by = event
            for later in self._later_run_starts:  # any run close closes the run: every run.started
                self._open.pop(later, None)
            self._later_run_starts.clear()
            started = self.run_started
            # (only the run itself: an open that took its id first stays open, and in its queue)
            if started is not None and self._open.get(started.event_id) is started:
                return self._open.pop(started.event_id)
        elif kind in CLOSE_TO_OPEN:
            return self._close(kind, event)
        return None

    def _note_synthesized(self, kind: str, payload: Payload) -> bool:
        """Count a close ``repair`` wrote (its payload says ``synthesized``); whether it is one."""
        synthesized = is_synthesized_close(kind, payload)
        self.synthesized_closes += synthesized
        return synthesized

    def _open_handle(self, kind: str, event: Event, line: int, offset: int) -> None:
        if kind == "run.started":  # (no FIFO queue: any run close closes it)
            handle = OpenHandle(kind, event["id"], line, offset, event.get("step_id"), _kept(kind, event))
            if self.run_started is None:
                self.run_started = handle
            if self.run_closed_by is not None or handle.event_id in self._open:
                return  # a run already closed stays closed; a duplicate id is the reader's finding
            self._open[handle.event_id] = handle
            if handle is not self.run_started:
                self._later_run_starts.append(handle.event_id)
            return
        if event["id"] in self._open:
            return  # a duplicate id is the reader's finding; keep the first open
        handle = self._open[event["id"]] = open_handle(kind, event, line, offset)
        key = handle.queue_key
        if key is not None:
            queue = self._queues.get(key)
            if queue is None:
                queue = self._queues[key] = _Fifo()
            queue.entries.append(handle)
            queue.live += 1

    def _close(self, close_kind: str, event: Event) -> OpenHandle | None:
        open_kind = CLOSE_TO_OPEN[close_kind]
        payload = _payload(event)
        if self._note_synthesized(close_kind, payload):
            # 1. a synthesized close (payload.synthesized is true) names its open
            source = payload.get("source_event_id")
            if isinstance(source, str) and (taken := self._take(source, open_kind)):
                return taken
        # 2. the close's parent_id is the open's id
        parent = event.get("parent_id")
        if isinstance(parent, str) and (taken := self._take(parent, open_kind)):
            return taken
        # 3. per-kind fallback: step_id / milestone_id / FIFO queues
        key = _fifo_key(close_kind, event)
        queue = self._queues.get(key) if key is not None else None
        if queue is not None:
            return self._take(queue.first(self._open).event_id, open_kind)
        return None

    def _take(self, event_id: str, open_kind: str) -> OpenHandle | None:
        """Close the open ``event_id`` if it is an open of ``open_kind``; return it."""
        handle = self._open.get(event_id)
        if handle is None or handle.kind != open_kind:
            return None
        del self._open[event_id]
        key = handle.queue_key
        queue = self._queues.get(key) if key is not None else None
        if key is not None and queue is not None:
            queue.live -= 1
            if not queue.live:
                del self._queues[key]
            else:
                queue.closed(handle, self._open)
        return handle

    @property
    def run_is_closed(self) -> bool:
        return self.run_closed_by is not None

    def open_handles(self) -> list[OpenHandle]:
        """Every still-open handle in the order it was opened (the run first, if open)."""
        return list(self._open.values())
