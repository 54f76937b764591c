"""``project`` folded as the events are verified: in C with the native core (``_core.Fold``).

Folding each event in Python costs five times what verifying it costs in C.
Here the native chain mode folds the kinds each part of the report names
(``fold_rules``: tool calls, prompts, predicates, steps) into groups as it
takes their lines, and the parts apply each group with the code that folds
one event; the kinds the report only counts are counted in C; every other
kind is handed out whole and fed to the projector as before, a kind that
adds to capped lists (``fold_listed``) only until they are full, then
grouped too (``Fold.regroup``). The Python core folds the same way in its
own chain mode (``python_fold``). Pairing is the
reader's own ``HandleTracker`` (with C's pairing inside a block), which a log
whose every event is trusted feeds exactly as the projector would.

Only such a log is folded: at the first line C does not take, a value C does
not compare, a close ``repair`` wrote, or when trust ends anywhere, the fold
gives up and the log is projected again event by event
(``project_file``). ``tests/test_project_fold.py`` holds both to one report.
"""

from __future__ import annotations

from collections.abc import Callable

from ract_cli.format.json_types import Event
from ract_cli.format.kinds import KINDS
from ract_cli.project.grouping import (
    GROUP,
    LEFT,
    STOP,
    Applier,
    Gathered,
    Group,
    Rule,
    counted,
    left,
)
from ract_cli.project.projector import Projector
from ract_cli.project.tallies import tally
from ract_cli.project.values import label
from ract_cli.read import json_text
from ract_cli.read.chain_mode import FoldGaveUp, KindTest
from ract_cli.read.handles import RUN_CLOSES, STEP_CLOSES, OpenHandle
from ract_cli.read.reader import ChainReader

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import Any

    from ract_cli.project.python_fold import Folder

#: C pauses once it holds this many groups (and they are applied): bounded memory, few pauses on real logs
MAX_GROUPS = 4096


