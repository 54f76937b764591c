"""Publish the payload schemas as JSON Schema Draft 2020-12 (SPEC §2.6).

The schemas are generated from the same definitions the verifier compiles
(:mod:`ract_cli.format.kinds`), so the two cannot drift. ``export(directory)`` writes
one ``<kind>.json`` per kind plus ``envelope.json`` (SPEC §2.2) and
``index.json`` (kind -> first schema version), deterministically.

Usage: ``python -m ract_cli.format.schema_export DIR`` (``make schemas``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ract_cli.format.json_types import JSONObject
from ract_cli.format.kinds import KINDS, LATEST_SCHEMA_VERSION
from ract_cli.format.model import ENVELOPE_KEYS, JSON_TYPES, MAX_TIMESTAMP_NS, Field, KindDef

__all__ = ["DIALECT", "envelope_schema", "export", "kind_schema", "main", "render"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"
BASE_ID = "https://ract.dev/schemas/"


def _number(value: float) -> int | float:
    """Write integral bounds as JSON integers (``0``, not ``0.0``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _anchored(pattern: str) -> str:
    """Field patterns are full-match; JSON Schema patterns are searches."""
    return f"^(?:{pattern})$" if "|" in pattern else f"^{pattern}$"


def field_schema(f: Field) -> JSONObject:
    """The JSON Schema of one payload field."""
    schema: JSONObject = {}
    if f.description:
        schema["description"] = f.description
    types = f.types
    if set(types) != set(JSON_TYPES):  # all seven types: no constraint
        schema["type"] = types[0] if len(types) == 1 else list(types)
    if f.enum is not None:
        schema["enum"] = list(f.enum)
    if f.minimum is not None:
        schema["minimum"] = _number(f.minimum)
    if f.maximum is not None:
        schema["maximum"] = _number(f.maximum)
    if f.max_length is not None:
        schema["maxLength"] = f.max_length
    if f.pattern is not None:
        schema["pattern"] = _anchored(f.pattern)
    if f.items is not None:
        schema["items"] = {"type": f.items}
    if f.max_items is not None:
        schema["maxItems"] = f.max_items
    return schema


def kind_schema(kind: KindDef) -> JSONObject:
    """The JSON Schema (Draft 2020-12) of one kind's payload.

    Documented keys are optional (keys with no value are omitted) and
    undocumented keys are allowed: the contract only grows.
    """
    return {
        "$schema": DIALECT,
        "$id": f"{BASE_ID}{kind.name}.json",
        "title": kind.name,
        "description": kind.description,
        "type": "object",
        "properties": {f.name: field_schema(f) for f in kind.fields},
        "x-ract-schema-version": kind.version,
        "x-ract-section": kind.section,
        "x-ract-invariants": [inv.description for inv in kind.invariants],
    }


def envelope_schema() -> JSONObject:
    """The JSON Schema of the event envelope (SPEC §2.2): exactly nine keys."""
    hex32 = {"type": "string", "pattern": "^[0-9a-f]{32}$"}
    hex64 = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
    properties = {
        "id": {**hex32, "description": "Event id: 16-byte UUID, 32 lowercase hex chars."},
        "run_id": {**hex32, "description": "Run id: 32 lowercase hex chars, the same on every event of a file."},
        "step_id": {
            "type": ["string", "null"],
            "pattern": "^[0-9a-f]{32}$",
            "description": "Step id (32 lowercase hex chars) for step-scoped events, else null.",
        },
        "parent_id": {
            "type": ["string", "null"],
            "pattern": "^[0-9a-f]{32}$",
            "description": "Causal parent event id (32 lowercase hex chars), or null.",
        },
        "timestamp_ns": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_TIMESTAMP_NS - 1,
            "description": "Nanoseconds since the Unix epoch; a JSON integer (no fraction, no exponent).",
        },
        "kind": {"type": "string", "description": "Event kind; one of the closed vocabulary of the schema version."},
        "payload": {"type": "object", "description": "Kind-specific payload; see <kind>.json."},
        "prev_hash": {**hex64, "description": "Previous event's hash; 64 zeros for the first event."},
        "hash": {**hex64, "description": "SHA-256 (hex) of the canonical serialization without this key."},
    }
    assert set(properties) == ENVELOPE_KEYS
    return {
        "$schema": DIALECT,
        "$id": f"{BASE_ID}envelope.json",
        "title": "RACT event envelope",
        "description": "One line of a RACT run log: exactly these nine keys (SPEC §2.2).",
        "type": "object",
        "properties": properties,
        "required": sorted(ENVELOPE_KEYS),
        "additionalProperties": False,
        "x-ract-schema-version": LATEST_SCHEMA_VERSION,
    }


def render(schema: JSONObject) -> bytes:
    """Deterministic bytes: sorted keys, 2-space indent, trailing newline."""
    return (json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def documents() -> dict[str, JSONObject]:
    """File name -> schema document, for every file ``export`` writes."""
    docs: dict[str, JSONObject] = {f"{k.name}.json": kind_schema(k) for k in KINDS}
    docs["envelope.json"] = envelope_schema()
    docs["index.json"] = {k.name: k.version for k in KINDS}
    return docs


def export(directory: str | Path) -> list[Path]:
    """Write every schema document into ``directory``; return the paths written."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, doc in sorted(documents().items()):
        path = out / name
        path.write_bytes(render(doc))
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    """``python -m ract_cli.format.schema_export DIR``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m ract_cli.format.schema_export DIR", file=sys.stderr)
        return 2
    written = export(args[0])
    print(f"wrote {len(written)} schema files to {args[0]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
