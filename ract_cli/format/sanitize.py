"""Payload sanitizing (SPEC §9): anything the encoder cannot take becomes its repr text, never a crash."""

from __future__ import annotations

import math
from typing import Any

from ract_cli.errors import ExitCode, RactError
from ract_cli.format.canonical import format_number
from ract_cli.format.json_types import Payload
from ract_cli.format.text import safe_repr

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_FLOAT_AS_BIG_INT_MIN = 9.2e18  # below this a float's integer token always fits 64 bits
_MAX_DEPTH = 200


def sanitize_payload(payload: Any) -> Payload:
    """Make a payload JSON-encodable: anything the encoder cannot take becomes its repr text.

    Never raises. A non-dict payload is wrapped as ``{"value": ...}``.
    """
    return sanitize_report(payload)[0]


def sanitize_report(payload: Any) -> tuple[Payload, frozenset[str]]:
    """``sanitize_payload`` plus the top-level keys whose name or value it replaced.

    A key is reported when anything at or below it became repr text (a
    non-string key, a lone surrogate, NaN, an integer past 64 bits, an object
    JSON cannot carry, a container that raised while being read, nesting past
    200 levels). Nothing of the caller's objects is compared (no ``__eq__``):
    the report comes from the walk itself. Never raises.
    """
    hits: list[bool] = []
    replaced: set[str] = set()
    top = _sanitize(payload, 0, hits, replaced)
    if type(top) is dict:
        return top, frozenset(replaced)
    return {"value": top}, frozenset({"value"}) if hits else frozenset()


def _replace(value: Any, hits: list[bool]) -> str:
    hits.append(True)
    return safe_repr(value)


def _sanitize(value: Any, depth: int, hits: list[bool], top_keys: set[str] | None = None) -> Any:
    """One value made encodable; ``hits`` grows by one per replacement.

    ``top_keys`` (the payload level only) collects the keys under which a
    replacement happened. Only ``type()`` and identity are used to classify a
    value: ``isinstance`` can run a hostile ``__class__``, and every read of
    a container (its ``items()`` or iterator) runs inside ``try``.
    """
    if value is None or value is True or value is False:
        return value
    t = type(value)
    if t is str:
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return _replace(value, hits)
    if t is int:
        return value if _INT64_MIN <= value <= _INT64_MAX else _replace(value, hits)
    if t is float:
        if not math.isfinite(value):
            return _replace(value, hits)
        if _FLOAT_AS_BIG_INT_MIN <= abs(value) < 1e21 and not _INT64_MIN <= int(format_number(value)) <= _INT64_MAX:
            # JCS writes this float as a bare integer token (9.3e18 -> 9300000000000000000),
            # which a reader must call malformed (outside 64 bits): keep it as text instead.
            return _replace(value, hits)
        return value
    if depth >= _MAX_DEPTH:
        return _replace(value, hits)
    try:
        if issubclass(t, dict):  # subclasses too (OrderedDict, defaultdict, Counter...)
            items = list(value.items())  # a subclass's items() may raise or be mutated meanwhile
            out: dict[str, Any] = {}
            renamed: list[tuple[str, Any]] = []  # keys that became repr text: placed last, never over a key
            for key, item in items:
                before = len(hits)
                if type(key) is str:
                    name = _sanitize(key, depth + 1, hits)
                else:
                    name = _replace(key, hits)
                clean = _sanitize(item, depth + 1, hits)
                if name is not key:
                    renamed.append((name, clean))
                    continue
                out[name] = clean
                if top_keys is not None and len(hits) > before:
                    top_keys.add(name)
            for name, clean in renamed:
                final = _free_name(out, name)  # {1: "a", "1": "b"} -> {"1": "b", "1#2": "a"}
                out[final] = clean
                if top_keys is not None:
                    top_keys.add(final)
            return out
        if issubclass(t, (list, tuple)):
            return [_sanitize(item, depth + 1, hits) for item in list(value)]  # list(): a raising __iter__
    except Exception:
        return _replace(value, hits)
    return _replace(value, hits)


def _free_name(out: dict[str, Any], name: str) -> str:
    """``name``, else ``name#2``, ``name#3``...: the first not in ``out``.

    A key that became repr text (``1`` -> ``"1"``, a lone surrogate's repr) may
    equal a key already there: it takes the first free suffix instead, so no
    value is ever dropped. String keys keep their names; renamed keys take
    suffixes in the order the dict yields them.
    """
    candidate, n = name, 1
    while candidate in out:
        n += 1
        candidate = f"{name}#{n}"
    return candidate


def _string_list(value: Any, where: str) -> list[str]:
    """A list of strings from a config value: one string is a one-item list (YAML ``key: text``)."""
    if value is None:
        return []
    if type(value) is str:
        return [value]
    if type(value) in (list, tuple) and all(type(item) is str for item in value):
        return list(value)
    raise RactError(f"{where} must be a string or a list of strings, not {_describe(value)}", exit_code=ExitCode.USAGE)


def _describe(value: Any) -> str:
    if type(value) in (list, tuple):
        odd = next((item for item in value if type(item) is not str), None)
        return f"a list holding {type(odd).__name__} {safe_repr(odd)[:40]}"
    return f"{type(value).__name__} {safe_repr(value)[:40]}"


def _utf8_text(text: str, where: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise RactError(f"{where} is not valid UTF-8 text (a lone surrogate)", exit_code=ExitCode.USAGE) from None
    return text
