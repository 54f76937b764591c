"""Replay (SPEC §5): re-walk a log event by event, rebuilding the run's state.

The log is the source of truth. Everything here reads through the one
``ChainReader``, verifying while it walks, and replays only *trusted* events:
at the first integrity failure (``reader.broken_at``) replay stops, so
nothing after an unverified point is ever presented as part of the run.

Layers, from small to large:

* ``ReplayState`` — the run's state after each event: open steps, tool calls
  in flight, unanswered prompts, pending handshakes (paired by the shared
  ``HandleTracker``, SPEC §4), live and violated assumptions, the latest
  verdict of each predicate.
* ``Replayer`` — iterate it for ``ReplayStep(index, event, state)``; the
  state is the state *after* that event.
* ``replay(path, options)`` — what ``ract trace replay`` calls: the
  workspace determinism check first (``ract_cli.workspace``), then the walk
  (stopping at ``--until``), then ``finish()`` verifies the rest of the file
  and runs ``--check-commits``, returning the verdict as data.
* ``recorded_responses(path)`` — the recorded provider responses in order per
  ``intent_id``, so a harness can replay the model layer.

Nothing here prints, sleeps or exits.
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ract_cli.dialects import ChainReader, resolve_dialect
from ract_cli.errors import ExitCode, UsageError
from ract_cli.findings import Finding
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.read.discovery import resolve_log_path
from ract_cli.read.handles import HandleTracker, OpenHandle
from ract_cli.read.line import DEFAULT_MAX_LINE_BYTES, LogEvent
from ract_cli.replay.journal import JournalReplaySession
from ract_cli.replay.result import ReplayResult
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

#: Longest sleep ``--pace`` takes between two events, in seconds (a run idle
#: for an hour replays with a 2 s pause, not an hour's).
MAX_PACE_SLEEP_S = 2.0

_HEX32 = re.compile(r"[0-9a-fA-F]{32}")
_LONG_HEX = re.compile(r"[0-9a-f]{32,}")
_BARE = re.compile(r"[\w.:/@+\-]+")
_STEP_KINDS = frozenset({"step.started", "step.committed", "step.rolled_back"})


# --- hooks and small pure helpers ------------------------------------------


def is_ephemeral(event: dict) -> bool:
    """True for an event that is never replayed nor counted (SPEC §8).

    RACT logs have no ephemeral kind, so this is False today. It is the hook
    for the Raxol dialect, whose ``item_delta`` records are ephemeral: pass a
    different predicate as ``Replayer(exclude=...)`` / ``ReplayOptions.exclude``.
    """
    return False


def parse_until(text: str) -> int | str:
    """``--until`` value: a 1-based event index, or a 32-hex event id (lowercased).

    Exactly 32 hex characters is an event id; otherwise digits are an index.
    """
    value = text.strip()
    if _HEX32.fullmatch(value):
        return value.lower()
    if value.isdigit() and value.isascii():
        index = int(value)
        if index < 1:
            raise UsageError("--until: event indexes start at 1")
        return index
    raise UsageError(f"--until takes an event index (1, 2, ...) or a 32-hex event id, not {value[:80]!r}")


def parse_pace(text: str) -> float:
    """``--pace`` value: ``realtime`` (1.0) or ``Nx`` (N times faster), e.g. ``2x``, ``0.5x``, ``1000x``."""
    value = text.strip().lower()
    if value == "realtime":
        return 1.0
    if value.endswith("x"):
        try:
            factor = float(value[:-1])
        except ValueError:
            factor = float("nan")
        if factor > 0 and factor != float("inf"):
            return factor
    raise UsageError(f"--pace takes 'realtime' or a positive speed-up such as '2x' or '1000x', not {text[:40]!r}")


def pace_delay(prev_ns: int | None, ns: int, factor: float, cap: float = MAX_PACE_SLEEP_S) -> float:
    """Seconds to wait before showing an event ``ns`` after one at ``prev_ns``, at ``factor``x speed.

    Never negative (a clock regression waits 0), never more than ``cap``.
    """
    if prev_ns is None or ns <= prev_ns:
        return 0.0
    return min((ns - prev_ns) / 1e9 / factor, cap)


def format_elapsed(ns: int) -> str:
    """Time since the start as ``+12.345s`` (milliseconds, truncated; ``-`` for a clock regression)."""
    sign = "-" if ns < 0 else "+"
    ms = abs(ns) // 1_000_000
    return f"{sign}{ms // 1000}.{ms % 1000:03d}s"


def _fmt_value(value: Any, limit: int = 60) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if type(value) in (int, float):
        return repr(value)
    if type(value) is str:
        if _LONG_HEX.fullmatch(value):
            return value[:12]  # ids, digests and snapshots: a 12-char prefix is enough on a timeline
        text = value if len(value) <= limit else value[: limit - 1] + "…"
        if _BARE.fullmatch(text):
            return text
        return orjson.dumps(text).decode()
    try:
        text = orjson.dumps(value).decode()
    except Exception:
        text = _safe_repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: payload keys shown on the timeline, per kind (others: the first scalar keys)
SUMMARY_KEYS: dict[str, tuple[str, ...]] = {
    "run.started": ("intent_id", "predicate_count", "required_count", "coverage_gate"),
    "run.completed": ("final_decision", "event_count", "duration_ns"),
    "run.aborted": ("termination_cause", "reason", "duration_ns"),
    "step.started": ("parent_snapshot", "postcondition_count", "timeout_seconds"),
    "step.committed": ("outcome", "parent_snapshot_before", "parent_snapshot_after", "reason"),
    "step.rolled_back": ("outcome", "parent_snapshot_before", "parent_snapshot_after", "reason"),
    "prompt.sent": ("provider", "response_shape", "intent_id", "prompt_chars"),
    "response.received": ("provider", "response_type", "status", "preview"),
    "response.validated": ("kind",),
    "response.rejected": ("error", "attempt", "should_halt"),
    "tool.called": ("tool", "arguments"),
    "tool.result": ("tool", "ok", "status", "duration_ns"),
    "tool.refused": ("tool", "refused_by", "reason"),
    "predicate.evaluated": ("predicate_id", "ok", "required", "reason"),
    "handshake.requested": ("milestone_id", "status", "description"),
    "handshake.resolved": ("milestone_id", "status", "resolution", "reason"),
    "assumption.proposed": ("assumption_id", "text"),
    "assumption.accepted": ("assumption_id",),
    "assumption.discharged": ("assumption_id",),
    "assumption.violated": ("assumption_id", "root_id"),
    "process.reaped": ("pid", "argv0", "reason", "reap_latency_ms"),
    "retrieval.requested": ("call_id", "budget"),
    "retrieval.satisfied": ("call_id", "total_tokens", "budget_used_pct"),
    "tool.invocation.pre": ("tool_id", "budget_used", "budget_max"),
    "tool.invocation.post": ("tool_id", "ok", "latency_ms", "exception"),
    "tool.invocation.refused": ("tool_id", "gate", "reason"),
}
_MAX_SUMMARY = 160
_GENERIC_KEYS = 5


def summarize(event: dict) -> str:
    """A compact one-line summary of an event's payload (raw text: escape it before a terminal).

    Known kinds show their telling keys (``SUMMARY_KEYS``); any other kind
    shows its first scalar keys. ``step.started`` names its step. A
    repair-synthesized close starts with ``[synthesized]``.
    """
    payload = event.get("payload")
    if not isinstance(payload, dict):
        payload = {}
    parts: list[str] = []
    if payload.get("synthesized") is True:
        parts.append("[synthesized]")
    kind = event.get("kind")
    if kind == "step.started" and isinstance(event.get("step_id"), str):
        parts.append(f"step={event['step_id'][:12]}")
    keys = SUMMARY_KEYS.get(kind) if isinstance(kind, str) else None
    if keys is None:
        keys = tuple(k for k, v in payload.items() if not isinstance(v, (dict, list)))[:_GENERIC_KEYS]
    for key in keys:
        if key in payload:
            parts.append(f"{key}={_fmt_value(payload[key])}")
    text = " ".join(parts)
    return text if len(text) <= _MAX_SUMMARY else text[: _MAX_SUMMARY - 1] + "…"


def _key(value: object) -> str:
    """A payload value as a dict key (ids are strings; anything else by its JSON text)."""
    if type(value) is str:
        return value
    try:
        return orjson.dumps(value).decode()
    except Exception:
        return _safe_repr(value)


def _safe_repr(value: object) -> str:
    try:
        return repr(value)
    except RecursionError:
        return f"<{type(value).__name__} nested too deeply>"


# --- state --------------------------------------------------------------


@dataclass(slots=True)
class AssumptionStatus:
    assumption_id: str
    status: str  # proposed | accepted | violated
    line: int
    event_id: str
    root_id: object = None
    text: object = None


@dataclass(slots=True)
class PredicateVerdict:
    predicate_id: str
    ok: object
    required: object
    reason: object
    kind: object
    line: int
    index: int
    event_id: str


class ReplayState:
    """The run's state after the events applied so far. Mutable; ``to_dict()`` freezes it."""

    def __init__(self) -> None:
        self.handles = HandleTracker()  # SPEC §4 pairing, shared with verify and repair
        self.index = 0  # replayed events so far (1-based index of the last one)
        self.event: LogEvent | None = None  # the last event applied
        self.first_ts: int | None = None
        # live or violated, in order of first appearance (discharged ones are dropped and counted)
        self.assumptions: dict[str, AssumptionStatus] = {}
        self.discharged = 0
        self.predicates: dict[str, PredicateVerdict] = {}  # latest verdict each, in order of first evaluation
        self._open_steps: dict[str, str | None] = {}  # step.started id -> step_id, in opening order

    def apply(self, ev: LogEvent) -> None:
        event = ev.event
        self.index += 1
        self.event = ev
        if self.first_ts is None:
            self.first_ts = event["timestamp_ns"]
        paired = self.handles.feed(event, ev.line, ev.offset)
        kind = event["kind"]
        if kind == "step.started":
            self._open_steps[event["id"]] = event["step_id"]
        elif paired is not None and paired.kind == "step.started":
            self._open_steps.pop(paired.event_id, None)
        payload = event["payload"]
        if kind.startswith("assumption."):
            self._assumption(kind, payload, ev)
        elif kind == "predicate.evaluated" and "predicate_id" in payload:
            pid = _key(payload["predicate_id"])
            self.predicates[pid] = PredicateVerdict(
                pid,
                payload.get("ok"),
                payload.get("required"),
                payload.get("reason"),
                payload.get("kind"),
                ev.line,
                self.index,
                event["id"],
            )

    def _assumption(self, kind: str, payload: dict, ev: LogEvent) -> None:
        if "assumption_id" not in payload:
            return
        aid = _key(payload["assumption_id"])
        known = self.assumptions.get(aid)
        if kind in ("assumption.proposed", "assumption.accepted"):
            text = payload.get("text", known.text if known else None)
            status = kind.split(".", 1)[1]
            self.assumptions[aid] = AssumptionStatus(aid, status, ev.line, ev.event["id"], text=text)
        elif kind == "assumption.discharged":
            if self.assumptions.pop(aid, None) is not None or known is None:
                self.discharged += 1
        elif kind == "assumption.violated":
            self.assumptions[aid] = AssumptionStatus(
                aid,
                "violated",
                ev.line,
                ev.event["id"],
                root_id=payload.get("root_id"),
                text=known.text if known else None,
            )

    # views
    @property
    def elapsed_ns(self) -> int:
        if self.event is None or self.first_ts is None:
            return 0
        return self.event.event["timestamp_ns"] - self.first_ts

    @property
    def current_step_id(self) -> str | None:
        """``step_id`` of the most recently started step still open (O(1), unlike ``open_steps``)."""
        return self._open_steps[next(reversed(self._open_steps))] if self._open_steps else None

    def open_of(self, kind: str) -> list[OpenHandle]:
        return [h for h in self.handles.open_handles() if h.kind == kind]

    @property
    def open_steps(self) -> list[OpenHandle]:
        return self.open_of("step.started")

    @property
    def tool_calls(self) -> list[OpenHandle]:
        return self.open_of("tool.called")

    @property
    def prompts(self) -> list[OpenHandle]:
        return self.open_of("prompt.sent")

    @property
    def handshakes(self) -> list[OpenHandle]:
        return self.open_of("handshake.requested")

    @property
    def live_assumptions(self) -> list[AssumptionStatus]:
        return [a for a in self.assumptions.values() if a.status != "violated"]

    @property
    def violated_assumptions(self) -> list[AssumptionStatus]:
        return [a for a in self.assumptions.values() if a.status == "violated"]

    @property
    def run_status(self) -> str:
        """``not started``, ``open``, ``completed``, ``aborted`` (as far as replayed)."""
        closed = self.handles.run_closed_by
        if closed is not None:
            return "completed" if closed.get("kind") == "run.completed" else "aborted"
        return "open" if self.handles.run_started is not None else "not started"

    def to_dict(self) -> dict[str, Any]:
        """The state as plain JSON-able data (documented in docs/replay.md)."""
        ev = self.event

        def handle(h: OpenHandle, *keys: str) -> dict[str, Any]:
            payload = h.event.get("payload") or {}
            out: dict[str, Any] = {"event_id": h.event_id, "line": h.line, "step_id": h.step_id}
            out.update({k: payload.get(k) for k in keys})
            return out

        return {
            "index": self.index,
            "line": ev.line if ev else None,
            "event_id": ev.event["id"] if ev else None,
            "kind": ev.event["kind"] if ev else None,
            "timestamp_ns": ev.event["timestamp_ns"] if ev else None,
            "elapsed_ns": self.elapsed_ns,
            "run": self.run_status,
            "open_steps": [handle(h, "parent_snapshot", "branch") for h in self.open_steps],
            "tool_calls": [handle(h, "tool") for h in self.tool_calls],
            "prompts": [handle(h, "provider", "intent_id") for h in self.prompts],
            "handshakes": [handle(h, "milestone_id", "description") for h in self.handshakes],
            "assumptions": {
                "live": [
                    {"assumption_id": a.assumption_id, "status": a.status, "line": a.line, "event_id": a.event_id}
                    for a in self.live_assumptions
                ],
                "violated": [
                    {"assumption_id": a.assumption_id, "root_id": a.root_id, "line": a.line, "event_id": a.event_id}
                    for a in self.violated_assumptions
                ],
                "discharged": self.discharged,
            },
            "predicates": [
                {
                    "predicate_id": p.predicate_id,
                    "ok": p.ok,
                    "required": p.required,
                    "reason": p.reason,
                    "line": p.line,
                    "event_id": p.event_id,
                }
                for p in self.predicates.values()
            ],
        }


