"""One journal line judged alone: parse, the record's own hash, its contract (type, payload keys, marker shape)."""

from __future__ import annotations

from collections.abc import Callable

from ract_cli.dialects.raxol.contract import (
    EVIDENCE_VALUES,
    FAMILY,
    ITEM_TYPES,
    LOOP_TYPES,
    MARKER_KEYS,
    REJECTION_REASONS,
    _contract_warning,
    _is_int,
    _refs_present,
    _violation,
    parse_version,
)
from ract_cli.findings import WARNING
from ract_cli.format.json_types import Event, Payload
from ract_cli.format.model import HEX64
from ract_cli.format.text import short
from ract_cli.read.event import LogEvent
from ract_cli.read.json_rules import LineResult, Problem
from ract_cli.read.line import hash_without_hash_key, parse_object


def analyze_record(body: bytes, _unused: object = None) -> LineResult:
    """Check one journal line (without its line ending). Pure: no file, no neighbours.

    Same parse rules as RACT lines (SPEC §2.1): exactly one JSON object, no
    duplicate key, exact 64-bit integers. Then the record's own hash (when it
    carries ``hash``/``prev_hash``) and its contract: type, payload keys,
    evidence marker shape.
    """
    parsed = parse_object(body)
    if isinstance(parsed, LineResult):
        return parsed
    obj, _, fast = parsed

    problems: list[Problem] = []
    stored = obj.get("hash")
    stored_hash = stored if type(stored) is str and HEX64.fullmatch(stored) else None
    if "hash" in obj or "prev_hash" in obj:
        computed = hash_without_hash_key(obj, fast)
        if isinstance(computed, Problem):
            return LineResult(None, stored_hash, [computed], parsed=False)
        if "hash" not in obj:
            problems.append(Problem("HASH_MISMATCH", "record carries prev_hash but no hash", expected=computed))
        elif computed != stored_hash:
            problems.append(
                Problem(
                    "HASH_MISMATCH",
                    "stored hash differs from the canonical hash of the record",
                    expected=computed,
                    actual=short(stored) if stored_hash is None else stored,
                )
            )
    problems.extend(check_record(obj))
    return LineResult(obj, stored_hash, problems)


def check_record(record: Event) -> list[Problem]:
    """The per-record contract (v0, family loop); cross-record rules are ``JournalState``'s."""
    problems: list[Problem] = []
    if "schema_version" in record and parse_version(record["schema_version"]) is None:
        problems.append(
            _contract_warning(
                'schema_version is not a version such as "1.1.0": ignored', actual=short(record["schema_version"])
            )
        )
    if "type" not in record:
        problems.append(_violation("record has no type"))
        return problems
    rtype = record["type"]
    if type(rtype) is not str:
        problems.append(_violation("type must be a string", actual=short(rtype)))
        return problems
    if "payload" not in record:
        problems.append(_violation(f"{short(rtype)} record has no payload"))
        return problems
    payload = record["payload"]
    if type(payload) is not dict:
        problems.append(_violation("payload must be an object", actual=short(payload)))
        return problems
    family = record.get("family", FAMILY)
    if rtype not in LOOP_TYPES or family != FAMILY:
        where = f"type {short(rtype)}" if family == FAMILY else f"family {short(family)} type {short(rtype)}"
        problems.append(
            Problem(
                "UNKNOWN_TYPE",
                f"{where} is not in the v0 loop vocabulary (the contract only grows: skipped)",
                severity=WARNING,
            )
        )
        return problems
    check = _PAYLOAD_CHECKS[rtype]
    check(payload, problems)
    final = rtype == "turn_completed" and payload.get("final") is True
    if not final:
        for key in MARKER_KEYS:
            if key in payload:
                problems.append(
                    _violation(f"{rtype}: evidence marker {key!r} is allowed only on the final turn_completed")
                )
    else:
        _check_marker(payload, problems)
    return problems


def _require(payload: Payload, rtype: str, key: str, problems: list[Problem]) -> bool:
    if key not in payload:
        problems.append(_violation(f"{rtype}: payload has no {key!r}"))
        return False
    return True


def _check_item_id(payload: Payload, rtype: str, problems: list[Problem]) -> None:
    if _require(payload, rtype, "item_id", problems):
        item_id = payload["item_id"]
        if type(item_id) is not str or not item_id:
            problems.append(_violation(f"{rtype}: item_id must be a non-empty string", actual=short(item_id)))


def _check_item_type(payload: Payload, rtype: str, problems: list[Problem]) -> None:
    if _require(payload, rtype, "item_type", problems):
        item_type = payload["item_type"]
        if type(item_type) is not str:
            problems.append(_violation(f"{rtype}: item_type must be a string", actual=short(item_type)))
        elif item_type not in ITEM_TYPES:
            problems.append(
                _contract_warning(
                    f"{rtype}: item_type {short(item_type)} is not one of {', '.join(ITEM_TYPES)} (a newer contract?)"
                )
            )


