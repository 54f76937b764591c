"""What ``diff_logs`` returns, and its documented JSON shape (docs/diff.md, "JSON").

Indices are 1-based positions in a log's *compared* sequence (its trusted
events; for a Raxol journal, without ``item_delta`` records); ``line`` is the
1-based line of the file. ``a`` is the first log given, ``b`` the second:
``inserted`` means "in B, not in A", ``deleted`` "in A, not in B".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ract_cli.errors import ExitCode
from ract_cli.findings import Finding

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "DiffResult",
    "Divergence",
    "Entry",
    "EventAt",
    "FieldDiff",
    "SideReport",
    "Target",
]

FORMAT = "ract.diff"
FORMAT_VERSION = 1

CHANGED = "changed"
INSERTED = "inserted"
DELETED = "deleted"
OPS = (CHANGED, INSERTED, DELETED)


@dataclass(slots=True)
class SideReport:
    """One of the two logs: how it read, and how much of it was compared."""

    path: str
    dialect: str
    run_id: str | None
    events: int  # compared events (trusted, durable)
    excluded: int  # Raxol item_delta records left out
    untrusted: int  # events after the first integrity failure: never compared
    exit_code: ExitCode
    findings: list[Finding]
    suppressed: int  # findings past the cap (still counted in exit_code)
    untrusted_from_line: int | None

    @property
    def verified(self) -> bool:
        return self.exit_code == ExitCode.OK

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "dialect": self.dialect,
            "run_id": self.run_id,
            "verified": self.verified,
            "exit_code": int(self.exit_code),
            "exit_name": self.exit_code.name,
            "events": self.events,
            "excluded": self.excluded,
            "untrusted": self.untrusted,
            "untrusted_from_line": self.untrusted_from_line,
            "findings": [f.to_dict() for f in self.findings],
            "findings_not_shown": self.suppressed,
        }


@dataclass(frozen=True, slots=True)
class Target:
    """Where a reference points: an event of its own run, outside the run, or (run ids) this run."""

    side: str  # "a" or "b": whose run the index is in
    index: int | None = None  # 1-based
    line: int | None = None
    outside: bool = False
    this_run: bool = False
    aligned_with: int | None = None  # side "a", event references: the B event aligned with the target
    first_use: bool = False  # a named id (step, call...): the index is the first event that carried it

    def to_dict(self) -> dict[str, Any]:
        if self.outside:
            return {"outside": True}
        if self.this_run:
            return {"this_run": True}
        data: dict[str, Any] = {"index": self.index, "line": self.line}
        if self.first_use:
            data["first_use"] = True
        elif self.side == "a":
            data["aligned_with"] = self.aligned_with
        return data

    def describe(self) -> str:
        if self.outside:
            return "outside the run"
        if self.this_run:
            return "this run"
        if self.first_use:
            return f"first used by event #{self.index} (line {self.line})"
        text = f"event #{self.index} (line {self.line})"
        if self.side != "a":
            return text
        if self.aligned_with is None:
            return f"{text}, aligned with nothing in B"
        return f"{text}, aligned with B #{self.aligned_with}"


_ABSENT = object()


@dataclass(slots=True)
class FieldDiff:
    """One field that differs between two aligned (or facing) events."""

    where: str  # envelope | record | payload
    path: tuple[str, ...]
    a: Any = _ABSENT
    b: Any = _ABSENT
    a_target: Target | None = None  # reference fields only
    b_target: Target | None = None

    @property
    def field(self) -> str:
        return ".".join(self.path)

    @property
    def a_present(self) -> bool:
        return self.a is not _ABSENT

    @property
    def b_present(self) -> bool:
        return self.b is not _ABSENT

    def name(self) -> dict[str, Any]:
        return {"where": self.where, "field": self.field}

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"where": self.where, "field": self.field, "path": list(self.path)}
        if self.a_present:
            data["a"] = self.a
        if self.b_present:
            data["b"] = self.b
        if self.a_target is not None or self.b_target is not None:
            data["reference"] = {
                "a": self.a_target.to_dict() if self.a_target else None,
                "b": self.b_target.to_dict() if self.b_target else None,
            }
        return data


@dataclass(slots=True)
class EventAt:
    """One event of one log, where it is."""

    index: int  # 1-based
    line: int
    offset: int
    kind: str
    event: dict[str, Any]  # the whole envelope (RACT) or record (Raxol), as read

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "line": self.line, "offset": self.offset, "kind": self.kind, "event": self.event}


@dataclass(slots=True)
class Divergence:
    """The first point where the runs part: the events facing each other there, and how they differ.

    ``op`` is what the alignment made of it; ``a`` / ``b`` are the events at
    that point of each log (``None``: that log has ended), ``a_index`` /
    ``b_index`` that point (1-based; one past the end when the log has
    ended).
    """

    op: str
    a_index: int
    b_index: int
    a: EventAt | None
    b: EventAt | None
    fields: list[FieldDiff]

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "a_index": self.a_index,
            "b_index": self.b_index,
            "a": self.a.to_dict() if self.a else None,
            "b": self.b.to_dict() if self.b else None,
            "fields": [f.to_dict() for f in self.fields],
        }


@dataclass(slots=True)
class Entry:
    """One event the runs do not share: changed (aligned, but different), inserted or deleted."""

    op: str
    kind: str
    a_index: int | None  # 1-based; None for an insertion
    a_line: int | None
    b_index: int | None  # None for a deletion
    b_line: int | None
    fields: list[FieldDiff] | None = None  # changed only: what differs (names; values in first_divergence)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "op": self.op,
            "kind": self.kind,
            "a": None if self.a_index is None else {"index": self.a_index, "line": self.a_line},
            "b": None if self.b_index is None else {"index": self.b_index, "line": self.b_line},
        }
        if self.op == CHANGED:
            data["fields"] = [f.name() for f in self.fields or []]
        return data


@dataclass(slots=True)
class DiffResult:
    """``ract trace diff A B`` as data; ``to_dict`` is the documented JSON shape."""

    a: SideReport
    b: SideReport
    exit_code: ExitCode
    compared: bool  # False when a log could not be read at all (IO): no alignment was made
    options: dict[str, Any]
    alignment: dict[str, Any] | None = None
    first: Divergence | None = None
    equal: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OPS, 0))
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    entries: list[Entry] = field(default_factory=list)
    entries_not_shown: int = 0

    @property
    def different(self) -> bool | None:
        """Whether the compared events differ (``None`` when nothing was compared)."""
        return None if not self.compared else any(self.counts.values())

    @property
    def verified(self) -> bool:
        return self.a.verified and self.b.verified

    @property
    def verdict(self) -> str:
        if not self.verified:
            return "unverified"
        return "different" if self.different else "equivalent"

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "verdict": self.verdict,
            "exit_code": int(self.exit_code),
            "exit_name": self.exit_code.name,
            "compared": self.compared,
            "different": self.different,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "options": self.options,
            "alignment": self.alignment,
            "first_divergence": self.first.to_dict() if self.first else None,
            "summary": {
                "equal": self.equal,
                **self.counts,
                "by_kind": {k: dict(v) for k, v in sorted(self.by_kind.items())},
            },
            "entries": [e.to_dict() for e in self.entries],
            "entries_not_shown": self.entries_not_shown,
        }
