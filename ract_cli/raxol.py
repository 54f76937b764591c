"""Raxol agent journals: the second dialect (SPEC §8).

A Raxol journal is a JSON-lines file whose records carry ``type`` and
``payload`` (other top-level keys are tolerated: the contract only grows).
This module holds everything dialect-specific; the framing (line splitting,
torn tail, malformed lines, duplicate keys, ``max_line_bytes``, IO) is the
one chain reader's (``ract_cli.reader.ChainReader(dialect="raxol")``):

* ``evidence_status`` decodes the evidence marker of a final
  ``turn_completed`` to accepted / rejected / absent / unknown with the
  grandfather rule of the reference contract; it never raises.
* ``sanitize_payload`` / ``encode_line`` make journal records encodable
  (atoms become their names, anything else the encoder cannot take becomes
  its repr text).
* ``detect_dialect`` tells a journal record (``type`` without ``kind``) from a
  RACT event.
* ``analyze_record`` is the pure per-line check (parse, hash, record
  contract); ``JournalState`` feeds results in file order and checks what
  spans records (hash chain, item ids per turn, nothing after the final
  ``turn_completed``, the marker against the journal's schema version).

Atoms. Elixir atoms have no JSON form: on the wire they are strings. In
Python an atom-like key or value is any of: a plain ``str`` (the wire form);
an ``enum.Enum`` member (its ``value`` when that is a string, else its
``name``); an ``Atom`` of this module or any object with a string ``name``
(or ``value``) attribute; or a string in Elixir's inspect notation
(``":accepted"``, ``":evidence"``), read as the atom it spells. Matching is
exact and case-sensitive, like atoms.
"""

from __future__ import annotations

import enum
import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from .canonical import canonical_bytes
from .findings import WARNING, Finding, error, warning
from .model import GENESIS_HASH, HEX64
from .reader import (
    ChainState,
    LineResult,
    LogEvent,
    Problem,
    hash_without_hash_key,
    open_log,
    parse_object,
    split_line_ending,
)
from .reader import _short as _reader_short
from .writer import _safe_repr
from .writer import sanitize_payload as _sanitize_json


def _short(value: object) -> str:
    """A bounded repr of a log value for a message; never raises (deep nesting included)."""
    try:
        return _reader_short(value)
    except RecursionError:
        return f"<{type(value).__name__} nested too deep to show>"


__all__ = [
    "ABSENT",
    "ACCEPTED",
    "DIALECTS",
    "EVIDENCE_VALUES",
    "ITEM_TYPES",
    "LOOP_TYPES",
    "MARKER_SINCE",
    "REJECTED",
    "REJECTION_REASONS",
    "TRUST_TEXT",
    "UNKNOWN",
    "Atom",
    "EvidenceStatus",
    "JournalEvent",
    "JournalState",
    "JournalSummary",
    "analyze_record",
    "chain_records",
    "check_record",
    "detect_dialect",
    "detect_file_dialect",
    "discovery_suffixes",
    "encode_line",
    "evidence_status",
    "journal_report",
    "normalize_evidence",
    "parse_version",
    "record_hash",
    "sanitize_payload",
]

DIALECTS = ("auto", "ract", "raxol")

#: v0 vocabulary, family ``loop``: type -> payload keys the reference lists.
LOOP_TYPES: dict[str, tuple[str, ...]] = {
    "turn_started": ("prompt",),
    "item_started": ("item_id", "item_type"),
    "item_delta": ("item_id", "chunk"),
    "item_completed": ("item_id", "item_type"),
    "turn_completed": ("usage", "iteration", "final"),
    "error": ("reason",),
}
FAMILY = "loop"
ITEM_TYPES = ("message", "reasoning", "tool_use", "tool_result")
EVIDENCE_VALUES = ("accepted", "rejected", "absent")
REJECTION_REASONS = ("missing_ref", "not_evidence", "foreign_turn", "stale_evidence", "mutation_echo")
MARKER_KEYS = ("evidence", "evidence_rejected")
LEGACY_VERSION = (1, 0, 0)
MARKER_SINCE = (1, 1, 0)  # the evidence marker exists from this journal schema version on
_VERSION = re.compile(r"v?([0-9]{1,9})(?:\.([0-9]{1,9}))?(?:\.([0-9]{1,9}))?(?:[-+][0-9A-Za-z.+-]{1,64})?")


