"""Open handles keep only what their consumers need, so hostile logs cannot grow memory through them."""

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
