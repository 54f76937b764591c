"""The native core's chain mode: runs of clean lines verified and chained in C, in batches.

``ChainReader`` collects lines that look clean (``{`` first, ``\\n`` last, not
``too_many_nodes``; a ``\\r`` before the ``\\n`` is JSON whitespace) and hands each batch to ``_core.Verifier.check_lines(...,
chain=)``. C takes the leading lines that take ``ChainState.feed``'s fast path
(a valid event that links on, same run, clock not going back, a new id; the
file's first event when it links on to genesis) and
keeps the chain, the ids and the clock; for each taken open or close it
returns the envelope and the payload keys the handle tracker reads, and for
each event of a kind the caller asked for the whole event, built as reading
line by line builds it (``compile_kinds(event_kinds=)``). The
first line C does not take, and the rest of its batch, are fed to
``ChainState`` here one by one, exactly as the line-by-line reader feeds them
(``tests/test_chain_mode.py`` holds the three readings to one verdict).
"""

from __future__ import annotations

from collections.abc import Callable

from ract_cli.format.json_types import Event
from ract_cli.format.kinds import KINDS, VALIDATORS
from ract_cli.read import core
from ract_cli.read.chain import ChainState
from ract_cli.read.event import has_record_shape, hash_mismatch
from ract_cli.read.handles import CLOSE_TO_OPEN, HANDLE_KINDS, HANDLE_PAYLOAD_KEYS
from ract_cli.read.json_rules import MAX_LINE_NODES, LineResult
from ract_cli.read.verdict import line_result

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import Any, Protocol

    from ract_cli.read.read_ahead import ReadAhead

#: one batched line: (line number, offset, raw bytes with their "\n")
Line = tuple[int, int, bytes]
#: an event to hand out: (line number, offset, raw bytes, the event)
Candidate = tuple[int, int, bytes, Event]

#: the smallest rest of a block worth a helper thread in C (starting one costs ~30 us)
HELPER_MIN_BYTES = 64 << 10

#: the longest line C frames in a block: a longer one is handed to C alone, as a view (no copy),
#: once ``too_many_nodes`` has passed it (C does not count values; no line of at most
#: MAX_LINE_NODES bytes can hold more)
BATCH_LINE_BYTES = min(1 << 20, MAX_LINE_NODES)


class FoldGaveUp(Exception):
    """A fold cannot go on exactly (a line C did not take, a value C does not compare...): read again without."""


if TYPE_CHECKING:  # (only ever an annotation: no Protocol at run time)

    class FoldSink(Protocol):
        """Where a fold's results go (``project.fold``): the events C folded, and those it leaves to Python."""

        #: kind -> the rule ``_core.Fold`` takes; kinds it leaves to Python are ``wanted`` (handed out whole)
        rules: dict[str, tuple[Any, ...]]
        wanted: KindTest
        close_kinds: frozenset[str]  # closes whose pairing in Python the sink hears of (``closed``)
        max_items: int
        max_groups: int  # C pauses once it holds this many groups (they are applied then)

        def started(self, fold: Any) -> None:
            """The ``_core.Fold`` of this read (its ``counts()`` once it is done)."""

        def folded(self, taken: tuple[Any, ...]) -> None:
            """What one call folded (``Fold.take(...)``), before the events it handed out."""

        def event(self, event: Event, line: int, offset: int) -> None:
            """An event of a kind left to Python, in log order (the tracker has been fed it)."""

        def closed(self, event: Event, paired: Any, line: int, raw: bytes) -> None:
            """A close of ``close_kinds`` the tracker paired (``paired``: its open, or None)."""

        def folders(self) -> dict[str, Callable[[Event, int, Any], None]]:
            """(The Python core) each kind's fold of one event its chain mode took, in log order:
            ``(event, line, paired)``, ``paired`` for a close of ``close_kinds`` the open it took (or None; for
            another kind, not to be read); a kind not there yet is asked of ``folder``. The tracker may not have
            been fed the event yet (``python_chain`` holds opens until a close takes them or the call ends): a
            fold does not read it."""

        def folder(self, kind: str) -> Callable[[Event, int, Any], None]:
            """(The Python core) the fold of ``kind``, made; raises ``FoldGaveUp`` for a kind it cannot fold."""


