"""Text made from hostile input, one copy each: a bounded repr, a repr that never raises, an ISO-8601 time.

Every finding message, summary and report that shows a value taken from a log
goes through these, so two commands never word the same value differently.
"""

from __future__ import annotations

import os
import re

#: the longest ``short`` text; longer reprs keep ``SHORT_LIMIT - 3`` characters and end in "..."
SHORT_LIMIT = 80


def short(value: object) -> str:
    """A repr of a log value for a message, at most ``SHORT_LIMIT`` characters.

    Meant for parsed JSON values (their ``repr`` cannot fail but by nesting):
    one nested too deep to repr shows as ``<list nested too deep to show>``.
    Anything else ``repr`` raises propagates; use ``safe_repr`` for objects of
    unknown origin.
    """
    try:
        text = repr(value)
    except RecursionError:
        return f"<{type(value).__name__} nested too deep to show>"
    return text if len(text) <= SHORT_LIMIT else text[: SHORT_LIMIT - 3] + "..."


def safe_repr(value: object) -> str:
    """``repr(value)`` as valid UTF-8 text that never raises, whatever ``value`` is.

    A ``repr`` that raises (or nests too deep) gives ``<unrepresentable TypeName>``;
    a ``repr`` that returns a ``str`` subclass is reduced to its plain text
    (its own methods never reach the caller); lone surrogates become
    backslash escapes. Unbounded: slice it where a bound matters.
    """
    try:
        text = repr(value)
        text = str.__str__(text)  # a str subclass (its own methods) cannot reach the line
    except Exception:
        try:
            name = type(value).__name__
            name = str.__str__(name) if isinstance(name, str) else "object"
        except Exception:
            name = "object"
        text = f"<unrepresentable {name}>"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


_NS_PER_SECOND = 1_000_000_000


def iso_utc(ns: int) -> str:
    """Nanoseconds since the Unix epoch as UTC ISO-8601, ``YYYY-MM-DDTHH:MM:SS.ffffffZ``.

    The microseconds are truncated, never rounded: 1763999999999999500 is
    ``2025-11-24T15:59:59.999999Z``, the second the event happened in. Integer
    arithmetic only (no float), so every nanosecond count renders exactly. A
    time outside the years 1..9999 (never an event's: ``timestamp_ns`` is below
    2^63, in 2262) has no such form and is shown as ``<ns>ns``.

    The date is Howard Hinnant's ``civil_from_days`` (proleptic Gregorian, as
    ``datetime``'s; ``tests/test_event_times.py`` holds them equal): importing
    ``datetime`` cost every command's start-up ~2 ms.
    """
    seconds, rest = divmod(ns, _NS_PER_SECOND)  # floor: rest is in [0, 1e9) before the epoch too
    days, second = divmod(seconds, 86_400)
    era, day_of_era = divmod(days + 719_468, 146_097)  # 400-year eras from 0000-03-01
    year_of_era = (day_of_era - day_of_era // 1_460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)  # from March 1
    month_index = (5 * day_of_year + 2) // 153  # March = 0
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + 3 if month_index < 10 else month_index - 9
    year = year_of_era + 400 * era + (month <= 2)
    if not 1 <= year <= 9999:
        return f"{ns}ns"
    hour, minute_second = divmod(second, 3_600)
    minute, sec = divmod(minute_second, 60)
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{sec:02d}.{rest // 1000:06d}Z"


#: What a terminal must never be handed raw: C0 controls, DEL, C1 controls, the line and paragraph
#: separators, and every character of Unicode category Cf (format: invisible, and the bidi controls
#: U+061C, U+200E/F, U+202A-E, U+2066-9 among them; soft hyphen, zero-width space/joiners, word joiner,
#: invisible operators, BOM, interlinear annotation, the tag characters U+E0000-E007F as a block).
#: The Cf list is Unicode 15.1's, a superset of this Python's (``tests/test_invisible_characters.py``
#: checks every Cf character ``unicodedata`` knows is in it).
UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029"
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f]"
)


def visible_escape(match: re.Match[str]) -> str:
    """The escape a terminal or a Markdown page shows for one ``UNSAFE`` character."""
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def json_escape(match: re.Match[str]) -> str:
    """One matched character as a JSON ``\\uXXXX`` escape (``json.dumps``' form): a surrogate pair past U+FFFF."""
    return json_escape_char(match.group())


def json_escape_char(char: str) -> str:
    """``char`` as a JSON ``\\uXXXX`` escape (``json.dumps``' form): a surrogate pair past U+FFFF."""
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def escape_unsafe(text: str) -> str:
    """``text`` with every ``UNSAFE`` character shown as its escape: ``\\x1b``, ``\\u200b``, ``\\U000e0041``."""
    return UNSAFE.sub(visible_escape, text)


def utf8_text(value: str) -> str:
    """``value`` as text that encodes to UTF-8 (a JSON or Parquet string): a file name that is not UTF-8,
    which Python hands over with lone surrogates (``surrogateescape``), keeps its bytes visible as ``\\xNN``."""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        pass
    try:
        return os.fsencode(value).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