# --- atoms ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Atom:
    """An Elixir atom in Python, e.g. ``Atom("accepted")`` for ``:accepted``."""

    name: str

    def __str__(self) -> str:
        return self.name


def _atom_name(value: Any) -> str | None:
    """The name an atom-like key or value spells, or None. Never raises."""
    try:
        if isinstance(value, enum.Enum):
            inner = value.value
            text = inner if isinstance(inner, str) else value.name
        elif isinstance(value, str):
            text = value
        else:
            text = None
            for attr in ("name", "value"):
                candidate = getattr(value, attr, None)
                if isinstance(candidate, str):
                    text = candidate
                    break
            if text is None:
                return None
        text = str.__str__(text)  # a str subclass cannot smuggle a custom __eq__
        if len(text) > 1 and text[0] == ":":
            text = text[1:]  # Elixir inspect notation: ":accepted" is the atom :accepted
        return text
    except Exception:
        return None


# --- evidence decode -----------------------------------------------------


class EvidenceStatus(enum.StrEnum):
    """The quaternary decode of the evidence marker (compares equal to its string)."""

    accepted = "accepted"
    rejected = "rejected"
    absent = "absent"
    unknown = "unknown"


ACCEPTED = EvidenceStatus.accepted
REJECTED = EvidenceStatus.rejected
ABSENT = EvidenceStatus.absent
UNKNOWN = EvidenceStatus.unknown
_BY_NAME = {"accepted": ACCEPTED, "rejected": REJECTED, "absent": ABSENT}


def normalize_evidence(value: Any) -> EvidenceStatus:
    """One ``evidence`` value: a known atom or string, else unknown (never accepted)."""
    if not isinstance(value, enum.Enum) and (
        value is None
        or isinstance(value, (bool, int, float, complex, bytes, bytearray, list, tuple, set, frozenset, Mapping))
    ):
        return UNKNOWN
    name = _atom_name(value)
    return _BY_NAME.get(name, UNKNOWN) if name is not None else UNKNOWN


def _refs_present(value: Any) -> bool:
    """A legacy refs carrier: a non-empty list. Anything else is not a carrier."""
    return isinstance(value, (list, tuple)) and len(value) > 0


def evidence_status(payload: Any) -> EvidenceStatus:
    """Decode a ``turn_completed{final: true}`` payload's evidence status.

    Tolerant of atom- and string-keyed payloads and of atom- and string-valued
    enums. An ``evidence`` key present is authoritative (its value decoded by
    ``normalize_evidence``); with no ``evidence`` key, a non-empty ``refs``
    list grandfathers to accepted; with neither it is unknown, never absent.
    A payload that is not a mapping, an unrecognised value, or two
    ``evidence`` keys (atom and string) that disagree decode to unknown.
    Never raises. Reports the producer-stamped enum; it re-derives nothing.
    """
    try:
        if not isinstance(payload, Mapping):
            return UNKNOWN
        evidence: list[Any] = []
        refs: list[Any] = []
        for key, value in payload.items():
            name = _atom_name(key)
            if name == "evidence":
                evidence.append(value)
            elif name == "refs":
                refs.append(value)
        if evidence:
            decoded = {normalize_evidence(v) for v in evidence}
            return decoded.pop() if len(decoded) == 1 else UNKNOWN
        if refs and all(_refs_present(r) for r in refs):
            return ACCEPTED
        return UNKNOWN
    except Exception:
        return UNKNOWN


# --- encoding ------------------------------------------------------------

_MAX_DEPTH = 200


def _atoms_to_strings(value: Any, depth: int) -> Any:
    """Atoms (enum members, ``Atom``) become their names; containers are walked. Never raises.

    A value this walk cannot read (a mapping whose ``items()`` raises, a
    list whose iterator raises, a hostile ``__class__``) is returned as it
    is: the JSON sanitizer then turns it into its repr text. A key that is
    neither a string nor an atom becomes its repr text here already (what
    the JSON sanitizer would make of it), so an unhashable or hostile key
    never reaches a dict.
    """
    if depth >= _MAX_DEPTH:
        return value  # the JSON sanitizer turns what is left into repr text
    t = type(value)
    if t is str or t is int or t is float or value is None or t is bool:
        return value
    try:
        if isinstance(value, (enum.Enum, Atom)):
            name = _atom_name(value)
            return name if name is not None else value
        if t is dict or isinstance(value, Mapping):  # any mapping (an Elixir map as a Python mapping) is an object
            out: dict[Any, Any] = {}
            for key, item in list(value.items()):
                out[_key_text(key)] = _atoms_to_strings(item, depth + 1)
            return out
        if issubclass(t, (list, tuple)):
            return [_atoms_to_strings(item, depth + 1) for item in list(value)]
    except Exception:
        return value
    return value