class Batches:
    """Chain mode for one file: its ``Chain`` (sharing the state's id set) and the verifier to call."""

    def __init__(
        self,
        state: ChainState,
        schema_version: int,
        max_line_bytes: int,
        wanted: KindTest | None,
        threads: int = 1,
        fold: FoldSink | None = None,
    ) -> None:
        assert core.NATIVE is not None
        self.threads = threads  # 2: a helper thread in C shares the checking of a large block's chunks
        self.state = state
        self.schema_version = schema_version
        self.max_line_bytes = max_line_bytes
        self.wanted = fold.wanted if fold is not None else wanted
        self.chain = core.NATIVE.Chain()
        state.share_ids(self.chain.ids)
        self.verifier = _verifier(schema_version, self.wanted)
        self.last: Line | None = None  # the last line holding an event, of the batch before or read alone
        self.last_out: int | None = None  # the line of the last event handed out
        #: a fold: every line C takes is folded in C (``_core.Fold``), the rest goes to the sink
        self.sink = fold
        self.fold = (
            core.NATIVE.Fold(self.verifier, fold.rules, fold.max_items, groups=fold.max_groups)
            if fold is not None
            else None
        )
        if fold is not None:
            fold.started(self.fold)
        self.paused = False  # the last call stopped after a line it took and folded: go on from there
        #: the file's reads, the next of which C's helper thread may read early (``read_ahead``; the reader's)
        self.ahead: ReadAhead | None = None
        #: a helper thread staging the next read's block already (``_check_block``)
        self.started: Any = None

    def _check_block(self, data: bytes, pos: int, max_line: int, **fold: Any) -> tuple[int, int, int, list[Any]]:
        """``check_block`` from ``pos``: in two threads when the rest is worth a helper, which then reads ahead.

        With a read ahead, a helper is started at once on the next read's block (``start_block``): it stages
        that block's first lines while Python handles this answer (a fold's events, the next read's framing),
        and the next call takes it over when it is on that block (else it is dropped, and stops)."""
        threads = self.threads if len(data) - pos >= HELPER_MIN_BYTES else 1
        started = self.started
        if started is not None and started.block is data:  # (else kept: calls on the read before come first)
            self.started = None
            if threads > 1 and started.start == pos:
                fold["started"] = started
        # (the next read is read ahead by a call on this read's own block: not by the line across two reads)
        ahead = self.ahead if threads > 1 and self.ahead is not None and data is self.ahead.last else None
        want = ahead.want() if ahead is not None else None
        if want is not None:
            fold["read_ahead"] = want
        answer = self.verifier.check_block(data, pos, chain=self.chain, max_line=max_line, threads=threads, **fold)
        if ahead is None or want is None:
            return answer  # type: ignore[no-any-return]
        *four, read = answer  # (a fifth item: the read ahead)
        ahead.got(read)
        if read is not None:  # its own block starts after the line begun in this read, if one is (``frame_blocks``)
            ends_line = data.endswith(b"\n")
            own = 0 if ends_line else read.find(b"\n") + 1  # (0: no newline, no block of its own)
            if own or ends_line:
                self.started = self.verifier.start_block(read, own, max_line=max_line)
        return tuple(four)

    def take_block(
        self, data: bytes, pos: int, line_no: int, offset: int, max_line: int, out: list[Candidate]
    ) -> tuple[int, int]:
        """Let C take the lines of a block of ``framing.frame_blocks`` from byte ``pos`` (line ``line_no``) on.

        ``offset``: the block's offset in the file; ``max_line``: the longest
        body C frames. The events to hand out (``wanted`` kinds) go to ``out``.
        Returns where C stopped (``len(data)``: at the end) and how many lines it took.
        """
        if self.fold is not None:
            return self._fold_block(data, pos, line_no, offset, max_line)
        state, chain = self.state, self.chain
        state.to_native(chain)
        stop, taken, last, found = self._check_block(data, pos, max_line)
        if taken:
            state.from_native(chain, line_no + taken - 1)
            feed_handle, index = state.handles.feed, data.index
            for i, at, entry in found:  # an open, a close, or a kind the caller wants
                if len(entry) == 2:  # a kind the caller wants: (the whole event, built as line by line; hash)
                    event: Event = entry[0]
                    out.append((line_no + i, offset + at, data[at : index(b"\n", at) + 1], event))
                    self.last_out = line_no + i
                    if event["kind"] not in HANDLE_KINDS:
                        continue
                else:
                    event = _event(entry)
                feed_handle(event, line_no + i, offset + at)
            self.last = (line_no + taken - 1, offset + last, data[last : index(b"\n", last) + 1])
        return stop, taken

    def _fold_block(self, data: bytes, pos: int, line_no: int, offset: int, max_line: int) -> tuple[int, int]:
        """``take_block`` with a fold: what C folded goes to the sink, then the events it left to Python."""
        state, chain, fold, sink = self.state, self.chain, self.fold, self.sink
        assert fold is not None and sink is not None
        state.to_native(chain)
        stop, taken, _, found = self._check_block(data, pos, max_line, fold=fold, first_line=line_no)
        self.paused = fold.paused
        if fold.gave_up is not None:
            raise FoldGaveUp(fold.gave_up)
        if taken:
            state.from_native(chain, line_no + taken - 1)
            sink.folded(fold.take(fold.paused))  # (groups gather until a pause, or the end: ``finish``)
            feed_handle, index, close_kinds = state.handles.feed, data.index, sink.close_kinds
            for i, at, entry in found:
                line = line_no + i
                if len(entry) == 2:  # a kind left to Python: the whole event
                    event: Event = entry[0]
                    if event["kind"] in HANDLE_KINDS:
                        feed_handle(event, line, offset + at)
                    sink.event(event, line, offset + at)
                    continue
                event = _event(entry)
                paired = feed_handle(event, line, offset + at)
                if event["kind"] in close_kinds:
                    sink.closed(event, paired, line, data[at : index(b"\n", at)])
        return stop, taken

    def _event_of(self, compact: tuple[Any, ...], raw: bytes) -> tuple[Event, bool]:
        """The event of a compact result, and whether it is of a kind the caller wants: such an event is
        read whole from its line (payload and all, keys in the line's order, as reading line by line
        gives it); any other is the compact one (its payload only what the handle tracker reads)."""
        wanted = self.wanted
        if wanted is not None and wanted(compact[5]):
            return _whole_event(raw), True
        return _event(compact), False

    def take_long(self, line: Line) -> list[Candidate]:
        """Feed one clean line longer than ``BATCH_LINE_BYTES``, checked in C as a view; return the events to hand out.

        C takes it when it links on, as ``check_block`` takes a line. Else it
        is fed as a line read line by line, from C's compact answer when C has
        one (nothing of the line built but what the tracker reads), else from
        the Python path. In a search, a line that ends trust is handed out
        (read whole), after the event just before it when trust moved back
        there, so a caller that stops at the first untrusted event stops where
        it would line by line.
        """
        state, chain, wanted = self.state, self.chain, self.wanted
        line_no, start, raw = line
        state.to_native(chain)
        taken, (proven,) = self.verifier.check_lines([memoryview(raw)[:-1]], chain=chain, compact_from=0)
        out: list[Candidate] = []
        if taken:
            state.from_native(chain, line_no)
            self.last = line
            if proven is not None:  # an open, a close, or a kind the caller wants
                event, whole = self._event_of(proven, raw)
                state.handles.feed(event, line_no, start)
                if whole:
                    out.append((line_no, start, raw, event))
        else:
            whole = proven is None
            if proven is None:
                result = line_result(raw, self.schema_version, self.max_line_bytes)
            elif len(proven) == 9:  # valid, compact: its payload only what the tracker reads
                event, whole = self._event_of(proven, raw)
                result = LineResult(event, proven[7], [])
            else:  # valid but for its hash: (compact, computed hash)
                compact, computed = proven
                event, whole = self._event_of(compact, raw)
                result = LineResult(event, compact[7], [hash_mismatch(computed, compact[7])])
            state.feed(result, line_no, start)
            if not state.saw_record:
                state.saw_record = has_record_shape(raw, result)
            failure, fed = state.first_integrity_failure, result.event
            if wanted is not None and failure is not None:  # trust ends here, or at the event just before it
                if failure < line_no and (earlier := self.where_trust_ends(failure)) is not None:
                    out.append(earlier)
                if fed is not None:
                    out.append((line_no, start, raw, fed if whole else _whole_event(raw)))
            elif wanted is not None and fed is not None and wanted(fed["kind"]):
                out.append((line_no, start, raw, fed))  # (whole: ``_event_of`` reads a wanted kind's line)
            if fed is not None:  # (a line holding no event is not one trust can move back to, nor JSON)
                self.last = line
        if out:
            self.last_out = out[-1][0]
        return out

    def where_trust_ends(self, failure: int) -> Candidate | None:
        """The last batched event, when trust ended on it (``failure``) and it was not handed out yet.

        A line read after a batch can end trust at the event just before it
        (``ChainState._mark_failure``); line by line that event would be handed
        out, untrusted, so it is handed out here too, whatever its kind.
        """
        last = self.last
        if last is None or last[0] != failure or failure == self.last_out:
            return None
        self.last_out = failure  # handed out once, however often it is asked
        return (*last, _whole_event(last[2]))


