"""Shared test helpers: deterministic writers, small logs, reading a log's verdict.

Helpers are handed out as fixtures (``logs``) so test modules never import
this file. Everything is deterministic: ids come from a counter, time from
a fake clock, so a failing case reproduces byte for byte.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from ract_cli.findings import Finding
from ract_cli.format.canonical import jcs_exact
from ract_cli.read.reader import ChainReader
from ract_cli.writer.event_writer import EventWriter, FsyncPolicy

RUN_ID = "1a2b3c4d5e6f708192a3b4c5d6e7f809"
STEP_ID = "5e7e9f00aa11bb22cc33dd44ee55ff66"
BASE_TS = 1_764_000_000_000_000_000

# The five-line log every bad-input case is planted in (line 3 is replaced).
# Line 3 is a plain event (no open or close), so replacing it changes no handle.
FIVE_EVENTS: tuple[tuple[str, dict, str | None], ...] = (
    (
        "run.started",
        {"intent_id": "d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6", "predicate_count": 1, "coverage_gate": 0.85},
        None,
    ),
    ("step.started", {"parent_snapshot": "3c1e0b5f2a9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b", "timeout_seconds": 600}, STEP_ID),
    (
        "predicate.evaluated",
        {
            "predicate_id": "tests-pass",
            "kind": "test",
            "required": True,
            "ok": True,
            "reason": "ok",
            "duration_ns": 1_234_567,
        },
        STEP_ID,
    ),
    (
        "step.committed",
        {
            "outcome": "COMMITTED",
            "parent_snapshot_before": "3c1e0b5f2a9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b",
            "parent_snapshot_after": "5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c",
        },
        STEP_ID,
    ),
    ("run.completed", {"final_decision": "accept", "duration_ns": 9_000_000, "event_count": 5}, None),
)


def counter_ids(prefix: int = 0xE) -> Callable[[], str]:
    """Deterministic 32-hex event ids: ``e000...0001``, ``e000...0002``..."""
    counter = itertools.count(1)
    return lambda: f"{prefix:x}{next(counter):031x}"


def fake_clock(start: int = BASE_TS, step: int = 1_000_000) -> Callable[[], int]:
    counter = itertools.count()
    return lambda: start + step * next(counter)


def split_keepends(data: bytes) -> list[bytes]:
    """Split on ``\\n`` only (as the reader does; ``\\r`` alone is not a line end), keeping it."""
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    return lines + ([parts[-1]] if parts[-1] else [])


def rehash(event: dict) -> dict:
    """The event with ``hash`` recomputed over its other keys (SPEC §2.4)."""
    body = {k: v for k, v in event.items() if k != "hash"}
    return {**body, "hash": hashlib.sha256(jcs_exact(body)).hexdigest()}


def line_of(event: dict) -> bytes:
    """A canonical line for ``event`` exactly as given (hash not recomputed), with ``\\n``."""
    return jcs_exact(event) + b"\n"


@dataclass
class Verdict:
    """What one read of a log produced."""

    reader: ChainReader
    events: list

    @property
    def findings(self) -> list[Finding]:
        return self.reader.findings

    @property
    def exit_code(self) -> int:
        return int(self.reader.exit_code)

    def codes(self, severity: str | None = None) -> list[tuple[str, int | None]]:
        return [(f.code, f.line) for f in self.findings if severity is None or f.severity == severity]

    @property
    def errors(self) -> list[tuple[str, int | None]]:
        return self.codes("error")

    @property
    def warnings(self) -> list[tuple[str, int | None]]:
        return self.codes("warning")


class Logs:
    """Factory for small logs under one temporary directory."""

    FIVE_EVENTS = FIVE_EVENTS
    rehash = staticmethod(rehash)
    line_of = staticmethod(line_of)
    counter_ids = staticmethod(counter_ids)
    fake_clock = staticmethod(fake_clock)

    def __init__(self, root: Path) -> None:
        self.root = root
        # shared by every writer of this factory: ids never repeat, time never goes back
        self._ids = counter_ids()
        self._clock = fake_clock()

    def path(self, run_id: str = RUN_ID, name: str = "events.jsonl") -> Path:
        p = self.root / run_id / name
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def writer(self, path: Path | None = None, **kw) -> EventWriter:
        kw.setdefault("run_id", RUN_ID)
        kw.setdefault("fsync", FsyncPolicy.NEVER)
        kw.setdefault("clock", self._clock)
        kw.setdefault("new_id", self._ids)
        return EventWriter(path or self.path(kw["run_id"]), **kw)

    def write(
        self, events: Iterable[tuple[str, dict, str | None]] = FIVE_EVENTS, path: Path | None = None, **kw
    ) -> Path:
        """Write ``(kind, payload, step_id)`` events through ``EventWriter``; return the path."""
        path = path or self.path(kw.get("run_id", RUN_ID))
        with self.writer(path, **kw) as w:
            for kind, payload, step_id in events:
                w.append(kind, payload, step_id=step_id)
        return path

    def five(self) -> Path:
        return self.write(FIVE_EVENTS)

    @staticmethod
    def lines(path: Path) -> list[bytes]:
        """The file's lines as the reader splits them (on ``\\n`` only), endings kept."""
        return split_keepends(path.read_bytes())

    @staticmethod
    def events(path: Path) -> list[dict]:
        return [json.loads(line) for line in split_keepends(path.read_bytes())]

    @staticmethod
    def offset(path: Path, line: int) -> int:
        """Byte offset of 1-based ``line``, computed from the file itself."""
        return sum(len(x) for x in split_keepends(path.read_bytes())[: line - 1])

    @staticmethod
    def read(path: Path, **kw) -> Verdict:
        reader = ChainReader(path, **kw)
        events = list(reader)
        return Verdict(reader, events)


@pytest.fixture
def logs(tmp_path: Path) -> Logs:
    return Logs(tmp_path)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent
