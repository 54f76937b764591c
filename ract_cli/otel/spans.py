"""A run log as an OpenTelemetry trace (SPEC §12.2; the mapping table is docs/otel.md).

The run is one ``invoke_agent`` span; each step a child span; each
``tool.called``/``tool.result`` pair an ``execute_tool {tool}`` span; each
``prompt.sent``/``response.received`` pair a ``chat`` span; a handshake a
``handshake`` span; every other event a span event on the innermost span open
at that point. Opens and closes are paired by the reader's own
``HandleTracker`` (SPEC §4's rules), so a trace shows exactly what repair,
replay and project see as open or closed. Nothing is invented: a span still
open at the end of the log ends at the last event's time with
``ract.open = true``.

Ids are derived, so exporting twice gives the same bytes: the trace id is the
run_id (16 bytes already); a span id is the first 8 bytes of
SHA-256("ract.span:" + opening event id) (event ids may be time-ordered UUIDs
whose first bytes collide within a millisecond).
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ract_cli.format.json_types import Event, Payload
from ract_cli.read.event import LogEvent
from ract_cli.read.handles import CLOSE_FOR_OPEN, HandleTracker, OpenHandle, is_synthesized_close

#: OTLP ``Span.SpanKind`` and ``Status.StatusCode`` numbers (the JSON encoding writes enums as integers)
KIND_INTERNAL, KIND_CLIENT = 1, 3
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2

AttributeValue = str | int | float | bool


def span_id(event_id: str) -> str:
    """The 16-hex-digit span id derived from the id of the event that opened the span."""
    return hashlib.sha256(b"ract.span:" + event_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]


#: the size past which a span's encoded events start a new block
EVENT_BLOCK_BYTES = 1 << 18


class SpanEvents:
    """A span's events, each encoded at once as its OTLP/JSON ``Span.Event`` object.

    A run's line needs every event of the run, and a log's events are mostly
    span events: kept as objects (a dataclass, an attribute dict, then the
    encoder's dicts and lists) they took ten times the log's size (a 71 MB log:
    693 MB). Encoded, they take what they will take in the line, in blocks of
    about ``EVENT_BLOCK_BYTES`` that end between two events (the blocks joined
    are the ``events`` array's members, commas included).
    """

    __slots__ = ("blocks", "count")

    def __init__(self) -> None:
        self.blocks: list[bytearray] = []
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def append(self, name: str, time_ns: int, attributes: dict[str, AttributeValue]) -> None:
        encoded = orjson.dumps({"timeUnixNano": str(time_ns), "name": name, "attributes": attributes_json(attributes)})
        blocks = self.blocks
        if blocks and len(blocks[-1]) < EVENT_BLOCK_BYTES:
            block = blocks[-1]
            block += b","
            block += encoded
        else:
            blocks.append(bytearray(b"," + encoded if self.count else encoded))
        self.count += 1

    def encoded(self) -> Iterator[bytearray]:
        """The members of the ``events`` array as they go in the line, block by block."""
        return iter(self.blocks)


@dataclass
class Span:
    """One OTLP span, before encoding."""

    span_id: str
    parent_id: str | None
    name: str
    kind: int
    start_ns: int
    end_ns: int | None = None
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    events: SpanEvents = field(default_factory=SpanEvents)
    status: int = STATUS_UNSET
    status_message: str = ""


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _ract_attributes(ev: LogEvent) -> dict[str, AttributeValue]:
    """What every span and span event carries of the event it came from."""
    event = ev.event
    attrs: dict[str, AttributeValue] = {
        "ract.event.id": event["id"],
        "ract.kind": event["kind"],
        "ract.event.hash": event["hash"],
        "ract.line": ev.line,
    }
    if not ev.trusted:
        attrs["ract.trusted"] = False
    if is_synthesized_close(event["kind"], event["payload"]):
        attrs["ract.synthesized"] = True
    return attrs


def _scalar_payload(payload: Payload, prefix: str = "ract.payload.") -> dict[str, AttributeValue]:
    """The payload's top-level scalar fields as attributes (nested values stay in the log)."""
    out: dict[str, AttributeValue] = {}
    for key, value in payload.items():
        if isinstance(value, bool | str | float) or (isinstance(value, int) and -(2**63) <= value < 2**63):
            out[prefix + key] = value
    return out


class TraceBuilder:
    """Feed a run's events in file order; ``finish()`` returns its spans (root first)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.tracker = HandleTracker()
        self.root: Span | None = None
        self.spans: list[Span] = []
        self._open: dict[str, Span] = {}  # opening event id -> span, in opening order
        # Where each key of ``_open`` stands in its order (a counter): a duplicate id replaces the span
        # but keeps the key's place, as a dict does; a key removed and added again goes last.
        self._position: dict[str, int] = {}
        self._next_position = 0
        # step_id -> a heap of (-position, opening event id) of the open step spans of that step, the
        # newest on top; entries of spans closed since (or replaced by a duplicate id) go when on top
        self._open_steps: dict[str, list[tuple[int, str]]] = {}
        self._pending_events = SpanEvents()  # events before the root exists
        self.first_ns: int | None = None
        self.last_ns: int | None = None
        self.events = 0

    # --- feeding --------------------------------------------------------------

    def feed(self, ev: LogEvent) -> None:
        event = ev.event
        ts = event["timestamp_ns"]
        self.first_ns = ts if self.first_ns is None else min(self.first_ns, ts)
        self.last_ns = ts if self.last_ns is None else max(self.last_ns, ts)
        self.events += 1
        kind = event["kind"]
        closed = self.tracker.feed(event, ev.line, ev.offset)
        if kind == "run.started" and self.root is None:
            self._start_root(ev)
        elif kind in CLOSE_FOR_OPEN and kind != "run.started":
            self._open_span(ev)
        elif kind in ("run.completed", "run.aborted"):
            self._close_root(ev)
        elif closed is not None and closed.event_id in self._open:
            self._close_span(closed, ev)
        else:
            self._span_event(ev)

    def _ensure_root(self, ev: LogEvent) -> Span:
        if self.root is None:
            # a log whose first event is not run.started still gets one root, opened by its first event
            self._start_root(ev)
        assert self.root is not None
        return self.root

    def _start_root(self, ev: LogEvent) -> None:
        attrs: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.conversation.id": self.run_id,
        }
        root = Span(span_id(ev.event["id"]), None, "invoke_agent", KIND_INTERNAL, ev.event["timestamp_ns"], None, attrs)
        root.attributes.update(_ract_attributes(ev))
        if ev.event["kind"] == "run.started":
            root.attributes.update(_scalar_payload(ev.event["payload"]))
        self.root = root
        self.spans.insert(0, root)
        root.events, self._pending_events = self._pending_events, SpanEvents()
        if ev.event["kind"] != "run.started":
            root.events.append(ev.event["kind"], ev.event["timestamp_ns"], _ract_attributes(ev))

    def _close_root(self, ev: LogEvent) -> None:
        root = self._ensure_root(ev)
        event = ev.event
        payload = event["payload"]
        root.end_ns = event["timestamp_ns"]
        root.events.append(event["kind"], event["timestamp_ns"], _ract_attributes(ev))
        if event["kind"] == "run.completed":
            root.status = STATUS_OK
            decision = _text(payload.get("final_decision"))
            if decision is not None:
                root.attributes["ract.final_decision"] = decision
        else:
            root.status = STATUS_ERROR
            cause = _text(payload.get("termination_cause")) or _text(payload.get("reason")) or "aborted"
            root.attributes["error.type"] = cause
            root.status_message = cause

    def _parent_for(self, event: Event) -> Span:
        """A step's child hangs under that step's span while it is open; anything else under the root.

        With several open step spans of that step_id (a step_id reused before its
        step closed), the one latest in ``_open``'s order. Found on top of the
        step's own heap, not by walking every open span: a log opening n tool
        calls in one step never closed made that n^2/2 (40,000 calls: 77 s).
        """
        step_id = event.get("step_id")
        if isinstance(step_id, str):  # (a usable event's step_id is 32 hex digits or null: SPEC §2.2)
            heap = self._open_steps.get(step_id)
            if heap is not None:
                span = self._newest_open_step(step_id, heap)
                if span is not None:
                    return span
        assert self.root is not None
        return self.root

    def _newest_open_step(self, step_id: str, heap: list[tuple[int, str]]) -> Span | None:
        """The newest open step span of ``step_id``; the entries on top of it that went stale go.

        An entry is stale when its id is no longer open as a step span of
        ``step_id``. (An id closed and opened again has two entries, the newer
        one nearer the top: both stand or fall together, for the same span.)
        """
        while heap:
            span = self._open.get(heap[0][1])
            if span is not None and span.name == "step" and span.attributes.get("ract.step.id") == step_id:
                return span
            heapq.heappop(heap)
        del self._open_steps[step_id]
        return None

    def _open_span(self, ev: LogEvent) -> None:
        event = ev.event
        root = self._ensure_root(ev)
        kind, payload = event["kind"], event["payload"]
        parent = root if kind == "step.started" else self._parent_for(event)
        attrs: dict[str, AttributeValue] = {}
        span_kind = KIND_INTERNAL
        if kind == "step.started":
            name = "step"
            if event.get("step_id") is not None:
                attrs["ract.step.id"] = event["step_id"]
        elif kind == "tool.called":
            tool = _text(payload.get("tool")) or "unknown"
            name = f"execute_tool {tool}"
            attrs.update(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool,
                    "gen_ai.tool.call.id": event["id"],
                    "gen_ai.tool.type": "function",
                }
            )
        elif kind == "prompt.sent":
            name = "chat"
            span_kind = KIND_CLIENT
            attrs["gen_ai.operation.name"] = "chat"
            provider = _text(payload.get("provider"))
            if provider is not None:
                attrs["gen_ai.provider.name"] = provider
        else:  # handshake.requested
            name = "handshake"
        attrs.update(_scalar_payload(payload))
        attrs.update(_ract_attributes(ev))
        span = Span(span_id(event["id"]), parent.span_id, name, span_kind, event["timestamp_ns"], None, attrs)
        self.spans.append(span)
        self._add_open(event["id"], span)

    def _add_open(self, event_id: str, span: Span) -> None:
        replaced = self._open.get(event_id)
        self._open[event_id] = span
        position = self._position.get(event_id)
        if position is None:
            position = self._position[event_id] = self._next_position
            self._next_position += 1
        step_id = span.attributes.get("ract.step.id") if span.name == "step" else None
        if not isinstance(step_id, str):
            return
        if replaced is not None and replaced.name == "step" and replaced.attributes.get("ract.step.id") == step_id:
            return  # (a duplicate id of the same step: its entry stands, now for this span)
        # (a duplicate id keeps its key's earlier place, so not always on top: a heap, not a stack)
        heapq.heappush(self._open_steps.setdefault(step_id, []), (-position, event_id))

    def _close_span(self, opened: OpenHandle, ev: LogEvent) -> None:
        span = self._open.pop(opened.event_id)
        del self._position[opened.event_id]
        step_id = span.attributes.get("ract.step.id") if span.name == "step" else None
        if isinstance(step_id, str) and (heap := self._open_steps.get(step_id)) is not None:
            self._newest_open_step(step_id, heap)  # drop what went stale on top (a closed newest step)
        event = ev.event
        payload = event["payload"]
        span.end_ns = event["timestamp_ns"]
        span.events.append(event["kind"], event["timestamp_ns"], _ract_attributes(ev))
        span.attributes["ract.close.event.id"] = event["id"]
        span.attributes["ract.close.event.hash"] = event["hash"]
        status, message = _close_status(event["kind"], payload)
        span.status, span.status_message = status, message
        if status == STATUS_ERROR:
            span.attributes["error.type"] = message
        if event["kind"] in ("step.committed", "step.rolled_back"):
            outcome = _text(payload.get("outcome"))
            if outcome is not None:
                span.attributes["ract.step.outcome"] = outcome

    def _span_event(self, ev: LogEvent) -> None:
        event = ev.event
        attrs = _ract_attributes(ev)
        name = event["kind"]
        if name == "predicate.evaluated":
            name = "gen_ai.evaluation.result"
            payload = event["payload"]
            predicate = _text(payload.get("predicate_id"))
            if predicate is not None:
                attrs["gen_ai.evaluation.name"] = predicate
            ok = payload.get("ok")
            if isinstance(ok, bool):
                attrs["gen_ai.evaluation.score.label"] = "pass" if ok else "fail"
            reason = _text(payload.get("reason"))
            if reason is not None:
                attrs["gen_ai.evaluation.explanation"] = reason
            attrs.update(_scalar_payload(payload))
        if self.root is None:
            self._pending_events.append(name, event["timestamp_ns"], attrs)
            return
        target = next(reversed(self._open.values())) if self._open else self.root
        target.events.append(name, event["timestamp_ns"], attrs)

    # --- the end --------------------------------------------------------------

    def finish(self) -> list[Span]:
        """Every span, ended: what is still open ends at the last event's time, marked ``ract.open``."""
        if self.root is None:
            return []
        last = self.last_ns if self.last_ns is not None else self.root.start_ns
        for span in [*self._open.values(), self.root]:
            if span.end_ns is None:
                span.end_ns = last
                span.attributes["ract.open"] = True
        self._open.clear()
        self._position.clear()
        self._open_steps.clear()
        if self.first_ns is not None and self.first_ns < self.root.start_ns:
            self.root.start_ns = self.first_ns  # an event before run.started (or a clock regression)
        self.root.end_ns = max(self.root.end_ns or last, last)
        return self.spans


def _close_status(kind: str, payload: Payload) -> tuple[int, str]:
    """OTLP status of a span from the event that closed it."""
    if kind == "tool.result":
        if payload.get("status") == "unknown":
            return STATUS_ERROR, "unknown"
        return (STATUS_OK, "") if payload.get("ok") is True else (STATUS_ERROR, "tool_error")
    if kind == "response.received":
        if payload.get("status") == "timed_out":
            return STATUS_ERROR, "timed_out"
        return STATUS_OK, ""
    if kind == "step.rolled_back":
        return STATUS_ERROR, _text(payload.get("outcome")) or "rolled_back"
    if kind == "step.committed":
        return STATUS_OK, ""
    if kind == "handshake.resolved":
        resolution = _text(payload.get("resolution"))
        return (STATUS_ERROR, resolution) if resolution == "interrupted" else (STATUS_UNSET, "")
    return STATUS_UNSET, ""


def attributes_json(attrs: dict[str, AttributeValue]) -> list[dict[str, Any]]:
    """OTLP/JSON ``KeyValue`` list: 64-bit integers as decimal strings, as the encoding rules say."""
    out: list[dict[str, Any]] = []
    for key, value in attrs.items():
        if isinstance(value, bool):
            encoded: dict[str, Any] = {"boolValue": value}
        elif isinstance(value, int):
            encoded = {"intValue": str(value)}
        elif isinstance(value, float):
            encoded = {"doubleValue": value}
        else:
            encoded = {"stringValue": value}
        out.append({"key": key, "value": encoded})
    return out
