"""The timeline drawn as inline SVG: one time axis, a lane per concern, where trust ends.

Input: a run report and its ``TimelineCollector.to_dict()``. The axis spans
the verified time range (``chain.first_ns`` .. ``chain.last_ns``): every
mark comes from a verified event. Lanes, top to bottom: the run, steps,
tool calls, provider calls, handshakes, process reaps, audit flags. An
interval is a ``rect``, a moment a ``circle`` (a flag: a diamond ``path``);
a handle never closed is drawn to where the verified log ends. A line marks
where trust ends: the last verified event (``class="trust-end"``; dashed and
``to-end`` when the whole log verifies), followed, for a log that fails
verification, by an ``unverified`` strip that draws nothing of the tail.

Every element has a fixed class naming what it is (``step committed``,
``tool failed``, ``trust-end``...) — never a value from the log — and a
``<title>`` child, the hover text, escaped by ``esc``. No ``style``
attribute: colours come from the page's style sheet, positions are SVG
attributes.
"""

from __future__ import annotations

from ract_cli.format.json_types import JSONObject, Report
from ract_cli.format.text import iso_utc
from ract_cli.project.html_assets import esc
from ract_cli.project.options import STATUSES
from ract_cli.project.timeline import LANES, OPEN_STATES, POINT_STATES

_W, _LEFT, _RIGHT, _TAIL = 1200, 118, 14, 112
_AXIS_Y, _TOP, _LANE_H, _BAR_H = 34, 44, 26, 14
_LANE_NAMES = {
    "run": "run",
    "step": "steps",
    "tool": "tool calls",
    "provider": "provider calls",
    "handshake": "handshakes",
    "reap": "process reaps",
    "flag": "audit flags",
}
_ROWS = ("run", *LANES)
#: tick steps: 1-2-5 nanoseconds to seconds, then minutes, hours, days
_STEPS = [m * 10**e for e in range(11) for m in (1, 2, 5) if m * 10**e < 60 * 10**9]
_STEPS += [m * 60 * 10**9 for m in (1, 2, 5, 10, 15, 30)] + [m * 3600 * 10**9 for m in (1, 2, 3, 6, 12)]
_STEPS += [m * 86400 * 10**9 for m in (1, 2, 7, 14, 30, 90, 365, 3650, 36500)]
_UNITS = ((86400 * 10**9, "d"), (3600 * 10**9, "h"), (60 * 10**9, "min"), (10**9, "s"), (10**6, "ms"), (10**3, "µs"))


class _Axis:
    """Time to x: ``lo`` .. ``hi`` nanoseconds onto the plot's ``x0`` .. ``x1``."""

    def __init__(self, lo: int, hi: int, x0: float, x1: float) -> None:
        self.lo, self.span, self.x0, self.width = lo, max(hi - lo, 1), x0, x1 - x0

    def x(self, ns: int) -> float:
        return self.x0 + (ns - self.lo) * self.width / self.span


