"""``ract trace grep --format table`` (the default on a terminal): matches in a rich table, fitted to the console.

Its own module so that the other output forms (``grep_output``) never import rich.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import NamedTuple

from rich.cells import cell_len, get_character_cell_size
from rich.table import Table
from rich.text import Text

from ract_cli.cli.grep_output import Sink
from ract_cli.cli.render import clean, dumps_json, stdout_console
from ract_cli.format.text import iso_utc
from ract_cli.grep.results import Match
from ract_cli.grep.search import GrepSearch

TABLE_BATCH = 200
PAYLOAD_WIDTH = 160  # the payload summary is cut here even when nothing else limits it
# Table layout (docs/grep.md, "The table"): the location keeps at least WHERE_MIN cells; the payload
# summary gets what it needs of the rest, down to PAYLOAD_MIN; below that each match takes two lines.
WHERE_MIN = 32  # … + 14 hex of the run id + /events.jsonl (13) + :NNN (4) = 32 cells
PAYLOAD_MIN = 20
KIND_WIDTH = 32  # longer kinds fold onto more lines
STEP_WIDTH = 8
NARROW_FIRST_MIN = 12
NARROW_SECOND_MIN = 16
MIN_TABLE_WIDTH = 40  # a narrower console is laid out as this wide (the terminal wraps the lines)
ELLIPSIS = "\u2026"


class _Row(NamedTuple):
    """One table row as display text; every log-derived string already went through ``clean``."""

    path: str
    line: int
    time: str
    kind: str
    step: str
    payload: str


class _Layout(NamedTuple):
    narrow: bool  # two lines per match in two columns (see docs/grep.md, "The table")
    where: int  # cells for path:line
    time: int
    kind: int
    step: int
    payload: int


def _shorten_left(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells: the start is cut and replaced by an ellipsis."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS
    kept: list[str] = []
    used = cell_len(ELLIPSIS)
    for ch in reversed(text):
        size = get_character_cell_size(ch)
        if used + size > width:
            break
        kept.append(ch)
        used += size
    return ELLIPSIS + "".join(reversed(kept))


def _location(row: _Row, width: int | None) -> str:
    """``path:line``; with a width, the path is shortened from the left, the line number always kept."""
    suffix = f":{row.line}"
    if width is None:
        return row.path + suffix
    return _shorten_left(row.path, max(width - len(suffix), 1)) + suffix


def _payload_summary(payload: object) -> str:
    # dumps_json: a payload nested deeper than orjson writes (the reader accepts it) must not crash the table
    text = clean(dumps_json(payload))
    if len(text) > PAYLOAD_WIDTH:
        text = text[: PAYLOAD_WIDTH - 3] + "..."
    return text


def _widest(texts: Iterable[str], header: str) -> int:
    return max([cell_len(header), *(cell_len(t) for t in texts)])


def _table_layout(rows: list[_Row], width: int | None, full_path: bool = False) -> _Layout:
    """Column widths for ``rows`` in a console ``width`` cells wide (None: not fitted, every column natural).

    The location (path:line) is never dropped. Of what time, kind and step leave, the location keeps
    WHERE_MIN cells (its path shortened from the left), the payload summary takes what it needs of the
    rest and the location the remainder. With -H (``full_path``) the location comes first (up to its
    whole length) and the payload gets the rest. When even PAYLOAD_MIN cells of payload do not fit, each
    match takes two lines in two columns.
    """
    where = _widest((_location(r, None) for r in rows), "path:line")
    time = _widest((r.time for r in rows), "time (UTC)")
    kind = _widest((r.kind for r in rows), "kind")
    step = _widest((r.step for r in rows), "step")
    payload = _widest((r.payload for r in rows), "payload")
    if width is None:
        return _Layout(False, where, time, kind, step, payload)
    kind, step = min(kind, KIND_WIDTH), min(step, STEP_WIDTH)
    avail = width - 2 * 4  # five columns, two cells between neighbours
    fixed = time + kind + step
    if min(where, WHERE_MIN) + fixed + min(payload, PAYLOAD_MIN) <= avail:
        rest = avail - fixed
        if full_path:  # the whole path on one line when it fits beside PAYLOAD_MIN cells of payload
            where = min(where, rest - min(payload, PAYLOAD_MIN))
        else:  # the payload first; the location keeps WHERE_MIN cells and gets what is left
            where = min(where, max(WHERE_MIN, rest - payload))
        return _Layout(False, where, time, kind, step, min(payload, rest - where))
    avail = width - 2  # two columns: path:line over time | kind and step over payload
    first = min(max(time, min(where, avail // 2)), max(avail - NARROW_SECOND_MIN, NARROW_FIRST_MIN))
    first = max(1, min(first, avail - 1))
    second = max(1, avail - first)
    return _Layout(True, first, first, second, second, second)


def _event_time(ns: object) -> str:
    """An event's time as every command shows it (``format.text.iso_utc``: microseconds, truncated)."""
    return iso_utc(ns) if type(ns) is int and 0 <= ns < 2**63 else "-"


