"""Seeded generator of Raxol agent journals (SPEC §8), for fixtures and tests.

Same seed, same bytes: every id, text and timestamp comes from a seeded RNG
and a fake clock. Records are written through ``raxol.encode_line`` (and
``raxol.chain_records`` for chained journals), so the generator also
exercises the library's encoder.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ract_cli.dialects.raxol.encode import chain_records, encode_line
from ract_cli.format.json_types import Event, JSONObject, Payload

BASE_MS = 1_764_000_000_000  # 2025-11-24T16:00:00Z, in milliseconds
PROMPTS = (
    "fix the failing test in tests/test_io.py",
    "rename the config loader and update callers",
    "explain why the build is slow — naïve guess first",
    "résumé parser: handle UTF-16 files",
)
TOOLS = ("read_file", "bash", "grep", "apply_patch")
TEXTS = (
    "Looking at the traceback first.",
    "The fixture path is wrong; patching it.",
    "Tests pass now ✅",
    "日本語のコメントも保持します",
    'quote " and \\ slash',
    "tab\tseparated",
)


@dataclass
class JournalBuilder:
    """Builds one journal's records: turns of items (with deltas) closed by turn_completed."""

    rng: random.Random
    schema_version: str | None = "1.1.0"  # None: a legacy (1.0.0) journal, no version stamp
    records: list[Event] = field(default_factory=list)
    ms: int = BASE_MS
    iteration: int = 0
    item_no: int = 0
    tool_results: list[str] = field(default_factory=list)

    def emit(self, rtype: str, payload: Payload, **extra: Any) -> Event:
        self.ms += self.rng.randint(5, 4000)
        record: Event = {}
        if self.schema_version is not None:
            record["schema_version"] = self.schema_version
        record.update({"seq": len(self.records), "family": "loop", "type": rtype, "at_ms": self.ms, "payload": payload})
        record.update(extra)
        self.records.append(record)
        return record

    def item(self, item_type: str, body: Payload, *, deltas: int = 0) -> str:
        self.item_no += 1
        item_id = f"i{self.item_no}"
        self.emit("item_started", {"item_id": item_id, "item_type": item_type})
        text = str(body.get("text", ""))
        for k in range(deltas):
            chunk = text[k * len(text) // deltas : (k + 1) * len(text) // deltas]
            self.emit("item_delta", {"item_id": item_id, "chunk": chunk})
        self.emit("item_completed", {"item_id": item_id, "item_type": item_type, **body})
        if item_type == "tool_result":
            self.tool_results.append(item_id)
        return item_id

    def turn(self, *, tools: int = 1, final: bool = False, marker: JSONObject | None = None) -> None:
        """One turn: prompt, reasoning, tool calls with results, a streamed message, the boundary."""
        self.item_no = 0  # item ids are turn-scoped: "i1", "i2", ...
        self.tool_results = []
        self.emit("turn_started", {"prompt": self.rng.choice(PROMPTS)})
        self.item("reasoning", {"text": self.rng.choice(TEXTS)})
        for _ in range(tools):
            tool = self.rng.choice(TOOLS)
            use = self.item("tool_use", {"name": tool, "input": {"path": f"src/mod_{self.rng.randint(1, 9)}.py"}})
            self.item("tool_result", {"tool_use_id": use, "output": self.rng.choice(TEXTS), "is_error": False})
        self.item("message", {"text": self.rng.choice(TEXTS)}, deltas=self.rng.randint(1, 3))
        self.iteration += 1
        usage = {"input_tokens": self.rng.randint(200, 9000), "output_tokens": self.rng.randint(20, 900)}
        payload: Payload = {"usage": usage, "iteration": self.iteration, "final": final}
        payload.update(marker or {})
        self.emit("turn_completed", payload)

    def refs(self) -> list[str]:
        return list(self.tool_results)


def _journal(
    seed: int,
    *,
    schema_version: str | None,
    final_marker: Callable[[JournalBuilder], JSONObject],
    turns: int = 2,
    error: bool = False,
) -> list[Event]:
    rng = random.Random(seed)
    b = JournalBuilder(rng, schema_version)
    for t in range(turns - 1):
        b.turn(tools=rng.randint(1, 2))
        if error and t == 0:
            b.emit("error", {"reason": "tool bash timed out after 30s"})
    # the final turn: its marker is computed from the refs its own tool results offer
    b.turn(tools=2, final=True, marker=None)
    final = b.records[-1]
    final["payload"].update(final_marker(b))
    return b.records


def accepted(seed: int = 11) -> list[Event]:
    """1.1.0: the final turn_completed stamps evidence accepted alongside its refs."""
    return _journal(seed, schema_version="1.1.0", final_marker=lambda b: {"evidence": "accepted", "refs": b.refs()})


def rejected(seed: int = 12) -> list[Event]:
    """1.1.0: refs offered and refused by the done gate (stale_evidence at offset 1); one error record."""
    return _journal(
        seed,
        schema_version="1.1.0",
        error=True,
        final_marker=lambda b: {
            "evidence": "rejected",
            "evidence_rejected": {"refs": b.refs(), "reason": "stale_evidence", "ref": 1},
        },
    )


def absent(seed: int = 13) -> list[Event]:
    """1.1.0: the turn offered no refs at all."""
    return _journal(seed, schema_version="1.1.0", final_marker=lambda b: {"evidence": "absent"})


def legacy_refs(seed: int = 14) -> list[Event]:
    """1.0.0 (no schema_version): no marker, refs present -> grandfathered to accepted."""
    return _journal(seed, schema_version=None, final_marker=lambda b: {"refs": b.refs()})


def legacy_unknown(seed: int = 15) -> list[Event]:
    """1.0.0: no marker, no refs -> unknown (never absent)."""
    return _journal(seed, schema_version=None, final_marker=lambda b: {})


def legacy_marker(seed: int = 16) -> list[Event]:
    """1.0.0 journal whose final record carries a marker: a CONTRACT_WARNING, exit 0."""
    return _journal(seed, schema_version=None, final_marker=lambda b: {"evidence": "accepted", "refs": b.refs()})


def grown(seed: int = 17) -> list[Event]:
    """1.1.0 with what a newer producer may add: an unknown type, extra keys (UNKNOWN_TYPE warning, exit 0)."""
    records = _journal(seed, schema_version="1.1.0", final_marker=lambda b: {"evidence": "absent"})
    extra = dict(records[1])
    extra.update({"seq": 1, "type": "approval_requested", "payload": {"tool": "bash", "risk": "low"}})
    records.insert(1, extra)
    for i, record in enumerate(records):
        record["seq"] = i
        record["trace_id"] = f"{i:04d}"
    records[0]["payload"]["attachments"] = []
    return records


def chained(seed: int = 18) -> list[Event]:
    """1.1.0 accepted journal carrying a hash chain: its verdict stands on a verified chain."""
    return chain_records(accepted(seed))


def chained_tampered(seed: int = 19) -> list[Event]:
    """A chained rejected journal whose final verdict was flipped to accepted after writing (hash kept)."""
    records = chain_records(rejected(seed))
    final = records[-1]["payload"]
    refs = final.pop("evidence_rejected")["refs"]
    final["evidence"] = "accepted"
    final["refs"] = refs
    return records


@dataclass(frozen=True)
class JournalFixture:
    make: Callable[[], list[Event]]
    description: str
    exit_code: int  # what `ract trace verify` exits with
    evidence: str  # the final evidence status project reports
    trust: str  # what that verdict stands on


JOURNAL_FIXTURES: dict[str, JournalFixture] = {
    "accepted": JournalFixture(accepted, "1.1.0, evidence accepted with refs", 0, "accepted", "journal-trust"),
    "rejected": JournalFixture(
        rejected, "1.1.0, evidence rejected (stale_evidence, ref 1), one error record", 0, "rejected", "journal-trust"
    ),
    "absent": JournalFixture(absent, "1.1.0, evidence absent (no refs offered)", 0, "absent", "journal-trust"),
    "legacy-refs": JournalFixture(
        legacy_refs, "1.0.0, no marker, refs present: grandfathered accepted", 0, "accepted", "journal-trust"
    ),
    "legacy-unknown": JournalFixture(
        legacy_unknown, "1.0.0, no marker, no refs: unknown (never absent)", 0, "unknown", "journal-trust"
    ),
    "legacy-marker": JournalFixture(
        legacy_marker, "1.0.0 journal with a marker: CONTRACT_WARNING", 0, "accepted", "journal-trust"
    ),
    "grown": JournalFixture(
        grown, "1.1.0 with an unknown type and extra keys: UNKNOWN_TYPE warning", 0, "absent", "journal-trust"
    ),
    "chained": JournalFixture(
        chained, "1.1.0 accepted, hash-chained: verdict on a verified chain", 0, "accepted", "verified-chain"
    ),
    "chained-tampered": JournalFixture(
        chained_tampered,
        "chained, rejected verdict flipped to accepted after writing: HASH_MISMATCH",
        1,
        "accepted",
        "broken-chain",
    ),
}


def journal_bytes(records: list[Event]) -> bytes:
    return b"".join(encode_line(r) for r in records)


def journal_path(root: Path, name: str) -> Path:
    return Path(root) / "journals" / f"{name}.jsonl"


def write_journal_fixtures(root: Path) -> dict[str, Path]:
    """(Re)write every journal fixture under ``root/journals/<name>.jsonl``."""
    written: dict[str, Path] = {}
    for name, fixture in JOURNAL_FIXTURES.items():
        path = journal_path(root, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(journal_bytes(fixture.make()))
        written[name] = path
    return written
