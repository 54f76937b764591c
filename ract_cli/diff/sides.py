"""Reading both sides of a diff, and the walk over their alignment that turns it into entries."""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ract_cli.dialects import ChainReader
from ract_cli.diff.align import DEFAULT_MAX_EDITS, DEFAULT_MAX_WORK, DEFAULT_WINDOW
from ract_cli.diff.normalise import Normaliser
from ract_cli.diff.pairing import Pairing, pair_kinds
from ract_cli.diff.references import Labels, References
from ract_cli.diff.result import (
    CHANGED,
    DELETED,
    INSERTED,
    SideReport,
)
from ract_cli.diff.rules import FieldPolicy
from ract_cli.diff.slide import Segment, Slider
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION

DEFAULT_MAX_ENTRIES = 1000
DEFAULT_MAX_FINDINGS = 100


@dataclass(frozen=True)
class DiffOptions:
    """How ``diff_logs`` reads and compares (the CLI's options, docs/diff.md)."""

    schema_version: int = LATEST_SCHEMA_VERSION
    max_line_bytes: int | None = None  # None: the reader's default
    dialect: str = "auto"
    ignore: tuple[str, ...] = ()
    compare: tuple[str, ...] = ()
    ignore_snapshots: bool = False
    max_edits: int = DEFAULT_MAX_EDITS
    max_work: int = DEFAULT_MAX_WORK
    window: int = DEFAULT_WINDOW
    max_entries: int = DEFAULT_MAX_ENTRIES
    max_findings: int = DEFAULT_MAX_FINDINGS

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "dialect": self.dialect,
            "ignore": list(self.ignore),
            "compare": list(self.compare),
            "ignore_snapshots": self.ignore_snapshots,
        }


# --- reading -------------------------------------------------------------------


def _open(path: str | os.PathLike[str], display: str, options: DiffOptions, dialect: str) -> ChainReader:
    kwargs: dict[str, Any] = {
        "schema_version": options.schema_version,
        "max_findings": options.max_findings,
        "dialect": dialect,
        "display_path": display,
    }
    if options.max_line_bytes is not None:
        kwargs["max_line_bytes"] = options.max_line_bytes
    return ChainReader(path, **kwargs)


class _Side:
    """Pass one over a log: what the alignment and the report need, and nothing of the payloads."""

    def __init__(self, reader: ChainReader) -> None:
        self.reader = reader
        self.keys = array("Q")
        self.lines = array("Q")
        self.offsets = array("Q")
        self.kinds = array("I")
        self.refs: list[tuple[int, ...]] = []  # per event: (label, target, text hash, label, ...): see Labels
        self.run_id: str | None = None
        self.excluded = 0
        self.untrusted = 0

    def __len__(self) -> int:
        return len(self.keys)

    def read(self, policy: FieldPolicy, interned: _Interned, labels: Labels) -> None:
        normaliser = Normaliser(policy)
        for ev in self.reader:
            if not ev.trusted:
                self.untrusted += 1
                continue
            kind = ev.kind
            if policy.excluded(kind):
                self.excluded += 1
                continue
            n = normaliser.feed(kind, ev.event, ev.payload)
            self.keys.append(n.key)
            self.lines.append(ev.line)
            self.offsets.append(ev.offset)
            self.kinds.append(interned.kind(kind))
            self.refs.append(labels.flatten(n.refs))
        self.run_id = normaliser.run_id

    def report(self) -> SideReport:
        r = self.reader
        return SideReport(
            path=r.display_path,
            dialect=r.dialect,
            run_id=self.run_id,
            events=len(self),
            excluded=self.excluded,
            untrusted=self.untrusted,
            exit_code=r.exit_code,
            findings=list(r.findings),
            suppressed=int(getattr(r.state, "suppressed", 0)),
            untrusted_from_line=r.broken_at,
        )


class _Interned:
    """Kinds as small integers, shared by both logs."""

    def __init__(self) -> None:
        self.kind_names: list[str] = []
        self._kinds: dict[str, int] = {}

    def kind(self, name: str) -> int:
        index = self._kinds.get(name)
        if index is None:
            index = self._kinds[name] = len(self.kind_names)
            self.kind_names.append(name)
        return index


# --- the alignment, turned into entries -------------------------------------------


@dataclass(slots=True)
class _Raw:
    """An entry before its fields are known: 0-based positions in each log."""

    op: str
    kind: int
    i: int | None
    j: int | None
    pos_a: int  # where in A this entry stands (i, or the next A event for an insertion)
    pos_b: int
    bad_refs: tuple[int, ...] = ()  # changed: the reference labels that disagree


