"""``project``: the run report as a projection over the log (SPEC §7).

The log is the source of truth; a report is a pure function of its events.
``Projector`` folds events one at a time into bounded aggregates (counts,
capped lists, per-tool latency samples) and ``Projector.report()`` turns
them into a plain JSON-ready dict at any moment, so ``replay`` can show the
projected state at any event. ``project_file`` reads one log through the one
``ChainReader`` and adds what only the reader knows: findings, exit code,
the chain head and where trust ends. ``project_paths`` does it for every
log under the given paths. Nothing here prints; the CLI renders.

Trust (decided here): the projection covers the *verified prefix* only, the
events before the first integrity failure (``LogEvent.trusted``). Events
from the break on are tallied separately under ``untrusted`` (how many, of
which kinds, and what the unverified tail claims about the run's end), never
mixed into the counts. The JSON shape is documented in ``docs/project.md``
and ``docs/schemas/project-report.json``.
"""

from __future__ import annotations

import math
import os
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ract_cli.dialects import ChainReader, discovery_suffixes
from ract_cli.errors import ExitCode, lowest_nonzero
from ract_cli.findings import ERROR, Finding
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.project.journal import journal_report
from ract_cli.read.discovery import discover
from ract_cli.read.handles import CLOSE_FOR_OPEN, RUN_CLOSES, STEP_CLOSES, HandleTracker, OpenHandle
from ract_cli.read.line import DEFAULT_MAX_LINE_BYTES

__all__ = [
    "FLAG_CODES",
    "REPORT_VERSION",
    "STATUSES",
    "ProjectOptions",
    "ProjectResult",
    "Projector",
    "percentiles",
    "project_events",
    "project_file",
    "project_paths",
]

REPORT_VERSION = 1
#: run status, in order of precedence (the first that applies wins)
STATUSES = ("unknown", "repaired", "completed", "aborted", "open")
DEFAULT_MAX_ITEMS = 1000  # per itemized list (flags, reaps, unenforced sandboxes...)
MAX_KEYS = 1000  # distinct names kept per table (tools, providers, predicates...); the rest pool in "(other)"
_INT64_MAX = 2**63 - 1
MAX_TEXT = 200  # characters kept of any log-derived string
OTHER = "(other)"
NONE = "(none)"

#: audit flag code -> what it means (docs/project.md lists the same table)
FLAG_CODES: dict[str, str] = {
    "UNTRUSTED": "integrity failure: the log is not verified from this line on",
    "GATE_INCONSISTENT": "run.completed while a required predicate's latest verdict failed",
    "SANDBOX_UNENFORCED": "a sandbox.unenforced event: the tool ran without an enforced sandbox",
    "NEVER_PASSTHROUGH_DENIED": "sandbox.env_scrubbed with never_passthrough_denied > 0: the manifest declared "
    "a credential-shaped name",
    "CREDENTIAL_SHAPED_UNBLOCKED": "sandbox.env_scrubbed with credential_shaped_unblocked_count > 0: "
    "the deny surface has a gap",
    "ASSUMPTION_VIOLATED": "an assumption.violated event",
    "BUDGET_EXCEEDED": "a budget.exceeded event",
    "ERROR_EVENT": "a *_error event: a component raised and the run went on",
    "SYNTHESIZED_CLOSE": "a close written by repair, not by the run",
    "OPEN_RUN": "the run was never closed (as far as the log is verified)",
    "OPEN_HANDLE": "a step, tool call, prompt or handshake was never closed",
    "WHISPERER_CONTRACT_VIOLATION": "the sycophancy classifier flagged a response",
    "PID_REUSE_DETECTED": "a signal was skipped because the pid was reused",
    "RUN_ID_ENV_STRIPPED": "a caller-supplied RACT_RUN_ID was stripped (possible sneak vector)",
    "SIDECAR_MISMATCH_REFUSED": "a sidecar's header run_id differed from the expected one",
    "MANIFEST_LEDGER_REFUSED": "the manifest ledger refused an entry",
    # verifier findings carried over as flags keep their finding code (HASH_MISMATCH, TORN_TAIL, ...)
}
#: kinds the HandleTracker pairs (opens and closes), and the closes among them
_CLOSE_KINDS = frozenset(CLOSE_FOR_OPEN.values()) | RUN_CLOSES | STEP_CLOSES
_PAIRED_KINDS = frozenset(CLOSE_FOR_OPEN) | _CLOSE_KINDS
#: reader warnings worth an auditor's look (reader errors are always carried over)
_FLAGGED_WARNINGS = frozenset({"CLOCK_REGRESSION", "RUN_DIR_MISMATCH"})
#: reader warnings that the projection's own flags already cover
_COVERED_WARNINGS = frozenset({"OPEN_HANDLE", "OPEN_RUN", "REPAIRED"})


@dataclass(frozen=True)
class ProjectOptions:
    """How to read and how much to keep."""

    schema_version: int = LATEST_SCHEMA_VERSION
    require_closed: bool = False
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_items: int = DEFAULT_MAX_ITEMS
    dialect: str = "auto"  # SPEC §8: "ract", "raxol", or "auto" (detected per file)


