"""The parse of a line longer than ``BIG_LINE_BYTES`` (issue 15, item 8): ``parse_object``'s verdicts, no whole copy.

A huge line is parsed once by orjson with its huge strings cut out and
decoded apart, and what ``parse_exact`` would add (a duplicate key, an
integer outside 64 bits) comes from a scan of the bytes: the memory is the
line and its values, never the line twice more.
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Iterable
from typing import cast

import orjson

from ract_cli.format.json_types import JSONObject
from ract_cli.read.json_rules import (
    _BLANK,
    _TOKEN,
    _VALUE_NAMES,
    Body,
    LineResult,
    Problem,
    _describe_json_error,
    _duplicate_key_problem,
    _exact_int,
    _invalid_utf8,
    _too_deep_problem,
    _too_many_nodes_problem,
    too_deep,
    too_many_nodes,
)


def parse_big(body: Body) -> tuple[JSONObject, bytes, bool] | LineResult:
    """``parse_object`` for a line longer than ``BIG_LINE_BYTES``: the same verdicts, no whole copy of the line.

    orjson parses it once (its values are the event; nothing else the size
    of the line is made). What ``parse_exact`` would add -- a duplicate key,
    an integer outside 64 bits, found in the order ``json.loads`` meets them
    -- comes from a scan of the bytes (``_inexact``) instead of a second
    parse of a decoded copy. The caller then hashes the object with
    ``chain_hash(exact=True)``, streamed: the same bytes as the exact path.
    """
    if too_many_nodes(body):
        return LineResult(None, None, [_too_many_nodes_problem()], parsed=False)
    try:
        obj = _loads_big(body)
    except orjson.JSONDecodeError as exc:  # its ``doc`` is a decoded copy of the line: keep only the words
        message: str | None = _describe_json_error(exc)
    else:
        message = None
    if message is not None:
        reason = "blank line" if _BLANK(body) else (_invalid_utf8(body) or message)
        return LineResult(None, None, [Problem("MALFORMED_LINE", f"not valid JSON: {reason}")], parsed=False)
    if type(obj) is not dict:
        kind = _VALUE_NAMES.get(type(obj), "a bare value")
        return LineResult(None, None, [Problem("MALFORMED_LINE", f"line is {kind}, not a JSON object")], parsed=False)
    if too_deep(body, obj):
        return LineResult(None, None, [_too_deep_problem()], parsed=False)
    problem = _inexact(body)
    if problem is not None:
        return LineResult(None, None, [problem], parsed=False)
    return obj, b"", False


_BIG_STRING = 1 << 20  # a string value longer than this (in the line) is decoded by ``_loads_big`` itself
_CONTROL = re.compile(rb"[\x00-\x1f]").search
_KEY_AFTER = re.compile(rb"[ \t\r\n]*+:").match


def _loads_big(body: Body) -> object:
    """``orjson.loads(body)``, the same value or the same error, without orjson's copy of a huge string.

    orjson reads a document into a pool about as large as the document
    before it builds the values: on a line that is one huge string, that is
    the line once more. So the string values longer than ``_BIG_STRING`` are
    cut out first: the rest of the line (every other value, with a unique
    placeholder string in each cut) is parsed by orjson, and each cut string
    is decoded on its own -- straight from the line into its ``str`` when it
    holds no escape (strict UTF-8 and no control character: what orjson
    accepts), by orjson when it does. A string token of the line as found
    by ``_TOKEN`` is one JSON string token, so when the rest parses and every
    cut string is valid, the line parses to exactly that value. Whenever any
    part fails (or a placeholder does not come back exactly once), the
    whole line goes to ``orjson.loads``, which raises its own error.
    """
    cuts: list[tuple[int, int]] = []
    for m in _TOKEN.finditer(body):
        start, end = m.span()
        if end - start > max(_BIG_STRING, 1) and body[start] == 0x22 and _KEY_AFTER(body, end) is None:
            cuts.append((start, end))  # a whole string token (a stray quote is one byte; a run has no quote)
    if not cuts:
        return orjson.loads(body)
    view = memoryview(body)
    mark = f"\0ract-cut-{os.urandom(8).hex()}-"
    parts: list[bytes | memoryview] = []
    strings: list[str] = []
    obj: object = None
    at = 0
    try:
        for i, (start, end) in enumerate(cuts):
            parts += (view[at:start], b'"\\u0000' + mark[1:].encode() + str(i).encode() + b'"')
            at = end
            if _BACKSLASH(body, start, end) is None and _CONTROL(body, start + 1, end - 1) is None:
                strings.append(str(view[start + 1 : end - 1], "utf-8"))
            else:
                strings.append(_decode_string(view, start + 1, end - 1))
        parts.append(view[at:])
        obj = orjson.loads(b"".join(parts))
        if _put_back(obj, mark, strings):
            return obj
    except (UnicodeDecodeError, orjson.JSONDecodeError):
        pass
    strings.clear()  # (let them go before orjson's own try: its error holds a copy of the line)
    parts.clear()
    obj = None
    return orjson.loads(body)


#: string text (between the quotes) orjson accepts, but for what ``_decode_string`` checks apart
_STRING_TEXT = re.compile(rb'(?:[^"\\\x00-\x1f]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+').fullmatch
#: what ``unicode_escape`` reads otherwise than JSON: a byte past ASCII (read as Latin-1), ``\\/`` (kept),
#: a surrogate's escape (not paired) -- or a look-alike after an escaped backslash, which only costs memory
_NOT_LIKE_PYTHON = re.compile(rb"[\x80-\xff]|\\/|\\u[dD][89a-fA-F]").search


def _decode_string(view: memoryview, start: int, end: int) -> str:
    """The value of the JSON string whose text (between its quotes) is ``view[start:end]``, as orjson decodes it.

    ASCII text whose escapes Python's ``unicode_escape`` reads as JSON does
    (a checked subset) is decoded by it straight into the value: the only
    copy. Anything else goes to orjson (which holds a copy of the text while
    it decodes). Raises ``orjson.JSONDecodeError`` where orjson refuses it.
    """
    if _NOT_LIKE_PYTHON(view, start, end) is None and _STRING_TEXT(view, start, end) is not None:
        return codecs.unicode_escape_decode(view[start:end])[0]
    decoded: str = orjson.loads(view[start - 1 : end + 1])
    return decoded


def _put_back(obj: object, mark: str, strings: list[str]) -> bool:
    """Replace each placeholder ``mark + str(i)`` among ``obj``'s values by ``strings[i]``; True when each came once."""
    used = [False] * len(strings)
    stack = [obj]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            pairs: Iterable[tuple[object, object]] = node.items()
        elif type(node) is list:
            pairs = enumerate(node)
        else:
            continue
        for key, value in pairs:
            if type(value) is dict or type(value) is list:
                stack.append(value)
            elif type(value) is str and value.startswith(mark):
                index = value[len(mark) :]
                i = int(index) if index.isascii() and index.isdigit() else len(used)
                if i >= len(used) or used[i]:
                    return False
                used[i] = True
                cast("dict[object, object]", node)[key] = strings[i]  # a value replaced in place (list or dict)
    return all(used)


