"""The event model: envelope (SPEC §2.2) and the payload-definition language.

Each of the 64 kinds is defined once, in ``kinds.py``, with the small
declarative types below. The same definitions drive the verifier
(``compile_validator``) and the published JSON Schemas (``schema_export``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ract_cli.format.json_types import Payload
from ract_cli.records import FrozenRecord

#: the envelope's keys in the schema's field order (the order the runtime writes them in)
ENVELOPE_ORDER = ("id", "run_id", "step_id", "parent_id", "timestamp_ns", "kind", "payload", "prev_hash", "hash")
ENVELOPE_KEYS: frozenset[str] = frozenset(ENVELOPE_ORDER)
GENESIS_HASH = "0" * 64
MAX_TIMESTAMP_NS = 2**63  # exclusive
HEX32 = re.compile(r"[0-9a-f]{32}")
HEX64 = re.compile(r"[0-9a-f]{64}")

#: JSON type names used by Field.type (JSON Schema spelling).
JSON_TYPES = ("string", "integer", "number", "boolean", "object", "array", "null")


class Field(FrozenRecord):
    """One documented payload key. Absent keys are always allowed (SPEC §2.6)."""

    __slots__ = (
        "name",
        "type",
        "description",
        "enum",
        "minimum",
        "maximum",
        "max_length",
        "pattern",
        "items",
        "max_items",
    )
    name: str
    type: str | tuple[str, ...]  # a JSON type name, or several (e.g. ("string", "null"))
    description: str
    enum: tuple[object, ...] | None  # closed enumeration
    minimum: float | None
    maximum: float | None
    max_length: int | None  # strings: characters
    pattern: str | None  # strings: full-match regex
    items: str | None  # arrays: element JSON type
    max_items: int | None

    def __init__(
        self,
        name: str,
        type: str | tuple[str, ...],
        description: str = "",
        enum: tuple[object, ...] | None = None,
        minimum: float | None = None,
        maximum: float | None = None,
        max_length: int | None = None,
        pattern: str | None = None,
        items: str | None = None,
        max_items: int | None = None,
    ) -> None:
        self._freeze(name, type, description, enum, minimum, maximum, max_length, pattern, items, max_items)

    @property
    def types(self) -> tuple[str, ...]:
        return (self.type,) if isinstance(self.type, str) else self.type


class Invariant(FrozenRecord):
    """A cross-field rule JSON Schema cannot say; checked after the field checks pass.

    ``check`` gets the payload and returns True when the rule holds. It must
    tolerate absent keys (return True when a key it compares is absent).
    """

    __slots__ = ("description", "check")
    description: str
    check: Callable[[Payload], bool]

    def __init__(self, description: str, check: Callable[[Payload], bool]) -> None:
        self._freeze(description, check)


class KindDef(FrozenRecord):
    """One event kind of the closed vocabulary."""

    __slots__ = ("name", "version", "section", "description", "fields", "invariants")
    name: str
    version: int  # first schema version that has this kind (base kinds: 1)
    section: str  # heading of the reference document that defines it
    description: str
    fields: tuple[Field, ...]
    invariants: tuple[Invariant, ...]

    def __init__(
        self,
        name: str,
        version: int,
        section: str,
        description: str,
        fields: tuple[Field, ...] = (),
        invariants: tuple[Invariant, ...] = (),
    ) -> None:
        self._freeze(name, version, section, description, fields, invariants)


# --- validation ---------------------------------------------------------


def _is_type(value: object, json_type: str) -> bool:
    t = type(value)
    if json_type == "string":
        return t is str
    if json_type == "integer":
        # JSON Schema semantics: 3 and 3.0 are integers; booleans never are.
        return t is int or (type(value) is float and value.is_integer())
    if json_type == "number":
        return t is int or t is float
    if json_type == "boolean":
        return t is bool
    if json_type == "object":
        return t is dict
    if json_type == "array":
        return t is list
    if json_type == "null":
        return value is None
    raise ValueError(f"unknown JSON type {json_type!r}")


def _field_checker(f: Field) -> Callable[[object], str | None]:
    """Build a function value -> error text (or None) for one field."""
    types = f.types
    enum = frozenset(f.enum) if f.enum is not None else None
    pattern = re.compile(f.pattern) if f.pattern else None

    def check(value: object) -> str | None:
        if not any(_is_type(value, t) for t in types):
            return f"{f.name} must be {' or '.join(types)}, got {_json_type_name(value)}"
        if enum is not None and value not in enum:
            allowed = ", ".join(map(str, f.enum or ()))
            return f"{f.name} must be one of {allowed}; got {value!r}"
        if type(value) is int or type(value) is float:
            if f.minimum is not None and value < f.minimum:
                return f"{f.name} must be >= {f.minimum}; got {value!r}"
            if f.maximum is not None and value > f.maximum:
                return f"{f.name} must be <= {f.maximum}; got {value!r}"
        if type(value) is str:
            if f.max_length is not None and len(value) > f.max_length:
                return f"{f.name} must be at most {f.max_length} characters; got {len(value)}"
            if pattern is not None and not pattern.fullmatch(value):
                return f"{f.name} must match {f.pattern}"
        if type(value) is list:
            if f.max_items is not None and len(value) > f.max_items:
                return f"{f.name} must hold at most {f.max_items} items; got {len(value)}"
            if f.items is not None:
                for i, item in enumerate(value):
                    if not _is_type(item, f.items):
                        return f"{f.name}[{i}] must be {f.items}, got {_json_type_name(item)}"
        return None

    return check


def _json_type_name(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", dict: "object", list: "array"}.get(
        type(value), type(value).__name__
    )


PayloadValidator = Callable[[Payload], list[str]]


def compile_validator(kind: KindDef) -> PayloadValidator:
    """Return payload -> list of error texts (empty when valid)."""
    checks = tuple((f.name, _field_checker(f)) for f in kind.fields)
    invariants = kind.invariants

    def validate(payload: Payload) -> list[str]:
        errors: list[str] = []
        for name, check in checks:
            if name in payload:
                problem = check(payload[name])
                if problem is not None:
                    errors.append(problem)
        if not errors:
            for inv in invariants:
                try:
                    holds = inv.check(payload)
                except (TypeError, ValueError, KeyError):
                    holds = False
                if not holds:
                    errors.append(f"invariant violated: {inv.description}")
        return errors

    return validate
