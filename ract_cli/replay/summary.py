"""One event in a line of text, for a replay timeline (SPEC §5): its payload's telling keys.

Everything returned is raw text from the log: escape it before a terminal.
"""

from __future__ import annotations

import re

import orjson

from ract_cli.format.json_types import Event
from ract_cli.read.handles import is_synthesized_close

__all__ = ["SUMMARY_KEYS", "safe_repr", "summarize", "value_key"]

_LONG_HEX = re.compile(r"[0-9a-f]{32,}")
_BARE = re.compile(r"[\w.:/@+\-]+")

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


def safe_repr(value: object) -> str:
    """``repr(value)``, or a placeholder for a value nested too deeply to show."""
    try:
        return repr(value)
    except RecursionError:
        return f"<{type(value).__name__} nested too deeply>"


def value_key(value: object) -> str:
    """A payload value as a dict key (ids are strings; anything else by its JSON text)."""
    if type(value) is str:
        return value
    try:
        return orjson.dumps(value).decode()
    except Exception:
        return safe_repr(value)


def _fmt_value(value: object, limit: int = 60) -> str:
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
        text = safe_repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summarize(event: Event) -> str:
    """A compact one-line summary of an event's payload (raw text: escape it before a terminal).

    Known kinds show their telling keys (``SUMMARY_KEYS``); any other kind
    shows its first scalar keys. ``step.started`` names its step. A
    repair-synthesized close starts with ``[synthesized]``.
    """
    payload = event.get("payload")
    if not isinstance(payload, dict):
        payload = {}
    parts: list[str] = []
    kind = event.get("kind")
    if is_synthesized_close(kind, payload):
        parts.append("[synthesized]")
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
