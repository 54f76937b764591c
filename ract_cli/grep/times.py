"""Times for ``grep``: reading ``--since``/``--until`` values, showing an event's ``timestamp_ns``."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from ract_cli.errors import UsageError

__all__ = ["format_ns", "parse_time"]

_ISO = re.compile(
    r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})"
    r"(?:[Tt ](?P<hm>[0-9]{2}:[0-9]{2})(?::(?P<s>[0-9]{2})(?:[.,](?P<frac>[0-9]{1,9}))?)?)?"
    r"(?P<tz>Z|z|[+-][0-9]{2}:?[0-9]{2})?"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DAY_NS = 86_400 * 10**9


def parse_time(text: str, *, end_of_day: bool = False) -> int:
    """``--since``/``--until`` value -> nanoseconds since the epoch (UTC).

    Accepts an integer (nanoseconds) or ISO-8601: ``2025-11-24``,
    ``2025-11-24T16:00``, ``2025-11-24T16:00:00.123456789Z``, ``...+02:00``.
    Without a zone the time is UTC. A date alone is the day's first
    nanosecond, or its last one when ``end_of_day`` (so ``--until 2025-11-30``
    takes the whole of that day). Raises ``UsageError``.
    """
    value = text.strip()
    if value.isascii() and value.isdigit():  # "²" is a digit to isdigit, not to int
        ns = int(value)
        if ns >= 2**63:
            raise UsageError(f"time {text!r} is outside the timestamp range (0 <= t < 2^63 ns)")
        return ns
    m = _ISO.fullmatch(value)
    if m is None:
        raise UsageError(
            f"cannot read time {text!r}: give integer nanoseconds or ISO-8601 such as 2025-11-24T16:00:00Z"
        )
    try:
        base = datetime.fromisoformat(f"{m['date']}T{m['hm'] or '00:00'}:{m['s'] or '00'}")
    except ValueError as exc:
        raise UsageError(f"cannot read time {text!r}: {exc}") from None
    tz = m["tz"]
    if tz and tz not in ("Z", "z"):
        base -= _utc_offset(text, tz)
    delta = base.replace(tzinfo=UTC) - _EPOCH
    ns = (delta.days * 86_400 + delta.seconds) * 10**9
    frac = m["frac"]
    if frac:
        ns += int(frac.ljust(9, "0"))
    if end_of_day and m["hm"] is None:
        ns += _DAY_NS - 1
    if not 0 <= ns < 2**63:
        raise UsageError(f"time {text!r} is outside the timestamp range (1970 .. 2262)")
    return ns


def _utc_offset(text: str, tz: str) -> timedelta:
    """A zone such as ``+02:00`` or ``-0530`` as the offset to subtract from the local time."""
    sign = 1 if tz[0] == "+" else -1
    digits = tz[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:])
    if hours > 23 or minutes > 59:
        raise UsageError(f"cannot read time {text!r}: bad UTC offset {tz}")
    return sign * timedelta(hours=hours, minutes=minutes)


def format_ns(ns: object) -> str:
    """Nanoseconds since the epoch as ISO-8601 UTC with nine fraction digits: a ``--since``/``--until`` value said
    back exactly (it round-trips through ``parse_time``). Event times are shown by ``format.text.iso_utc``."""
    if type(ns) is not int or not 0 <= ns < 2**63:
        return "-"
    seconds, rest = divmod(ns, 10**9)
    return (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S") + f".{rest:09d}Z"
