"""``project`` with the native core: the events folded in C as they are verified (``_core.Fold``).

Folding each event in Python costs five times what verifying it costs in C.
Here the native chain mode folds the kinds each part of the report names
(``fold_rules``: tool calls, prompts, predicates, steps) into groups as it
takes their lines, and the parts apply each group with the code that folds
one event; the kinds the report only counts are counted in C; every other
kind is handed out whole and fed to the projector as before. Pairing is the
reader's own ``HandleTracker`` (with C's pairing inside a block), which a log
whose every event is trusted feeds exactly as the projector would.

Only such a log is folded: at the first line C does not take, a value C does
not compare, a close ``repair`` wrote, or when trust ends anywhere, the fold
gives up and the log is projected again event by event
(``project_file``). ``tests/test_project_fold.py`` holds both to one report.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any

import orjson

from ract_cli.format.json_types import Event
from ract_cli.format.kinds import KINDS
from ract_cli.project.grouping import (
    COUNT,
    GROUP,
    INT_NONNEG,
    INT_POS_SUM,
    LEFT,
    NUM_NONNEG,
    STEP_CLOSE,
    STEP_OPEN,
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
from ract_cli.read.chain_mode import FoldGaveUp, KindTest
from ract_cli.read.handles import CLOSE_KINDS, RUN_CLOSES, STEP_CLOSES, OpenHandle
from ract_cli.read.reader import ChainReader


class _Absent:
    """A key field the payload does not have."""


_ABSENT = _Absent()


def _no_rule(event: Event, line: int, paired: OpenHandle | None) -> None:
    raise FoldGaveUp("a kind the fold has no rule for")


_NO_RULE = _no_rule
_KEY_TYPES = frozenset({str, bool, type(None), _Absent})  # (the kind leads each key: a str)
_INT64_MAX = 2**63 - 1

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
        self.rules, self.wanted = _every_rule(grouped, projector)
        self._item_ids: dict[int, str] = {}  # an itemized step open's line -> its id
        self._fold: Any = None
        # the Python core's fold: events per kind, the groups gathering (in the order they began), and each
        # kind's function (``_folder``), made at its first event: a fold in C never needs them
        self._counts: dict[str, int] = {}
        self._gathered: dict[tuple[object, ...], Gathered] = {}
        self._folders: dict[str, Callable[[Event, int, OpenHandle | None], None] | None] = {}

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

    def fold_event(self, event: Event, line: int, paired: OpenHandle | None) -> None:
        """The Python core's fold of one event its chain mode took: the same groups as C's, gathered here
        (each kind by a function made for its rule: ``_folder``)."""
        kind = event["kind"]
        counts = self._counts
        counts[kind] = counts.get(kind, 0) + 1
        folders = self._folders or self._make_folders()
        fold = folders.get(kind, _NO_RULE)
        if fold is not None:
            fold(event, line, paired)

    def _make_folders(self) -> dict[str, Callable[[Event, int, OpenHandle | None], None] | None]:
        self._folders = {kind: self._folder(kind, rule) for kind, rule in self.rules.items()}
        return self._folders

    def _folder(self, kind: str, rule: Rule) -> Callable[[Event, int, OpenHandle | None], None] | None:
        """How ``fold_event`` folds an event of ``kind`` once counted (None: it is only counted)."""
        action, keys, value, bit, _, step = rule
        if action == COUNT:
            return None
        projector = self.projector
        if action != GROUP:
            apply = self._apply_gathered

            def leave(event: Event, line: int, paired: OpenHandle | None) -> None:
                if action == STOP:
                    apply()  # (its handler reads what groups fold)
                projector.feed_left(event, line)

            return leave
        gathered, max_groups, steps = self._gathered, self.max_groups, projector.steps
        close = kind in CLOSE_KINDS
        first_key, rest = (keys[0], keys[1:]) if keys else (None, ())
        field, how = value if value is not None else (None, 0)
        typecode = "q" if how == INT_NONNEG else "d" if how == NUM_NONNEG else None

        def group(event: Event, line: int, paired: OpenHandle | None) -> None:
            payload = event["payload"]
            if close and payload.get("synthesized") is True:
                raise FoldGaveUp("a close that repair wrote")
            key: tuple[object, ...] = (kind,)
            if first_key is not None:  # (the key's values: a string, true, false, null or absent, as C's)
                key = (kind, payload.get(first_key, _ABSENT), *[payload.get(f, _ABSENT) for f in rest])
                for v in key:
                    if v.__class__ not in _KEY_TYPES:
                        raise FoldGaveUp("a key value the fold does not compare")
            if bit is not None:
                key += (payload.get(bit[0]) == bit[1],)
            sample: int | float | None = None
            if field is not None:
                v = payload.get(field)
                if v.__class__ is int and (v > 0 if how == INT_POS_SUM else v >= 0):
                    sample = v if how != NUM_NONNEG else float(v) + 0.0
                elif how == NUM_NONNEG and v.__class__ is float and v >= 0:
                    sample = v + 0.0  # (as C keeps it: a -0.0 is 0.0)
                if how == NUM_NONNEG:
                    key += (sample is not None,)  # (the handler names the tool only then)
            found = gathered.get(key)
            if found is None:
                found = gathered[key] = Gathered(kind, payload, array(typecode) if typecode else None)
            found.n += 1
            found.last_payload = payload
            found.last_line = line
            if sample is not None:
                if found.samples is not None:
                    found.samples.append(sample)  # type: ignore[arg-type]
                else:
                    found.total = min(found.total + int(sample), _INT64_MAX)
            if step == STEP_CLOSE:
                steps.paired_close(kind, payload, line, event["timestamp_ns"], paired)
            elif step == STEP_OPEN and len(steps.items) < steps.max_items:
                steps.add_item(event["id"], event.get("step_id"), line)
            if len(gathered) >= max_groups:
                self._apply_gathered()

        return group

    def _apply_gathered(self) -> None:
        apply = self._apply
        for group in self._gathered.values():
            apply[group.kind](group)
        self._gathered.clear()

    def event(self, event: Event, line: int, offset: int) -> None:
        self.projector.feed_left(event, line)

    def closed(self, event: Event, paired: OpenHandle | None, line: int, raw: bytes) -> None:
        whole = orjson.loads(raw)  # (the tracker's event holds only what pairing reads of the payload)
        self.projector.steps.paired_close(whole["kind"], whole["payload"], line, whole["timestamp_ns"], paired)

    def finish(self, reader: ChainReader) -> None:
        """The totals every event adds to, from C's counts and the reader's chain."""
        p, state = self.projector, reader.state
        if self._fold is not None:
            self.folded(self._fold.take(True))  # the groups still gathering
        self._apply_gathered()  # (the Python core's)
        counts: dict[str, int] = self._fold.counts() if self._fold is not None else self._counts
        for kind in sorted(counts):
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
