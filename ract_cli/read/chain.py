"""What spans lines (SPEC §2.2, §2.4, §3): genesis, linkage, run_id, duplicate ids, clock, open handles."""

from __future__ import annotations

import os

from ract_cli.errors import ExitCode, lowest_nonzero
from ract_cli.findings import ERROR, Finding, error, exit_code_for, warning
from ract_cli.format.json_types import Event
from ract_cli.format.model import GENESIS_HASH
from ract_cli.read.discovery import LOG_FILE_NAMES
from ract_cli.read.handles import HandleTracker
from ract_cli.read.idset import _IdSet
from ract_cli.read.json_rules import LineResult
from ract_cli.records import Record

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:  # (Where and NativeChain are only ever annotations: no TypedDict or Protocol at run time)
    from typing import Protocol, TypedDict

    class Where(TypedDict):
        """Where a line is, as a finding carries it (``error(..., **where)``)."""

        path: str
        line: int
        offset: int


def not_a_log_message(lines: int) -> str:
    """The message of ``NOT_A_LOG`` (``ChainState.finish_file``; grep ``--no-verify`` says the same)."""
    return (
        f"not a log: none of its {lines} line(s) is a JSON object with `kind` or `type` "
        "(a RACT event or a Raxol journal record)"
    )


if TYPE_CHECKING:

    class NativeChain(Protocol):
        """``ract_cli._core.Chain``: what ``ChainState.feed``'s fast path keeps, for the native core's chain mode."""

        expected_prev: str | None
        run_id: str | None
        prev_ts: int | None
        last_ts: int | None
        events: int

        @property
        def first_ts(self) -> int | None: ...  # (read-only: set when C took the file's first event)


class TakenRun(Record):
    """A run of clean events, each linking on to the one before, same run, clock not going back, ids
    distinct: checked apart from the lines before it (a worker's byte range, ``read.range_chain``).
    ``ChainState.take_run`` applies it as ``feed``'s fast path would take each of its lines."""

    __slots__ = ("lines", "size", "prev_hash", "run_id", "first_ts", "head", "prev_ts", "last_ts", "ids", "handles")
    lines: int
    size: int  # its bytes in the file, each line's "\n" included
    prev_hash: str  # the first event's prev_hash, run_id and timestamp_ns
    run_id: str
    first_ts: int
    head: str  # the last event's hash and timestamp_ns
    prev_ts: int
    last_ts: int  # the largest timestamp_ns
    ids: list[str]
    #: the events of the kinds the handle tracker reads, in order: (index of the line in the run, offset of
    #: the line from the run's start, the event; its payload only the keys the tracker reads)
    handles: list[tuple[int, int, Event]]

    def __init__(
        self,
        lines: int,
        size: int,
        prev_hash: str,
        run_id: str,
        first_ts: int,
        head: str,
        prev_ts: int,
        last_ts: int,
        ids: list[str],
        handles: list[tuple[int, int, Event]],
    ) -> None:
        self.lines = lines
        self.size = size
        self.prev_hash = prev_hash
        self.run_id = run_id
        self.first_ts = first_ts
        self.head = head
        self.prev_ts = prev_ts
        self.last_ts = last_ts
        self.ids = ids
        self.handles = handles


