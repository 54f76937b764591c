"""Open handles keep only what their consumers need, so hostile logs cannot grow memory through them."""

from hypothesis import given, settings
from hypothesis import strategies as st

from ract_cli.read.handles import HandleTracker


def _event(kind, payload, event_id, step_id=None, parent_id=None):
    return {
        "id": event_id,
        "run_id": "a" * 32,
        "step_id": step_id,
        "parent_id": parent_id,
        "timestamp_ns": 1,
        "kind": kind,
        "payload": payload,
        "prev_hash": "0" * 64,
        "hash": "1" * 64,
    }


def test_open_tool_call_keeps_tool_name_but_not_arguments_or_undocumented_keys():
    tracker = HandleTracker()
    huge = {"blob": "x" * 100_000}
    tracker.feed(_event("tool.called", {"tool": "bash", "arguments": huge, "extra": "y" * 1000}, "1" * 32), 1, 0)
    (handle,) = tracker.open_handles()
    assert handle.event["payload"] == {"tool": "bash"}
    assert handle.event["id"] == "1" * 32 and handle.kind == "tool.called"


def test_trimmed_handles_still_pair_by_fifo_key():
    tracker = HandleTracker()
    sid = "5" * 32
    tracker.feed(_event("tool.called", {"tool": "bash", "arguments": {"a": 1}}, "1" * 32, step_id=sid), 1, 0)
    tracker.feed(_event("tool.called", {"tool": "grep", "arguments": {}}, "2" * 32, step_id=sid), 2, 100)
    tracker.feed(_event("tool.result", {"tool": "grep", "ok": True}, "3" * 32, step_id=sid), 3, 200)
    assert [h.event_id for h in tracker.open_handles()] == ["1" * 32]


# --- the pairing rules against a plain model -------------------------------------------------

_IDS = [f"{i:032x}" for i in range(1, 13)]  # few ids: duplicates, closes naming closed opens
_STEPS = ["a" * 32, "a" * 32, "a" * 32, "b" * 32]  # mostly one queue: closes meet opens behind its head
_TOOLS = ["bash", "bash", "bash", "grep"]


class _Model:
    """SPEC §4's pairing written plainly: the open handles in opening order, a FIFO queue by scanning them."""

    def __init__(self) -> None:
        self.open: dict[str, tuple[str, tuple[object, ...]]] = {}  # id -> (kind, queue key)
        self.run_started: str | None = None  # the first run.started's id (held open or not: see below)
        self.run_open = False  # the first run.started is held open (its id was free, no run close yet)
        self.later_runs: list[str] = []  # the other run.started held open
        self.run_closed = False

    def feed(self, ev: dict) -> str | None:
        kind, payload = ev["kind"], ev["payload"]
        if kind == "run.started":  # no queue; a run close closes every run.started
            first = self.run_started is None
            if first:
                self.run_started = ev["id"]
            if not self.run_closed and ev["id"] not in self.open:
                self.open[ev["id"]] = (kind, ())
                if first:
                    self.run_open = True
                else:
                    self.later_runs.append(ev["id"])
            return None
        if kind == "run.completed":
            self.run_closed = True
            for later in self.later_runs:
                self.open.pop(later, None)
            self.later_runs.clear()
            if self.run_open:  # an open that holds the run's id instead stays open
                self.run_open = False
                assert self.run_started is not None
                del self.open[self.run_started]
                return self.run_started
            return None
        if kind in ("tool.called", "step.started"):
            if ev["id"] not in self.open:
                self.open[ev["id"]] = (kind, _key(ev))
            return None
        want = "tool.called" if kind == "tool.result" else "step.started"
        source = payload.get("source_event_id") if payload.get("synthesized") is True else None
        for named in (source, ev["parent_id"]):
            if isinstance(named, str) and self.open.get(named, ("",))[0] == want:
                del self.open[named]
                return named
        first = next((i for i, (k, key) in self.open.items() if key == _key(ev)), None)
        if first is not None and self.open[first][0] == want:
            del self.open[first]
            return first
        return None


