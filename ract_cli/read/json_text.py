"""JSON text of Python values and values of JSON text, through the native core when it is the one chosen.

The native core writes ``orjson.dumps``'s exact bytes for the values it
knows (``_core.dumps``: dict, list, tuple, str, int, float, bool and None)
and reads strictly valid JSON as ``orjson.loads`` reads it
(``_core.loads``); for anything else it answers None and orjson does the
work, so what is written never depends on the core. It is here for start-up:
a command the native core serves whole (``project``'s report, ``verify``'s
JSON) never imports orjson, which costs ~14 ms (it imports dataclasses,
inspect, uuid and json). ``tests/test_json_text.py`` holds both to orjson.
"""

from __future__ import annotations

from ract_cli.read import core

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import Any


def dumps(value: object, *, indent: bool = False, sort_keys: bool = False) -> bytes:
    """``orjson.dumps(value)``, two-space indented and with sorted keys when asked; raises as it does
    (``TypeError``) for a value orjson refuses."""
    native = core.native_chosen()
    if native is not None:
        out: bytes | None = native.dumps(value, indent, sort_keys)
        if out is not None:
            return out
    import orjson  # (a value the native core leaves, or the Python core's)

    option = (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    return orjson.dumps(value, option=option)


def loads(data: bytes) -> Any:
    """``orjson.loads(data)``; raises as it does (``ValueError``) for what is not JSON."""
    native = core.native_chosen()
    if native is not None:
        value = native.loads(data)
        if value is not None:  # (None: refused, or the document ``null``; orjson says which)
            return value
    import orjson

    return orjson.loads(data)


def text(value: object, *, indent: bool = False, sort_keys: bool = False) -> str:
    """``dumps`` as text that never fails on a path the OS gave as non-UTF-8: a value orjson refuses (a
    string with a lone surrogate, as Python decodes an undecodable file name) is written by ``json``
    with ``\\u`` escapes (``ensure_ascii``), the same value."""
    try:
        return dumps(value, indent=indent, sort_keys=sort_keys).decode()
    except TypeError:  # (orjson.JSONEncodeError is one)
        import json

        return json.dumps(
            value,
            indent=2 if indent else None,
            sort_keys=sort_keys,
            ensure_ascii=True,
            separators=None if indent else (",", ":"),
        )