#: the tokens ``_inexact`` looks at: 1 a string (2: the ':' after it, a key), a number (3 its fraction, 4 its
#: exponent; an integer has no group), 5 a brace. Everything else (',', '[', ']', blanks, literals) is
#: skipped by the search. (A string is read once, whether it is a key or not.)
_EXACT_TOKEN = re.compile(
    rb'("[^"\\]*+(?:\\.[^"\\]*+)*+")(?:[ \t\r\n]*+(:))?'
    rb"|-?[0-9]++(\.[0-9]++)?([eE][-+]?[0-9]++)?|([{}])"
)
_BACKSLASH = re.compile(rb"\\").search
_LONG_KEY = 1 << 12  # a key longer than this is kept as a view of the line, not a copy
_INT_DIGITS = 18  # an integer token of at most this many characters is inside the signed 64-bit range


def _inexact(body: Body) -> Problem | None:
    """The finding ``parse_exact`` gives a line orjson parsed as an object, or ``None`` (it would give the same values).

    ``parse_exact`` differs from orjson's parse in two ways only: a
    duplicate key (raised when its object closes, for the first key seen a
    second time) and an integer outside the signed 64-bit range (raised
    when the number is read). The first of those in the order of the text
    is its finding; this scan meets them in the same order. Keys are
    compared decoded (a key with an escape is decoded on its own).
    """
    keys: list[set[object]] = []
    first_dup: list[tuple[int, int] | None] = []
    for m in _EXACT_TOKEN.finditer(body):
        group = m.lastindex
        if group == 2:  # a key of the innermost open object
            start, end = m.span(1)
            if _BACKSLASH(body, start, end) is not None:
                decoded: str = orjson.loads(body[start:end])
                ident: object = decoded.encode("utf-8")
            elif end - start > _LONG_KEY:
                ident = memoryview(body)[start + 1 : end - 1]  # (hashable, equal to the same bytes)
            else:
                ident = body[start + 1 : end - 1]
            seen = keys[-1]
            if ident in seen:
                if first_dup[-1] is None:
                    first_dup[-1] = (start, end)
            else:
                seen.add(ident)
        elif group == 5:
            if body[m.start()] == 0x7B:  # "{"
                keys.append(set())
                first_dup.append(None)
            else:
                keys.pop()
                dup = first_dup.pop()
                if dup is not None:
                    return _duplicate_key_problem(orjson.loads(body[dup[0] : dup[1]]))
        elif group is None:  # an integer (no fraction, no exponent)
            start, end = m.span()
            if end - start > _INT_DIGITS:
                try:
                    _exact_int(str(body[start:end], "ascii"))
                except ValueError as exc:
                    return Problem("MALFORMED_LINE", f"not valid JSON: {_describe_json_error(exc)}")
    return None