# --- defensive accessors: the log is hostile input ------------------------


def _int(value: object) -> int | None:
    return value if type(value) is int else None


def _num(value: object) -> int | float | None:
    if type(value) is int:
        return value
    if type(value) is float and math.isfinite(value):
        return value
    return None


def _text(value: object) -> str | None:
    """A log string, cut to ``MAX_TEXT`` characters; None when absent or not a string."""
    if type(value) is not str:
        return None
    return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + "…"


def _label(value: object) -> str:
    """A name used as a table key: the string, ``(none)`` when absent, else its JSON type."""
    if type(value) is str:
        return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + "…"
    if value is None:
        return NONE
    return f"(invalid {type(value).__name__})"


def _bucket(table: dict, key: str, make):
    """The row for ``key``, pooling keys past ``MAX_KEYS`` into ``(other)``."""
    row = table.get(key)
    if row is None:
        if len(table) >= MAX_KEYS:
            key = OTHER
            row = table.get(key)
        if row is None:
            row = table[key] = make()
    return row


def _count(table: dict[str, int], key: str) -> None:
    if key in table:
        table[key] += 1
    elif len(table) >= MAX_KEYS:
        table[OTHER] = table.get(OTHER, 0) + 1
    else:
        table[key] = 1


def _sum(total: int, value: int) -> int:
    """Add, saturating at 2^63 - 1 so every count stays a JSON int64 (hostile logs sum big values)."""
    return min(total + value, _INT64_MAX)


