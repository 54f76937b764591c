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
import re
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import BinaryIO

from ract_cli.errors import ChainBrokenError, ExitCode, LogIOError
from ract_cli.findings import ERROR, Finding, error
from ract_cli.format.json_types import Event
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION, kinds_for_version
from ract_cli.read import core, fastpath
from ract_cli.read.dialect import Dialect, get_dialect, resolve_dialect
from ract_cli.read.files import TRUNCATED_MESSAGE, is_decoded, open_log, source_offset, truncated
from ract_cli.read.framing import LineFramer, _torn_tail_problem, split_line_ending
from ract_cli.read.handles import HandleTracker
from ract_cli.read.line import (
    DEFAULT_MAX_LINE_BYTES,
    MAX_LINE_NODES,
    LineResult,
    LogEvent,
    Problem,
    _too_many_nodes_problem,
    analyze_line,
    has_record_shape,
    too_many_nodes,
)

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
        for line_no, start, raw in framer:
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
            if not saw_record:
                saw_record = state.saw_record = has_record_shape(raw, result)
            if raw is None:
                continue
            if emit and result.event is not None:
                if pending is not None:
                    yield self._release(make_event, pending)
                pending = (line_no, start, raw, result.event)
            if progress is not None and start >= next_report:
                progress(start)
                next_report = start + _PROGRESS_EVERY
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


def not_an_object(raw: bytes) -> bool:
    """Framing alone shows the line is ``MALFORMED_LINE``: its first byte past JSON whitespace is not ``{``.

    (Blank, a BOM, an array, a bare value, text: no parse can make it one
    JSON object. The caller has checked it ends in ``\n``: a last line
    without one may be a torn tail instead.)
    """
    first = raw[:1]
    if first == b"{":
        return False
    return first not in _JSON_SPACE or _OPENS_OBJECT(raw) is None


_JSON_SPACE = (b" ", b"\t", b"\r", b"\n")
_OPENS_OBJECT = re.compile(rb"[ \t\r\n]*\{").match


def line_result(
    raw: bytes | None,
    schema_version: int,
    max_line_bytes: int,
    analyze: Callable[[bytes, int], LineResult] = analyze_line,
) -> LineResult:
    """The verdict on one framed line, exactly as ``ChainReader`` reaches it.

    ``raw`` is the line with its ending as ``LineFramer`` yields it (``None``:
    longer than ``max_line_bytes``). Shared with the parallel verifier
    (``parallel.py``), so a chunked read judges every line the same way.
    """
    if raw is None:
        return LineResult(
            None,
            None,
            [Problem("LINE_TOO_LONG", f"line is longer than --max-line-bytes ({max_line_bytes} bytes)")],
            parsed=False,
        )
    if len(raw) > MAX_LINE_NODES and too_many_nodes(raw):  # before any parse: bounded memory (item 8)
        has_newline = raw[-1:] == b"\n"
        result = LineResult(None, None, [_too_many_nodes_problem()], parsed=False)
    else:
        if analyze is analyze_line and raw[-2:-1] != b"\r" and raw[-1:] == b"\n":
            proven = fastpath.prove(raw[:-1], schema_version)  # the common case, inlined: a clean "\n" line
            if proven is not None:
                return LineResult(proven[0], proven[1], [])
        body, has_newline = split_line_ending(raw)
        result = analyze(body, schema_version)
    if not has_newline:
        if not result.parsed and result.problems[0].code in ("MALFORMED_LINE", "DUPLICATE_KEY"):
            # A last line cut short by a killed writer.
            result = LineResult(None, None, [_torn_tail_problem(raw)], parsed=False)
        else:
            result.problems.append(
                Problem("MISSING_FINAL_NEWLINE", "last event lacks its final newline", severity="warning")
            )
    return result


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
