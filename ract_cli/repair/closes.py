"""The pure part of ``repair`` (SPEC §4): open events in, synthesized close events out.

Ids, payloads, timestamps, order and chain exactly as SPEC §4. No file, no
clock, no randomness: ``repairer.repair_file`` writes what these compute.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import cast

from ract_cli.format.json_types import Event, Payload
from ract_cli.format.kinds import VALIDATORS
from ract_cli.format.model import GENESIS_HASH
from ract_cli.read.handles import CLOSE_FOR_OPEN, HandleTracker, OpenHandle
from ract_cli.writer.event_writer import event_hash

REPAIR_ID_PREFIX = "ract.repair:"
REASON = "interrupted"

#: per close kind: the fixed additions of SPEC §4
ADDITIONS: dict[str, dict[str, str]] = {
    "run.aborted": {},
    "step.rolled_back": {},
    "tool.result": {"status": "unknown"},
    "response.received": {"status": "timed_out"},
    "handshake.resolved": {"resolution": "interrupted"},
}

#: per open kind: (key in the open's payload, key in the close's payload) copied when present.
#: Only keys that are documented fields of the close kind, meaning the same thing there.
#: ``handshake.requested``'s ``status`` ("pending") is never copied: it is not a valid
#: ``handshake.resolved`` status. ``step.started``'s ``parent_snapshot`` is the snapshot the
#: step started from, i.e. the close's ``parent_snapshot_before``.
COPIED_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    "run.started": (),
    "step.started": (("branch", "branch"), ("parent_snapshot", "parent_snapshot_before")),
    "tool.called": (("tool", "tool"),),
    "prompt.sent": (("provider", "provider"), ("intent_id", "intent_id")),
    "handshake.requested": (("milestone_id", "milestone_id"), ("description", "description")),
}


def repair_id(source_event_id: str) -> str:
    """SPEC §4: the synthesized close's id, first 32 hex of SHA-256("ract.repair:" + open id)."""
    return hashlib.sha256((REPAIR_ID_PREFIX + source_event_id).encode("utf-8")).hexdigest()[:32]


def synthesize_close(open_event: Event, *, run_id: str, timestamp_ns: int, prev_hash: str) -> Event:
    """The close SPEC §4 synthesizes for one open event, chained onto ``prev_hash``."""
    open_kind = open_event["kind"]
    close_kind = CLOSE_FOR_OPEN[open_kind]
    source_id = open_event["id"]
    found = open_event.get("payload")
    open_payload: Payload = found if isinstance(found, dict) else {}
    validate = VALIDATORS[close_kind]
    payload: Payload = {}
    for src, dst in COPIED_KEYS[open_kind]:
        if src in open_payload and not validate({dst: open_payload[src]}):
            payload[dst] = open_payload[src]  # copied only when valid for the close kind
    payload.update(ADDITIONS[close_kind])
    payload.update({"synthesized": True, "reason": REASON, "source_event_id": source_id})
    event: Event = {
        "id": repair_id(source_id),
        "run_id": run_id,
        "step_id": open_event.get("step_id"),
        "parent_id": source_id,
        "timestamp_ns": timestamp_ns,
        "kind": close_kind,
        "payload": payload,
        "prev_hash": prev_hash,
    }
    event["hash"] = event_hash(event)
    return event


def _opens_to_close(tracker: HandleTracker) -> list[OpenHandle]:
    """What repair closes, in the order it appends the closes.

    Innermost first (reverse order of opening); the run's close last. The run
    is closed once, for its first ``run.started``; any other ``run.started``
    is closed by that same run close.
    """
    inner = [h for h in tracker.open_handles() if h.kind != "run.started"]
    inner.reverse()
    if not tracker.run_is_closed and tracker.run_started is not None:
        inner.append(tracker.run_started)
    return inner


def synthesize_closes(opens: Sequence[Event], *, run_id: str, prev_hash: str, timestamp_ns: int) -> list[Event]:
    """Closes for ``opens`` (already in append order), each chained onto the previous hash."""
    closes: list[Event] = []
    for open_event in opens:
        close = synthesize_close(open_event, run_id=run_id, timestamp_ns=timestamp_ns, prev_hash=prev_hash)
        prev_hash = close["hash"]
        closes.append(close)
    return closes


def closes_for_events(events: Iterable[Event]) -> list[Event]:
    """The pure core of repair: a log's events in file order → the closes repair appends.

    Pairs closes with opens by SPEC §4's rules (``HandleTracker``); the
    closes' ``timestamp_ns`` is the largest timestamp among ``events`` and the
    first close chains onto the last event's ``hash``. Empty when nothing is open.
    """
    tracker = HandleTracker()
    head: str = GENESIS_HASH
    run_id: str | None = None
    max_ts: int | None = None
    for n, event in enumerate(events):
        tracker.feed(event, n + 1, 0)
        head = event["hash"]
        run_id = event["run_id"] if run_id is None else run_id
        ts = event["timestamp_ns"]
        max_ts = ts if max_ts is None else max(max_ts, ts)
    opens = [h.event for h in _opens_to_close(tracker)]
    if not opens:
        return []
    # something is open, so an event was read: run_id and max_ts are its
    return synthesize_closes(opens, run_id=cast(str, run_id), prev_hash=head, timestamp_ns=cast(int, max_ts))
