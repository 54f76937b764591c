"""A run's timeline (``project --format html``): what happened when, as a bounded set of marks.

``TimelineCollector`` is fed the events the projection is fed: every verified
event (with the projection's audit flags, to see which event raised one), and
a count of the unverified ones, which are never drawn. It pairs opens with
closes through its own ``HandleTracker`` (SPEC §4, the same pairing as the
report) and keeps marks by *kind of mark*: a lane (``step``, ``tool``,
``provider``, ``handshake``, ``reap``, ``flag``) and a state (``committed``,
``failed``, ``open``...). Each kind keeps at most ``cap`` marks: when it
overflows, every other kept mark is dropped and from then on only every 2nd
(4th, 8th...) further one is kept, so what is drawn spreads evenly over the
whole run however long it is, while the count of every kind stays exact.
Memory and page size are bounded by ``cap`` times the number of kinds, and
every log string a mark shows is cut to ``TITLE_TEXT`` characters.

``to_dict()`` is plain JSON (it is spilled beside the reports of a fleet);
``project.timeline_svg`` draws it.
"""

from __future__ import annotations

from ract_cli.format.json_types import Event, JSONObject, Payload
from ract_cli.project.flags import Flags
from ract_cli.project.human import fmt_duration
from ract_cli.read.handles import CLOSE_FOR_OPEN, HandleTracker, OpenHandle

#: marks kept per kind of mark for a one-run page, and per run on a fleet page
DETAIL_MARKS = 150
FLEET_MARKS = 20
#: how many runs of a fleet page get a section of their own (and a timeline collected)
FLEET_SECTIONS = 200
#: characters of a log string kept in a mark's hover text
TITLE_TEXT = 60

#: lane -> its states, in drawing order (the unremarkable first, so failures are drawn on top)
LANES: dict[str, tuple[str, ...]] = {
    "step": ("committed", "rolled-back", "open"),
    "tool": ("ok", "unknown", "open", "failed", "refused"),
    "provider": ("answered", "open", "timed-out", "rejected"),
    "handshake": ("resolved", "pending", "interrupted"),
    "reap": ("reaped",),
    "flag": ("flag",),
}
#: states drawn from their start to where the verified log ends (never closed, as far as it is verified)
OPEN_STATES = frozenset({"step.open", "tool.open", "provider.open", "handshake.pending"})
#: states that are one moment, not an interval
POINT_STATES = frozenset({"tool.refused", "provider.rejected", "reap.reaped", "flag.flag"})

_OPEN_STATE = {
    "step.started": "step.open",
    "tool.called": "tool.open",
    "prompt.sent": "provider.open",
    "handshake.requested": "handshake.pending",
}
_PAIRED = frozenset(CLOSE_FOR_OPEN) | frozenset(
    {"run.completed", "run.aborted", "step.committed", "step.rolled_back"}
    | {"tool.result", "response.received", "handshake.resolved"}
)

#: one mark: [start_ns, end_ns (None: a point, or open), line of its first event, hover text]
Mark = list[object]


def cut(value: object) -> str:
    """A log value for hover text: a string cut to ``TITLE_TEXT`` characters, else its JSON type."""
    if type(value) is str:
        return value if len(value) <= TITLE_TEXT else value[:TITLE_TEXT] + "…"
    if value is None:
        return "?"
    if type(value) is int:
        return str(value)
    return f"({type(value).__name__})"


class _Sampler:
    """At most ``cap`` marks, spread evenly: on overflow, keep every other one and double the stride."""

    __slots__ = ("cap", "count", "marks", "stride")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.count = 0
        self.stride = 1
        self.marks: list[Mark] = []

    def offer(self, mark: Mark) -> None:
        if self.count % self.stride == 0:
            self.marks.append(mark)
            if len(self.marks) > self.cap:
                self.marks = self.marks[::2]
                self.stride *= 2
        self.count += 1


class TimelineCollector:
    """Fold a run's events into timeline marks; ``to_dict()`` when the reader is done."""

    def __init__(self, cap: int = DETAIL_MARKS) -> None:
        self.cap = cap
        self.handles = HandleTracker()
        self.samplers: dict[str, _Sampler] = {}
        self.last_ns: int | None = None  # the last verified event's time: where trust ends
        self.last_line: int | None = None
        self.unverified = 0
        self._flag_count = 0
        self._flag_items = 0

    def add(self, key: str, start: int, end: int | None, line: int, title: str) -> None:
        sampler = self.samplers.get(key)
        if sampler is None:
            sampler = self.samplers[key] = _Sampler(self.cap)
        sampler.offer([start, end, line, title])

    def feed(self, event: Event, line: int, flags: Flags | None = None) -> None:
        """One verified event; ``flags``: the projection's flags just after it folded this event."""
        kind, ts, payload = event["kind"], event["timestamp_ns"], event["payload"]
        self.last_ns, self.last_line = ts, line
        paired = self.handles.feed(event, line, 0) if kind in _PAIRED else None
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, event, payload, line, ts, paired)
        if flags is not None and flags.count != self._flag_count:
            self._flags(flags, line, ts)

    def feed_unverified(self) -> None:
        """One event past the point where trust ends: counted, never drawn."""
        self.unverified += 1

    def _flags(self, flags: Flags, line: int, ts: int) -> None:
        new = flags.count - self._flag_count
        items = flags.items[self._flag_items :]
        self._flag_count, self._flag_items = flags.count, len(flags.items)
        for flag in items:
            self.add("flag.flag", ts, None, line, f"{flag['code']}: {cut(flag['message'])} (line {line})")
        for _ in range(new - len(items)):  # past --max-items: the flag is counted, its text not kept
            self.add("flag.flag", ts, None, line, f"audit flag (line {line})")

    def to_dict(self) -> JSONObject:
        """The timeline as plain JSON: marks and exact counts per kind, and where the verified log ends."""
        for h in self.handles.open_handles():
            key = _OPEN_STATE.get(h.kind)
            if key is not None:
                self.add(key, h.event["timestamp_ns"], None, h.line, _open_title(h))
        return {
            "cap": self.cap,
            "marks": {k: s.marks for k, s in sorted(self.samplers.items())},
            "counts": {k: s.count for k, s in sorted(self.samplers.items())},
            "strides": {k: s.stride for k, s in sorted(self.samplers.items())},
            "last_ns": self.last_ns,
            "last_line": self.last_line,
            "unverified": self.unverified,
        }


