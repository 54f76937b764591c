"""The one streaming chain reader. Every command reads logs through it.

Reading is split in two so that a large file can be checked in parallel:

* ``analyze_line`` (``read/line.py``) is a pure function of one line's bytes:
  parse, envelope, canonical hash, kind and payload.
* ``ChainState`` (``read/chain.py``) is fed those results in file order and
  checks what spans lines: genesis, linkage, run_id, duplicate ids, clock,
  open handles.

``ChainReader`` ties them together for one file in bounded memory. The
dialect (RACT or a Raxol journal, SPEC §8) comes from ``read/dialect.py``:
the reader calls its interface and never imports a dialect.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path

from ract_cli.errors import ChainBrokenError, ExitCode, LogIOError
from ract_cli.findings import ERROR, Finding, error
from ract_cli.format.json_types import Event
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION, kinds_for_version
from ract_cli.read import core
from ract_cli.read.chain_mode import BATCH_LINE_BYTES, Batches, FoldGaveUp, KindTest
from ract_cli.read.dialect import Dialect, get_dialect, resolve_dialect_reading
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES, LogEvent, has_record_shape
from ract_cli.read.files import is_decoded, is_stdin, open_log, source_offset
from ract_cli.read.framing import (
    BLOCK_BYTES,
    Block,
    Frame,
    LineFramer,
    cut_archive,
    frame_blocks,
    lines_of,
    within_limit,
)
from ract_cli.read.handles import HandleTracker
from ract_cli.read.json_rules import LineResult, too_many_nodes
from ract_cli.read.read_ahead import ReadAhead
from ract_cli.read.verdict import analyze_ract, line_result, not_an_object

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import BinaryIO, Protocol

    class ReadTap(Protocol):
        """What ``ChainReader.tap`` is handed: the log once opened, then each read of it."""

        def opened(self, f: BinaryIO) -> None: ...

        def __call__(self, chunk: bytes) -> None: ...

        def proven_in_fold(self, offset: int) -> bool: ...

    from ract_cli.read.chain_mode import FoldSink
    from ract_cli.read.python_chain import PythonBatches

#: an event read but not yet handed out: (line number, offset, raw bytes, the parsed event)
_Pending = tuple[int, int, bytes, Event]
#: what ``_batched`` yields after a block whose events chain mode handed out: not a line, a signal to hand
#: them on (a clean log yields no line at all, and the events of a search would pile up to its end)
_HANDED_OUT: tuple[int, int, bytes | None] = (-1, -1, None)


class ChainReader:
    """Stream one log: iterate it for ``LogEvent``s, then read ``findings``.

    >>> reader = ChainReader("evals/runs/abc/events.jsonl")
    >>> for ev in reader: ...
    >>> reader.exit_code
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        schema_version: int = LATEST_SCHEMA_VERSION,
        require_closed: bool = False,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_findings: int | None = None,
        display_path: str | None = None,
        dialect: str = "auto",
        wanted: KindTest | None = None,
        threads: int = 1,
    ) -> None:
        kinds_for_version(schema_version)  # validates the number
        core.use_core(core.core_name())  # SPEC §11: RACT_CORE as it is now (a bad value is exit 2)
        self.path = path if isinstance(path, Path) else Path(path)
        self.display_path = display_path or str(path)
        self.schema_version = schema_version
        self.max_line_bytes = max_line_bytes
        #: "ract" or "raxol" (SPEC §8): "auto" is resolved here, from the file's first record
        self.dialect, self._whole = resolve_dialect_reading(dialect, self.path, max_line_bytes)
        self._kind: Dialect = get_dialect(self.dialect)
        self.state = self._kind.state_type(self.display_path, require_closed=require_closed, max_findings=max_findings)
        self.done = False
        #: optional callback, called with the byte offset reached every few MB while reading
        self.progress: Callable[[int], None] | None = None
        #: a hint: iteration may skip events whose kind fails this test (each still verified; the caller
        #: filters what it gets). The native core then checks the other lines in C without building them.
        self.wanted = wanted
        #: 2: the native chain mode checks a large block in two threads (same verdict; ``verify --jobs``)
        self.threads = threads
        #: where the last line holding an event (valid or not) ends, and whether it ends in "\n" (repair cuts
        #: a torn tail there); kept by every reading, events built or not
        self.last_event_end = 0
        self.last_event_newline = True
        self._fold: FoldSink | None = None
        #: (``fold`` with the Python core) what proves each line chain mode takes, in place of
        #: ``fastpath.fast_analyze``, and what is handed the opened log, then every read of it
        #: (``framing.frame_blocks``): ``project``'s fold on trust, its lines proven by worker processes
        #: (``read.line_proof``)
        self.prove: Callable[[bytes, int], tuple[Event, str] | None] | None = None
        self.tap: ReadTap | None = None

    # convenient views of the state
    @property
    def findings(self) -> list[Finding]:
        return self.state.findings

    @property
    def handles(self) -> HandleTracker:
        return self.state.handles

    @property
    def exit_code(self) -> ExitCode:
        return self.state.exit_code

    @property
    def broken_at(self) -> int | None:
        """Line of the first integrity failure (exit-1 finding), if any."""
        return self.state.first_integrity_failure

    def __iter__(self) -> Generator[LogEvent, None, None]:
        return self._events(emit=True)

    def _events(self, emit: bool) -> Generator[LogEvent, None, None]:
        whole, self._whole = self._whole, None
        try:
            # a run that detecting its dialect read whole is read from those bytes (one open for a fleet's run)
            handle: BinaryIO = io.BytesIO(whole) if whole is not None else open_log(self.path)
        except LogIOError as exc:
            self.state.add(error("IO_ERROR", exc.message, path=self.display_path))
            self.done = True
            return
        with handle:
            if self.tap is not None:
                self.tap.opened(handle)
            yield from self._read(handle, emit)
        self.state.finish_file()
        self.done = True

    def read_all(self) -> list[Finding]:
        """Read to the end, discarding events; return the findings."""
        for _ in self._events(emit=False):
            pass
        return self.findings

    def can_fold(self) -> bool:
        """Whether ``fold`` can read this log: a chain mode (either core), RACT's line analysis, a file read again."""
        return (
            self._kind.analyze is analyze_ract
            and core.proving_core() is not None
            and not is_stdin(self.path)
            and not self.done
        )

    def fold(self, sink: FoldSink) -> None:
        """Read to the end, every line taken by chain mode and folded: in C (``_core.Fold``) with the native
        core, the events it leaves to Python handed to ``sink`` in order; with the Python core every event
        goes to its kind's ``sink.folders()`` as ``python_chain`` takes it.

        Raises ``FoldGaveUp`` at the first line C did not take, or that it could not fold exactly: the
        caller reads the log again without a fold (``can_fold`` first).
        """
        assert self.can_fold()
        self._fold = sink
        try:
            for _ in self._events(emit=False):
                pass
        finally:
            self._fold = None

    def _batches(self, emit: bool) -> Batches | PythonBatches | None:
        """Chain mode for this read, or None: it needs RACT's line analysis; with the native core, when
        events are handed out, a ``wanted`` kind test (else every event is built anyway: no gain); with
        the Python core, ``read_all`` (its loop takes no event to hand out)."""
        if self._fold is not None and core.proving_core() == "python":
            from ract_cli.read.python_chain import PythonBatches  # (the Python core's: orjson)

            proven_in_fold = self.tap.proven_in_fold if self.tap is not None else None
            return PythonBatches(
                self.state, self.schema_version, fold=self._fold, prove=self.prove, proven_in_fold=proven_in_fold
            )
        if self._fold is not None:
            return Batches(self.state, self.schema_version, self.max_line_bytes, None, self.threads, fold=self._fold)
        if self._kind.analyze is not analyze_ract:
            return None  # a dialect with its own line analysis (Raxol)
        if core.prove is not core.native_analyze:
            if emit or core.proving_core() != "python":
                return None
            from ract_cli.read.python_chain import PythonBatches  # (the Python core's: orjson)

            return PythonBatches(self.state, self.schema_version)
        if emit and self.wanted is None:
            return None
        return Batches(
            self.state, self.schema_version, self.max_line_bytes, self.wanted if emit else None, self.threads
        )

    def _batched(
        self,
        frames: Iterator[Frame],
        batches: Batches | PythonBatches,
        out: list[_Pending],
        progress: Callable[[int], None] | None,
    ) -> Iterator[tuple[int, int, bytes | None]]:
        """The framed lines minus those chain mode takes in C; the events it hands out go to ``out``.

        ``frames`` are ``framing.frame_blocks``': C frames each block and takes
        its lines up to the first it does not take; that line is yielded, as
        ``LineFramer`` would yield it, and C goes on after it. A clean line
        longer than ``BATCH_LINE_BYTES`` goes to C alone, as a view. Once trust
        has ended in a search for ``wanted`` kinds, every later line is yielded
        (read line by line, every event handed out), so a caller that stops at
        the first untrusted event stops where it would without chain mode.
        """
        searching = batches.wanted is not None and not (isinstance(batches, Batches) and batches.fold is not None)
        state, limit = self.state, self.max_line_bytes
        max_line = min(BATCH_LINE_BYTES - 1, limit)  # (of a body: the line without its "\n")
        next_report = _PROGRESS_EVERY
        for frame in frames:
            if not isinstance(frame, Block):  # an over-long line, a long one, or the last one (no "\n")
                if not self._take_long(batches, frame, out):
                    yield frame
                elif out:  # (a run of long lines a search wants: one at a time, each maybe megabytes)
                    yield _HANDED_OUT
                if searching and state.first_integrity_failure is not None:
                    yield from self._trust_ended(batches, out, (), frames)
                    return
                continue
            data, start, pos, size, line_no = frame.data, frame.base, frame.lo, frame.hi, frame.line_no
            while True:
                pos, taken = batches.take_block(data, pos, line_no, start, max_line, out)
                line_no += taken
                state.lines = line_no - 1
                if taken:  # (the lines taken end where C stopped)
                    self.last_event_end, self.last_event_newline = start + pos, True
                if pos == size:
                    break
                if isinstance(batches, Batches) and batches.paused:
                    continue  # a fold stopped C after a line it took: C goes on from there
                end = data.index(b"\n", pos) + 1
                item = (line_no, start + pos, within_limit(data[pos:end], limit))
                pos, line_no = end, line_no + 1
                if not self._take_long(batches, item, out):
                    yield item
                if searching and state.first_integrity_failure is not None:
                    rest = lines_of(data, pos, size, line_no, start, limit)
                    yield from self._trust_ended(batches, out, rest, frames)
                    return
            frame.lines = line_no - frame.line_no  # (C counted them)
            if out:  # handed out now, not when a line comes back: a clean log never sends one
                yield _HANDED_OUT
            if progress is not None and start + size >= next_report:
                progress(start + size)
                next_report = start + size + _PROGRESS_EVERY

    def _take_long(
        self, batches: Batches | PythonBatches, item: tuple[int, int, bytes | None], out: list[_Pending]
    ) -> bool:
        """Give C a clean line longer than ``BATCH_LINE_BYTES`` (within the limit, not too many values), alone."""
        if not isinstance(batches, Batches) or batches.fold is not None:
            return False  # (the Python core reads it line by line; a fold gives up at it)
        raw = item[2]
        if raw is None or len(raw) <= BATCH_LINE_BYTES or raw[:1] != b"{" or raw[-1:] != b"\n":
            return False  # (a last line without "\n" is judged here: it may be a torn tail)
        if too_many_nodes(raw):  # (C does not count values)
            return False
        events = self.state.events
        out.extend(batches.take_long(item))  # type: ignore[arg-type]  # raw is bytes here
        self.state.lines = item[0]
        if self.state.events > events:
            self.last_event_end, self.last_event_newline = item[1] + len(raw), True
        return True

    def _trust_ended(
        self,
        batches: Batches | PythonBatches,
        out: list[_Pending],
        rest: Iterable[tuple[int, int, bytes | None]],
        frames: Iterator[Frame],
    ) -> Iterator[tuple[int, int, bytes | None]]:
        """A search: trust ended on a line read line by line; every line from here on is read so."""
        failure = self.state.first_integrity_failure
        assert failure is not None and isinstance(batches, Batches)  # (a search: the native core's)
        if (earlier := batches.where_trust_ends(failure)) is not None:
            out.append(earlier)
        yield from rest
        for frame in frames:
            if isinstance(frame, Block):
                yield from lines_of(frame.data, frame.lo, frame.hi, frame.line_no, frame.base, self.max_line_bytes)
            else:
                yield frame

    def _release(self, make_event: type[LogEvent], pending: _Pending) -> LogEvent:
        line_no, start, raw, event = pending
        failure = self.state.first_integrity_failure
        return make_event(line_no, start, raw, event, failure is None or failure > line_no)

    def _read(self, f: BinaryIO, emit: bool = True) -> Iterator[LogEvent]:
        state = self.state
        limit = self.max_line_bytes
        schema_version = self.schema_version
        analyze, make_event = self._kind.analyze, self._kind.event_type  # same framing for every dialect
        framer = LineFramer(f, limit)
        progress, next_report = self.progress, _PROGRESS_EVERY
        if progress is not None and is_decoded(f):
            user_progress = progress

            def progress(offset: int) -> None:  # a gzip log: progress in compressed bytes
                user_progress(source_offset(f, offset))

        # Each event is handed out one line late: whether event k can be trusted
        # depends on event k+1 (a CHAIN_BREAK there makes k's own hash unconfirmed).
        pending: _Pending | None = None
        saw_record = False  # NOT_A_LOG (state.finish_file): has any line a record's shape?
        line_no = 0
        cap, kept = state.max_findings, state.findings
        result: LineResult | None = None
        # Chain mode (read_all, or a ``wanted`` kind test; native core; RACT): runs of clean lines go to C
        # in batches (``chain_mode``); the events it hands out arrive in ``out``, ahead of the next line.
        batches = self._batches(emit)
        out: list[_Pending] = []
        ahead = None  # C checks blocks in two threads: its helper reads the next block ahead
        if isinstance(batches, Batches) and batches.threads > 1:
            ahead = batches.ahead = ReadAhead.of(f, BLOCK_BYTES)
        framed = (
            framer
            if batches is None
            else self._batched(frame_blocks(framer, tap=self.tap, ahead=ahead), batches, out, progress)
        )
        for item in framed:
            if out:
                for candidate in out:
                    if pending is not None:
                        yield self._release(make_event, pending)
                    pending = candidate
                out.clear()
            if item is _HANDED_OUT:
                continue
            if self._fold is not None:
                raise FoldGaveUp(f"line {item[0]} is not one chain mode takes")
            line_no, start, raw = item
            if (
                cap is not None
                and raw is not None
                and len(kept) >= cap
                and raw[:1] != b"{"
                and raw[-1:] == b"\n"
                and not_an_object(raw)
            ):
                # Past --max-findings a line that is not even an object is only counted:
                # a framing check, no parse attempt, no message (issue 15, item 9).
                state.skip_malformed(line_no)
                if progress is not None and start >= next_report:
                    progress(start)
                    next_report = start + _PROGRESS_EVERY
                continue
            result = line_result(raw, schema_version, limit, analyze)
            state.feed(result, line_no, start)
            if not saw_record:  # (a batch may have seen a record already)
                saw_record = state.saw_record = state.saw_record or has_record_shape(raw, result)
            if raw is None:
                continue
            if result.event is not None:
                self.last_event_end, self.last_event_newline = start + len(raw), raw[-1:] == b"\n"
            if emit and result.event is not None:
                if pending is not None:
                    yield self._release(make_event, pending)
                pending = (line_no, start, raw, result.event)
            if progress is not None and start >= next_report:
                progress(start)
                next_report = start + _PROGRESS_EVERY
        for candidate in out:
            if pending is not None:
                yield self._release(make_event, pending)
            pending = candidate
        if state.lines > line_no:  # the last lines were taken in a batch (each ended in "\n")
            line_no, result = state.lines, None
        state.lines = line_no
        if pending is not None:
            yield self._release(make_event, pending)
        if framer.read_error is not None:
            state.add(
                error(
                    "IO_ERROR",
                    framer.read_error,
                    path=self.display_path,
                    line=framer.error_line,
                    offset=framer.error_offset,
                )
            )
        elif (
            cut := cut_archive(f, result is not None and any(p.code == "TORN_TAIL" for p in result.problems))
        ) is not None:
            state.add(error(cut.code, cut.message, path=self.display_path, line=framer.lines + 1, offset=framer.end))


_PROGRESS_EVERY = 4 << 20  # bytes between two calls of ChainReader.progress


class EventReader:
    """The source document's API: load a log or raise at the first integrity failure."""

    @staticmethod
    def load(path: str | os.PathLike[str], *, schema_version: int = LATEST_SCHEMA_VERSION) -> list[Event]:
        reader = ChainReader(path, schema_version=schema_version)
        events: list[Event] = []
        for ev in reader:
            if reader.broken_at is not None:
                break
            events.append(ev.event)
        failure = next(
            (f for f in reader.findings if f.severity == ERROR and f.exit_code in (ExitCode.TAMPERED, ExitCode.IO)),
            None,
        )
        if failure is not None:
            if failure.code == "IO_ERROR":  # not a broken chain: the file could not be read
                raise LogIOError(f"{failure.path}: {failure.message}")
            raise ChainBrokenError(
                f"{failure.path}:{failure.line}: {failure.code} {failure.message}",
                path=failure.path,
                line=failure.line,
                offset=failure.offset,
                expected=failure.expected,
                actual=failure.actual,
                code=failure.code,
                exit_code=failure.exit_code,
            )
        return events