class _Walk:
    """Turn the alignment into counts and entries, checking references on every aligned pair.

    ``plan`` groups the opcodes into equal stretches and hunks, pairs the
    events of each hunk that share a kind (changed events: ``pair_kinds``,
    once per hunk, kept until ``run`` counts it) and fills the ``a2b`` /
    ``b2a`` maps; ``run`` then counts in alignment order, checking
    every aligned pair's references, and moves each pure insertion or
    deletion that can slide to where references line up just before it
    reaches it.
    """

    def __init__(self, a: _Side, b: _Side, interned: _Interned, labels: Labels, max_entries: int) -> None:
        self.a, self.b, self.interned = a, b, interned
        self.a2b = array("q", [-1]) * len(a)
        self.b2a = array("q", [-1]) * len(b)
        self.references = References(labels, self.a2b)
        self.segments: list[Segment] = []
        self.pairings: dict[int, Pairing] = {}  # segment index -> its hunk's pairing, from plan to run
        self.max_entries = max_entries
        self.equal = 0
        self.counts = {CHANGED: 0, INSERTED: 0, DELETED: 0}
        self.by_kind: dict[str, dict[str, int]] = {}
        self.first: _Raw | None = None
        self.kept: list[_Raw] = []
        self.not_kept = 0

    # -- planning

    def plan(self, opcodes: list[tuple[str, int, int, int, int]]) -> None:
        for tag, a1, a2, b1, b2 in opcodes:
            if tag == "equal":
                self.segments.append(Segment("equal", a1, a2, b1, b2))
            elif self.segments and self.segments[-1].tag == "hunk":
                self.segments[-1].a2, self.segments[-1].b2 = a2, b2
            else:
                self.segments.append(Segment("hunk", a1, a2, b1, b2))
        for k, seg in enumerate(self.segments):
            if seg.tag == "equal":
                for t in range(seg.a2 - seg.a1):
                    self.a2b[seg.a1 + t] = seg.b1 + t
                    self.b2a[seg.b1 + t] = seg.a1 + t
            else:
                pairing = self.pairings[k] = pair_kinds(self.a.kinds[seg.a1 : seg.a2], self.b.kinds[seg.b1 : seg.b2])
                for i, j in self._changed_pairs(seg, pairing):
                    self.a2b[i] = j
                    self.b2a[j] = i

    @staticmethod
    def _changed_pairs(seg: Segment, pairing: Pairing) -> Iterator[tuple[int, int]]:
        for tag, i1, i2, j1, _ in pairing.groups:
            if tag == "equal":
                for t in range(i2 - i1):
                    yield seg.a1 + i1 + t, seg.b1 + j1 + t

    # -- counting

    def _emit(
        self, op: str, kind: int, i: int | None, j: int | None, pos_a: int, pos_b: int, bad: tuple[int, ...] = ()
    ) -> None:
        self.counts[op] += 1
        tally = self.by_kind.setdefault(self.interned.kind_names[kind], {CHANGED: 0, INSERTED: 0, DELETED: 0})
        tally[op] += 1
        raw = _Raw(op, kind, i, j, pos_a, pos_b, bad)
        if self.first is None:
            self.first = raw
        if len(self.kept) < self.max_entries:
            self.kept.append(raw)
        else:
            self.not_kept += 1

    def _pair(self, i: int, j: int, same_key: bool) -> None:
        ra, rb = self.a.refs[i], self.b.refs[j]
        bad = tuple(self.references.disagreeing(ra, rb)) if ra and rb else ()
        if same_key and not bad:
            self.equal += 1
            return
        self._emit(CHANGED, self.a.kinds[i], i, j, i, j, bad)

    def run(self) -> None:
        """Count, in alignment order; each slidable hunk is settled (``Slider``) just before its region."""
        slider = Slider(self.a, self.b, self.a2b, self.b2a, self.references)
        segments = self.segments
        settled: set[int] = set()
        for k, seg in enumerate(segments):
            if seg.tag == "equal":
                done = 0
                if k + 1 < len(segments):
                    left, right = slider.extents(segments, k + 1)
                    if left or right:
                        done = seg.a2 - seg.a1 - left  # the hunk's region starts here
                        for t in range(done):
                            self._pair(seg.a1 + t, seg.b1 + t, True)
                        slider.settle(segments, k + 1, left, right)  # this segment may shrink or grow
                        settled.add(k + 1)
                for t in range(done, seg.a2 - seg.a1):
                    self._pair(seg.a1 + t, seg.b1 + t, True)
                continue
            if k not in settled:
                left, right = slider.extents(segments, k)  # no equal stretch before it: it can only go right
                if right:
                    slider.settle(segments, k, 0, right)
            self._hunk(seg, self.pairings.pop(k))  # counted once: its memory goes with it

    def _hunk(self, seg: Segment, pairing: Pairing) -> None:
        """Count one hunk from its pairing (groups are relative to the hunk: a slide moves a pure hunk
        without changing them)."""
        for tag, i1, i2, j1, j2 in pairing.groups:
            if tag == "equal":
                for t in range(i2 - i1):
                    self._pair(seg.a1 + i1 + t, seg.b1 + j1 + t, False)
                continue
            for i in range(seg.a1 + i1, seg.a1 + i2):
                self._emit(DELETED, self.a.kinds[i], i, None, i, seg.b1 + j1)
            for j in range(seg.b1 + j1, seg.b1 + j2):
                self._emit(INSERTED, self.b.kinds[j], None, j, seg.a1 + i2, j)
