"""Replay (SPEC §5): re-walk a log event by event, rebuilding the run's state.

The log is the source of truth. Everything here reads through the one
``ChainReader``, verifying while it walks, and replays only *trusted* events:
at the first integrity failure (``reader.broken_at``) replay stops, so
nothing after an unverified point is ever presented as part of the run.

Layers, from small to large, one module each:

* ``replay.state.ReplayState`` — the run's state after each event: open
  steps, tool calls in flight, unanswered prompts, pending handshakes (paired
  by the shared ``HandleTracker``, SPEC §4), live and violated assumptions,
  the latest verdict of each predicate.
* ``replay.replayer.Replayer`` — iterate it for ``ReplayStep(index, event,
  state)``; the state is the state *after* that event.
* ``replay(path, options)`` (here) — what ``ract trace replay`` calls: the
  workspace determinism check first (``replay.snapshot``,
  ``replay.workspace``), then the walk (stopping at ``--until``), then
  ``finish()`` verifies the rest of the file and runs ``--check-commits``,
  returning the verdict as data.
* ``replay.responses.recorded_responses(path)`` — the recorded provider
  responses in order per ``intent_id``, so a harness can replay the model
  layer.

The ``--until``/``--pace`` values are read in ``replay.controls``, the
timeline's one-line summaries made in ``replay.summary``. Their names are
re-exported here, where they were defined before the package was split.

Nothing here prints, sleeps or exits.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ract_cli.dialects import resolve_dialect
from ract_cli.errors import UsageError
from ract_cli.format.json_types import Event
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.read.discovery import resolve_log_path
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES, LogEvent
from ract_cli.read.files import log_size
from ract_cli.replay.controls import MAX_PACE_SLEEP_S, format_elapsed, pace_delay, parse_pace, parse_until
from ract_cli.replay.journal import JournalReplaySession
from ract_cli.replay.replayer import Replayer, is_ephemeral
from ract_cli.replay.responses import RecordedResponse, RecordedResponses, ResponsesExhausted, recorded_responses
from ract_cli.replay.result import ReplayResult
from ract_cli.replay.snapshot import InitialSnapshot, find_initial_snapshot
from ract_cli.replay.state import AssumptionStatus as AssumptionStatus
from ract_cli.replay.state import PredicateVerdict as PredicateVerdict
from ract_cli.replay.state import ReplayState, ReplayStep
from ract_cli.replay.summary import SUMMARY_KEYS as SUMMARY_KEYS
from ract_cli.replay.summary import summarize
from ract_cli.replay.workspace import CommittedStep, WorkspaceReport, check_commits, check_head

__all__ = [
    "DEFAULT_MAX_FINDINGS",
    "MAX_PACE_SLEEP_S",
    "RecordedResponse",
    "RecordedResponses",
    "ReplayOptions",
    "ReplayResult",
    "ReplaySession",
    "ReplayState",
    "ReplayStep",
    "Replayer",
    "ResponsesExhausted",
    "find_initial_snapshot",
    "format_elapsed",
    "is_ephemeral",
    "pace_delay",
    "parse_pace",
    "parse_until",
    "recorded_responses",
    "replay",
    "resolve_log_path",
    "summarize",
]

#: Findings a replay keeps in memory (and prints); more are counted, and still set the exit code.
DEFAULT_MAX_FINDINGS = 1000


@dataclass(frozen=True)
class ReplayOptions:
    """Options of ``ract trace replay`` (see docs/replay.md)."""

    schema_version: int = LATEST_SCHEMA_VERSION
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    until: int | str | None = None  # 1-based index or event id (see ``parse_until``)
    workspace: str | os.PathLike[str] | None = "."  # None: skip the workspace checks
    strict_head: bool = False
    check_commits: bool = False
    exclude: Callable[[Event], bool] = is_ephemeral
    #: findings kept (the rest are counted in ``ReplayResult.suppressed`` and still set the exit code)
    max_findings: int | None = DEFAULT_MAX_FINDINGS
    dialect: str = "auto"  # "auto" | "ract" | "raxol" (SPEC §8), as ChainReader takes it


class ReplaySession:
    """One replay: ``workspace`` is checked on creation; iterate ``steps()``; then ``finish()``."""

    def __init__(self, path: str | os.PathLike[str], options: ReplayOptions = ReplayOptions()) -> None:
        self.path = str(path)
        self.options = options
        self.snapshot = InitialSnapshot(None)
        self.workspace: WorkspaceReport | None = None
        if options.workspace is not None and os.path.isfile(path):  # an unreadable log is only an IO finding
            self.workspace = self._check_workspace(path, options.workspace)
        self.replayer = Replayer(
            path,
            schema_version=options.schema_version,
            max_line_bytes=options.max_line_bytes,
            exclude=options.exclude,
            max_findings=options.max_findings,
        )
        self.until_reached: bool | None = None if options.until is None else False
        self._commits: list[CommittedStep] = []
        self._iterated = False
        self._result: ReplayResult | None = None

    def _check_workspace(self, path: str | os.PathLike[str], workspace: str | os.PathLike[str]) -> WorkspaceReport:
        """The determinism precondition: the run's initial snapshot against the workspace's HEAD."""
        options = self.options
        self.snapshot = find_initial_snapshot(
            path, schema_version=options.schema_version, max_line_bytes=options.max_line_bytes
        )
        where = {
            "path": self.path,
            "line": self.snapshot.line,
            "offset": self.snapshot.offset,
            "event_id": self.snapshot.event_id,
        }
        return check_head(workspace, self.snapshot.value, strict=options.strict_head, where=where, log_path=path)

    @property
    def state(self) -> ReplayState:
        return self.replayer.state

    def _note(self, ev: LogEvent) -> None:
        if self.options.check_commits and ev.event["kind"] == "step.committed":
            payload = ev.event["payload"]
            self._commits.append(
                CommittedStep(
                    ev.line,
                    ev.offset,
                    ev.event["id"],
                    payload.get("parent_snapshot_before"),
                    payload.get("parent_snapshot_after"),
                )
            )

    def steps(self) -> Iterator[ReplayStep]:
        """Replayed events in order, stopping after the ``--until`` target or at a chain break."""
        if self._iterated:
            raise RuntimeError("a ReplaySession is walked once")
        self._iterated = True
        until = self.options.until
        for step in self.replayer:
            self._note(step.event)
            yield step
            if until is not None and (
                step.index == until if isinstance(until, int) else step.event.event["id"] == until
            ):
                self.until_reached = True
                return

    def finish(self) -> ReplayResult:
        """Verify the rest of the file, run ``--check-commits``; return the verdict (computed once)."""
        if self._result is not None:
            return self._result
        if not self._iterated:
            for _ in self.steps():
                pass
        state = self.state.to_dict()  # before draining: the state where the replay stopped
        stop = "until" if self.until_reached else ("break" if self.replayer.stopped_at_break is not None else "end")
        self.replayer.drain(self._note)
        findings = list(self.replayer.findings)
        if self.workspace is not None:
            findings.extend(self.workspace.findings)
        if self.options.check_commits and self.options.workspace is not None:
            findings.extend(check_commits(self.options.workspace, self._commits, path=self.path))
        chain = self.replayer.reader.state
        self._result = ReplayResult(
            self.path,
            self.state.index,
            stop,
            self.until_reached,
            self.replayer.reader.broken_at,
            state,
            findings,
            self.workspace,
            chain.suppressed,
            chain.exit_code,
        )
        return self._result


def replay(
    path: str | os.PathLike[str],
    options: ReplayOptions = ReplayOptions(),
    *,
    progress: Callable[[int, int], None] | None = None,
) -> ReplaySession | JournalReplaySession:
    """Start a replay of one log: checks the workspace now; walk ``steps()``, then ``finish()``.

    The dialect is ``options.dialect``, ``auto`` detected as every command detects it (SPEC §8): a Raxol
    agent journal gets a ``ract_cli.replay.journal.JournalReplaySession``, which
    has the same surface (``steps()``, ``finish()`` -> ``ReplayResult``),
    never replays ``item_delta`` and has no workspace to check.

    ``progress(done_bytes, total_bytes)`` is called as the walk (and ``finish()``'s
    read of the rest) goes through the log, every few MB.
    """
    if isinstance(options.until, int) and options.until < 1:
        raise UsageError("--until: event indexes start at 1")
    session: ReplaySession | JournalReplaySession
    if resolve_dialect(options.dialect, path, options.max_line_bytes) == "raxol":
        session = JournalReplaySession(
            path,
            until=options.until,
            max_line_bytes=options.max_line_bytes,
            max_findings=options.max_findings,
        )
        reader = session.reader
    else:
        session = ReplaySession(path, options)
        reader = session.replayer.reader
    if progress is not None:
        total = log_size(path)
        reader.progress = lambda offset: progress(min(offset, total), total)
    return session