def _key_text(key: Any) -> Any:
    """A mapping key as the wire has it: a string, an atom's name, else the key's repr text."""
    if type(key) is str:
        return key
    try:
        if isinstance(key, (enum.Enum, Atom)):  # isinstance can run a hostile __class__
            name = _atom_name(key)
            if name is not None:
                return name
    except Exception:
        pass
    return _safe_repr(key)


def sanitize_payload(payload: Any) -> dict:
    """Coerce a payload into a JSON-encodable dict; never raises.

    Atoms become their names (the wire convention: atom in memory, JSON
    string on the wire); anything the encoder cannot take becomes its repr
    text (the same core as the RACT writer). A non-dict payload is wrapped as
    ``{"value": ...}``.
    """
    try:
        prepared = _atoms_to_strings(payload, 0)  # total already; the guard keeps it so
    except Exception:
        prepared = payload
    return _sanitize_json(prepared)


def encode_line(record: Any) -> bytes:
    """A journal record as its JSON line (canonical JSON plus ``\\n``); never raises.

    The whole record is sanitized like a payload, so a record is always
    encodable; a ``hash`` already in it is kept as given.
    """
    return canonical_bytes(sanitize_payload(record)) + b"\n"


def record_hash(record: Mapping[str, Any]) -> str:
    """SPEC §2.3-2.4 for journals: SHA-256 of the canonical record without ``hash``."""
    return hashlib.sha256(canonical_bytes({k: v for k, v in record.items() if k != "hash"})).hexdigest()


def chain_records(records: Iterable[Mapping[str, Any]], prev_hash: str = GENESIS_HASH) -> list[dict]:
    """Sanitize records and chain them: each gets ``prev_hash`` and its ``hash``."""
    out = []
    for record in records:
        clean = sanitize_payload(record)
        clean.pop("hash", None)
        clean["prev_hash"] = prev_hash
        clean["hash"] = prev_hash = record_hash(clean)
        out.append(clean)
    return out


# --- dialect detection ---------------------------------------------------


def detect_dialect(first_record: Any) -> str:
    """``"raxol"`` for a record with ``type`` and no ``kind``, else ``"ract"``."""
    if isinstance(first_record, Mapping) and "type" in first_record and "kind" not in first_record:
        return "raxol"
    return "ract"


_DETECT_LINES = 8
_DETECT_BYTES = 1 << 20


def detect_file_dialect(path: str | os.PathLike[str], *, max_line_bytes: int = _DETECT_BYTES) -> str:
    """The dialect of a file from its first parseable record (of its first few lines).

    A file that cannot be opened, or whose first lines hold no JSON object,
    is ``"ract"``: the RACT reader then reports what is wrong with it.
    """
    limit = min(max_line_bytes, _DETECT_BYTES)
    try:
        f = open_log(path)  # type: ignore[arg-type]
    except Exception:
        return "ract"
    with f:
        for _ in range(_DETECT_LINES):
            try:
                raw = f.readline(limit + 2)
            except OSError:
                return "ract"
            if not raw:
                break
            if len(raw) == limit + 2 and not raw.endswith(b"\n"):
                break  # too long to judge here
            body, _ = split_line_ending(raw)
            try:
                obj = orjson.loads(body)
            except orjson.JSONDecodeError:
                continue
            if type(obj) is dict:
                return detect_dialect(obj)
    return "ract"


# --- one record ----------------------------------------------------------


def parse_version(value: Any) -> tuple[int, int, int] | None:
    """A journal ``schema_version`` as a tuple, or None when it is not one.

    "1.1.0" is the form the reference stamps; "1.1", "v1.1.0", "1.1.0-rc1"
    and a JSON number (1.1) are read too, missing components as 0.
    """
    if type(value) in (int, float) and value >= 0:
        value = repr(value)
    if type(value) is not str:
        return None
    m = _VERSION.fullmatch(value)
    return (int(m[1]), int(m[2] or 0), int(m[3] or 0)) if m else None