def _n(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _relative(ns: int, step: int) -> str:
    for unit, name in _UNITS:
        if step >= unit:
            return f"+{round(ns / unit, 3):g}{name}"
    return f"+{ns}ns"


def _ticks(axis: _Axis, bottom: int) -> list[str]:
    step = next((s for s in _STEPS if axis.span / s <= 8), -(-axis.span // 8))
    out = []
    for k in range(axis.span // step + 1):
        x = _n(axis.x(axis.lo + k * step))
        out.append(f'<line class="tick" x1="{x}" x2="{x}" y1="{_AXIS_Y}" y2="{bottom}"/>')
        out.append(
            f'<text class="tick-label" x="{x}" y="{_AXIS_Y - 6}" text-anchor="middle">{_relative(k * step, step)}</text>'
        )
    return out


def _lane_y(lane: str) -> int:
    return _TOP + _ROWS.index(lane) * _LANE_H


def mark_class(key: str) -> str:
    """``tool.failed`` -> ``tool failed``; ``flag.flag`` -> ``flag``."""
    lane, _, state = key.partition(".")
    return lane if state == lane else f"{lane} {state}"


def _mark(key: str, mark: list[object], axis: _Axis, end_ns: int) -> str:
    lane = key.partition(".")[0]
    cls = mark_class(key)
    start, end, _line, title = mark
    assert isinstance(start, int)
    y = _lane_y(lane) + (_LANE_H - _BAR_H) / 2
    hover = f"<title>{esc(title)}</title>"
    if key in POINT_STATES:
        x, cy = axis.x(start), y + _BAR_H / 2
        if lane == "flag":
            d = f"M{_n(x)} {_n(cy - 7)}l6 7-6 7-6-7z"
            return f'<path class="{cls} mark" d="{d}">{hover}</path>'
        return f'<circle class="{cls} mark" cx="{_n(x)}" cy="{_n(cy)}" r="4.5">{hover}</circle>'
    stop = end if isinstance(end, int) else end_ns if key in OPEN_STATES else start
    x0, x1 = axis.x(start), axis.x(max(stop, start))
    return (
        f'<rect class="{cls} mark" x="{_n(x0)}" y="{_n(y)}" width="{_n(max(x1 - x0, 2.0))}" '
        f'height="{_BAR_H}">{hover}</rect>'
    )


def _run_bar(run: Report, axis: _Axis, end_ns: int) -> str:
    timing, status = run["timing"], run["status"]
    start = timing["start_ns"] if timing["start_ns"] is not None else axis.lo
    end = timing["end_ns"] if run["outcome"]["closed_by"] is not None and timing["end_ns"] is not None else end_ns
    cls = status if status in STATUSES else "unknown"
    x0, x1 = axis.x(start), axis.x(max(end, start))
    y = _lane_y("run") + (_LANE_H - _BAR_H) / 2
    title = f"run {run['run_id']}: {status}, {timing['start']} .. {timing['end']}"
    return (
        f'<rect class="run {cls}" x="{_n(x0)}" y="{_n(y)}" width="{_n(max(x1 - x0, 2.0))}" height="{_BAR_H}">'
        f"<title>{esc(title)}</title></rect>"
    )


def _trust(run: Report, data: JSONObject, axis: _Axis, bottom: int, x1: float) -> list[str]:
    last_ns = data.get("last_ns")
    last_ns = last_ns if isinstance(last_ns, int) else run["chain"]["last_ns"]
    last_line = data.get("last_line")
    x = _n(axis.x(last_ns))
    if run["trusted"]:
        title = f"verified to the end: line {last_line}, {iso_utc(last_ns)}"
        return [
            f'<line class="trust-end to-end" x1="{x}" x2="{x}" y1="{_AXIS_Y - 2}" y2="{bottom}">'
            f"<title>{esc(title)}</title></line>",
            f'<text class="trust-end-label to-end" x="{x}" y="{bottom + 14}" text-anchor="end">verified to the end</text>',
        ]
    untrusted = run["untrusted"] or {}
    n, start = untrusted.get("events", 0), run["untrusted_from_line"]
    title = f"trust ends: line {last_line} ({iso_utc(last_ns)}) is the last verified event; not verified from line {start} on"
    tail = f"unverified: {n} event(s) from line {start} on, not drawn"
    tx = _n(x1 + 6)
    return [
        f'<rect class="unverified" x="{tx}" y="{_AXIS_Y - 2}" width="{_TAIL - 8}" height="{bottom - _AXIS_Y + 2}">'
        f"<title>{esc(tail)}</title></rect>",
        f'<text class="unverified-label" x="{_n(x1 + 12)}" y="{_TOP + 12}">unverified</text>',
        f'<text class="unverified-label" x="{_n(x1 + 12)}" y="{_TOP + 28}">{esc(n)} event(s)</text>',
        f'<text class="unverified-label" x="{_n(x1 + 12)}" y="{_TOP + 44}">not drawn</text>',
        f'<line class="trust-end" x1="{x}" x2="{x}" y1="{_AXIS_Y - 8}" y2="{bottom}"><title>{esc(title)}</title></line>',
        f'<text class="trust-end-label" x="{x}" y="{bottom + 14}" text-anchor="end">trust ends (line {esc(last_line)})</text>',
    ]


def timeline_svg(run: Report, data: JSONObject) -> list[str]:
    """The ``<svg class="timeline">`` of one run, as lines; ``[]`` when nothing verified has a time."""
    chain = run["chain"]
    lo, hi = chain["first_ns"], chain["last_ns"]
    if lo is None or hi is None or not data:
        return []
    x1 = _W - _RIGHT - (0 if run["trusted"] else _TAIL)
    axis = _Axis(lo, hi, _LEFT, x1)
    bottom = _TOP + len(_ROWS) * _LANE_H
    height = bottom + 22
    end_ns = data["last_ns"] if isinstance(data.get("last_ns"), int) else hi
    title = f"timeline of run {run['run_id']}: {chain['first']} .. {chain['last']}"
    out = [
        f'<svg class="timeline" viewBox="0 0 {_W} {height}" width="{_W}" height="{height}" role="img">',
        f"<title>{esc(title)}</title>",
    ]
    for lane in _ROWS:
        y = _lane_y(lane)
        out.append(f'<rect class="lane-bg" x="{_LEFT}" y="{y + 2}" width="{_n(x1 - _LEFT)}" height="{_LANE_H - 4}"/>')
        label = _LANE_NAMES[lane]
        out.append(f'<text class="lane-label" x="{_LEFT - 8}" y="{y + 17}" text-anchor="end">{label}</text>')
    out += _ticks(axis, bottom)
    verified = f"verified time range: {chain['first']} .. {chain['last']} ({chain['verified_events']} events)"
    out.append(
        f'<rect class="verified-range" x="{_LEFT}" y="{_AXIS_Y - 3}" width="{_n(x1 - _LEFT)}" height="6">'
        f"<title>{esc(verified)}</title></rect>"
    )
    out.append(f'<line class="axis" x1="{_LEFT}" x2="{_n(x1)}" y1="{_AXIS_Y}" y2="{_AXIS_Y}"/>')
    out.append(f'<text class="tick-label" x="{_LEFT}" y="12">{esc(chain["first"])}</text>')
    out.append(f'<text class="tick-label" x="{_n(x1)}" y="12" text-anchor="end">{esc(chain["last"])}</text>')
    out.append(_run_bar(run, axis, end_ns))
    marks = data["marks"]
    for lane, states in LANES.items():
        for state in states:
            key = f"{lane}.{state}"
            out += [_mark(key, m, axis, end_ns) for m in marks.get(key, [])]
    out += _trust(run, data, axis, bottom, x1)
    out.append("</svg>")
    return out


def _swatch(cls: str, point: bool) -> str:
    shape = '<circle class="{c}" cx="7" cy="6" r="4.5"/>' if point else '<rect class="{c}" width="14" height="12"/>'
    return f'<svg class="swatch" width="14" height="12" aria-hidden="true">{shape.format(c=cls)}</svg>'


def legend(data: JSONObject) -> list[str]:
    """The legend under the timeline: every kind of mark, its exact count, and how many are drawn."""
    counts, marks, strides = data["counts"], data["marks"], data["strides"]
    out = ['<ul class="legend">']
    for lane, states in LANES.items():
        for state in states:
            key = f"{lane}.{state}"
            n = counts.get(key, 0)
            if not n:
                continue
            drawn = len(marks.get(key, []))
            shown = "" if drawn == n else f" (drawn: {drawn}, 1 in {strides.get(key, 1)})"
            what = _LANE_NAMES[lane] if len(states) == 1 else f"{_LANE_NAMES[lane]} {state.replace('-', ' ')}"
            text = f"{what}: {n}{shown}"
            out.append(f"<li>{_swatch(mark_class(key), key in POINT_STATES)}{esc(text)}</li>")
    out.append("</ul>")
    return out