class FoldedProjection:
    """The sink of ``ChainReader.fold``: what C folded, applied to a ``Projector`` sharing the reader's tracker."""

    close_kinds = STEP_CLOSES  # a step close paired in Python: timed here

    def __init__(self, projector: Projector) -> None:
        self.projector = projector
        self.max_items = min(projector.max_items, 2**62)  # (C counts in 64 bits: a larger cap is never reached)
        self.max_groups = MAX_GROUPS
        self._apply: dict[str, Applier] = {}
        p = projector
        grouped: dict[str, Rule] = {}
        for part in (p.tools, p.providers, p.predicates, p.steps, p.handshakes, p.sandbox, p.signals):
            for kind, (rule, apply) in part.fold_rules().items():
                grouped[kind] = rule
                self._apply[kind] = apply
        #: a listed kind -> whether its lists are full: it is left to Python until then, then grouped
        self._full: dict[str, Callable[[], bool]] = {}
        self.regrouped: list[str] = []  # the listed kinds grouped from some line on, in that order
        for listed in (p.providers.fold_listed(), p.sandbox.fold_listed(), p.signals.fold_listed(p.error_kinds())):
            for kind, (rule, apply, full) in listed.items():
                grouped[kind] = rule
                self._apply[kind] = apply
                self._full[kind] = full
        self.rules, self.wanted = _every_rule(grouped, projector)
        self._item_ids: dict[int, str] = {}  # an itemized step open's line -> its id
        self._fold: Any = None
        # the Python core's fold: events per kind, the groups gathering (in the order they began), each kind's folder
        self._counts: dict[str, int] = {}
        self._gathered: dict[tuple[object, ...], Gathered] = {}
        self._folders: dict[str, Folder] = {}
        self._held = [0]  # the samples its groups hold

    def started(self, fold: Any) -> None:
        self._fold = fold

    def folded(self, taken: tuple[Any, ...]) -> None:
        groups, records, durations = taken
        apply = self._apply
        for g in groups:
            apply[g[0]](Group(*g))
        steps = self.projector.steps
        for record in records:
            if record[0] == "o":  # ("o", line, id, step_id): an itemized step's open
                _, line, event_id, step_id = record
                steps.add_item(event_id, step_id, line)
                self._item_ids[line] = event_id
            else:  # ("c", its open's line, line, kind, outcome, reason, duration): its close, paired in C
                _, open_line, line, kind, outcome, reason, duration = record
                closing = {"outcome": outcome, "reason": reason}  # (never synthesized: C gives up on those)
                steps.close_item(self._item_ids[open_line], kind, closing, line, duration)
        if durations:
            steps.durations.frombytes(durations)

    def folders(self) -> dict[str, Folder]:
        """(The Python core) the folders made so far, per kind (``folder``)."""
        return self._folders

    def folder(self, kind: str) -> Folder:
        """(The Python core) the fold of one event of ``kind`` that ``python_chain`` takes: the same groups
        as C's, gathered here (``python_fold``); made at its first event, as a log holds only some kinds."""
        rule = self.rules.get(kind)
        if rule is None:
            raise FoldGaveUp("a kind the fold has no rule for")
        fold = self._folders[kind] = self._make(kind, rule)
        return fold

    def _make(self, kind: str, rule: Rule) -> Folder:
        from ract_cli.project.python_fold import make_folder  # (the Python core's: ~2 ms of a native start-up)

        return make_folder(
            kind,
            rule,
            self._counts,
            self._gathered,
            self._apply_gathered,
            self.left,
            self.projector.steps,
            self.max_groups,
            self._held,
        )

    def _apply_gathered(self) -> None:
        apply, counts = self._apply, self._counts
        for group in self._gathered.values():
            counts[group.kind] += group.n  # (the Python core counts a grouped kind here)
            apply[group.kind](group)
        self._gathered.clear()
        self._held[0] = 0

    def event(self, event: Event, line: int, offset: int) -> None:
        self.left(event, line)

    def left(self, event: Event, line: int) -> None:
        """An event of a kind left to Python; a listed kind is grouped from when its lists are full."""
        self.projector.feed_left(event, line)
        if self._full:
            kind = event["kind"]
            full = self._full.get(kind)
            if full is not None and full():
                del self._full[kind]
                self.regrouped.append(kind)
                if self._fold is not None:
                    self._fold.regroup(kind)  # (from C's next call: the rest of this one is handed out)
                else:
                    self._folders[kind] = self._make(kind, (GROUP, *self.rules[kind][1:]))

    def closed(self, event: Event, paired: OpenHandle | None, line: int, raw: bytes) -> None:
        whole = json_text.loads(raw)  # (the tracker's event holds only what pairing reads of the payload)
        self.projector.steps.paired_close(whole["kind"], whole["payload"], line, whole["timestamp_ns"], paired)

    def finish(self, reader: ChainReader) -> None:
        """The totals every event adds to, from C's counts and the reader's chain."""
        p, state = self.projector, reader.state
        if self._fold is not None:
            self.folded(self._fold.take(True))  # the groups still gathering
        self._apply_gathered()  # (the Python core's)
        counts: dict[str, int] = self._fold.counts() if self._fold is not None else self._counts
        for kind in sorted(counts):
            if counts[kind]:
                tally(p.kinds, label(kind), counts[kind])
        p.events = sum(counts.values())
        if p.events:  # (C took every line: the clock never went back, one run, the last hash the head)
            p.run_id, p.head, p.first_ts, p.last_ts = state.run_id, state.head, state.first_ts, state.last_ts


#: every kind's rule, and the kinds left to Python: the same for every projection (the parts' code), made once
_RULES: tuple[dict[str, Rule], KindTest] | None = None


def _every_rule(grouped: dict[str, Rule], projector: Projector) -> tuple[dict[str, Rule], KindTest]:
    """The parts' rules (``grouped``) and one for every other kind: counted, or left to Python when the
    projector does more with it than count it."""
    global _RULES
    if _RULES is None:
        rules = dict(grouped)
        for k in KINDS:
            if k.name not in rules:
                # a run's close reads the predicates C groups: C stops after it, its groups applied first
                rules[k.name] = left(k.name in RUN_CLOSES) if projector.handles_kind(k.name) else counted()
        left_kinds = frozenset(kind for kind, rule in rules.items() if rule[0] in (LEFT, STOP))
        _RULES = rules, left_kinds.__contains__
    return _RULES


def project_folded(reader: ChainReader, max_items: int) -> Projector | None:
    """The projection of the log ``reader`` is about to read, folded in C; None when the fold gave up (read the
    log again without one) or trust ended (the projection stops there)."""
    projector = Projector(max_items=max_items, handles=reader.handles)
    sink = FoldedProjection(projector)
    try:
        reader.fold(sink)
    except FoldGaveUp:
        return None
    if reader.broken_at is not None:
        return None
    sink.finish(reader)
    return projector
