"""Replay of a Raxol agent journal (SPEC §8): turns and items, never deltas.

The journal counterpart of ``ract_cli.replay.ReplaySession``, with the same
surface (``steps()`` then ``finish()`` -> ``ReplayResult``), so the replay
command drives either. It walks the journal through the one chain reader,
replays only *trusted* records (a chained journal stops at its first break)
and skips ``item_delta``: it is ephemeral, live render only, never replayed
and never in ``--format jsonl`` output. There is no workspace check: a
journal records no repository snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from ract_cli.dialects import ChainReader
from ract_cli.dialects.raxol.contract import evidence_status
from ract_cli.dialects.raxol.record import JournalEvent
from ract_cli.dialects.raxol.state import MAX_KEYS, OTHER, _text
from ract_cli.errors import UsageError
from ract_cli.format.json_types import Report
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES
from ract_cli.replay.result import ReplayResult

ITEM_TYPES_WITH_DEPTH = frozenset({"item_started", "item_completed", "item_delta"})


def _tally(table: dict[str, Any], key: str, amount: float = 1) -> None:
    """Add ``amount`` under ``key``; past ``MAX_KEYS`` names, new ones pool in ``OTHER`` (as the journal summary does)."""
    if key not in table and len(table) >= MAX_KEYS:
        key = OTHER
    table[key] = table.get(key, 0) + amount


@dataclass
class JournalReplayState:
    """What the journal says at a point of the replay (after ``index`` replayed records)."""

    index: int = 0
    line: int | None = None
    type: str | None = None
    event_id: str | None = None
    turn: int = 0
    turn_open: bool = False
    iteration: int | None = None
    open_items: dict[str, tuple[Any, int]] = field(default_factory=dict)  # item_id -> (item_type, line)
    items_completed: dict[str, int] = field(default_factory=dict)
    usage: dict[str, int | float] = field(default_factory=dict)
    errors: int = 0
    closed: bool = False
    evidence: str | None = None

    def apply(self, ev: JournalEvent) -> None:
        self.index += 1
        self.line = ev.line
        rtype = ev.kind
        self.type = rtype
        rid = ev.event.get("id")
        self.event_id = rid if type(rid) is str else None
        payload = ev.payload
        item_id = payload.get("item_id")
        item_id = _text(item_id) if item_id is not None else None
        if rtype == "turn_started":
            self.turn += 1
            self.turn_open = True
            self.open_items = {}
        elif rtype == "item_started" and item_id is not None:
            if len(self.open_items) < 10_000:
                self.open_items[item_id] = (payload.get("item_type"), ev.line)
        elif rtype == "item_completed":
            if item_id is not None:
                self.open_items.pop(item_id, None)
            _tally(self.items_completed, _text(payload.get("item_type")))
        elif rtype == "turn_completed":
            self.turn_open = False
            self.open_items = {}
            iteration = payload.get("iteration")
            if type(iteration) is int:
                self.iteration = iteration
            usage = payload.get("usage")
            if type(usage) is dict:
                for key, value in usage.items():
                    if type(value) in (int, float):
                        _tally(self.usage, _text(key), value)
            if payload.get("final") is True:
                self.closed = True
                self.evidence = str(evidence_status(payload))
        elif rtype == "error":
            self.errors += 1

    def to_dict(self) -> Report:
        return {
            "dialect": "raxol",
            "index": self.index,
            "line": self.line,
            "type": self.type,
            "event_id": self.event_id,
            "turn": self.turn,
            "turn_open": self.turn_open,
            "iteration": self.iteration,
            "open_items": [
                {"item_id": k, "item_type": _text(t) if t is not None else None, "line": line}
                for k, (t, line) in self.open_items.items()
            ],
            "items_completed": dict(sorted(self.items_completed.items())),
            "usage": dict(sorted(self.usage.items())),
            "errors": self.errors,
            "closed": self.closed,
            "evidence": self.evidence,
        }


@dataclass(slots=True)
class JournalReplayStep:
    """One replayed record and the state right after it (``state`` is live: it moves on)."""

    index: int
    event: JournalEvent
    state: JournalReplayState

    @property
    def depth(self) -> int:
        """1 for an item record (inside a turn), 0 for turn boundaries and others."""
        return 1 if self.event.kind in ITEM_TYPES_WITH_DEPTH else 0


class JournalReplaySession:
    """One journal replay: iterate ``steps()``; then ``finish()`` for the ``ReplayResult``."""

    workspace = None  # a journal records no repository snapshot: nothing to check

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        until: int | str | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_findings: int | None = None,
    ) -> None:
        if isinstance(until, int) and until < 1:
            raise UsageError("--until: record indexes start at 1")
        self.path = str(path)
        self.until = until
        self.reader = ChainReader(path, max_line_bytes=max_line_bytes, max_findings=max_findings, dialect="raxol")
        self.state = JournalReplayState()
        self.until_reached: bool | None = None if until is None else False
        self.stopped_at_break: int | None = None
        self._events = iter(self.reader)
        self._iterated = False

    def steps(self) -> Iterator[JournalReplayStep]:
        """Durable, trusted records in order; stops after the ``until`` target or at a chain break."""
        if self._iterated:
            raise RuntimeError("a JournalReplaySession is walked once")
        self._iterated = True
        until = self.until
        for ev in self._events:
            if not ev.trusted:
                self.stopped_at_break = self.reader.broken_at
                return
            record = cast(JournalEvent, ev)  # the raxol dialect's reader yields journal records
            if not record.durable:  # item_delta: ephemeral, never replayed
                continue
            self.state.apply(record)
            yield JournalReplayStep(self.state.index, record, self.state)
            if until is not None and (
                self.state.index == until if isinstance(until, int) else ev.event.get("id") == until
            ):
                self.until_reached = True
                return
        if self.reader.broken_at is not None:
            self.stopped_at_break = self.reader.broken_at

    def finish(self) -> ReplayResult:
        """Read the rest of the journal (verifying, never replaying); return the verdict."""
        if not self._iterated:
            for _ in self.steps():
                pass
        state = self.state.to_dict()
        stop = "until" if self.until_reached else ("break" if self.stopped_at_break is not None else "end")
        for _ in self._events:
            pass
        return ReplayResult(
            self.path,
            self.state.index,
            stop,
            self.until_reached,
            self.reader.broken_at,
            state,
            list(self.reader.findings),
            None,
            suppressed=self.reader.state.suppressed,
            chain_exit_code=self.reader.exit_code,
        )