def _violation(message: str, **kw: Any) -> Problem:
    return Problem("CONTRACT_VIOLATION", message, **kw)


def _contract_warning(message: str, **kw: Any) -> Problem:
    return Problem("CONTRACT_WARNING", message, severity=WARNING, **kw)


def _is_int(value: Any) -> bool:
    return type(value) is int


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
                    actual=_short(stored) if stored_hash is None else stored,
                )
            )
    problems.extend(check_record(obj))
    return LineResult(obj, stored_hash, problems)


def check_record(record: dict) -> list[Problem]:
    """The per-record contract (v0, family loop); cross-record rules are ``JournalState``'s."""
    problems: list[Problem] = []
    if "schema_version" in record and parse_version(record["schema_version"]) is None:
        problems.append(
            _contract_warning(
                'schema_version is not a version such as "1.1.0": ignored', actual=_short(record["schema_version"])
            )
        )
    if "type" not in record:
        problems.append(_violation("record has no type"))
        return problems
    rtype = record["type"]
    if type(rtype) is not str:
        problems.append(_violation("type must be a string", actual=_short(rtype)))
        return problems
    if "payload" not in record:
        problems.append(_violation(f"{_short(rtype)} record has no payload"))
        return problems
    payload = record["payload"]
    if type(payload) is not dict:
        problems.append(_violation("payload must be an object", actual=_short(payload)))
        return problems
    family = record.get("family", FAMILY)
    if rtype not in LOOP_TYPES or family != FAMILY:
        where = f"type {_short(rtype)}" if family == FAMILY else f"family {_short(family)} type {_short(rtype)}"
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


def _require(payload: dict, rtype: str, key: str, problems: list[Problem]) -> bool:
    if key not in payload:
        problems.append(_violation(f"{rtype}: payload has no {key!r}"))
        return False
    return True


def _check_item_id(payload: dict, rtype: str, problems: list[Problem]) -> None:
    if _require(payload, rtype, "item_id", problems):
        item_id = payload["item_id"]
        if type(item_id) is not str or not item_id:
            problems.append(_violation(f"{rtype}: item_id must be a non-empty string", actual=_short(item_id)))


def _check_item_type(payload: dict, rtype: str, problems: list[Problem]) -> None:
    if _require(payload, rtype, "item_type", problems):
        item_type = payload["item_type"]
        if type(item_type) is not str:
            problems.append(_violation(f"{rtype}: item_type must be a string", actual=_short(item_type)))
        elif item_type not in ITEM_TYPES:
            problems.append(
                _contract_warning(
                    f"{rtype}: item_type {_short(item_type)} is not one of {', '.join(ITEM_TYPES)} (a newer contract?)"
                )
            )


def _check_turn_started(payload: dict, problems: list[Problem]) -> None:
    if _require(payload, "turn_started", "prompt", problems) and type(payload["prompt"]) is not str:
        problems.append(_violation("turn_started: prompt must be a string", actual=_short(payload["prompt"])))


def _check_item_started(payload: dict, problems: list[Problem]) -> None:
    _check_item_id(payload, "item_started", problems)
    _check_item_type(payload, "item_started", problems)


def _check_item_delta(payload: dict, problems: list[Problem]) -> None:
    _check_item_id(payload, "item_delta", problems)
    if _require(payload, "item_delta", "chunk", problems) and type(payload["chunk"]) is not str:
        problems.append(_violation("item_delta: chunk must be a string", actual=_short(payload["chunk"])))


def _check_item_completed(payload: dict, problems: list[Problem]) -> None:
    _check_item_id(payload, "item_completed", problems)
    _check_item_type(payload, "item_completed", problems)


def _check_turn_completed(payload: dict, problems: list[Problem]) -> None:
    if _require(payload, "turn_completed", "usage", problems) and type(payload["usage"]) is not dict:
        problems.append(_violation("turn_completed: usage must be an object", actual=_short(payload["usage"])))
    if "iteration" in payload and not (_is_int(payload["iteration"]) and payload["iteration"] >= 0):
        problems.append(
            _violation("turn_completed: iteration must be a non-negative integer", actual=_short(payload["iteration"]))
        )
    if _require(payload, "turn_completed", "final", problems) and type(payload["final"]) is not bool:
        problems.append(_violation("turn_completed: final must be true or false", actual=_short(payload["final"])))


