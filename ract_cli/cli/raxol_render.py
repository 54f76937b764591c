"""Terminal and Markdown rendering of Raxol journals (SPEC §8) for replay and project.

Pure functions from library data to text. Every returned string may hold
log-derived text: callers pass it through ``clean`` (terminal) or use the
Markdown helpers here, which escape it.
"""

from __future__ import annotations

from typing import Any

import orjson
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ract_cli.cli.render import clean
from ract_cli.dialects.raxol.contract import evidence_status
from ract_cli.format.json_types import Event, JSONObject, Report
from ract_cli.project.journal_text import detail_rows
from ract_cli.replay.journal import JournalReplayStep

SUMMARY_WIDTH = 60

#: payload keys shown on a replay timeline, per type (others: the first scalar keys)
SUMMARY_KEYS: dict[str, tuple[str, ...]] = {
    "turn_started": ("prompt",),
    "item_started": ("item_id", "item_type"),
    "item_completed": ("item_id", "item_type", "name", "text", "output"),
    "turn_completed": ("iteration", "final", "usage"),
    "error": ("reason",),
}


def _value(value: Any, limit: int = SUMMARY_WIDTH) -> str:
    if type(value) is str:
        text = value if value and all(c.isalnum() or c in "_-.:/" for c in value) else _json(value)
    else:
        text = _json(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def summarize_record(record: Event) -> str:
    """A compact ``key=value`` summary of a journal record's payload (raw: ``clean`` it)."""
    payload = record.get("payload")
    if type(payload) is not dict:
        return ""
    rtype = record.get("type")
    keys = SUMMARY_KEYS.get(rtype) if type(rtype) is str else None
    if keys is None:
        keys = tuple(k for k, v in payload.items() if type(v) in (str, int, float, bool))[:3]
    parts = [f"{k}={_value(payload[k])}" for k in keys if k in payload]
    if rtype == "turn_completed" and payload.get("final") is True:
        parts.append(f"evidence={evidence_status(payload)}")
    return "  ".join(parts)


def journal_timeline_line(step: JournalReplayStep) -> str:
    """``index  turn N  [indent]type  summary`` for one replayed record (raw: ``clean`` it)."""
    rtype = step.event.kind or "(no type)"
    text = f"{step.index:>6}  turn {step.state.turn:<4} {'  ' * step.depth}{rtype}"
    summary = summarize_record(step.event.event)
    return f"{text}  {summary}" if summary else text


def journal_state_lines(state: Report) -> list[str]:
    """The state block printed at ``replay --until`` for a journal (raw: ``clean`` each line)."""
    lines = [
        f"== state after record #{state['index']} (line {state['line']}): {state['type']}"
        + (f" {state['event_id']}" if state["event_id"] else ""),
        f"turn: {state['turn']} ({'open' if state['turn_open'] else 'closed'}), iteration: "
        f"{state['iteration'] if state['iteration'] is not None else '-'}",
        f"run: {'closed by the final turn_completed' if state['closed'] else 'open'}"
        + (f", evidence {state['evidence']}" if state["evidence"] else ""),
    ]
    items = state["open_items"]
    lines.append(f"open items ({len(items)}):" if items else "open items: none")
    lines.extend(f"  {i['item_id']}  {i['item_type']}  line {i['line']}" for i in items)
    lines.append("items completed: " + (_counts(state["items_completed"]) or "none"))
    lines.append("usage: " + (_counts(state["usage"]) or "none"))
    lines.append(f"errors: {state['errors']}")
    return lines


def _counts(table: JSONObject) -> str:
    return ", ".join(f"{k} {v}" for k, v in table.items())


# --- project ----------------------------------------------------------------


def journal_detail_renderable(run: Report) -> Group:
    """The detailed project report of one journal as rich renderables (markup never interpreted)."""
    parts: list[RenderableType] = []
    if not run["trusted"]:
        parts.append(
            Text(
                f"UNTRUSTED from line {run['untrusted_from_line']}: the journal fails verification "
                f"there; its evidence verdict is not to be believed.",
                style="bold red",
            )
        )
    table = Table(
        title=Text(clean(f"ract journal report: {run['path']}")),
        show_header=False,
        title_justify="left",
        box=None,
        pad_edge=False,
    )
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in detail_rows(run)[1:]:
        style = None
        if key == "evidence":
            style = {"verified-chain": "green", "broken-chain": "bold red"}.get(run["evidence"]["trust"], "yellow")
        table.add_row(Text(key), Text(clean(value), style=style or ""))
    parts.append(table)
    flags = run["audit_flags"]
    if flags["count"]:
        grid = Table(title=Text(f"findings ({flags['count']})"), title_justify="left")
        for name in ("line", "code", "message"):
            grid.add_column(Text(name), overflow="fold")
        for f in flags["items"]:
            grid.add_row(
                Text(clean(f["line"] if f["line"] is not None else "-")),
                Text(clean(f["code"])),
                Text(clean(f["message"])),
            )
        parts.append(grid)
    else:
        parts.append(Text("findings: none", style="green"))
    return Group(*parts)
