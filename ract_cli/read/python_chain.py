"""Chain mode for the pure-Python core: runs of clean lines proven and chained in one loop.

The native core's chain mode (``chain_mode.Batches``) takes the leading lines
of a block in C; this is the same for ``RACT_CORE=python``, in Python, for
``read_all`` (verify) and a fold (project): each line ``fastpath.fast_analyze``
proves (or what stands in for it on lines proven in other processes:
``line_proof.trusted_analyze``), that links on (``prev_hash``, same run,
clock not going back) and has a new id is taken here, as ``ChainState.feed``'s fast path would take it, without a
``LineResult``, a call of ``feed`` or a yield per line. The first line not
taken goes back to the reader, which feeds it line by line as ever
(``tests/test_chain_mode.py`` holds the readings to one verdict).
"""

from __future__ import annotations

from ract_cli.read.chain import ChainState
from ract_cli.read.chain_mode import Candidate
from ract_cli.read.event import BIG_LINE_BYTES
from ract_cli.read.fastpath import fast_analyze
from ract_cli.read.handles import CLOSE_TO_OPEN, HANDLE_KINDS, PARENT_OPENS, is_synthesized_close, open_handle

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from collections.abc import Callable

    from ract_cli.format.json_types import Event
    from ract_cli.read.chain_mode import FoldSink


def body_end(data: bytes, end: int) -> int:
    """Where the body of the line whose ``\\n`` is at ``end`` ends: before a ``\\r``, as reading line by
    line cuts it (``framing.split_line_ending``), so a CRLF line is proven as its LF twin."""
    return end - 1 if data[end - 1 : end] == b"\r" else end


class PythonBatches:
    """``Batches``' ``take_block`` for the Python core: the lines of a block up to the first it does not take."""

    def __init__(
        self,
        state: ChainState,
        schema_version: int,
        fold: FoldSink | None = None,
        prove: Callable[[bytes, int], tuple[Event, str] | None] | None = None,
        proven_in_fold: Callable[[int], bool] | None = None,
    ) -> None:
        self.state = state
        self.schema_version = schema_version
        self.wanted = None  # (only ``read_all``: no event is handed out)
        self.fold = fold  # a fold (``ChainReader.fold``): each event taken goes to its kind's ``fold.folders()``
        #: what proves a line: ``fast_analyze``, or what stands in for it on lines proven elsewhere
        #: (``line_proof.trusted_analyze``)
        self.prove = fast_analyze if prove is None else prove
        #: with a stand-in: whether the block of the read at a file offset is proven here all the same
        #: (``line_proof.ProofTap.proven_in_fold``: no other process proves it)
        self.proven_in_fold = proven_in_fold

    def take_block(
        self, data: bytes, pos: int, line_no: int, offset: int, max_line: int, out: list[Candidate]
    ) -> tuple[int, int]:
        """Take the lines of ``data`` from byte ``pos`` (line ``line_no``) on; where it stopped and how many.

        A line is taken when it ends in ``\\n`` (or ``\\r\\n``), starts with
        ``{``, its body is at most ``max_line`` bytes, and it is a valid event
        (``self.prove`` answers for it) that ``ChainState.feed``'s fast path
        would take with no finding.
        ``offset``: the file offset of ``data[0]``; ``out`` stays empty.
        """
        state = self.state
        expected, run_id, prev_ts, last_ts = state.expected_prev, state.run_id, state.prev_ts, state.last_ts
        first = not state.events and run_id is None and prev_ts is None  # the file's first event is next
        if not first and (run_id is None or prev_ts is None or last_ts is None):
            return pos, 0  # (no such state: an event sets all three)
        add_id, feed_handle, schema_version = state._ids.add, state.handles.feed, self.schema_version
        sink = self.fold
        folders = sink.folders() if sink is not None else {}
        limit = min(max_line, BIG_LINE_BYTES)
        taken = 0
        find, prove = data.find, self.prove
        if self.proven_in_fold is not None and self.proven_in_fold(offset):
            prove = fast_analyze
        # Opens of this call not fed to the tracker yet (id -> event, line, offset), in log order. A close that
        # names one by its parent_id takes it, as the tracker would (SPEC §4 rule 2), and neither is fed: with
        # no other close fed in between, nothing could have taken that open first (a close that is not such
        # feeds the held opens first, in order; so does the end of the call), and its id is new to the log
        # (``add_id``). So the tracker ends up as if it had been fed every event (the native chain mode pairs
        # in C so too), at a fraction of the cost: most closes name their open.
        held: dict[str, tuple[Event, int, int]] = {}
        while True:
            end = find(b"\n", pos)
            if end < 0 or data[pos] != 0x7B:  # b"{"
                break  # (an empty line fails the "{" test: data[pos] is its "\n")
            stop = body_end(data, end)
            if stop - pos > limit:
                break
            proven = prove(data[pos:stop], schema_version)
            if proven is None:
                break
            event, stored = proven
            ts = event["timestamp_ns"]
            if first:  # it links on to genesis (or what the lines before left): it sets run and clock
                if event["prev_hash"] != expected or not add_id(event["id"]):
                    break
                first, run_id, state.first_ts, last_ts = False, event["run_id"], ts, ts
            elif event["prev_hash"] != expected or event["run_id"] != run_id or ts < prev_ts or not add_id(event["id"]):
                break  # (a duplicate id is left as it was: the line path reports it)
            prev_ts = ts
            if ts > last_ts:
                last_ts = ts
            expected = stored
            taken += 1
            kind = event["kind"]
            paired = None
            if kind in HANDLE_KINDS:
                if kind in PARENT_OPENS:
                    held[event["id"]] = (event, line_no + taken - 1, offset + pos)
                else:
                    parent = event.get("parent_id")
                    opened = held.get(parent) if type(parent) is str else None
                    if (
                        opened is not None
                        and opened[0]["kind"] == CLOSE_TO_OPEN.get(kind)
                        and not is_synthesized_close(kind, event.get("payload"))  # (rule 1 comes first)
                    ):
                        del held[parent]  # type: ignore[arg-type]
                        if sink is not None and kind in sink.close_kinds:  # (a sink reads no other pairing)
                            paired = open_handle(opened[0]["kind"], *opened)
                    else:
                        if held:
                            _feed_held(held, feed_handle)
                        paired = feed_handle(event, line_no + taken - 1, offset + pos)
            if sink is not None:
                fold = folders.get(kind) or sink.folder(kind)
                fold(event, line_no + taken - 1, paired)
            pos = end + 1
        if held:
            _feed_held(held, feed_handle)
        if taken:
            state.expected_prev = state.head = expected
            state.run_id, state.prev_ts, state.last_ts = run_id, prev_ts, last_ts
            state._seen_first_line = True
            state.events += taken
            state._last_event_line = line_no + taken - 1
            state.saw_record = True
        return pos, taken


def _feed_held(held: dict[str, tuple[Event, int, int]], feed: Callable[[Event, int, int], object]) -> None:
    """Feed the held opens to the tracker, in log order, and forget them."""
    for event, line, offset in held.values():
        feed(event, line, offset)
    held.clear()
