"""Making journal records encodable and chaining them (atoms become names; anything else its repr text)."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

from ract_cli.dialects.raxol.contract import Atom, _atom_name
from ract_cli.format.canonical import canonical_bytes, chain_hash
from ract_cli.format.json_types import Event, Payload
from ract_cli.format.model import GENESIS_HASH
from ract_cli.format.sanitize import sanitize_payload as _sanitize_json
from ract_cli.format.text import safe_repr

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
    return safe_repr(key)


def sanitize_payload(payload: Any) -> Payload:
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
    """SPEC §2.3-2.4 for journals: SHA-256 of the canonical record without ``hash`` (``format.canonical.chain_hash``)."""
    return chain_hash(record)


def chain_records(records: Iterable[Mapping[str, Any]], prev_hash: str = GENESIS_HASH) -> list[Event]:
    """Sanitize records and chain them: each gets ``prev_hash`` and its ``hash``."""
    out: list[Event] = []
    for record in records:
        clean = sanitize_payload(record)
        clean.pop("hash", None)
        clean["prev_hash"] = prev_hash
        clean["hash"] = prev_hash = record_hash(clean)
        out.append(clean)
    return out