@dataclass(slots=True)
class ReplayStep:
    """One replayed event and the state right after it (``state`` is live: it moves on)."""

    index: int  # 1-based among replayed events
    event: LogEvent
    state: ReplayState

    @property
    def depth(self) -> int:
        """Nesting on a timeline: 1 for an event inside a step, else 0 (run-level, step open/close)."""
        event = self.event.event
        return 1 if event["step_id"] is not None and event["kind"] not in _STEP_KINDS else 0


class Replayer:
    """Walk one log through the chain reader; iterate for ``ReplayStep``s of trusted events.

    Iteration stops at the first integrity failure: ``stopped_at_break`` is
    then its line. ``drain()`` reads the rest of the file (verifying, never
    replaying) so ``findings`` / ``exit_code`` are the whole file's verdict.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        schema_version: int = LATEST_SCHEMA_VERSION,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        exclude: Callable[[dict], bool] = is_ephemeral,
        max_findings: int | None = None,
    ) -> None:
        self.path = str(path)
        self.reader = ChainReader(
            path,
            schema_version=schema_version,
            max_line_bytes=max_line_bytes,
            max_findings=max_findings,
            dialect="ract",
        )
        self.state = ReplayState()
        self.exclude = exclude
        self.stopped_at_break: int | None = None
        self._events = iter(self.reader)

    def __iter__(self) -> Iterator[ReplayStep]:
        for ev in self._events:
            if not ev.trusted:
                self.stopped_at_break = self.reader.broken_at
                return
            if self.exclude(ev.event):
                continue
            self.state.apply(ev)
            yield ReplayStep(self.state.index, ev, self.state)
        if self.reader.broken_at is not None:  # a break on a line that held no usable event
            self.stopped_at_break = self.reader.broken_at

    def drain(self, visit: Callable[[LogEvent], None] | None = None) -> None:
        """Read to the end of the file; ``visit`` sees each remaining event that is still trusted."""
        for ev in self._events:
            if visit is not None and ev.trusted and not self.exclude(ev.event):
                visit(ev)
        if self.stopped_at_break is None and self.reader.broken_at is not None:
            self.stopped_at_break = self.reader.broken_at

    @property
    def findings(self) -> list[Finding]:
        return self.reader.findings

    @property
    def exit_code(self) -> ExitCode:
        return self.reader.exit_code


# --- the initial snapshot -------------------------------------------------


@dataclass(frozen=True)
class InitialSnapshot:
    """``parent_snapshot`` of the run's first ``step.started`` (raw log value), and where it is."""

    value: object  # None when there is no (trusted) step.started or it has no parent_snapshot
    line: int | None = None
    offset: int | None = None
    event_id: str | None = None


