"""The Raxol agent contract's vocabulary (SPEC §8): atoms, schema versions, the evidence marker and its decoder."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from ract_cli.findings import WARNING
from ract_cli.read.dialect import DIALECTS as DIALECTS  # re-exported: the one list is read.dialect's
from ract_cli.read.json_rules import Problem

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


def _is_int(value: object) -> TypeGuard[int]:
    """An integer proper (``bool`` is not one)."""
    return type(value) is int
