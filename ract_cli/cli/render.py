"""Rendering helpers shared by every command: consoles and terminal-safe text.

Every string that came from a log is untrusted. Before it reaches a
terminal it goes through ``clean`` (control characters, ANSI escapes,
bidi overrides become visible escapes) and, when rich markup is
interpreted, ``markup_safe`` (rich's ``[...]`` tags are escaped too), so a
forged log can never paint a fake PASS.
"""

from __future__ import annotations

import json
import re
import sys

import orjson

from rich.console import Console
from rich.markup import escape as _escape_markup

# C0 controls, DEL, C1 controls, bidi overrides/isolates, line/paragraph separators.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: object) -> str:
    """Text with every control/format character shown as an escape."""
    return _UNSAFE.sub(_visible, str(text))


def markup_safe(text: object) -> str:
    """``clean`` plus rich-markup escaping: safe inside a markup string."""
    return _escape_markup(clean(text))


def stderr_console(*, quiet: bool = False) -> Console:
    """Verdicts, warnings and progress go to stderr."""
    # emoji=False: "path:100: CODE" must never turn into a 💯 (rich reads :100: as an emoji code)
    return Console(stderr=True, quiet=quiet, highlight=False, soft_wrap=True, emoji=False)


def stdout_console() -> Console:
    """Data (tables, reports) goes to stdout."""
    return Console(highlight=False, soft_wrap=True, emoji=False)


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def dumps_json(data: object, *, indent: bool = False, sort_keys: bool = False) -> str:
    """JSON text for stdout that never fails on a path the OS gave as non-UTF-8.

    File names are bytes; Python hands undecodable ones over with lone
    surrogates, which orjson refuses. Those documents fall back to ``\\u``
    escapes (``ensure_ascii``), so the report is still written.
    """
    option = (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    try:
        return orjson.dumps(data, option=option).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(data, indent=2 if indent else None, sort_keys=sort_keys, ensure_ascii=True,
                          separators=None if indent else (",", ":"))
