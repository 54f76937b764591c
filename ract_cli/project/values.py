"""Defensive accessors: the log is hostile input, so every value read from a payload is checked here.

A report never holds a log value of the wrong type, an unbounded string or a
non-finite number: what does not fit becomes ``None`` (or, for a table key,
a label naming its JSON type).
"""

from __future__ import annotations

import math

from ract_cli.format.json_types import Payload
from ract_cli.format.text import iso_utc
from ract_cli.project.options import MAX_TEXT, NONE


def as_int(value: object) -> int | None:
    """The value when it is an int (never a bool), else None."""
    return value if type(value) is int else None


def as_num(value: object) -> int | float | None:
    """The value when it is an int or a finite float (never a bool), else None."""
    if type(value) is int:
        return value
    if type(value) is float and math.isfinite(value):
        return value
    return None


def text(value: object) -> str | None:
    """A log string, cut to ``MAX_TEXT`` characters; None when absent or not a string."""
    if type(value) is not str:
        return None
    return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + "…"


def label(value: object) -> str:
    """A name used as a table key: the string, ``(none)`` when absent, else its JSON type."""
    if type(value) is str:
        return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + "…"
    if value is None:
        return NONE
    return f"(invalid {type(value).__name__})"


def is_synthesized(payload: Payload) -> bool:
    """Whether ``repair`` wrote this close (``"synthesized": true``), not the run."""
    return payload.get("synthesized") is True


def iso(ns: int | None) -> str | None:
    """UTC ISO-8601 with microseconds truncated, e.g. ``2025-11-24T16:00:00.261966Z`` (``format.text.iso_utc``,
    the one formatter of event times: verify, grep and project show the same second)."""
    return None if ns is None else iso_utc(ns)