def find_initial_snapshot(
    path: str | os.PathLike[str],
    *,
    schema_version: int = LATEST_SCHEMA_VERSION,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> InitialSnapshot:
    """Read (through the chain reader) up to the first trusted ``step.started``."""
    reader = ChainReader(
        path, schema_version=schema_version, max_line_bytes=max_line_bytes, dialect="ract", max_findings=1
    )  # its findings are not used: keep memory flat on a hostile log
    for ev in reader:
        if not ev.trusted:
            break
        if ev.event["kind"] == "step.started":
            return InitialSnapshot(ev.event["payload"].get("parent_snapshot"), ev.line, ev.offset, ev.event["id"])
    return InitialSnapshot(None)


# --- the command's one library call ----------------------------------------


@dataclass(frozen=True)
class ReplayOptions:
    """Options of ``ract trace replay`` (see docs/replay.md)."""

    schema_version: int = LATEST_SCHEMA_VERSION
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    until: int | str | None = None  # 1-based index or event id (see ``parse_until``)
    workspace: str | os.PathLike[str] | None = "."  # None: skip the workspace checks
    strict_head: bool = False
    check_commits: bool = False
    exclude: Callable[[dict], bool] = is_ephemeral
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
            self.snapshot = find_initial_snapshot(
                path, schema_version=options.schema_version, max_line_bytes=options.max_line_bytes
            )
            where = {
                "path": self.path,
                "line": self.snapshot.line,
                "offset": self.snapshot.offset,
                "event_id": self.snapshot.event_id,
            }
            self.workspace = check_head(
                options.workspace, self.snapshot.value, strict=options.strict_head, where=where, log_path=path
            )
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


def replay(path: str | os.PathLike[str], options: ReplayOptions = ReplayOptions()) -> ReplaySession:
    """Start a replay of one log: checks the workspace now; walk ``steps()``, then ``finish()``.

    The dialect is ``options.dialect``, ``auto`` detected as every command detects it (SPEC §8): a Raxol
    agent journal gets a ``ract_cli.raxol_replay.JournalReplaySession``, which
    has the same surface (``steps()``, ``finish()`` -> ``ReplayResult``),
    never replays ``item_delta`` and has no workspace to check.
    """
    if isinstance(options.until, int) and options.until < 1:
        raise UsageError("--until: event indexes start at 1")
    if resolve_dialect(options.dialect, path, options.max_line_bytes) == "raxol":
        return JournalReplaySession(
            path,
            until=options.until,
            max_line_bytes=options.max_line_bytes,  # type: ignore[return-value]
            max_findings=options.max_findings,
        )
    return ReplaySession(path, options)


# --- recorded provider responses --------------------------------------------


@dataclass(frozen=True)
class RecordedResponse:
    """One ``response.received`` as the run recorded it."""

    intent_id: str | None
    provider: object
    response_type: object
    preview: object
    event_id: str
    prompt_event_id: str | None  # the envelope's parent_id: the prompt.sent it answers, when set
    step_id: str | None
    line: int
    timestamp_ns: int
    synthesized: bool  # written by repair (status "timed_out"): no real response came back
    payload: dict


class ResponsesExhausted(LookupError):
    """``RecordedResponses.next`` was asked for more responses than the run recorded."""


@dataclass
class RecordedResponses:
    """Provider responses in recorded order, per ``intent_id`` (key None: no intent_id).

    A harness replaying the model layer calls ``next(intent_id)`` where the run
    called the provider; ``by_intent`` keeps the full lists. ``exit_code`` and
    ``findings`` are the chain reader's verdict on the file: responses after a
    chain break are not included.
    """

    by_intent: dict[str | None, list[RecordedResponse]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    exit_code: ExitCode = ExitCode.OK
    _cursors: dict[str | None, deque[RecordedResponse]] = field(default_factory=dict, repr=False)

    def next(self, intent_id: str | None) -> RecordedResponse:
        """The next recorded response for ``intent_id``; raises ``ResponsesExhausted`` when none is left."""
        if intent_id not in self._cursors:
            self._cursors[intent_id] = deque(self.by_intent.get(intent_id, ()))
        queue = self._cursors[intent_id]
        if not queue:
            raise ResponsesExhausted(f"no more recorded responses for intent_id {intent_id!r}")
        return queue.popleft()

    def __len__(self) -> int:
        return sum(len(v) for v in self.by_intent.values())


def recorded_responses(
    path: str | os.PathLike[str],
    *,
    include_synthesized: bool = True,
    schema_version: int = LATEST_SCHEMA_VERSION,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> RecordedResponses:
    """Every trusted ``response.received`` of the log, in order, grouped by ``intent_id``."""
    replayer = Replayer(path, schema_version=schema_version, max_line_bytes=max_line_bytes)
    result = RecordedResponses()
    for step in replayer:
        event = step.event.event
        if event["kind"] != "response.received":
            continue
        payload = event["payload"]
        synthesized = payload.get("synthesized") is True
        if synthesized and not include_synthesized:
            continue
        intent = payload.get("intent_id")
        key = intent if type(intent) is str else (None if intent is None else _key(intent))
        result.by_intent.setdefault(key, []).append(
            RecordedResponse(
                key,
                payload.get("provider"),
                payload.get("response_type"),
                payload.get("preview"),
                event["id"],
                event["parent_id"],
                event["step_id"],
                step.event.line,
                event["timestamp_ns"],
                synthesized,
                payload,
            )
        )
    replayer.drain()
    result.findings = list(replayer.findings)
    result.exit_code = replayer.exit_code
    return result