def _check_error(payload: dict, problems: list[Problem]) -> None:
    if _require(payload, "error", "reason", problems) and payload["reason"] is None:
        problems.append(_violation("error: reason must not be null"))


_PAYLOAD_CHECKS = {
    "turn_started": _check_turn_started,
    "item_started": _check_item_started,
    "item_delta": _check_item_delta,
    "item_completed": _check_item_completed,
    "turn_completed": _check_turn_completed,
    "error": _check_error,
}


def _check_marker(payload: dict, problems: list[Problem]) -> None:
    """The evidence marker of a final turn_completed (both keys optional)."""
    has_evidence = "evidence" in payload
    evidence = payload.get("evidence")
    if has_evidence and (type(evidence) is not str or evidence not in EVIDENCE_VALUES):
        problems.append(
            _violation("turn_completed: evidence must be one of accepted, rejected, absent", actual=_short(evidence))
        )
    if "evidence_rejected" in payload:
        if evidence != "rejected":
            problems.append(
                _violation(
                    'turn_completed: evidence_rejected is allowed only with evidence "rejected"',
                    actual=_short(evidence) if has_evidence else "no evidence",
                )
            )
        detail = payload["evidence_rejected"]
        if type(detail) is not dict:
            problems.append(_violation("turn_completed: evidence_rejected must be an object", actual=_short(detail)))
        else:
            if "refs" not in detail:
                problems.append(_violation("turn_completed: evidence_rejected has no refs"))
            elif type(detail["refs"]) is not list:
                problems.append(
                    _violation("turn_completed: evidence_rejected.refs must be a list", actual=_short(detail["refs"]))
                )
            if "reason" not in detail:
                problems.append(_violation("turn_completed: evidence_rejected has no reason"))
            elif type(detail["reason"]) is not str or detail["reason"] not in REJECTION_REASONS:
                problems.append(
                    _violation(
                        "turn_completed: evidence_rejected.reason must be one of " + ", ".join(REJECTION_REASONS),
                        actual=_short(detail["reason"]),
                    )
                )
            if "ref" not in detail:
                problems.append(_violation("turn_completed: evidence_rejected has no ref (an offset or null)"))
            elif detail["ref"] is not None and not (_is_int(detail["ref"]) and detail["ref"] >= 0):
                problems.append(
                    _violation(
                        "turn_completed: evidence_rejected.ref must be a non-negative integer offset or null",
                        actual=_short(detail["ref"]),
                    )
                )
    if evidence == "accepted" and not _refs_present(payload.get("refs")):
        problems.append(
            _contract_warning('turn_completed: evidence "accepted" without refs (the accepted-refs carrier)')
        )
    if evidence == "absent" and "refs" in payload:
        problems.append(_contract_warning('turn_completed: evidence "absent" but the payload carries refs'))


# --- events --------------------------------------------------------------


@dataclass(slots=True)
class JournalEvent(LogEvent):
    """One record of a journal: ``kind`` is its ``type``, ``payload`` its payload (or {})."""

    @property
    def kind(self) -> str:  # type: ignore[override]
        rtype = self.event.get("type")
        return rtype if type(rtype) is str else ""

    @property
    def payload(self) -> dict:  # type: ignore[override]
        payload = self.event.get("payload")
        return payload if type(payload) is dict else {}

    @property
    def durable(self) -> bool:
        """False for ``item_delta``: ephemeral, live render only, never replayed."""
        return self.kind != "item_delta"


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
    errors: list[dict]  # the first MAX_KEPT error records: {"line", "reason"}
    error_count: int
    unknown_types: dict[str, int]
    closed: bool  # a final turn_completed was seen
    final_line: int | None
    evidence: EvidenceStatus | None  # None when the journal has no final turn_completed
    evidence_rejected: dict | None
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