class ChainState:
    """Checks that span lines, fed one ``LineResult`` at a time in file order."""

    def __init__(self, path: str, require_closed: bool = False, max_findings: int | None = None) -> None:
        self.path = path
        self.require_closed = require_closed
        self.max_findings = max_findings  # keep at most this many; count the rest
        self.expected_prev: str | None = GENESIS_HASH
        self.run_id: str | None = None
        self.events = 0
        self.head: str | None = None
        self.first_ts: int | None = None
        self.last_ts: int | None = None
        self.prev_ts: int | None = None
        self.handles = HandleTracker()
        self.findings: list[Finding] = []
        self.suppressed = 0
        self.first_integrity_failure: int | None = None  # line number
        self._suppressed_codes: set[ExitCode] = set()
        self._ids = _IdSet()
        self._seen_first_line = False
        self._last_event_line: int | None = None
        #: set by the reader before ``finish_file``: lines framed, and whether any had a record's shape
        #: (``event.has_record_shape``: a JSON object with ``kind`` or ``type``, of either dialect)
        self.lines = 0
        self.saw_record = False
        self.not_a_log = False  # decided by ``finish_file``: NOT_A_LOG replaced every finding

    def add(self, finding: Finding) -> None:
        if self.max_findings is not None and len(self.findings) >= self.max_findings:
            self.suppressed += 1
            self._suppressed_codes.add(finding.exit_code)
        else:
            self.findings.append(finding)
        if (
            finding.severity == ERROR
            and finding.exit_code == ExitCode.TAMPERED
            and self.first_integrity_failure is None
        ):
            self._mark_failure(finding.line)

    def share_ids(self, ids: _IdSet) -> None:
        """Use ``ids`` (the native core's ``IdSet``, shared with its ``Chain``) as this file's id set; before any line."""
        assert self.events == 0
        self._ids = ids

    def to_native(self, chain: NativeChain) -> None:
        """Hand what ``feed``'s fast path keeps across lines to the native core's chain mode."""
        chain.expected_prev, chain.run_id = self.expected_prev, self.run_id
        chain.prev_ts, chain.last_ts, chain.events = self.prev_ts, self.last_ts, self.events

    def from_native(self, chain: NativeChain, last_line: int) -> None:
        """Take the chain back after the native core took lines up to ``last_line`` on the fast path
        (the file's first event too: then its run_id and timestamp are the file's, as ``feed`` makes them)."""
        self.expected_prev = self.head = chain.expected_prev
        self.prev_ts, self.last_ts, self.events = chain.prev_ts, chain.last_ts, chain.events
        if self.run_id is None:
            self.run_id, self.first_ts = chain.run_id, chain.first_ts
        self._last_event_line = last_line
        self._seen_first_line = self.saw_record = True

    def take_run(self, run: TakenRun, line: int, offset: int) -> bool:
        """Take ``run`` (its first line is ``line``, at ``offset``) when each of its lines would take
        ``feed``'s fast path here with no finding (the file's first event: when it links on to genesis, as
        ``python_chain`` takes it); else change nothing and return False (the caller feeds its lines)."""
        first = not self.events and self.run_id is None and self.prev_ts is None
        if run.prev_hash != self.expected_prev:
            return False
        if not first and (
            run.run_id != self.run_id or self.prev_ts is None or self.last_ts is None or run.first_ts < self.prev_ts
        ):
            return False
        if not self._ids.add_new(run.ids):  # (distinct among themselves: the run's own check)
            return False
        if first:
            self.run_id, self.first_ts, self.last_ts = run.run_id, run.first_ts, run.last_ts
        elif self.last_ts is not None and run.last_ts > self.last_ts:
            self.last_ts = run.last_ts
        self.expected_prev = self.head = run.head
        self.prev_ts = run.prev_ts
        self.events += run.lines
        self._last_event_line = line + run.lines - 1
        self._seen_first_line = self.saw_record = True
        feed = self.handles.feed
        for index, at, event in run.handles:
            feed(event, line + index, offset + at)
        return True

    def skip_malformed(self, line: int) -> None:
        """A line framing alone shows is ``MALFORMED_LINE``, once ``max_findings`` are kept (issue 15, item 9).

        What ``feed`` does with that line's result, without building the
        result, the finding or its message, which would only be counted: one
        more suppressed exit-1 finding, trust ending, and the next line's
        linkage not judged (the line has no hash to re-anchor on).
        """
        self.suppressed += 1
        self._suppressed_codes.add(ExitCode.TAMPERED)
        if self.first_integrity_failure is None:
            self._mark_failure(line)
        self._seen_first_line = True
        self.expected_prev = None

    def _mark_failure(self, line: int | None) -> None:
        # Trust ends at the last event a clean successor confirms. An event's own
        # hash only shows the line was hashed; that it was not edited with its
        # hash recomputed is shown by the next line linking to it as a valid
        # event. So a failure on the line right after an event takes that event
        # too: it may be the forged one (a CHAIN_BREAK at k+1 after k was rehashed).
        if line is not None and self._last_event_line is not None and self._last_event_line == line - 1:
            line = self._last_event_line
        self.first_integrity_failure = line

    def feed(self, result: LineResult, line: int, offset: int) -> None:
        event = result.event
        if (
            event is not None
            and not result.problems
            and event["prev_hash"] == self.expected_prev
            and event["run_id"] == self.run_id
            and self.prev_ts is not None
            and event["timestamp_ns"] >= self.prev_ts
        ):
            # The common case, same outcome as the general path below: a clean
            # event that links on, same run, clock not going back.
            if not self._ids.add(event["id"]):
                self.add(
                    error(
                        "DUPLICATE_ID",
                        f"event id {event['id']} already appears earlier in this file",
                        event_id=event["id"],
                        path=self.path,
                        line=line,
                        offset=offset,
                    )
                )
            ts = self.prev_ts = event["timestamp_ns"]
            if ts > self.last_ts:
                self.last_ts = ts
            self.events += 1
            self.expected_prev = self.head = result.stored_hash
            self._last_event_line = line
            self.handles.feed(event, line, offset)
            return
        self._feed_general(result, line, offset)

    def _feed_general(self, result: LineResult, line: int, offset: int) -> None:
        """Any line but a clean one that links on: its problems, then what it says across lines."""
        event = result.event
        event_id = event["id"] if event is not None else None
        for p in result.problems:
            self.add(
                Finding(
                    p.code,
                    p.severity,
                    p.message,
                    path=self.path,
                    line=line,
                    offset=offset,
                    event_id=event_id,
                    expected=p.expected,
                    actual=p.actual,
                )
            )
        first_line = not self._seen_first_line
        self._seen_first_line = True
        if event is None:
            # Re-anchor on the line's own hash when it has one; otherwise the
            # next event's linkage cannot be judged (its break is this line's).
            self.expected_prev = result.stored_hash
            return
        where: Where = {"path": self.path, "line": line, "offset": offset}
        self._check_linkage(event, first_line, where)
        self.expected_prev = result.stored_hash  # re-anchor on this line's own hash
        self._check_run_and_id(event, where)
        ts = event["timestamp_ns"]
        if self.prev_ts is not None and ts < self.prev_ts:
            self.add(
                warning(
                    "CLOCK_REGRESSION",
                    "timestamp goes backwards",
                    event_id=event["id"],
                    expected=f">= {self.prev_ts}",
                    actual=str(ts),
                    **where,
                )
            )
        self.prev_ts = ts
        self.first_ts = ts if self.first_ts is None else min(self.first_ts, ts)
        self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)
        self.events += 1
        self.head = result.stored_hash
        self._last_event_line = line
        self.handles.feed(event, line, offset)

    def _check_linkage(self, event: Event, first_line: bool, where: Where) -> None:
        """SPEC §2.4: the first event starts at genesis, every other one links to the previous hash."""
        prev = event["prev_hash"]
        if self.expected_prev is None or prev == self.expected_prev:
            return
        if first_line:
            self.add(
                error(
                    "MISSING_GENESIS",
                    "first event's prev_hash is not the genesis hash (64 zeros)",
                    event_id=event["id"],
                    expected=GENESIS_HASH,
                    actual=prev,
                    **where,
                )
            )
        else:
            self.add(
                error(
                    "CHAIN_BREAK",
                    "prev_hash does not equal the previous event's hash",
                    event_id=event["id"],
                    expected=self.expected_prev,
                    actual=prev,
                    **where,
                )
            )

    def _check_run_and_id(self, event: Event, where: Where) -> None:
        """SPEC §2.2: one run_id per file (the first event's), and no event id twice."""
        event_id = event["id"]
        if self.run_id is None:
            self.run_id = event["run_id"]
        elif event["run_id"] != self.run_id:
            self.add(
                error(
                    "FOREIGN_RUN_ID",
                    "run_id differs from the log's run_id",
                    event_id=event_id,
                    expected=self.run_id,
                    actual=event["run_id"],
                    **where,
                )
            )
        if not self._ids.add(event_id):
            self.add(
                error(
                    "DUPLICATE_ID",
                    f"event id {event_id} already appears earlier in this file",
                    event_id=event_id,
                    **where,
                )
            )

    @property
    def exit_code(self) -> ExitCode:
        """SPEC §3 over every finding, including those past ``max_findings``."""
        return lowest_nonzero([exit_code_for(self.findings), *self._suppressed_codes])

    def finish_file(self) -> None:
        """End of a file read whole: ``NOT_A_LOG`` (either dialect), else the dialect's ``finish``.

        A non-empty file none of whose lines has a record's shape (no JSON
        object with ``kind`` or ``type``) is not a log at all -- a README, a
        binary, a gzip file: one ``NOT_A_LOG`` finding (exit 5) replaces the
        per-line findings, so it is never called tampered or torn, and repair
        (which follows the verdict) refuses it untouched. Decided from the
        counts the reader kept (``lines``, ``saw_record``): bounded memory. A
        read error leaves the verdict to its ``IO_ERROR``: the rest was not seen.
        """
        if self.lines > 0 and not self.saw_record and not self._read_failed():
            self.findings.clear()
            self._suppressed_codes.clear()
            self.suppressed = 0
            self.first_integrity_failure = None
            self.expected_prev = self.head = None
            self.events = 0  # (a journal reader counts any object as a record; none here is one)
            self.not_a_log = True
            self.add(error("NOT_A_LOG", not_a_log_message(self.lines), path=self.path))
            return
        self.finish()

    def _read_failed(self) -> bool:
        return ExitCode.IO in self._suppressed_codes or any(f.code == "IO_ERROR" for f in self.findings)

    def finish(self) -> None:
        """End-of-file checks: run directory, open handles, repaired closes."""
        if self.events == 0:
            if not self.findings:
                self.add(
                    warning("EMPTY_LOG", "log holds no event", path=self.path)
                    if not self.require_closed
                    else error("EMPTY_LOG", "log holds no event", path=self.path)
                )
            return
        # (os.path, not pathlib: a fleet's run pays for every object made here)
        directory, name = os.path.split(os.path.abspath(self.path))  # "events.jsonl" alone still has one
        run_dir = os.path.basename(directory)
        if name in LOG_FILE_NAMES and self.run_id is not None and run_dir != self.run_id:
            self.add(
                warning(
                    "RUN_DIR_MISMATCH",
                    f"directory name {run_dir!r} differs from run_id {self.run_id}",
                    path=self.path,
                    expected=self.run_id,
                    actual=run_dir,
                )
            )
        for handle in self.handles.open_handles():
            if handle.kind == "run.started":
                continue
            self.add(
                warning(
                    "OPEN_HANDLE",
                    f"{handle.kind} was never closed",
                    path=self.path,
                    line=handle.line,
                    offset=handle.offset,
                    event_id=handle.event_id,
                )
            )
        if not self.handles.run_is_closed:
            start = self.handles.run_started
            make = error if self.require_closed else warning
            self.add(
                make(
                    "OPEN_RUN",
                    "run was never closed (no run.completed or run.aborted)",
                    path=self.path,
                    line=start.line if start else None,
                    offset=start.offset if start else None,
                    event_id=start.event_id if start else None,
                )
            )
        if self.handles.synthesized_closes:
            self.add(
                warning(
                    "REPAIRED",
                    f"log holds {self.handles.synthesized_closes} synthesized close(s) written by repair",
                    path=self.path,
                )
            )