def iso(ns: int | None) -> str | None:
    """UTC ISO-8601 with microseconds, e.g. ``2025-11-24T16:00:00.261966Z``."""
    if ns is None:
        return None
    try:
        return datetime.fromtimestamp(ns / 1e9, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    except (OverflowError, OSError, ValueError):
        return None


def percentiles(samples: Sequence[float]) -> dict | None:
    """Nearest-rank p50/p90/p99 and max of ``samples`` (milliseconds, rounded to µs)."""
    n = len(samples)
    if not n:
        return None
    ordered = sorted(samples)

    def rank(p: int) -> float:
        return round(ordered[max(0, math.ceil(p * n / 100) - 1)], 3)

    return {"count": n, "p50_ms": rank(50), "p90_ms": rank(90), "p99_ms": rank(99), "max_ms": round(ordered[-1], 3)}


class _Items:
    """A capped list that still counts everything."""

    __slots__ = ("count", "items", "limit")

    def __init__(self, limit: int) -> None:
        self.items: list[dict] = []
        self.count = 0
        self.limit = limit

    def add(self, item: dict) -> None:
        self.count += 1
        if len(self.items) < self.limit:
            self.items.append(item)

    def to_dict(self, items: list[dict] | None = None) -> dict:
        kept = self.items if items is None else items
        return {"count": self.count, "items": kept, "omitted": self.count - len(kept)}


class _Tool:
    __slots__ = (
        "bypassed",
        "called",
        "failed",
        "ok",
        "post_ms",
        "refused",
        "refused_by",
        "refused_by_gate",
        "result_ns",
        "unknown",
    )

    def __init__(self) -> None:
        self.called = self.ok = self.failed = self.unknown = self.refused = self.bypassed = 0
        self.refused_by: dict[str, int] = {}
        self.refused_by_gate: dict[str, int] = {}
        self.result_ns = array("q")  # tool.result.duration_ns samples
        self.post_ms = array("d")  # tool.invocation.post.latency_ms samples

    def latency(self) -> dict | None:
        if self.result_ns:
            block = percentiles([ns / 1e6 for ns in self.result_ns])
            assert block is not None
            block["source"] = "tool.result.duration_ns"
            return block
        block = percentiles(self.post_ms)
        if block is not None:
            block["source"] = "tool.invocation.post.latency_ms"
        return block


class _Provider:
    __slots__ = ("prompt_chars", "prompts", "responses", "timed_out")

    def __init__(self) -> None:
        self.prompts = self.responses = self.timed_out = self.prompt_chars = 0


def _synthesized(payload: dict) -> bool:
    return payload.get("synthesized") is True


# --- the projection -------------------------------------------------------


class Projector:
    """Fold events into a run report. Feed events in log order; call ``report()`` any time.

    Pairing of opens and closes is the reader's own ``HandleTracker`` (SPEC §4),
    fed here with exactly the events projected, so the report and ``repair``
    agree on what was left open.
    """

    def __init__(self, *, max_items: int = DEFAULT_MAX_ITEMS) -> None:
        self.max_items = max_items
        self.handles = HandleTracker()
        self.events = 0
        self.kinds: dict[str, int] = {}
        self.run_id: str | None = None
        self.head: str | None = None
        self.first_ts: int | None = None
        self.last_ts: int | None = None
        self.run_started: tuple[int, int] | None = None  # (line, timestamp)
        self.close: dict | None = None  # the run's closing event, as a summary
        # steps
        self.steps_started = self.steps_committed = self.steps_rolled_back = self.steps_unpaired_closes = 0
        self.step_outcomes: dict[str, int] = {}
        self.step_durations = array("q")
        self._step_items: dict[str, dict] = {}  # open event id -> item (the first max_items steps)
        # tools, providers
        self.tools: dict[str, _Tool] = {}
        self.providers: dict[str, _Provider] = {}
        self.validated = self.rejected = self.rejected_halting = 0
        self.rejections = _Items(max_items)
        # predicates
        self.predicates: dict[str, dict] = {}
        self.predicate_evaluations = 0
        self.failing_at_completion: list[str] | None = None
        # handshakes
        self.handshakes_requested = 0
        self.handshake_status: dict[str, int] = {}
        # sandbox
        self.sandbox_granted = self.sandbox_denied = self.env_scrubbed = self.scrubbed_total = 0
        self.never_passthrough_total = self.credential_unblocked_total = 0
        self.unenforced = _Items(max_items)
        self.never_passthrough = _Items(max_items)
        self.credential_unblocked = _Items(max_items)
        # reaps, assumptions, budgets, errors, synthesized closes
        self.reap_reasons: dict[str, int] = {}
        self.reaps = _Items(max_items)
        self.assumptions = {"proposed": 0, "accepted": 0, "discharged": 0}
        self.violated = _Items(max_items)
        self.budgets = {"declared": 0, "clamp_refused": 0, "adjusted_by_probes": 0, "state_capped": 0}
        self.exceeded = _Items(max_items)
        self.error_kinds: dict[str, int] = {}
        self.errors = _Items(max_items)
        self.synthesized = _Items(max_items)
        self.flags = _Items(max_items)
        self._dispatch = {
            "run.started": self._run_started,
            "run.completed": self._run_closed,
            "run.aborted": self._run_closed,
            "step.started": self._step_started,
            "step.committed": self._step_closed,
            "step.rolled_back": self._step_closed,
            "tool.called": self._tool_called,
            "tool.result": self._tool_result,
            "tool.refused": self._tool_refused,
            "tool.invocation.refused": self._tool_gate_refused,
            "tool.invocation.post": self._tool_post,
            "tool.invocation.bypassed": self._tool_bypassed,
            "prompt.sent": self._prompt_sent,
            "response.received": self._response_received,
            "response.validated": self._response_validated,
            "response.rejected": self._response_rejected,
            "predicate.evaluated": self._predicate,
            "handshake.requested": self._handshake_requested,
            "handshake.resolved": self._handshake_resolved,
            "sandbox.granted": self._sandbox_granted,
            "sandbox.denied": self._sandbox_denied,
            "sandbox.unenforced": self._sandbox_unenforced,
            "sandbox.env_scrubbed": self._env_scrubbed,
            "process.reaped": self._reaped,
            "assumption.proposed": self._assumption,
            "assumption.accepted": self._assumption,
            "assumption.discharged": self._assumption,
            "assumption.violated": self._assumption_violated,
            "budget.declared": self._budget,
            "budget.clamp_refused": self._budget,
            "budget.adjusted_by_probes": self._budget,
            "state.budget_capped": self._budget,
            "budget.exceeded": self._budget_exceeded,
            "whisperer.contract_violation": self._simple_flag,
            "substrate.subagent.pid_reuse_detected": self._simple_flag,
            "runtime.run_id.env_stripped_from_parent": self._simple_flag,
            "sidecar.header.mismatch_refused": self._simple_flag,
            "manifest.ledger.refused": self._simple_flag,
        }

    # -- feeding --

    def feed(self, event: dict, line: int = 0, offset: int = 0) -> None:
        """Fold one envelope-valid event (as the reader yields it) into the report."""
        kind = event["kind"]
        ts = event["timestamp_ns"]
        self.events += 1
        kinds = self.kinds
        n = kinds.get(kind)
        if n is None:
            _count(kinds, _label(kind))
        else:
            kinds[kind] = n + 1
        if self.run_id is None:
            self.run_id = event["run_id"]
        self.head = event.get("hash")
        if self.first_ts is None or ts < self.first_ts:
            self.first_ts = ts
        if self.last_ts is None or ts > self.last_ts:
            self.last_ts = ts
        payload = event["payload"]
        paired = None
        if kind in _PAIRED_KINDS:
            paired = self.handles.feed(event, line, offset)
            if kind in _CLOSE_KINDS and payload.get("synthesized") is True:
                self._synthesized_close(event, payload, kind, line)
        handler = self._dispatch.get(kind)
        if handler is not None:
            handler(event, payload, line, ts, paired)
        elif kind.endswith("_error"):
            self._error_event(event, payload, line)

    def _synthesized_close(self, event: dict, payload: dict, kind: str, line: int) -> None:
        reason = _text(payload.get("reason"))
        self.synthesized.add(
            {
                "line": line,
                "event_id": event["id"],
                "kind": kind,
                "source_event_id": _text(payload.get("source_event_id")),
                "reason": reason,
            }
        )
        self._flag("SYNTHESIZED_CLOSE", line, event, f"{kind} synthesized by repair ({reason or 'no reason'})")

    def _flag(self, code: str, line: int | None, event: dict | None, message: str, source: str = "log") -> None:
        self.flags.add(
            {
                "code": code,
                "source": source,
                "line": line,
                "event_id": event["id"] if event is not None else None,
                "kind": event["kind"] if event is not None else None,
                "message": message,
            }
        )

    # run
    def _run_started(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        if self.run_started is None:
            self.run_started = (line, ts)

    def _run_closed(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        kind = event["kind"]
        synthesized = _synthesized(payload)
        self.close = {
            "closed_by": kind,
            "line": line,
            "event_id": event["id"],
            "timestamp_ns": ts,
            "synthesized": synthesized,
            "final_decision": _text(payload.get("final_decision")),
            "termination_cause": _text(payload.get("termination_cause")),
            "reason": _text(payload.get("reason")),
            "reported_duration_ns": _int(payload.get("duration_ns")),
        }
        if kind == "run.completed" and not synthesized:
            failing = sorted(pid for pid, p in self.predicates.items() if p["required"] is True and p["ok"] is False)
            self.failing_at_completion = failing
            if failing:
                shown = ", ".join(failing[:10]) + (f" and {len(failing) - 10} more" if len(failing) > 10 else "")
                self._flag(
                    "GATE_INCONSISTENT", line, event, f"run completed while required predicate(s) failed: {shown}"
                )

    # steps
    def _step_started(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        self.steps_started += 1
        if len(self._step_items) < self.max_items:
            self._step_items[event["id"]] = {
                "step_id": event.get("step_id"),
                "line": line,
                "status": "open",
                "outcome": None,
                "reason": None,
                "close_line": None,
                "duration_ns": None,
                "synthesized": False,
            }

    def _step_closed(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        committed = event["kind"] == "step.committed"
        if committed:
            self.steps_committed += 1
        else:
            self.steps_rolled_back += 1
        outcome = _label(payload.get("outcome"))
        _count(self.step_outcomes, outcome)
        if paired is None:
            self.steps_unpaired_closes += 1
            return
        duration = ts - paired.event["timestamp_ns"]
        self.step_durations.append(duration)
        item = self._step_items.get(paired.event_id)
        if item is not None:
            item.update(
                status="committed" if committed else "rolled_back",
                outcome=_text(payload.get("outcome")),
                reason=_text(payload.get("reason")),
                close_line=line,
                duration_ns=duration,
                synthesized=_synthesized(payload),
            )

    # tools
    def _tool(self, name: object) -> _Tool:
        return _bucket(self.tools, _label(name), _Tool)

    def _tool_called(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._tool(payload.get("tool")).called += 1

    def _tool_result(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        tool = self._tool(payload.get("tool"))
        ok = payload.get("ok")
        if ok is True:
            tool.ok += 1
        elif ok is False:
            tool.failed += 1
        else:
            tool.unknown += 1  # a synthesized close (status "unknown") or no ok at all
        duration = _int(payload.get("duration_ns"))
        if duration is not None and duration >= 0:
            tool.result_ns.append(duration)

    def _tool_refused(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        tool = self._tool(payload.get("tool"))
        tool.refused += 1
        _count(tool.refused_by, _label(payload.get("refused_by")))

    def _tool_gate_refused(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        tool = self._tool(payload.get("tool_id"))
        tool.refused += 1
        _count(tool.refused_by_gate, _label(payload.get("gate")))

    def _tool_post(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        latency = _num(payload.get("latency_ms"))
        if latency is not None and latency >= 0:
            self._tool(payload.get("tool_id")).post_ms.append(float(latency))

    def _tool_bypassed(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._tool(payload.get("tool_id")).bypassed += 1

    # provider I/O
    def _provider(self, name: object) -> _Provider:
        return _bucket(self.providers, _label(name), _Provider)

    def _prompt_sent(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        provider = self._provider(payload.get("provider"))
        provider.prompts += 1
        chars = _int(payload.get("prompt_chars"))
        if chars is not None and chars > 0:
            provider.prompt_chars = _sum(provider.prompt_chars, chars)

    def _response_received(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        provider = self._provider(payload.get("provider"))
        if payload.get("status") == "timed_out" or _synthesized(payload):
            provider.timed_out += 1
        else:
            provider.responses += 1

    def _response_validated(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        self.validated += 1

    def _response_rejected(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        self.rejected += 1
        halting = payload.get("should_halt") is True
        if halting:
            self.rejected_halting += 1
        self.rejections.add(
            {
                "line": line,
                "step_id": event.get("step_id"),
                "error": _text(payload.get("error")),
                "attempt": _int(payload.get("attempt")),
                "should_halt": halting,
            }
        )

    # predicates
    def _predicate(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        self.predicate_evaluations += 1
        key = _label(payload.get("predicate_id"))
        previous = self.predicates.get(key)
        if previous is None and len(self.predicates) >= MAX_KEYS:
            key, previous = OTHER, self.predicates.get(OTHER)
        required, ok = payload.get("required"), payload.get("ok")
        self.predicates[key] = {
            "kind": _text(payload.get("kind")),
            "required": required if type(required) is bool else None,
            "ok": ok if type(ok) is bool else None,
            "reason": _text(payload.get("reason")),
            "line": line,
            "evaluations": (previous["evaluations"] if previous else 0) + 1,
        }

    # handshakes
    def _handshake_requested(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        self.handshakes_requested += 1

    def _handshake_resolved(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        if payload.get("resolution") == "interrupted" or _synthesized(payload):
            _count(self.handshake_status, "interrupted")
        else:
            _count(self.handshake_status, _label(payload.get("status")))

    # sandbox
    def _sandbox_granted(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        self.sandbox_granted += 1

    def _sandbox_denied(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        self.sandbox_denied += 1

    def _sandbox_unenforced(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        reason = _text(payload.get("reason"))
        self.unenforced.add(
            {
                "line": line,
                "event_id": event["id"],
                "step_id": event.get("step_id"),
                "manifest_digest": _text(payload.get("manifest_digest")),
                "reason": reason,
            }
        )
        self._flag("SANDBOX_UNENFORCED", line, event, f"sandbox not enforced: {reason or 'no reason given'}")

    def _env_scrubbed(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        self.env_scrubbed += 1
        scrubbed = _int(payload.get("scrubbed_count"))
        if scrubbed is not None and scrubbed > 0:
            self.scrubbed_total = _sum(self.scrubbed_total, scrubbed)
        denied = _int(payload.get("never_passthrough_denied"))
        unblocked = _int(payload.get("credential_shaped_unblocked_count"))
        backend = _text(payload.get("backend"))
        if denied is not None and denied > 0:
            self.never_passthrough_total = _sum(self.never_passthrough_total, denied)
            self.never_passthrough.add({"line": line, "event_id": event["id"], "count": denied, "backend": backend})
            self._flag(
                "NEVER_PASSTHROUGH_DENIED",
                line,
                event,
                f"never_passthrough_denied = {denied}: the manifest declared a credential-shaped name",
            )
        if unblocked is not None and unblocked > 0:
            self.credential_unblocked_total = _sum(self.credential_unblocked_total, unblocked)
            self.credential_unblocked.add(
                {"line": line, "event_id": event["id"], "count": unblocked, "backend": backend}
            )
            self._flag(
                "CREDENTIAL_SHAPED_UNBLOCKED",
                line,
                event,
                f"credential_shaped_unblocked_count = {unblocked}: credential-shaped names passed through",
            )

    # process reaps
    def _reaped(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        reason = _label(payload.get("reason"))
        _count(self.reap_reasons, reason)
        self.reaps.add(
            {
                "line": line,
                "step_id": event.get("step_id"),
                "pid": _int(payload.get("pid")),
                "argv0": _text(payload.get("argv0")),
                "reason": _text(payload.get("reason")),
                "reap_latency_ms": _int(payload.get("reap_latency_ms")),
            }
        )

    # assumptions
    def _assumption(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        self.assumptions[event["kind"].rpartition(".")[2]] += 1

    def _assumption_violated(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        aid, root = _text(payload.get("assumption_id")), _text(payload.get("root_id"))
        self.violated.add({"line": line, "event_id": event["id"], "assumption_id": aid, "root_id": root})
        self._flag("ASSUMPTION_VIOLATED", line, event, f"assumption {aid or '?'} violated (root {root or '?'})")

    # budgets
    def _budget(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        key = {
            "budget.declared": "declared",
            "budget.clamp_refused": "clamp_refused",
            "budget.adjusted_by_probes": "adjusted_by_probes",
            "state.budget_capped": "state_capped",
        }
        self.budgets[key[event["kind"]]] += 1

    def _budget_exceeded(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        item = {
            "line": line,
            "event_id": event["id"],
            "function": _text(payload.get("function")),
            "section_name": _text(payload.get("section_name")),
            "delta": _int(payload.get("delta")),
            "boundary": _text(payload.get("boundary")),
        }
        self.exceeded.add(item)
        self._flag(
            "BUDGET_EXCEEDED",
            line,
            event,
            f"budget exceeded: {item['function'] or '?'}/{item['section_name'] or '?'} "
            f"by {item['delta'] if item['delta'] is not None else '?'} ({item['boundary'] or '?'})",
        )

    # *_error kinds
    def _error_event(self, event: dict, payload: dict, line: int) -> None:
        kind = _label(event["kind"])
        _count(self.error_kinds, kind)
        item = {
            "line": line,
            "event_id": event["id"],
            "kind": kind,
            "error_kind": _text(payload.get("error_kind")),
            "message": _text(payload.get("message")),
        }
        if "index" in payload:
            item["index"] = _text(payload.get("index"))
        self.errors.add(item)
        self._flag("ERROR_EVENT", line, event, f"{kind}: {item['error_kind'] or '?'}: {item['message'] or ''}")

    # other auditor signals
    _SIMPLE_FLAGS = {
        "whisperer.contract_violation": ("WHISPERER_CONTRACT_VIOLATION", "trigger"),
        "substrate.subagent.pid_reuse_detected": ("PID_REUSE_DETECTED", "stored_pid"),
        "runtime.run_id.env_stripped_from_parent": ("RUN_ID_ENV_STRIPPED", "stripped_key"),
        "sidecar.header.mismatch_refused": ("SIDECAR_MISMATCH_REFUSED", "path"),
        "manifest.ledger.refused": ("MANIFEST_LEDGER_REFUSED", "reason"),
    }

    def _simple_flag(self, event: dict, payload: dict, line: int, ts: int, paired: OpenHandle | None) -> None:
        code, key = self._SIMPLE_FLAGS[event["kind"]]
        value = payload.get(key)
        shown = _text(value) if type(value) is str else _int(value)
        self._flag(code, line, event, f"{event['kind']} ({key}: {shown if shown is not None else '?'})")

    # -- the report --

    @property
    def status(self) -> str:
        """SPEC §7 status; precedence: unknown (nothing projected) > repaired > completed/aborted > open."""
        if self.events == 0:
            return "unknown"
        if self.handles.synthesized_closes:
            return "repaired"
        if self.close is not None:
            return "completed" if self.close["closed_by"] == "run.completed" else "aborted"
        return "open"

    def report(self) -> dict:
        """The projection so far, as a JSON-ready dict (see docs/project.md)."""
        open_handles = self.handles.open_handles()
        flags = _Items(self.max_items)
        flags.items, flags.count = list(self.flags.items), self.flags.count
        open_steps, open_tools, open_prompts, pending = [], {}, {}, []
        for h in open_handles:
            if h.kind == "run.started":
                continue
            payload = h.event["payload"]
            if h.kind == "step.started":
                open_steps.append(h)
            elif h.kind == "tool.called":
                name = _label(payload.get("tool"))
                open_tools[name] = open_tools.get(name, 0) + 1
            elif h.kind == "prompt.sent":
                name = _label(payload.get("provider"))
                open_prompts[name] = open_prompts.get(name, 0) + 1
            elif h.kind == "handshake.requested":
                pending.append(
                    {
                        "line": h.line,
                        "event_id": h.event_id,
                        "milestone_id": _text(payload.get("milestone_id")),
                        "description": _text(payload.get("description")),
                    }
                )
            flags.add(
                {
                    "code": "OPEN_HANDLE",
                    "source": "log",
                    "line": h.line,
                    "event_id": h.event_id,
                    "kind": h.kind,
                    "message": f"{h.kind} was never closed",
                }
            )
        if self.events and not self.handles.run_is_closed:
            start = self.handles.run_started
            flags.add(
                {
                    "code": "OPEN_RUN",
                    "source": "log",
                    "line": start.line if start else None,
                    "event_id": start.event_id if start else None,
                    "kind": "run.started" if start else None,
                    "message": "run was never closed (no run.completed or run.aborted)",
                }
            )

        start_ns = self.run_started[1] if self.run_started else self.first_ts
        end_ns = self.close["timestamp_ns"] if self.close else self.last_ts
        duration = end_ns - start_ns if start_ns is not None and end_ns is not None else None
        handshake_status = dict(self.handshake_status)
        if pending:
            handshake_status["pending"] = len(pending)

        tools = {}
        totals = {"called": 0, "ok": 0, "failed": 0, "unknown": 0, "refused": 0, "bypassed": 0, "open": 0}
        for name in sorted(set(self.tools) | set(open_tools)):
            t = self.tools.get(name) or _Tool()
            row = {
                "called": t.called,
                "ok": t.ok,
                "failed": t.failed,
                "unknown": t.unknown,
                "refused": t.refused,
                "bypassed": t.bypassed,
                "open": open_tools.get(name, 0),
            }
            for key, value in row.items():
                totals[key] += value
            row["refused_by"] = dict(sorted(t.refused_by.items()))
            row["refused_by_gate"] = dict(sorted(t.refused_by_gate.items()))
            row["latency"] = t.latency()
            tools[name] = row

        providers = {}
        for name in sorted(set(self.providers) | set(open_prompts)):
            p = self.providers.get(name) or _Provider()
            providers[name] = {
                "prompts": p.prompts,
                "responses": p.responses,
                "timed_out": p.timed_out,
                "open": open_prompts.get(name, 0),
                "prompt_chars": p.prompt_chars,
            }

        steps_items = list(self._step_items.values())
        step_block = percentiles([d / 1e6 for d in self.step_durations])
        if step_block is not None:
            step_block["total_ms"] = round(sum(self.step_durations) / 1e6, 3)

        close = self.close
        return {
            "run_id": self.run_id,
            "status": self.status,
            "outcome": {
                "closed_by": close["closed_by"] if close else None,
                "line": close["line"] if close else None,
                "synthesized": close["synthesized"] if close else False,
                "final_decision": close["final_decision"] if close else None,
                "termination_cause": close["termination_cause"] if close else None,
                "reason": close["reason"] if close else None,
                "reported_duration_ns": close["reported_duration_ns"] if close else None,
            },
            "timing": {
                "start_ns": start_ns,
                "end_ns": end_ns,
                "duration_ns": duration,
                "start": iso(start_ns),
                "end": iso(end_ns),
            },
            "events": self.events,
            "events_by_kind": dict(sorted(self.kinds.items())),
            "steps": {
                "started": self.steps_started,
                "committed": self.steps_committed,
                "rolled_back": self.steps_rolled_back,
                "open": len(open_steps),
                "unpaired_closes": self.steps_unpaired_closes,
                "by_outcome": dict(sorted(self.step_outcomes.items())),
                "duration": step_block,
                "items": steps_items,
                "omitted": self.steps_started - len(steps_items),
            },
            "tools": {"by_tool": tools, "totals": totals},
            "providers": {
                "by_provider": providers,
                "validated": self.validated,
                "rejected": self.rejected,
                "rejected_halting": self.rejected_halting,
                "rejections": self.rejections.to_dict(),
            },
            "predicates": {
                "evaluations": self.predicate_evaluations,
                "latest": {k: dict(v) for k, v in sorted(self.predicates.items())},
                "failing_required": sorted(
                    k for k, v in self.predicates.items() if v["required"] is True and v["ok"] is False
                ),
                "failing_required_at_completion": self.failing_at_completion,
                "gate_inconsistent": bool(self.failing_at_completion),
            },
            "handshakes": {
                "requested": self.handshakes_requested,
                "by_status": dict(sorted(handshake_status.items())),
                "pending": pending,
            },
            "sandbox": {
                "granted": self.sandbox_granted,
                "denied": self.sandbox_denied,
                "env_scrubbed": self.env_scrubbed,
                "scrubbed_total": self.scrubbed_total,
                "unenforced": self.unenforced.to_dict(),
                "never_passthrough_denied": dict(self.never_passthrough.to_dict(), total=self.never_passthrough_total),
                "credential_shaped_unblocked": dict(
                    self.credential_unblocked.to_dict(), total=self.credential_unblocked_total
                ),
            },
            "process_reaps": dict(self.reaps.to_dict(), by_reason=dict(sorted(self.reap_reasons.items()))),
            "assumptions": dict(self.assumptions, violated=self.violated.to_dict()),
            "budgets": dict(self.budgets, exceeded=self.exceeded.to_dict()),
            "errors": dict(self.errors.to_dict(), by_kind=dict(sorted(self.error_kinds.items()))),
            "synthesized_closes": self.synthesized.to_dict(),
            "audit_flags": flags.to_dict(sorted(flags.items, key=_flag_order)),
        }


def _flag_order(flag: dict) -> tuple:
    return (flag["line"] if flag["line"] is not None else 0, flag["code"] != "UNTRUSTED", flag["code"])


def project_events(events: Iterable[dict], *, max_items: int = DEFAULT_MAX_ITEMS) -> dict:
    """Project a sequence of event dicts (no verification): the pure core, for replay and tests."""
    projector = Projector(max_items=max_items)
    for line, event in enumerate(events, start=1):
        projector.feed(event, line)
    return projector.report()


# --- one log, many logs ---------------------------------------------------


class _Tail:
    """What the unverified part of a log claims: tallied, never projected."""

    def __init__(self) -> None:
        self.events = 0
        self.kinds: dict[str, int] = {}
        self.close: dict | None = None
        self.last_ts: int | None = None

    def feed(self, event: dict, line: int) -> None:
        self.events += 1
        kind = event["kind"]
        _count(self.kinds, _label(kind))
        ts = event["timestamp_ns"]
        self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)
        if kind in ("run.completed", "run.aborted"):
            payload = event["payload"]
            self.close = {
                "closed_by": kind,
                "line": line,
                "synthesized": _synthesized(payload),
                "final_decision": _text(payload.get("final_decision")),
                "termination_cause": _text(payload.get("termination_cause")),
            }


def project_file(
    path: str | os.PathLike[str], options: ProjectOptions = ProjectOptions(), *, display_path: str | None = None
) -> dict:
    """Read one log through the chain reader and project it; the report dict of docs/project.md."""
    shown = display_path if display_path is not None else str(path)
    reader = ChainReader(
        path,
        schema_version=options.schema_version,
        require_closed=options.require_closed,
        max_line_bytes=options.max_line_bytes,
        max_findings=options.max_items,
        display_path=shown,
        dialect=options.dialect,
    )
    if reader.dialect == "raxol":  # a Raxol agent journal (SPEC §8): its own report, docs/raxol.md
        reader.read_all()
        return journal_report(reader, shown, max_items=options.max_items)
    projector = Projector(max_items=options.max_items)
    tail = _Tail()
    feed, tail_feed = projector.feed, tail.feed
    for ev in reader:
        if ev.trusted:
            feed(ev.event, ev.line, ev.offset)
        else:
            tail_feed(ev.event, ev.line)
    return _finish(projector.report(), reader, tail, shown, projector)


def _finish(report: dict, reader: ChainReader, tail: _Tail, path: str, projector: Projector) -> dict:
    state = reader.state
    broken = reader.broken_at
    flags = report["audit_flags"]
    extra: list[dict] = []
    if broken is not None:
        first = next((f for f in state.findings if f.is_integrity_failure), None)  # at broken or the line after
        what = f"{first.code}: {first.message}" if first else "integrity failure"
        extra.append(
            {
                "code": "UNTRUSTED",
                "source": "verify",
                "line": broken,
                "event_id": first.event_id if first else None,
                "kind": None,
                "message": f"not verified from line {broken} on ({what}); the report covers lines before it",
            }
        )
    for f in state.findings:
        if (f.severity == ERROR and f.code not in ("OPEN_RUN",)) or f.code in _FLAGGED_WARNINGS:
            extra.append(
                {
                    "code": f.code,
                    "source": "verify",
                    "line": f.line,
                    "event_id": f.event_id,
                    "kind": None,
                    "message": f.message,
                }
            )
    if broken is not None:
        # "never closed" is an artifact of cutting the log at the break: the tail may close it
        kept = [f for f in flags["items"] if f["code"] not in ("OPEN_RUN", "OPEN_HANDLE")]
        flags = {
            "count": flags["count"] - (len(flags["items"]) - len(kept)),
            "items": kept,
            "omitted": flags["omitted"],
        }
    if extra or broken is not None:
        items = sorted(flags["items"] + extra, key=_flag_order)
        kept = items[: projector.max_items]
        flags = {
            "count": flags["count"] + len(extra),
            "items": kept,
            "omitted": flags["count"] + len(extra) - len(kept),
        }
    exit_code = state.exit_code
    untrusted = None
    if broken is not None:
        untrusted = {
            "from_line": broken,
            "events": tail.events,
            "events_by_kind": dict(sorted(tail.kinds.items())),
            "claimed_close": tail.close,
            "claimed_last_ns": tail.last_ts,
        }
    result = {
        "report_version": REPORT_VERSION,
        "path": path,
        "exit_code": int(exit_code),
        "exit_name": exit_code.name,
        "trusted": broken is None,
        "untrusted_from_line": broken,
        "untrusted": untrusted,
        "chain": {
            "head": state.head,
            "verified_head": projector.head,
            "events": state.events,
            "verified_events": projector.events,
            "first_ns": projector.first_ts,
            "last_ns": projector.last_ts,
            "first": iso(projector.first_ts),
            "last": iso(projector.last_ts),
        },
        "findings": [f.to_dict() for f in state.findings],
        "suppressed_findings": state.suppressed,
    }
    report.update(result)
    if report["run_id"] is None:
        report["run_id"] = state.run_id
    report["audit_flags"] = flags
    return report


@dataclass
class ProjectResult:
    """Reports for every log found, plus path-level findings (a missing path...)."""

    runs: list[dict] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    detailed: bool = True  # one log given as a file: render it in detail; else a fleet summary

    @property
    def exit_code(self) -> ExitCode:
        """SPEC §3: the lowest non-zero code over every file and path."""
        return lowest_nonzero([*(r["exit_code"] for r in self.runs), *(f.exit_code for f in self.findings)])

    def totals(self) -> dict:
        by_status: dict[str, int] = {}
        for r in self.runs:
            by_status[r["status"]] = by_status.get(r["status"], 0) + 1
        return {
            "runs": len(self.runs),
            "by_status": dict(sorted(by_status.items())),
            "untrusted": sum(1 for r in self.runs if not r["trusted"]),
            "flagged": sum(1 for r in self.runs if r["audit_flags"]["count"]),
            "events": sum(r["chain"]["events"] for r in self.runs),
        }

    def to_dict(self) -> dict:
        """JSON shape: the run report itself when detailed, else ``{"runs": [...], ...}``."""
        if self.detailed and len(self.runs) == 1 and not self.findings:
            return self.runs[0]
        return {
            "report_version": REPORT_VERSION,
            "exit_code": int(self.exit_code),
            "runs": self.runs,
            "totals": self.totals(),
            "findings": [f.to_dict() for f in self.findings],
        }


def project_paths(paths: Sequence[str | os.PathLike[str]], options: ProjectOptions = ProjectOptions()) -> ProjectResult:
    """Project every log under the given files and directories (SPEC §7)."""
    found = discover(paths, suffixes=discovery_suffixes(options.dialect))
    detailed = len(paths) == 1 and not os.path.isdir(paths[0])
    result = ProjectResult(findings=list(found.findings), detailed=detailed)
    for path in found.files:
        result.runs.append(project_file(path, options))
    return result