def _add_usage(totals: dict[str, int | float], usage: dict, prefix: str = "", depth: int = 0) -> None:
    for key, value in usage.items():
        name = f"{prefix}{key}"
        if type(value) in (int, float):
            _tally(totals, name, value)
        elif type(value) is dict and depth < 3:
            _add_usage(totals, value, name + ".", depth + 1)


MAX_KEYS = 1000  # distinct names kept per table (item types, usage keys, unknown types); the rest pool in "(other)"
MAX_TEXT = 200  # characters kept of a log-derived string in a summary
MAX_KEPT = 1000  # error records itemized
OTHER = "(other)"


def _tally(table: dict, key: str, amount: int | float = 1) -> None:
    if key not in table and len(table) >= MAX_KEYS:
        key = OTHER
    table[key] = table.get(key, 0) + amount


def _text(value: Any) -> str:
    text = value if type(value) is str else _short(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def _record_id(record: dict) -> str | None:
    rid = record.get("id")
    return rid[:200] if type(rid) is str else None


@dataclass
class JournalState(ChainState):
    """Cross-record checks of a journal, fed one ``LineResult`` at a time in file order.

    Shares ``ChainState``'s finding bookkeeping (``add``, ``max_findings``,
    ``exit_code``, ``first_integrity_failure``, ``events``, ``head``).
    """

    version: tuple[int, int, int] | None = None  # last stamped schema_version
    chained: bool | None = None  # decided by the first record
    chain_partial: bool = False
    closed: bool = False
    final_line: int | None = None
    final_payload: dict | None = None
    turns: int = 0
    turn_boundaries: int = 0
    turn_open: bool = False
    deltas: int = 0
    items_started: int = 0
    items_by_type: dict = field(default_factory=dict)
    usage: dict = field(default_factory=dict)
    iterations: int | None = None
    errors: list = field(default_factory=list)  # the first MAX_KEPT error records
    error_count: int = 0
    unknown_types: dict = field(default_factory=dict)
    _started: dict = field(default_factory=dict)  # item_id -> (item_type, line) in the current turn
    _completed: set = field(default_factory=set)

    @property
    def schema_version(self) -> tuple[int, int, int]:
        return self.version or LEGACY_VERSION

    def feed(self, result: LineResult, line: int, offset: int) -> None:
        where = {"path": self.path, "line": line, "offset": offset}
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
        self, record: dict, stored_hash: str | None, first_line: bool, event_id: str | None, where: dict
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
                        actual=_short(prev),
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
                    actual=_short(prev),
                    **where,
                )
            )
        self.expected_prev = stored_hash
        self.head = stored_hash

    def _feed_contract(self, record: dict, event_id: str | None, where: dict) -> None:
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
            version = parse_version(record["schema_version"])
            if version is not None:
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
        elif rtype == "item_started" and item_id is not None:
            self.items_started += 1
            if item_id in self._started:
                self.add(
                    error(
                        "CONTRACT_VIOLATION",
                        f"item_id {_short(item_id)} was already used in this turn (line {self._started[item_id][1]})",
                        event_id=event_id,
                        **where,
                    )
                )
            else:
                self._started[item_id] = (payload.get("item_type"), where["line"])
        elif rtype == "item_delta":
            self.deltas += 1
            if item_id is not None and (item_id not in self._started or item_id in self._completed):
                state = "already completed" if item_id in self._completed else "not started in this turn"
                self.add(
                    warning(
                        "CONTRACT_WARNING",
                        f"item_delta for item {_short(item_id)}, {state}",
                        event_id=event_id,
                        **where,
                    )
                )
        elif rtype == "item_completed" and item_id is not None:
            item_type = payload.get("item_type")
            if item_id not in self._started:
                self.add(
                    error(
                        "CONTRACT_VIOLATION",
                        f"item_completed for item {_short(item_id)}, which was not started in this turn",
                        event_id=event_id,
                        **where,
                    )
                )
            elif item_id in self._completed:
                self.add(
                    error("CONTRACT_VIOLATION", f"item {_short(item_id)} completed twice", event_id=event_id, **where)
                )
            else:
                self._completed.add(item_id)
                started_type = self._started[item_id][0]
                if type(started_type) is str and type(item_type) is str and started_type != item_type:
                    self.add(
                        warning(
                            "CONTRACT_WARNING",
                            f"item {_short(item_id)} started as {_short(started_type)} "
                            f"but completed as {_short(item_type)}",
                            event_id=event_id,
                            **where,
                        )
                    )
            if type(item_type) is str:
                _tally(self.items_by_type, _text(item_type))
        elif rtype == "turn_completed":
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
        elif rtype == "error":
            self.error_count += 1
            if len(self.errors) < MAX_KEPT:
                self.errors.append({"line": where["line"], "reason": _text(payload.get("reason"))})

    def _close_items(self, boundary: str, event_id: str | None) -> None:
        for item_id, (_, line) in self._started.items():
            if item_id not in self._completed:
                self.add(
                    warning(
                        "CONTRACT_WARNING",
                        f"item {_short(item_id)} was started but never completed before the {boundary}",
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
        evidence = evidence_status(self.final_payload) if self.final_payload is not None else None
        detail = self.final_payload.get("evidence_rejected") if evidence == REJECTED else None
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


def _detail(detail: dict) -> dict:
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


def _finding(p: Problem, event_id: str | None, where: dict) -> Finding:
    return Finding(p.code, p.severity, p.message, event_id=event_id, expected=p.expected, actual=p.actual, **where)


# --- project: the journal report ------------------------------------------

#: what the evidence verdict stands on (``JournalSummary.trust``) -> how a report says it
TRUST_TEXT = {
    "verified-chain": "stands on a verified chain",
    "broken-chain": "stands on a chain that does NOT verify: not to be believed",
    "journal-trust": "stands only on trust in the journal (no hash chain)",
}


def journal_report(reader: Any, path: str, *, max_items: int = MAX_KEPT) -> dict[str, Any]:
    """The ``project`` report of a journal read to its end by ``ChainReader(dialect="raxol")``.

    Counts cover every record (a journal's projection is its ``JournalState``);
    ``trusted``/``untrusted_from_line`` and ``evidence.trust`` say how far that
    can be believed. The JSON shape is documented in ``docs/raxol.md``.
    """
    state: JournalState = reader.state
    summary = state.summary()
    broken = state.first_integrity_failure
    exit_code = state.exit_code
    findings = state.findings
    flags = [
        {"code": f.code, "source": "verify", "line": f.line, "event_id": f.event_id, "kind": None, "message": f.message}
        for f in findings
    ]
    kept = flags[:max_items]
    journal = summary.to_dict()
    errors = journal.pop("errors")
    evidence = journal.pop("evidence")
    detail = journal.pop("evidence_rejected")
    trust = journal.pop("trust")
    for key in ("dialect", "chained", "chain_verified", "head", "records", "closed", "final_line"):
        journal.pop(key)
    count = journal.pop("error_count")
    journal["errors"] = {"count": count, "items": errors[:max_items], "omitted": count - min(len(errors), max_items)}
    final_line = summary.final_line
    claimed = None
    if broken is not None and final_line is not None and final_line >= broken:
        # As for RACT logs (project's untrusted.claimed_close): a close at or after the first
        # integrity failure is a claim, not a verdict -- it may be the forged record itself.
        claimed = {"status": evidence, "line": final_line, "rejected": detail}
        evidence = detail = final_line = None
    return {
        "report_version": 1,
        "dialect": "raxol",
        "path": path,
        "run_id": None,
        "status": "completed" if final_line is not None else "open",
        "exit_code": int(exit_code),
        "exit_name": exit_code.name,
        "trusted": broken is None,
        "untrusted_from_line": broken,
        "evidence": {
            "status": evidence,
            "line": final_line,
            "rejected": detail,
            "trust": trust,
            "stands_on": TRUST_TEXT[trust] if evidence is not None else None,
            "verified_chain": trust == "verified-chain",
            "claimed": claimed,
        },
        "journal": journal,
        "chain": {
            "chained": summary.chained,
            "verified": summary.chain_verified,
            "head": summary.head,
            "events": summary.records,
            "durable_events": summary.durable_records,
        },
        "audit_flags": {"count": len(flags), "items": kept, "omitted": len(flags) - len(kept)},
        "findings": [f.to_dict() for f in findings],
        "suppressed_findings": state.suppressed,
    }


def discovery_suffixes(dialect: str) -> tuple[str, ...]:
    """File suffixes a directory search also takes: ``*.jsonl`` journals when the dialect is raxol."""
    return (".jsonl",) if dialect == "raxol" else ()