def _span(paired: OpenHandle, line: int, ts: int) -> str:
    start = paired.event["timestamp_ns"]
    return f"lines {paired.line}-{line}, {fmt_duration(ts - start)}"


def _open_title(h: OpenHandle) -> str:
    p = h.event["payload"]
    if h.kind == "step.started":
        what = f"step {cut(h.step_id)}"
    elif h.kind == "tool.called":
        what = f"tool {cut(p.get('tool'))}"
    elif h.kind == "prompt.sent":
        what = f"prompt to {cut(p.get('provider'))}"
    else:
        what = f"handshake {cut(p.get('milestone_id'))}"
    return f"{what}: never closed (line {h.line})"


def _step_closed(
    c: TimelineCollector, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None
) -> None:
    committed = event["kind"] == "step.committed"
    state = "step.committed" if committed else "step.rolled-back"
    start = paired.event["timestamp_ns"] if paired is not None else ts
    where = _span(paired, line, ts) if paired is not None else f"line {line}, no matching step.started"
    outcome = cut(payload.get("outcome"))
    c.add(state, start, ts, paired.line if paired else line, f"step {cut(event.get('step_id'))}: {outcome} ({where})")


def _tool_result(
    c: TimelineCollector, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None
) -> None:
    ok = payload.get("ok")
    state = "tool.ok" if ok is True else "tool.failed" if ok is False else "tool.unknown"
    start = paired.event["timestamp_ns"] if paired is not None else ts
    where = _span(paired, line, ts) if paired is not None else f"line {line}, no matching tool.called"
    title = f"tool {cut(payload.get('tool'))}: {state.partition('.')[2]} ({where})"
    c.add(state, start, ts, paired.line if paired else line, title)


def _tool_refused(
    c: TimelineCollector, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None
) -> None:
    if event["kind"] == "tool.refused":
        title = f"tool {cut(payload.get('tool'))}: refused by {cut(payload.get('refused_by'))} (line {line})"
    else:
        title = f"tool {cut(payload.get('tool_id'))}: refused by gate {cut(payload.get('gate'))} (line {line})"
    c.add("tool.refused", ts, None, line, title)


def _response(
    c: TimelineCollector, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None
) -> None:
    timed_out = payload.get("status") == "timed_out" or payload.get("synthesized") is True
    state = "provider.timed-out" if timed_out else "provider.answered"
    start = paired.event["timestamp_ns"] if paired is not None else ts
    where = _span(paired, line, ts) if paired is not None else f"line {line}, no matching prompt.sent"
    title = f"{cut(payload.get('provider'))}: {state.partition('.')[2]} ({where})"
    c.add(state, start, ts, paired.line if paired else line, title)


def _rejected(
    c: TimelineCollector, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None
) -> None:
    halting = " (halting)" if payload.get("should_halt") is True else ""
    c.add("provider.rejected", ts, None, line, f"response rejected{halting}: {cut(payload.get('error'))} (line {line})")


def _handshake(
    c: TimelineCollector, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None
) -> None:
    interrupted = payload.get("resolution") == "interrupted" or payload.get("synthesized") is True
    state = "handshake.interrupted" if interrupted else "handshake.resolved"
    start = paired.event["timestamp_ns"] if paired is not None else ts
    where = _span(paired, line, ts) if paired is not None else f"line {line}, no matching handshake.requested"
    status = "interrupted" if interrupted else cut(payload.get("status"))
    title = f"handshake {cut(payload.get('milestone_id'))}: {status} ({where})"
    c.add(state, start, ts, paired.line if paired else line, title)


def _reaped(
    c: TimelineCollector, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None
) -> None:
    title = f"process reaped: pid {cut(payload.get('pid'))} {cut(payload.get('argv0'))}, {cut(payload.get('reason'))}"
    c.add("reap.reaped", ts, None, line, f"{title} (line {line})")


_HANDLERS = {
    "step.committed": _step_closed,
    "step.rolled_back": _step_closed,
    "tool.result": _tool_result,
    "tool.refused": _tool_refused,
    "tool.invocation.refused": _tool_refused,
    "response.received": _response,
    "response.rejected": _rejected,
    "handshake.resolved": _handshake,
    "process.reaped": _reaped,
}