def _check_turn_started(payload: Payload, problems: list[Problem]) -> None:
    if _require(payload, "turn_started", "prompt", problems) and type(payload["prompt"]) is not str:
        problems.append(_violation("turn_started: prompt must be a string", actual=short(payload["prompt"])))


def _check_item_started(payload: Payload, problems: list[Problem]) -> None:
    _check_item_id(payload, "item_started", problems)
    _check_item_type(payload, "item_started", problems)


def _check_item_delta(payload: Payload, problems: list[Problem]) -> None:
    _check_item_id(payload, "item_delta", problems)
    if _require(payload, "item_delta", "chunk", problems) and type(payload["chunk"]) is not str:
        problems.append(_violation("item_delta: chunk must be a string", actual=short(payload["chunk"])))


def _check_item_completed(payload: Payload, problems: list[Problem]) -> None:
    _check_item_id(payload, "item_completed", problems)
    _check_item_type(payload, "item_completed", problems)


def _check_turn_completed(payload: Payload, problems: list[Problem]) -> None:
    if _require(payload, "turn_completed", "usage", problems) and type(payload["usage"]) is not dict:
        problems.append(_violation("turn_completed: usage must be an object", actual=short(payload["usage"])))
    if "iteration" in payload and not (_is_int(payload["iteration"]) and payload["iteration"] >= 0):
        problems.append(
            _violation("turn_completed: iteration must be a non-negative integer", actual=short(payload["iteration"]))
        )
    if _require(payload, "turn_completed", "final", problems) and type(payload["final"]) is not bool:
        problems.append(_violation("turn_completed: final must be true or false", actual=short(payload["final"])))


def _check_error(payload: Payload, problems: list[Problem]) -> None:
    if _require(payload, "error", "reason", problems) and payload["reason"] is None:
        problems.append(_violation("error: reason must not be null"))


_PAYLOAD_CHECKS: dict[str, Callable[[Payload, list[Problem]], None]] = {
    "turn_started": _check_turn_started,
    "item_started": _check_item_started,
    "item_delta": _check_item_delta,
    "item_completed": _check_item_completed,
    "turn_completed": _check_turn_completed,
    "error": _check_error,
}


def _check_marker(payload: Payload, problems: list[Problem]) -> None:
    """The evidence marker of a final turn_completed (both keys optional)."""
    has_evidence = "evidence" in payload
    evidence = payload.get("evidence")
    if has_evidence and (type(evidence) is not str or evidence not in EVIDENCE_VALUES):
        problems.append(
            _violation("turn_completed: evidence must be one of accepted, rejected, absent", actual=short(evidence))
        )
    if "evidence_rejected" in payload:
        if evidence != "rejected":
            problems.append(
                _violation(
                    'turn_completed: evidence_rejected is allowed only with evidence "rejected"',
                    actual=short(evidence) if has_evidence else "no evidence",
                )
            )
        detail = payload["evidence_rejected"]
        if type(detail) is not dict:
            problems.append(_violation("turn_completed: evidence_rejected must be an object", actual=short(detail)))
        else:
            if "refs" not in detail:
                problems.append(_violation("turn_completed: evidence_rejected has no refs"))
            elif type(detail["refs"]) is not list:
                problems.append(
                    _violation("turn_completed: evidence_rejected.refs must be a list", actual=short(detail["refs"]))
                )
            if "reason" not in detail:
                problems.append(_violation("turn_completed: evidence_rejected has no reason"))
            elif type(detail["reason"]) is not str or detail["reason"] not in REJECTION_REASONS:
                problems.append(
                    _violation(
                        "turn_completed: evidence_rejected.reason must be one of " + ", ".join(REJECTION_REASONS),
                        actual=short(detail["reason"]),
                    )
                )
            if "ref" not in detail:
                problems.append(_violation("turn_completed: evidence_rejected has no ref (an offset or null)"))
            elif detail["ref"] is not None and not (_is_int(detail["ref"]) and detail["ref"] >= 0):
                problems.append(
                    _violation(
                        "turn_completed: evidence_rejected.ref must be a non-negative integer offset or null",
                        actual=short(detail["ref"]),
                    )
                )
    if evidence == "accepted" and not _refs_present(payload.get("refs")):
        problems.append(
            _contract_warning('turn_completed: evidence "accepted" without refs (the accepted-refs carrier)')
        )
    if evidence == "absent" and "refs" in payload:
        problems.append(_contract_warning('turn_completed: evidence "absent" but the payload carries refs'))


# --- events --------------------------------------------------------------


class JournalEvent(LogEvent):
    """One record of a journal: ``kind`` is its ``type``, ``payload`` its payload (or {})."""

    __slots__ = ()

    @property
    def kind(self) -> str:
        rtype = self.event.get("type")
        return rtype if type(rtype) is str else ""

    @property
    def payload(self) -> Payload:
        payload = self.event.get("payload")
        return payload if type(payload) is dict else {}

    @property
    def durable(self) -> bool:
        """False for ``item_delta``: ephemeral, live render only, never replayed."""
        return self.kind != "item_delta"
