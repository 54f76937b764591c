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

import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import BinaryIO

from ract_cli.errors import ChainBrokenError, ExitCode, LogIOError
from ract_cli.findings import ERROR, Finding, error
from ract_cli.format.json_types import Event
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION, kinds_for_version
from ract_cli.read import core, fastpath
from ract_cli.read.chain_mode import BATCH_BYTES, BATCH_LINE_BYTES, BATCH_LINES, Batches, KindTest
from ract_cli.read.dialect import Dialect, get_dialect, resolve_dialect
from ract_cli.read.files import TRUNCATED_MESSAGE, is_decoded, open_log, source_offset, truncated
from ract_cli.read.framing import LineFramer
from ract_cli.read.handles import HandleTracker
from ract_cli.read.line import (
    DEFAULT_MAX_LINE_BYTES,
    LineResult,
    LogEvent,
    analyze_line,
    has_record_shape,
    too_many_nodes,
)
from ract_cli.read.verdict import line_result, not_an_object

#: an event read but not yet handed out: (line number, offset, raw bytes, the parsed event)
_Pending = tuple[int, int, bytes, Event]


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
    ) -> None:
        kinds_for_version(schema_version)  # validates the number
        fastpath.use_core(core.core_name())  # SPEC §11: RACT_CORE as it is now (a bad value is exit 2)
        self.path = Path(path)
        self.display_path = display_path or str(path)
        self.schema_version = schema_version
        self.max_line_bytes = max_line_bytes
        #: "ract" or "raxol" (SPEC §8): "auto" is resolved here, from the file's first record
        self.dialect = resolve_dialect(dialect, self.path, max_line_bytes)
        self._kind: Dialect = get_dialect(self.dialect)
        self.state = self._kind.state_type(self.display_path, require_closed=require_closed, max_findings=max_findings)
        self.done = False
        #: optional callback, called with the byte offset reached every few MB while reading
        self.progress: Callable[[int], None] | None = None
        #: a hint: iteration may skip events whose kind fails this test (each still verified; the caller
        #: filters what it gets). The native core then checks the other lines in C without building them.
        self.wanted = wanted

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
        try:
            handle = open_log(self.path)
        except LogIOError as exc:
            self.state.add(error("IO_ERROR", exc.message, path=self.display_path))
            self.done = True
            return
        with handle:
            yield from self._read(handle, emit)
        self.state.finish_file()
        self.done = True

    def read_all(self) -> list[Finding]:
        """Read to the end, discarding events; return the findings."""
        for _ in self._events(emit=False):
            pass
        return self.findings

    def _batches(self, emit: bool) -> Batches | None:
        """Chain mode for this read, or None: it needs the native core and RACT's line analysis, and when
        events are handed out, a ``wanted`` kind test (else every event is built anyway: no gain)."""
        if fastpath.prove is not fastpath.native_analyze or self._kind.analyze is not analyze_line:
            return None  # the Python core, or a dialect with its own line analysis (Raxol)
        if emit and self.wanted is None:
            return None
        return Batches(self.state, self.schema_version, self.max_line_bytes, self.wanted if emit else None)

    def _batched(
        self,
        lines: Iterator[tuple[int, int, bytes | None]],
        batches: Batches,
        out: list[_Pending],
        progress: Callable[[int], None] | None,
    ) -> Iterator[tuple[int, int, bytes | None]]:
        """The framed lines minus the runs chain mode feeds itself; their events to hand out go to ``out``.

        Once trust has ended in a search for ``wanted`` kinds, every later line
        is yielded (read line by line, every event handed out), so a caller that
        stops at the first untrusted event stops where it would without batches.
        """
        state, searching = self.state, batches.wanted is not None
        batch: list[tuple[int, int, bytes]] = []
        held, next_report = 0, _PROGRESS_EVERY

        def flush() -> list[tuple[int, int, bytes]] | None:
            nonlocal batch, held, next_report
            taken, stop = batches.take(batch)
            out.extend(taken)
            rest = batch[stop:] if stop is not None else None
            state.lines = batch[-1][0] if stop is None else batch[stop - 1][0]
            if progress is not None and batch[-1][1] >= next_report:
                progress(batch[-1][1])
                next_report = batch[-1][1] + _PROGRESS_EVERY
            batch, held = [], 0
            return rest

        append = batch.append
        for item in lines:
            raw = item[2]
            # a line that looks clean ({ first, \n last, no \r, not too many values) goes to the batch
            if raw is not None and raw[:1] == b"{" and raw[-1:] == b"\n" and raw[-2:-1] != b"\r":
                size = len(raw)
                if size <= BATCH_LINE_BYTES or not too_many_nodes(raw):  # (a long line goes to C as a view)
                    append(item)  # type: ignore[arg-type]  # raw is bytes here
                    held += size
                    if len(batch) < BATCH_LINES and held < BATCH_BYTES:
                        continue
                    rest = flush()
                    if rest is not None:
                        yield from rest
                        yield from lines
                        return
                    append = batch.append
                    continue
            if batch:
                rest = flush()
                append = batch.append
                if rest is not None:
                    yield from rest
                    yield item
                    yield from lines
                    return
            yield item
            failure = state.first_integrity_failure
            if searching and failure is not None:  # trust ended on a line read line by line
                if (earlier := batches.where_trust_ends(failure)) is not None:
                    out.append(earlier)
                yield from lines  # no batch after it
                return
        if batch and (rest := flush()) is not None:
            yield from rest

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
        framed = framer if batches is None else self._batched(iter(framer), batches, out, progress)
        for line_no, start, raw in framed:
            if out:
                for candidate in out:
                    if pending is not None:
                        yield self._release(make_event, pending)
                    pending = candidate
                out.clear()
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
        elif truncated(f) and not (result is not None and any(p.code == "TORN_TAIL" for p in result.problems)):
            # a cut gzip archive is a torn tail even when the cut fell between two lines
            state.add(
                error("TORN_TAIL", TRUNCATED_MESSAGE, path=self.display_path, line=framer.lines + 1, offset=framer.end)
            )


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
