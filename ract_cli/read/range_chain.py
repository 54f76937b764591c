"""A byte range's leading run of clean events, proven and chained in a worker (``verify --jobs N``, Python core).

``parallel.scan_file`` cuts a large log into byte ranges. Sending every line's
result back to be fed through ``ChainState.feed`` one by one left the main
process as slow as reading the file alone (``--jobs 2`` was slower than
``--jobs 1``). So a worker first takes its range's leading run of lines in
``python_chain``'s loop, chained to its own first event's ``prev_hash``, run
and clock instead of the lines before it, which it has not read, and sends
back a ``TakenRun``: its ends, its ids, and the events the handle tracker
reads, less the opens and closes ``python_chain`` pairs by ``parent_id``.
The main process takes the run at once when it links on
(``ChainState.take_run``), else reads the range line by line itself; the lines
after the run are sent back line by line, as before.
"""

from __future__ import annotations

from ract_cli.format.json_types import Event
from ract_cli.read.chain import ChainState, TakenRun
from ract_cli.read.event import BIG_LINE_BYTES
from ract_cli.read.fastpath import fast_analyze
from ract_cli.read.handles import HANDLE_PAYLOAD_KEYS, HandleTracker, OpenHandle
from ract_cli.read.idset import _IdSet
from ract_cli.read.python_chain import PythonBatches, body_end


class _RunIds(_IdSet):
    """The run's id set, keeping its ids in order too (they go back to the main process)."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[str] = []

    def add(self, hex_id: str) -> bool:
        if not super().add(hex_id):
            return False
        self.order.append(hex_id)
        return True


class _RunHandles(HandleTracker):
    """Keeps the events the handle tracker reads, for the main process's tracker to feed in file order.

    The opens and closes that ``python_chain`` pairs by ``parent_id`` within the run never reach it,
    so neither is sent back: only what the main process's tracker must pair itself.
    """

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[int, int, Event]] = []

    def feed(self, event: Event, line: int, offset: int) -> OpenHandle | None:
        keys = HANDLE_PAYLOAD_KEYS[event["kind"]]
        payload = event["payload"]  # (a proven event's payload: a dict)
        self.events.append((line, offset, {**event, "payload": {k: v for k, v in payload.items() if k in keys}}))
        return None


def take_run(data: bytes, schema_version: int, max_line: int) -> TakenRun | None:
    """The leading run of clean events of ``data`` (a range's bytes, from a line start), or None when its
    first line is not one. ``max_line``: the longest body taken (a longer line ends the run); values are
    not counted here, so at most ``chain_mode.BATCH_LINE_BYTES - 1``, as in the reader's chain mode."""
    end = data.find(b"\n")
    if end < 0 or data[:1] != b"{":
        return None
    stop = body_end(data, end)
    if stop > min(max_line, BIG_LINE_BYTES):
        return None
    proven = fast_analyze(data[:stop], schema_version)
    if proven is None:
        return None
    first = proven[0]
    # chained to its own first event: that event links on to its prev_hash, as the run on to the line before
    state = ChainState("")
    state.expected_prev, state.run_id = first["prev_hash"], first["run_id"]
    state.prev_ts = state.last_ts = first["timestamp_ns"]
    ids, handles = _RunIds(), _RunHandles()
    state._ids, state.handles = ids, handles
    size, lines = PythonBatches(state, schema_version).take_block(data, 0, 0, 0, max_line, [])
    head, prev_ts, last_ts = state.expected_prev, state.prev_ts, state.last_ts
    if not lines or head is None or prev_ts is None or last_ts is None:
        return None  # (it takes the line just proven: never)
    return TakenRun(
        lines=lines,
        size=size,
        prev_hash=first["prev_hash"],
        run_id=first["run_id"],
        first_ts=first["timestamp_ns"],
        head=head,
        prev_ts=prev_ts,
        last_ts=last_ts,
        ids=ids.order,
        handles=handles.events,
    )
