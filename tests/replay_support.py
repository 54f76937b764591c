"""Small deterministic logs for the replay tests, written through ``EventWriter`` (no mocks).

Self-contained on purpose: the replay tests do not depend on another
module's fixtures. ``logs`` is the fixture the test modules import.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from ract_cli.canonical import jcs_exact
from ract_cli.writer import EventWriter, FsyncPolicy

RUN_ID = "1a2b3c4d5e6f708192a3b4c5d6e7f809"
STEP_ID = "5e7e9f00aa11bb22cc33dd44ee55ff66"
BASE_TS = 1_764_000_000_000_000_000
SNAP_A = "3c1e0b5f2a9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b"
SNAP_B = "5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c"

FIVE_EVENTS: tuple[tuple[str, dict, str | None], ...] = (
    ("run.started", {"intent_id": "d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6", "predicate_count": 1, "coverage_gate": 0.85}, None),
    ("step.started", {"parent_snapshot": SNAP_A, "timeout_seconds": 600}, STEP_ID),
    ("predicate.evaluated", {"predicate_id": "tests-pass", "kind": "test", "required": True, "ok": True,
                             "reason": "ok", "duration_ns": 1_234_567}, STEP_ID),
    ("step.committed", {"outcome": "COMMITTED", "parent_snapshot_before": SNAP_A, "parent_snapshot_after": SNAP_B},
     STEP_ID),
    ("run.completed", {"final_decision": "accept", "duration_ns": 9_000_000, "event_count": 5}, None),
)


def counter_ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"e{next(counter):031x}"


def fake_clock(start: int = BASE_TS, step: int = 1_000_000) -> Callable[[], int]:
    counter = itertools.count()
    return lambda: start + step * next(counter)


class SmallLogs:
    """Factory for small logs under one temporary directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, run_id: str = RUN_ID) -> Path:
        p = self.root / run_id / "events.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def writer(self, path: Path | None = None, **kw) -> EventWriter:
        kw.setdefault("run_id", RUN_ID)
        kw.setdefault("fsync", FsyncPolicy.NEVER)
        kw.setdefault("clock", fake_clock())
        kw.setdefault("new_id", counter_ids())
        return EventWriter(path or self.path(kw["run_id"]), **kw)

    def write(self, events: Iterable[tuple[str, dict, str | None]] = FIVE_EVENTS, **kw) -> Path:
        """Write ``(kind, payload, step_id)`` events; return the log's path."""
        path = self.path(kw.get("run_id", RUN_ID))
        with self.writer(path, **kw) as w:
            for kind, payload, step_id in events:
                w.append(kind, payload, step_id=step_id)
        return path

    def five(self) -> Path:
        return self.write(FIVE_EVENTS)

    @staticmethod
    def lines(path: Path) -> list[bytes]:
        return path.read_bytes().splitlines(keepends=True)

    @staticmethod
    def rehash(event: dict) -> dict:
        body = {k: v for k, v in event.items() if k != "hash"}
        return {**body, "hash": hashlib.sha256(jcs_exact(body)).hexdigest()}

    @staticmethod
    def line_of(event: dict) -> bytes:
        return jcs_exact(event) + b"\n"


@pytest.fixture
def logs(tmp_path: Path) -> SmallLogs:
    return SmallLogs(tmp_path)
