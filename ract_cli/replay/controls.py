"""How a replay walks (SPEC §5): the ``--until`` and ``--pace`` values, pauses, time since the start."""

from __future__ import annotations

import re

from ract_cli.errors import UsageError

__all__ = ["MAX_PACE_SLEEP_S", "format_elapsed", "pace_delay", "parse_pace", "parse_until"]

#: Longest sleep ``--pace`` takes between two events, in seconds (a run idle
#: for an hour replays with a 2 s pause, not an hour's).
MAX_PACE_SLEEP_S = 2.0

_HEX32 = re.compile(r"[0-9a-fA-F]{32}")


def parse_until(text: str) -> int | str:
    """``--until`` value: a 1-based event index, or a 32-hex event id (lowercased).

    Exactly 32 hex characters is an event id; otherwise digits are an index.
    """
    value = text.strip()
    if _HEX32.fullmatch(value):
        return value.lower()
    if value.isdigit() and value.isascii():
        index = int(value)
        if index < 1:
            raise UsageError("--until: event indexes start at 1")
        return index
    raise UsageError(f"--until takes an event index (1, 2, ...) or a 32-hex event id, not {value[:80]!r}")


def parse_pace(text: str) -> float:
    """``--pace`` value: ``realtime`` (1.0) or ``Nx`` (N times faster), e.g. ``2x``, ``0.5x``, ``1000x``."""
    value = text.strip().lower()
    if value == "realtime":
        return 1.0
    if value.endswith("x"):
        try:
            factor = float(value[:-1])
        except ValueError:
            factor = float("nan")
        if factor > 0 and factor != float("inf"):
            return factor
    raise UsageError(f"--pace takes 'realtime' or a positive speed-up such as '2x' or '1000x', not {text[:40]!r}")


def pace_delay(prev_ns: int | None, ns: int, factor: float, cap: float = MAX_PACE_SLEEP_S) -> float:
    """Seconds to wait before showing an event ``ns`` after one at ``prev_ns``, at ``factor``x speed.

    Never negative (a clock regression waits 0), never more than ``cap``.
    """
    if prev_ns is None or ns <= prev_ns:
        return 0.0
    return min((ns - prev_ns) / 1e9 / factor, cap)


def format_elapsed(ns: int) -> str:
    """Time since the start as ``+12.345s`` (milliseconds, truncated; ``-`` for a clock regression)."""
    sign = "-" if ns < 0 else "+"
    ms = abs(ns) // 1_000_000
    return f"{sign}{ms // 1000}.{ms % 1000:03d}s"