def _key(ev: dict) -> tuple[object, ...]:
    if ev["kind"].startswith("step."):
        return ("step", ev["step_id"])
    return ("tool", ev["step_id"], ev["payload"].get("tool"))


_EVENTS = st.builds(
    lambda kind, ident, step, tool, parent, synthesized, source: {
        "kind": kind,
        "id": ident,
        "step_id": step,
        "parent_id": parent,
        "payload": {"tool": tool, **({"synthesized": True, "source_event_id": source} if synthesized else {})},
    },
    st.sampled_from(
        ["tool.called", "tool.called", "tool.result", "step.started", "step.committed", "run.started", "run.completed"]
    ),
    st.sampled_from(_IDS),
    st.sampled_from(_STEPS),
    st.sampled_from(_TOOLS),
    st.none() | st.sampled_from(_IDS),
    st.booleans(),
    st.sampled_from(_IDS),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_EVENTS, max_size=120))
def test_the_tracker_pairs_as_the_plain_model(events: list[dict]) -> None:
    tracker, model = HandleTracker(), _Model()
    for line, ev in enumerate(events, start=1):
        event = _event(ev["kind"], ev["payload"], ev["id"], step_id=ev["step_id"], parent_id=ev["parent_id"])
        paired = tracker.feed(event, line, 0)
        assert (paired.event_id if paired else None) == model.feed(ev)
    assert [h.event_id for h in tracker.open_handles()] == list(model.open)


def test_a_queue_skips_opens_closed_behind_its_head() -> None:
    """A, B, C queued; B closed by its id while A heads the queue, then A: B heads it but is closed,
    so a close naming no open takes C."""
    tracker, sid = HandleTracker(), "5" * 32
    a, b, c = "1" * 32, "2" * 32, "3" * 32
    for line, ident in enumerate((a, b, c), start=1):
        tracker.feed(_event("tool.called", {"tool": "bash"}, ident, step_id=sid), line, 0)
    for line, (ident, parent) in enumerate((("4" * 32, b), ("6" * 32, a)), start=4):
        paired = tracker.feed(_event("tool.result", {"tool": "bash"}, ident, step_id=sid, parent_id=parent), line, 0)
        assert paired is not None and paired.event_id == parent
    paired = tracker.feed(_event("tool.result", {"tool": "bash"}, "7" * 32, step_id=sid), 6, 0)
    assert paired is not None and paired.event_id == c and not tracker.open_handles()


def test_closing_a_long_queue_newest_first_stays_linear_and_bounded() -> None:
    """Closes that name their opens from the back of one FIFO queue: each close once walked the queue."""
    tracker = HandleTracker()
    n = 20_000
    ids = [f"{i:032x}" for i in range(1, n + 1)]
    for line, ident in enumerate(ids, start=1):
        tracker.feed(_event("tool.called", {"tool": "bash"}, ident, step_id="5" * 32), line, 0)
    tracker.feed(_event("tool.called", {"tool": "bash"}, "f" * 32, step_id="5" * 32), n + 1, 0)
    for k, ident in enumerate(reversed(ids)):
        close = _event("tool.result", {"tool": "bash"}, f"{n + 10 + k:032x}", step_id="5" * 32, parent_id=ident)
        paired = tracker.feed(close, n + 2 + k, 0)
        assert paired is not None and paired.event_id == ident
        queue = tracker._queues[("tool", "5" * 32, "bash")]
        assert len(queue.entries) <= 2 * queue.live + 16  # the stale entries never outgrow the open ones
    assert [h.event_id for h in tracker.open_handles()] == ["f" * 32]
    # the one left open is still the queue's first: a close naming no open takes it
    last = tracker.feed(_event("tool.result", {"tool": "bash"}, "e" * 32, step_id="5" * 32), 2 * n + 5, 0)
    assert last is not None and last.event_id == "f" * 32 and not tracker.open_handles()
