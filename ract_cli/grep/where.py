"""``--where`` conditions for ``grep`` (SPEC §6): ``PATH OP VALUE`` or ``PATH?`` on one parsed event."""

from __future__ import annotations

import re
from typing import TypeVar

from ract_cli.errors import UsageError
from ract_cli.format.json_types import Event
from ract_cli.format.model import ENVELOPE_KEYS
from ract_cli.records import FrozenRecord

__all__ = ["ABSENT", "Condition", "is_number", "json_equal", "parse_where"]

#: what a path resolves to when the event has nothing there
ABSENT = object()
_ROOTS = ENVELOPE_KEYS | {"type"}  # "type": the kind of a Raxol journal record (SPEC §8)
_OPERATORS = ("!=", "!~", ">=", "<=", "==", "=", ">", "<", "~")  # longest first
_OP_CHARS = "=!<>~?"

_Ordered = TypeVar("_Ordered", float, str)


def _resolve(event: object, path: tuple[str, ...]) -> object:
    value = event
    for segment in path:
        if type(value) is dict:
            value = value.get(segment, ABSENT)
            if value is ABSENT:
                return ABSENT
        elif type(value) is list and segment.isdigit():
            index = int(segment)
            if index >= len(value):
                return ABSENT
            value = value[index]
        else:
            return ABSENT
    return value


def is_number(value: object) -> bool:
    """A JSON number: ``int`` or ``float``, never a boolean."""
    return type(value) is int or type(value) is float


def json_equal(a: object, b: object) -> bool:
    """Equality of JSON values: ``true`` is not ``1``; ``1`` equals ``1.0``; deep for objects and arrays."""
    if is_number(a) and is_number(b):
        return a == b
    if type(a) is not type(b):
        return False
    if type(a) is dict and type(b) is dict:
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if type(a) is list and type(b) is list:
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _holds(op: str, got: _Ordered, want: _Ordered) -> bool:
    """``got OP want`` for one of the ordering operators."""
    if op == ">":
        return got > want
    if op == "<":
        return got < want
    if op == ">=":
        return got >= want
    return got <= want


def _ordered(op: str, got: object, want: object) -> bool:
    """An ordering condition: it holds only between two numbers (never booleans) or two strings."""
    if type(got) is str and type(want) is str:
        return _holds(op, got, want)
    if (type(got) is int or type(got) is float) and (type(want) is int or type(want) is float):
        return _holds(op, got, want)
    return False


def _searched(regex: re.Pattern[str] | None, got: object) -> bool:
    return type(got) is str and regex is not None and regex.search(got) is not None


class Condition(FrozenRecord):
    """One ``--where`` expression: ``PATH OP VALUE`` or ``PATH?``."""

    __slots__ = ("text", "path", "op", "value", "regex")
    text: str
    path: tuple[str, ...]
    op: str  # one of _OPERATORS or "?"
    value: object
    regex: re.Pattern[str] | None

    def __init__(
        self, text: str, path: tuple[str, ...], op: str, value: object = None, regex: re.Pattern[str] | None = None
    ) -> None:
        self._freeze(text, path, op, value, regex)

    def test(self, event: Event) -> bool:
        got = _resolve(event, self.path)
        op = self.op
        if op == "?":
            return got is not ABSENT
        if op == "!=":
            return got is ABSENT or not json_equal(got, self.value)
        if op == "!~":
            return not _searched(self.regex, got)
        if got is ABSENT:
            return False
        if op == "=" or op == "==":
            return json_equal(got, self.value)
        if op == "~":
            return _searched(self.regex, got)
        return _ordered(op, got, self.value)


def _reject_constant(name: str) -> object:
    raise ValueError(name)


def _read_rhs(text: str) -> object:
    """The right-hand side: JSON when it parses as JSON, else the text itself."""
    import json  # (a --where only: a plain search never imports it)

    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return text


def _split_path(expr: str, path_text: str, any_root: bool) -> tuple[str, ...]:
    """The dotted path of ``expr`` as segments; raise ``UsageError`` when it is not one."""
    if not path_text:
        raise UsageError(f"--where {expr!r}: missing the dotted path before the operator (e.g. payload.ok=false)")
    segments = tuple(path_text.split("."))
    if any(not s for s in segments):
        raise UsageError(f"--where {expr!r}: empty segment in the dotted path {path_text!r}")
    if not any_root and segments[0] not in _ROOTS:
        raise UsageError(
            f"--where {expr!r}: paths start at the event's keys ({', '.join(sorted(ENVELOPE_KEYS))}); "
            f"did you mean payload.{path_text}?"
        )
    return segments


def parse_where(expr: str, *, any_root: bool = False) -> Condition:
    """Parse one ``--where`` expression; raise ``UsageError`` when it is not one.

    A path starts at an envelope key (or ``type``, a journal record's kind);
    ``any_root`` lifts that check (Raxol journals carry other top-level keys).
    """
    cut = next((i for i, ch in enumerate(expr) if ch in _OP_CHARS), None)
    if cut is None:
        raise UsageError(f"--where {expr!r}: no operator; use PATH=VALUE, !=, <, <=, >, >=, ~REGEX, !~REGEX or PATH?")
    segments = _split_path(expr, expr[:cut].strip(), any_root)
    rest = expr[cut:]
    if rest.rstrip() == "?":
        return Condition(expr, segments, "?")
    op = next((o for o in _OPERATORS if rest.startswith(o)), None)
    if op is None:
        raise UsageError(
            f"--where {expr!r}: unknown operator at {rest[:3]!r}; use =, !=, <, <=, >, >=, ~REGEX, !~REGEX or PATH?"
        )
    rhs = rest[len(op) :].strip()  # spaces around the operator are ignored ("payload.tool != bash")
    if op in ("~", "!~"):
        try:
            return Condition(expr, segments, op, rhs, re.compile(rhs))
        except re.error as exc:
            raise UsageError(f"--where {expr!r}: bad regular expression {rhs!r}: {exc}") from None
    if rhs == "":
        raise UsageError(f'--where {expr!r}: missing the value after {op!r} (use "" for the empty string)')
    value = _read_rhs(rhs)
    if op in ("<", "<=", ">", ">=") and not (is_number(value) or type(value) is str):
        raise UsageError(f"--where {expr!r}: {op} compares numbers or strings, not {type(value).__name__}")
    return Condition(expr, segments, op, value)
