"""What spans journal records: the hash chain, item ids per turn, nothing after the final turn, the summary."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ract_cli.dialects.raxol.contract import (
    FAMILY,
    LEGACY_VERSION,
    LOOP_TYPES,
    MARKER_KEYS,
    MARKER_SINCE,
    REJECTED,
    EvidenceStatus,
    _is_int,
    evidence_status,
    parse_version,
)
from ract_cli.findings import Finding, error, warning
from ract_cli.format.json_types import Event, JSONObject, Payload
from ract_cli.format.model import GENESIS_HASH
from ract_cli.format.text import short
from ract_cli.read.chain import ChainState
from ract_cli.read.json_rules import LineResult, Problem

if TYPE_CHECKING:
    from ract_cli.read.chain import Where

# --- across records ------------------------------------------------------


@dataclass
class JournalSummary:
    """What a journal says, as ``project`` reports it; ``to_dict`` is the JSON shape."""

    schema_version: str
    records: int
    durable_records: int
    deltas: int
    turns: int  # turn_started records
    turn_boundaries: int  # turn_completed records
    items_by_type: dict[str, int]  # completed items
    items_started: int
    usage: dict[str, int | float]
    iterations: int | None  # highest iteration stamped on a turn_completed
    errors: list[JSONObject]  # the first MAX_KEPT error records: {"line", "reason"}
    error_count: int
    unknown_types: dict[str, int]
    closed: bool  # a final turn_completed was seen
    final_line: int | None
    evidence: EvidenceStatus | None  # None when the journal has no final turn_completed
    evidence_rejected: JSONObject | None
    chained: bool  # every record carries hash/prev_hash
    chain_verified: bool  # chained, and no integrity failure
    head: str | None

    @property
    def trust(self) -> str:
        """What the evidence verdict stands on: a verified chain, a broken one, or the journal alone."""
        if self.chain_verified:
            return "verified-chain"
        if self.chained:
            return "broken-chain"
        return "journal-trust"

    def to_dict(self) -> dict[str, Any]:
        return {
            "dialect": "raxol",
            "schema_version": self.schema_version,
            "records": self.records,
            "durable_records": self.durable_records,
            "deltas": self.deltas,
            "turns": self.turns,
            "turn_boundaries": self.turn_boundaries,
            "items_by_type": dict(self.items_by_type),
            "items_started": self.items_started,
            "usage": dict(self.usage),
            "iterations": self.iterations,
            "errors": list(self.errors),
            "error_count": self.error_count,
            "unknown_types": dict(self.unknown_types),
            "closed": self.closed,
            "final_line": self.final_line,
            "evidence": None if self.evidence is None else str(self.evidence),
            "evidence_rejected": self.evidence_rejected,
            "chained": self.chained,
            "chain_verified": self.chain_verified,
            "trust": self.trust,
            "head": self.head,
        }


def _version_text(version: tuple[int, int, int]) -> str:
    return ".".join(map(str, version))


def _add_usage(totals: dict[str, int | float], usage: JSONObject, prefix: str = "", depth: int = 0) -> None:
    for key, value in usage.items():
        name = f"{prefix}{key}"
        if type(value) in (int, float):
            name = _pooled(totals, name)
            totals[name] = totals.get(name, 0) + value
        elif type(value) is dict and depth < 3:
            _add_usage(totals, value, name + ".", depth + 1)


MAX_KEYS = 1000  # distinct names kept per table (item types, usage keys, unknown types); the rest pool in "(other)"
MAX_TEXT = 200  # characters kept of a log-derived string in a summary
MAX_KEPT = 1000  # error records itemized
OTHER = "(other)"


def _pooled(table: Mapping[str, object], key: str) -> str:
    """``key``, or ``OTHER`` once the table holds ``MAX_KEYS`` other names."""
    return OTHER if key not in table and len(table) >= MAX_KEYS else key


def _tally(table: dict[str, int], key: str) -> None:
    key = _pooled(table, key)
    table[key] = table.get(key, 0) + 1


def _text(value: Any) -> str:
    text = value if type(value) is str else short(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def _record_id(record: Event) -> str | None:
    rid = record.get("id")
    return rid[:200] if type(rid) is str else None


class JournalState(ChainState):
    """Cross-record checks of a journal, fed one ``LineResult`` at a time in file order.

    Shares ``ChainState``'s finding bookkeeping (``add``, ``max_findings``,
    ``exit_code``, ``first_integrity_failure``, ``events``, ``head``).
    """

    def __init__(self, path: str, require_closed: bool = False, max_findings: int | None = None) -> None:
        super().__init__(path, require_closed, max_findings)
        self.version: tuple[int, int, int] | None = None  # last stamped schema_version
        self.chained: bool | None = None  # decided by the first record
        self.chain_partial = False
        self.closed = False
        self.final_line: int | None = None
        self.final_payload: Payload | None = None
        self.turns = 0
        self.turn_boundaries = 0
        self.turn_open = False
        self.deltas = 0
        self.items_started = 0
        self.items_by_type: dict[str, int] = {}
        self.usage: dict[str, int | float] = {}
        self.iterations: int | None = None
        self.errors: list[JSONObject] = []  # the first MAX_KEPT error records
        self.error_count = 0
        self.unknown_types: dict[str, int] = {}
        self._started: dict[str, tuple[object, int]] = {}  # item_id -> (item_type, line), this turn
        self._completed: set[str] = set()

    @property
    def schema_version(self) -> tuple[int, int, int]:
        return self.version or LEGACY_VERSION

    def feed(self, result: LineResult, line: int, offset: int) -> None:
        where: Where = {"path": self.path, "line": line, "offset": offset}
        record = result.event
        event_id = _record_id(record) if record is not None else None
        for p in result.problems:
            self.add(_finding(p, event_id, where))
        first_line = not self._seen_first_line
        self._seen_first_line = True
        if record is None:
            self.expected_prev = result.stored_hash  # re-anchor, as for RACT lines
            return
        self.events += 1
        self._feed_chain(record, result.stored_hash, first_line, event_id, where)
        self._feed_contract(record, event_id, where)
        self._last_event_line = line  # trust ends as for RACT logs (ChainState.add)

    def _feed_chain(
        self, record: Event, stored_hash: str | None, first_line: bool, event_id: str | None, where: Where
    ) -> None:
        chained = "hash" in record or "prev_hash" in record
        if self.chained is None:  # the first record decides whether the journal is chained
            self.chained = chained
        elif chained != self.chained and not self.chain_partial:
            self.chain_partial = True
            message = (
                "record carries no hash/prev_hash in a chained journal"
                if self.chained
                else "record starts a hash chain mid-journal: the records before it are not covered"
            )
            self.add(error("CHAIN_BREAK", message, event_id=event_id, **where))
        if not chained:
            self.expected_prev = None
            return
        prev = record.get("prev_hash")
        if first_line:
            if prev != GENESIS_HASH:
                self.add(
                    error(
                        "MISSING_GENESIS",
                        "first record's prev_hash is not the genesis hash (64 zeros)",
                        event_id=event_id,
                        expected=GENESIS_HASH,
                        actual=short(prev),
                        **where,
                    )
                )
        elif self.expected_prev is not None and prev != self.expected_prev:
            self.add(
                error(
                    "CHAIN_BREAK",
                    "prev_hash does not equal the previous record's hash",
                    event_id=event_id,
                    expected=self.expected_prev,
                    actual=short(prev),
                    **where,
                )
            )
        self.expected_prev = stored_hash
        self.head = stored_hash

    def _feed_contract(self, record: Event, event_id: str | None, where: Where) -> None:
        if self.closed:
            self.add(
                error(
                    "CONTRACT_VIOLATION",
                    f"record after the final turn_completed (line {self.final_line})",
                    event_id=event_id,
                    **where,
                )
            )
        if "schema_version" in record:
            self._feed_version(record["schema_version"], event_id, where)
        rtype = record.get("type")
        payload = record.get("payload")
        if type(rtype) is not str or type(payload) is not dict:
            return
        if rtype not in LOOP_TYPES or record.get("family", FAMILY) != FAMILY:
            _tally(self.unknown_types, _text(rtype))
            return
        if any(key in payload for key in MARKER_KEYS) and self.schema_version < MARKER_SINCE:
            self.add(
                warning(
                    "CONTRACT_WARNING",
                    f"evidence marker in a schema_version "
                    f"{_version_text(self.schema_version)} journal (the marker exists from 1.1.0 on)",
                    event_id=event_id,
                    **where,
                )
            )
        item_id = payload.get("item_id")
        item_id = item_id if type(item_id) is str and item_id else None
        if rtype == "turn_started":
            self._turn_started(event_id, where)
        elif rtype == "item_started" and item_id is not None:
            self._item_started(item_id, payload, event_id, where)
        elif rtype == "item_delta":
            self._item_delta(item_id, event_id, where)
        elif rtype == "item_completed" and item_id is not None:
            self._item_completed(item_id, payload, event_id, where)
        elif rtype == "turn_completed":
            self._turn_completed(payload, event_id, where)
        elif rtype == "error":
            self.error_count += 1
            if len(self.errors) < MAX_KEPT:
                self.errors.append({"line": where["line"], "reason": _text(payload.get("reason"))})

    def _feed_version(self, stamped: object, event_id: str | None, where: Where) -> None:
        """A record's ``schema_version``: the journal's from here on (a change within one journal is suspicious)."""
        version = parse_version(stamped)
        if version is None:
            return
        if self.version is not None and version != self.version:
            self.add(
                warning(
                    "CONTRACT_WARNING",
                    f"schema_version changes from {_version_text(self.version)} "
                    f"to {_version_text(version)} within one journal",
                    event_id=event_id,
                    **where,
                )
            )
        self.version = version

    def _turn_started(self, event_id: str | None, where: Where) -> None:
        if self.turn_open:
            self._close_items(f"turn_started at line {where['line']}", event_id)
            self.add(
                warning(
                    "CONTRACT_WARNING",
                    "turn_started while the previous turn has no turn_completed",
                    event_id=event_id,
                    **where,
                )
            )
        self.turns += 1
        self.turn_open = True
        self._started, self._completed = {}, set()

    def _item_started(self, item_id: str, payload: Payload, event_id: str | None, where: Where) -> None:
        self.items_started += 1
        if item_id in self._started:
            self.add(
                error(
                    "CONTRACT_VIOLATION",
                    f"item_id {short(item_id)} was already used in this turn (line {self._started[item_id][1]})",
                    event_id=event_id,
                    **where,
                )
            )
        else:
            self._started[item_id] = (payload.get("item_type"), where["line"])

    def _item_delta(self, item_id: str | None, event_id: str | None, where: Where) -> None:
        self.deltas += 1
        if item_id is not None and (item_id not in self._started or item_id in self._completed):
            state = "already completed" if item_id in self._completed else "not started in this turn"
            self.add(
                warning(
                    "CONTRACT_WARNING",
                    f"item_delta for item {short(item_id)}, {state}",
                    event_id=event_id,
                    **where,
                )
            )

    def _item_completed(self, item_id: str, payload: Payload, event_id: str | None, where: Where) -> None:
        item_type = payload.get("item_type")
        if item_id not in self._started:
            self.add(
                error(
                    "CONTRACT_VIOLATION",
                    f"item_completed for item {short(item_id)}, which was not started in this turn",
                    event_id=event_id,
                    **where,
                )
            )
        elif item_id in self._completed:
            self.add(error("CONTRACT_VIOLATION", f"item {short(item_id)} completed twice", event_id=event_id, **where))
        else:
            self._completed.add(item_id)
            started_type = self._started[item_id][0]
            if type(started_type) is str and type(item_type) is str and started_type != item_type:
                self.add(
                    warning(
                        "CONTRACT_WARNING",
                        f"item {short(item_id)} started as {short(started_type)} but completed as {short(item_type)}",
                        event_id=event_id,
                        **where,
                    )
                )
        if type(item_type) is str:
            _tally(self.items_by_type, _text(item_type))

    def _turn_completed(self, payload: Payload, event_id: str | None, where: Where) -> None:
        self.turn_boundaries += 1
        self._close_items(f"turn_completed at line {where['line']}", event_id)
        self.turn_open = False
        self._started, self._completed = {}, set()
        if type(payload.get("usage")) is dict:
            _add_usage(self.usage, payload["usage"])
        iteration = payload.get("iteration")
        if _is_int(iteration) and iteration >= 0:
            self.iterations = iteration if self.iterations is None else max(self.iterations, iteration)
        if payload.get("final") is True and not self.closed:
            self.closed = True
            self.final_line = where["line"]
            self.final_payload = payload

    def _close_items(self, boundary: str, event_id: str | None) -> None:
        for item_id, (_, line) in self._started.items():
            if item_id not in self._completed:
                self.add(
                    warning(
                        "CONTRACT_WARNING",
                        f"item {short(item_id)} was started but never completed before the {boundary}",
                        path=self.path,
                        line=line,
                    )
                )

    def finish(self) -> None:
        """End of journal: empty journal, no final turn_completed, items left open."""
        if self.events == 0:
            if not self.findings:
                make = error if self.require_closed else warning
                self.add(make("EMPTY_LOG", "journal holds no record", path=self.path))
            return
        if not self.closed:
            self._close_items("end of the journal", None)
            make = error if self.require_closed else warning
            self.add(
                make("OPEN_RUN", "journal has no final turn_completed (final: true): the run is open", path=self.path)
            )

    def summary(self) -> JournalSummary:
        """The projection ``project`` reports (call after the reader is done)."""
        final = self.final_payload
        evidence = evidence_status(final) if final is not None else None
        detail = final.get("evidence_rejected") if final is not None and evidence == REJECTED else None
        chained = bool(self.chained) and not self.chain_partial
        return JournalSummary(
            schema_version=_version_text(self.schema_version),
            records=self.events,
            durable_records=self.events - self.deltas,
            deltas=self.deltas,
            turns=self.turns,
            turn_boundaries=self.turn_boundaries,
            items_by_type=dict(sorted(self.items_by_type.items())),
            items_started=self.items_started,
            usage=dict(sorted(self.usage.items())),
            iterations=self.iterations,
            errors=list(self.errors),
            error_count=self.error_count,
            unknown_types=dict(sorted(self.unknown_types.items())),
            closed=self.closed,
            final_line=self.final_line,
            evidence=evidence,
            evidence_rejected=_detail(detail) if type(detail) is dict else None,
            chained=bool(self.chained),
            chain_verified=chained and self.first_integrity_failure is None,
            head=self.head if self.chained else None,
        )


def _detail(detail: JSONObject) -> JSONObject:
    """An ``evidence_rejected`` detail, bounded for a report."""
    refs = detail.get("refs")
    out: dict[str, Any] = {
        "reason": _text(detail.get("reason")),
        "ref": detail.get("ref") if _is_int(detail.get("ref")) else None,
    }
    if type(refs) is list:
        out["refs"] = [_text(r) for r in refs[:50]]
        out["refs_count"] = len(refs)
    return out


def _finding(p: Problem, event_id: str | None, where: Where) -> Finding:
    return Finding(p.code, p.severity, p.message, event_id=event_id, expected=p.expected, actual=p.actual, **where)