KindTest = Callable[[str], bool]


def _whole_event(raw: bytes) -> Event:
    """The event of a line C took or proved (one valid JSON object), read whole from its bytes."""
    import orjson  # (a long line, or where trust ends: a verify C answers whole never loads it, ~14 ms)

    event: Event = orjson.loads(raw)
    return event


def _event(compact: tuple[Any, ...]) -> Event:
    """The event of a compact result; its payload None when C built none (not a handle kind, not wanted)."""
    ident, run_id, step_id, parent_id, ts, kind, prev, stored, payload = compact
    return {
        "id": ident,
        "run_id": run_id,
        "step_id": step_id,
        "parent_id": parent_id,
        "timestamp_ns": ts,
        "kind": kind,
        "payload": payload,
        "prev_hash": prev,
        "hash": stored,
    }


#: compiled verifiers, per (schema version, kinds the caller wants)
_VERIFIERS: dict[tuple[int, frozenset[str]], Any] = {}


#: the verifier of a (schema version, kind test) met before: the kinds a test wants are worked out once, not
#: for each run of a fleet (63 calls of the test). Bounded: each entry holds its test.
_BY_TEST: dict[tuple[int, KindTest | None], Any] = {}
_BY_TEST_MAX = 64


def _verifier(schema_version: int, wanted: KindTest | None) -> Any:
    key = (schema_version, wanted)  # (a function or bound method: hashed and compared by identity)
    try:
        verifier = _BY_TEST.get(key)
    except TypeError:  # a callable object that cannot be hashed: worked out each time
        return _verifier_of_kinds(schema_version, wanted)
    if verifier is None:
        if len(_BY_TEST) >= _BY_TEST_MAX:
            _BY_TEST.clear()
        verifier = _BY_TEST[key] = _verifier_of_kinds(schema_version, wanted)
    return verifier


