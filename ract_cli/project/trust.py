"""Where trust ends: what only the reader knows, added to a projection of the verified prefix.

The projection covers the events before the first integrity failure. The
events from the break on are tallied (``Tail``), never projected; the
reader's findings become ``verify`` flags; and "never closed" flags are
dropped when the log is cut at a break, since the tail may close them.
"""

from __future__ import annotations

from ract_cli.findings import ERROR
from ract_cli.format.json_types import Event, JSONObject, Report
from ract_cli.project.flags import flag_order, make_flag
from ract_cli.project.options import REPORT_VERSION
from ract_cli.project.projector import Projector
from ract_cli.project.tallies import tally
from ract_cli.project.values import is_synthesized, iso, label, text
from ract_cli.read.chain import ChainState
from ract_cli.read.reader import ChainReader

#: reader warnings worth an auditor's look (reader errors are always carried over)
_FLAGGED_WARNINGS = frozenset({"CLOCK_REGRESSION", "RUN_DIR_MISMATCH"})
#: "never closed" flags: an artifact of cutting the log at a break
_OPEN_CODES = ("OPEN_RUN", "OPEN_HANDLE")


class Tail:
    """What the unverified part of a log claims: tallied, never projected."""

    def __init__(self) -> None:
        self.events = 0
        self.kinds: dict[str, int] = {}
        self.close: JSONObject | None = None
        self.last_ts: int | None = None

    def feed(self, event: Event, line: int) -> None:
        self.events += 1
        kind = event["kind"]
        tally(self.kinds, label(kind))
        ts = event["timestamp_ns"]
        self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)
        if kind in ("run.completed", "run.aborted"):
            payload = event["payload"]
            self.close = {
                "closed_by": kind,
                "line": line,
                "synthesized": is_synthesized(payload),
                "final_decision": text(payload.get("final_decision")),
                "termination_cause": text(payload.get("termination_cause")),
            }

    def block(self, broken: int | None) -> JSONObject | None:
        """The report's ``untrusted`` block (None when the whole log verifies)."""
        if broken is None:
            return None
        return {
            "from_line": broken,
            "events": self.events,
            "events_by_kind": dict(sorted(self.kinds.items())),
            "claimed_close": self.close,
            "claimed_last_ns": self.last_ts,
        }


def finish(report: Report, reader: ChainReader, tail: Tail, path: str, projector: Projector) -> Report:
    """Add to ``projector``'s report what the reader knows: trust, findings, exit code, the chain."""
    state: ChainState = reader.state
    broken = reader.broken_at
    exit_code = state.exit_code
    flags = _merged_flags(report["audit_flags"], _verify_flags(state, broken), broken, projector.max_items)
    report.update(
        {
            "report_version": REPORT_VERSION,
            "path": path,
            "exit_code": int(exit_code),
            "exit_name": exit_code.name,
            "trusted": broken is None,
            "untrusted_from_line": broken,
            "untrusted": tail.block(broken),
            "chain": _chain(state, projector),
            "findings": [f.to_dict() for f in state.findings],
            "suppressed_findings": state.suppressed,
        }
    )
    if report["run_id"] is None:
        report["run_id"] = state.run_id
    report["audit_flags"] = flags
    return report


def _verify_flags(state: ChainState, broken: int | None) -> list[JSONObject]:
    """The reader's verdicts as flags: ``UNTRUSTED`` at the break, then its errors and notable warnings."""
    extra: list[JSONObject] = []
    if broken is not None:
        first = next((f for f in state.findings if f.is_integrity_failure), None)  # at broken or the line after
        what = f"{first.code}: {first.message}" if first else "integrity failure"
        message = f"not verified from line {broken} on ({what}); the report covers lines before it"
        extra.append(make_flag("UNTRUSTED", broken, first.event_id if first else None, None, message, "verify"))
    for f in state.findings:
        if (f.severity == ERROR and f.code not in ("OPEN_RUN",)) or f.code in _FLAGGED_WARNINGS:
            extra.append(make_flag(f.code, f.line, f.event_id, None, f.message, "verify"))
    return extra


def _merged_flags(flags: JSONObject, extra: list[JSONObject], broken: int | None, max_items: int) -> JSONObject:
    """The projection's flags with the reader's added, re-sorted and capped again."""
    if broken is not None:
        kept = [f for f in flags["items"] if f["code"] not in _OPEN_CODES]
        flags = {
            "count": flags["count"] - (len(flags["items"]) - len(kept)),
            "items": kept,
            "omitted": flags["omitted"],
        }
    if extra or broken is not None:
        items = sorted(flags["items"] + extra, key=flag_order)
        kept = items[:max_items]
        flags = {
            "count": flags["count"] + len(extra),
            "items": kept,
            "omitted": flags["count"] + len(extra) - len(kept),
        }
    return flags


def _chain(state: ChainState, projector: Projector) -> JSONObject:
    """The report's ``chain`` block: the whole log's head and count beside the verified prefix's."""
    return {
        "head": state.head,
        "verified_head": projector.head,
        "events": state.events,
        "verified_events": projector.events,
        "first_ns": projector.first_ts,
        "last_ns": projector.last_ts,
        "first": iso(projector.first_ts),
        "last": iso(projector.last_ts),
    }
