"""Comparing parsed JSON values exactly, and the native core's JSON reader and writer against orjson."""

from __future__ import annotations

import math
from types import ModuleType

import orjson


def same(a: object, b: object) -> bool:
    """Equal in type, value, key order and the sign of zero (== says 1 == 1.0 == True). Iterative: a value
    may be nested as deep as the reader allows (512), past Python's recursion limit."""
    todo = [(a, b)]
    while todo:
        x, y = todo.pop()
        if type(x) is not type(y):
            return False
        if type(x) is dict:
            if list(x) != list(y):  # type: ignore[call-overload]
                return False
            todo.extend((x[k], y[k]) for k in x)  # type: ignore[index]
        elif type(x) is list:
            if len(x) != len(y):  # type: ignore[arg-type]
                return False
            todo.extend(zip(x, y, strict=True))  # type: ignore[call-overload]
        elif type(x) is float:
            if not (x == y and math.copysign(1.0, x) == math.copysign(1.0, y)):  # type: ignore[arg-type]
                return False
        elif x != y:
            return False
    return True


def check_json_text(core: ModuleType, data: bytes) -> None:
    """``core.loads`` reads what it takes as orjson reads it, and ``core.dumps`` writes that value back as
    orjson writes it, with each option (or stands aside: None); AssertionError else."""
    loaded = core.loads(data)
    if loaded is None:
        return
    assert same(loaded, orjson.loads(data)), "loads() differs from orjson.loads"
    for indent, sort_keys in ((False, False), (True, False), (False, True), (True, True)):
        written = core.dumps(loaded, indent, sort_keys)
        option = (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_SORT_KEYS if sort_keys else 0)
        try:
            expected = orjson.dumps(loaded, option=option)
        except TypeError:  # (nested past orjson's bound: C must stand aside too)
            expected = None
        assert written is None or written == expected, f"dumps(indent={indent}, sort_keys={sort_keys})"