def _verifier_of_kinds(schema_version: int, wanted: KindTest | None) -> Any:
    wanted_kinds = frozenset(k.name for k in KINDS if wanted is not None and wanted(k.name))
    verifier = _VERIFIERS.get((schema_version, wanted_kinds))
    if verifier is None:
        assert core.NATIVE is not None
        # of a handle kind only the payload keys the tracker reads; a wanted kind's event C builds whole
        # (``event_kinds``), as reading line by line builds it
        payload_kinds = dict(HANDLE_PAYLOAD_KEYS)
        # a close and its open that C may pair in check_block (issue 14): never a kind the caller wants,
        # whose every event is handed out (and fed to the tracker) here
        pairs = {c: o for c, o in CLOSE_TO_OPEN.items() if c not in wanted_kinds and o not in wanted_kinds}
        # only a close handed to the tracker can close an open C holds (a wanted process.reaped cannot; a run
        # close closes only run.started, which C never pairs)
        verifier = _VERIFIERS[(schema_version, wanted_kinds)] = core.NATIVE.compile_kinds(
            KINDS,
            VALIDATORS,
            schema_version=schema_version,
            payload_kinds=payload_kinds,
            pairs=pairs,
            closes=frozenset(CLOSE_TO_OPEN),
            event_kinds=wanted_kinds,
        )
    return verifier