def _row(m: Match) -> _Row:
    event = m.event
    step = event.get("step_id")
    kind = event.get("kind", event.get("type"))  # a Raxol journal record's kind is its type (SPEC §8)
    return _Row(
        clean(m.path),
        m.line,
        _event_time(event.get("timestamp_ns")),
        "-" if kind is None else clean(kind),
        clean(step[:8]) if isinstance(step, str) else "-",
        _payload_summary(event.get("payload")),
    )


def _narrow_table(rows: list[_Row], layout: _Layout, shorten: int | None, header: bool) -> Table:
    """Two lines per match: path:line over time | kind and step over payload."""
    table = Table(show_header=header, header_style="bold", box=None, pad_edge=False)
    table.add_column(Text("path:line\ntime (UTC)"), width=layout.where, overflow="fold")
    table.add_column(Text("kind  step\npayload"), width=layout.payload, overflow="fold")
    for i, row in enumerate(rows):
        if i or not header:
            table.add_row("", "")  # a blank line between matches
        payload = Text(row.payload)
        payload.truncate(layout.payload, overflow="ellipsis")
        table.add_row(
            Text(f"{_location(row, shorten)}\n{row.time}"), Text.assemble(f"{row.kind}  {row.step}\n", payload)
        )
    return table


def _wide_table(rows: list[_Row], layout: _Layout, shorten: int | None, header: bool) -> Table:
    """One line per match in five columns."""
    table = Table(show_header=header, header_style="bold", box=None, pad_edge=False)
    table.add_column("path:line", width=layout.where, overflow="fold")
    table.add_column("time (UTC)", width=layout.time, overflow="fold")
    table.add_column("kind", width=layout.kind, overflow="fold")
    table.add_column("step", width=layout.step, overflow="fold")
    table.add_column("payload", width=layout.payload, overflow="ellipsis", no_wrap=True)
    for row in rows:
        table.add_row(Text(_location(row, shorten)), Text(row.time), Text(row.kind), Text(row.step), Text(row.payload))
    return table


class TableSink(Sink):
    """A table on the terminal, printed in batches so memory stays bounded.

    Fitted to the console width (the terminal's, or COLUMNS), laid out once from the first batch so the
    columns stay aligned; without a terminal and without COLUMNS, not fitted: every column at its natural
    width. ``path:line`` is always shown; -H shows the full path (folded onto more lines when long)
    instead of shortening it from the left.
    """

    def __init__(self, full_path: bool, terminal: bool) -> None:
        self.console = stdout_console()
        self.full_path = full_path
        self.fitted = terminal or os.environ.get("COLUMNS", "").strip().isdigit()
        self.layout: _Layout | None = None
        self.rows: list[_Row] = []
        self.header = True

    def match(self, m: Match) -> None:
        self.rows.append(_row(m))
        if len(self.rows) >= TABLE_BATCH:
            self._print()

    def _next_layout(self) -> _Layout:
        """Fitted: the first batch's layout, kept. Not fitted: nothing is cut but the payload (at
        PAYLOAD_WIDTH), and columns only widen from batch to batch."""
        if self.fitted:
            if self.layout is None:
                self.console.width = max(self.console.width, MIN_TABLE_WIDTH)
                self.layout = _table_layout(self.rows, self.console.width, self.full_path)
            return self.layout
        layout = _table_layout(self.rows, None)
        if self.layout is not None:
            layout = _Layout(False, *(max(a, b) for a, b in zip(layout[1:], self.layout[1:], strict=True)))
        self.layout = layout
        self.console.width = layout.where + layout.time + layout.kind + layout.step + layout.payload + 8
        return layout

    def _print(self) -> None:
        layout = self._next_layout()
        shorten = None if self.full_path or not self.fitted else layout.where
        draw = _narrow_table if layout.narrow else _wide_table
        self.console.print(draw(self.rows, layout, shorten, self.header))
        self.rows.clear()
        self.header = False

    def finish(self, search: GrepSearch) -> None:
        if self.rows:
            self._print()
        noun = "match" if search.total_matches == 1 else "matches"
        self.console.print(
            Text(
                f"{search.total_matches} {noun} in {search.files_with_matches} of {len(search.files)} file(s)",
                style="dim",
            )
        )
