"""The HTML run report (docs/project.md, "HTML report"): a ``ProjectResult`` in, one self-contained HTML5 page out.

The page holds what the Markdown report holds (``project.markdown``), in the
same order — the run's head table, steps, tool calls, provider I/O,
predicates, signals, audit flags — plus a timeline drawn as inline SVG
(``project.timeline_svg``) when the result was read with timelines
(``project_paths(..., timelines=True)``). One log is a detailed page; several
logs or a directory a fleet page: the summary table (sortable by a small
inline script when JavaScript runs, readable when it does not), each run
linking to its section below (the first ``FLEET_SECTIONS`` runs have one).

It loads nothing and runs nothing but its own inline style sheet and script,
both allowed by hash in a ``Content-Security-Policy`` meta tag
(``project.html_assets``). Every value reaches the page through ``esc``;
element names, attribute names and classes are this module's own, never a
log's. ``html_chunks`` writes the page a section (a run, on a fleet page) at
a time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from ract_cli.format.json_types import JSONObject, Report
from ract_cli.project.html_assets import CSS, SCRIPT, csp, esc
from ract_cli.project.human import (
    FLEET_COLUMNS,
    PERCENTILE_KEYS,
    counts_text,
    fleet_row,
    fmt_duration,
    fmt_ms,
    is_journal,
    outcome_text,
    provider_cells,
    signal_rows,
    tool_cells,
)
from ract_cli.project.journal_text import detail_rows
from ract_cli.project.options import STATUSES
from ract_cli.project.result import ProjectResult
from ract_cli.project.timeline import FLEET_SECTIONS
from ract_cli.project.timeline_svg import legend, timeline_svg

__all__ = ["html_chunks", "to_html"]

_TOOL_COLUMNS = ["tool", "called", "ok", "failed", "unknown", "refused", "bypassed", "open"]
_MS_COLUMNS = ["p50 ms", "p90 ms", "p99 ms", "max ms"]
#: a run_id that can be an anchor as it is (anything else gets the run's number)
_ANCHOR_SAFE = re.compile(r"[A-Za-z0-9_-]{1,64}")


class Cell(NamedTuple):
    """A table cell whose HTML is already made (``html`` is escaped), with a class and a sort key."""

    html: str
    cls: str = ""
    sort: int | None = None


def _td(value: object, grid: bool = True) -> str:
    if isinstance(value, Cell):
        attrs = (f' class="{value.cls}"' if value.cls else "") + (
            f' data-sort="{value.sort}"' if value.sort is not None else ""
        )
        return f"<td{attrs}>{value.html}</td>"
    if type(value) is int and grid:  # a count in a table's column: right-aligned, sorted as a number
        return f'<td class="num" data-sort="{value}">{value}</td>'
    return f"<td>{esc(value)}</td>"


def _kv(rows: Sequence[tuple[str, object]]) -> list[str]:
    out = ['<table class="kv">']
    out += [f'<tr><th scope="row">{esc(k)}</th>{_td(v, grid=False)}</tr>' for k, v in rows]
    return [*out, "</table>"]


def _grid(columns: Sequence[str], rows: Sequence[Sequence[object]], cls: str = "grid", ident: str = "") -> list[str]:
    head = "".join(f'<th scope="col">{esc(c)}</th>' for c in columns)
    attrs = f' class="{cls}"' + (f' id="{ident}"' if ident else "")
    out = [f"<table{attrs}><thead><tr>{head}</tr></thead><tbody>"]
    out += ["<tr>" + "".join(_td(c) for c in row) + "</tr>" for row in rows]
    return [*out, "</tbody></table>"]


def _status(status: str) -> Cell:
    return Cell(esc(status), f"status {status if status in STATUSES else 'unknown'}")


def _trusted(run: Report, long: bool = True) -> Cell:
    if run["trusted"]:
        return Cell("yes", "good")
    text = f"no, from line {run['untrusted_from_line']}" if long else f"no (line {run['untrusted_from_line']})"
    return Cell(esc(text), "bad", run["untrusted_from_line"])


def _banner(run: Report, what: str) -> list[str]:
    if run["trusted"]:
        return []
    return [
        f'<p class="banner untrusted">UNTRUSTED from line {esc(run["untrusted_from_line"])}: {esc(what)}</p>',
    ]


def _run_head(run: Report) -> list[str]:
    chain, timing = run["chain"], run["timing"]
    return _kv(
        [
            ("run", Cell(esc(run["run_id"]), "mono")),
            ("path", Cell(esc(run["path"]), "mono")),
            ("status", _status(run["status"])),
            ("outcome", outcome_text(run)),
            ("start", timing["start"]),
            ("end", timing["end"]),
            ("duration", fmt_duration(timing["duration_ns"])),
            ("exit code", Cell(esc(f"{run['exit_code']} ({run['exit_name']})"), "" if not run["exit_code"] else "bad")),
            ("trusted", _trusted(run)),
            ("events", f"{chain['verified_events']} verified of {chain['events']}"),
            ("chain head", Cell(esc(chain["head"]), "mono")),
            ("verified head", Cell(esc(chain["verified_head"]), "mono")),
            ("verified range", f"{chain['first'] or '-'} .. {chain['last'] or '-'}"),
        ]
    )


def _timeline(run: Report, timeline: JSONObject | None, h: str) -> list[str]:
    if not timeline:
        return []
    out = [f"<{h}>Timeline</{h}>"]
    svg = timeline_svg(run, timeline)
    if not svg:
        return [*out, '<p class="note">No verified event: nothing to draw.</p>']
    out += svg + legend(timeline)
    cap = timeline["cap"]
    out.append(
        f'<p class="note">At most {esc(cap)} marks of each kind are drawn: past that, every 2nd, 4th, 8th… one is '
        "kept, spread over the whole run; the counts are exact. Hover a mark for what it is. Audit flags are drawn "
        "at the event that raised them; the reader's own findings are in the flags table.</p>"
    )
    if not run["trusted"]:
        untrusted = run["untrusted"] or {}
        out.append(
            f'<p class="note bad">Trust ends after line {esc(timeline.get("last_line"))}: the '
            f"{esc(untrusted.get('events', 0))} event(s) from line {esc(run['untrusted_from_line'])} on are not "
            "verified and not drawn.</p>"
        )
    return out


def _steps(run: Report, h: str) -> list[str]:
    s = run["steps"]
    d = s["duration"] or {}
    row = [
        s["committed"],
        s["rolled_back"],
        s["open"],
        counts_text(s["by_outcome"]),
        *(fmt_ms(d.get(k)) for k in PERCENTILE_KEYS),
    ]
    columns = ["committed", "rolled back", "open", "by outcome", *_MS_COLUMNS]
    return [f"<{h}>Steps</{h}>", *_grid(columns, [row])]


def _tools(run: Report, h: str) -> list[str]:
    tools = run["tools"]["by_tool"]
    if not tools:
        return []
    rows = []
    for name, row in tools.items():
        lat = row["latency"] or {}
        cells = tool_cells(name, row)
        cells[3] = Cell(str(row["failed"]), "num bad" if row["failed"] else "num", row["failed"])
        rows.append([*cells, *(fmt_ms(lat.get(k)) for k in PERCENTILE_KEYS)])
    return [f"<{h}>Tool calls</{h}>", *_grid([*_TOOL_COLUMNS, *_MS_COLUMNS], rows)]


def _providers(run: Report, h: str) -> list[str]:
    prov = run["providers"]
    if not (prov["by_provider"] or prov["rejected"] or prov["validated"]):
        return []
    rows = [provider_cells(n, p) for n, p in prov["by_provider"].items()]
    return [
        f"<{h}>Provider I/O</{h}>",
        f"<p>validated {esc(prov['validated'])}, rejected {esc(prov['rejected'])} "
        f"({esc(prov['rejected_halting'])} halting)</p>",
        *_grid(["provider", "prompts", "responses", "timed out", "open", "prompt chars"], rows),
    ]


def _predicates(run: Report, h: str) -> list[str]:
    latest = run["predicates"]["latest"]
    if not latest:
        return []
    rows: list[list[object]] = [
        [
            pid,
            p["kind"],
            p["required"],
            Cell(esc(p["ok"]), "good" if p["ok"] else "bad"),
            p["reason"],
            p["line"],
            p["evaluations"],
        ]
        for pid, p in latest.items()
    ]
    columns = ["predicate", "kind", "required", "ok", "reason", "line", "evaluations"]
    return [f"<{h}>Predicates (latest verdict)</{h}>", *_grid(columns, rows)]


def _signals(run: Report, h: str) -> list[str]:
    return [f"<{h}>Signals</{h}>", *_kv(signal_rows(run, "error events"))]


def _flags(run: Report, h: str) -> list[str]:
    flags = run["audit_flags"]
    out = [f"<{h}>Audit flags ({esc(flags['count'])})</{h}>"]
    if not flags["count"]:
        return [*out, '<p class="good">None.</p>']
    rows = [
        [
            f["line"],
            Cell(esc(f["code"]), "mono bad" if f["source"] == "verify" else "mono warn"),
            f["kind"],
            f["message"],
        ]
        for f in flags["items"]
    ]
    out += _grid(["line", "code", "kind", "message"], rows)
    if flags["omitted"]:
        out.append(f'<p class="note">{esc(flags["omitted"])} more not shown (--max-items).</p>')
    return out


def run_html(run: Report, timeline: JSONObject | None = None, *, level: int = 2, anchor: str = "") -> list[str]:
    """The lines of one RACT run's section: its heading at ``<h{level}>``, its sections one level below."""
    h, sub = f"h{level}", f"h{level + 1}"
    ident = f' id="{anchor}"' if anchor else ""
    out = [f'<section class="run"{ident}>', f"<{h}>Run <code>{esc(run['run_id'])}</code>: {esc(run['status'])}</{h}>"]
    untrusted = run["untrusted"] or {}
    out += _banner(
        run,
        f"the log fails verification there; this report covers lines 1-{run['untrusted_from_line'] - 1} only "
        f"({untrusted.get('events', 0)} unverified event(s) not counted)."
        if not run["trusted"]
        else "",
    )
    out += _run_head(run) + _timeline(run, timeline, sub)
    for part in (_steps, _tools, _providers, _predicates, _signals, _flags):
        out += part(run, sub)
    return [*out, "</section>"]


def journal_html(run: Report, *, level: int = 2, anchor: str = "") -> list[str]:
    """The lines of one Raxol journal's section (docs/raxol.md): its detail table and findings."""
    h, sub = f"h{level}", f"h{level + 1}"
    ident = f' id="{anchor}"' if anchor else ""
    out = [
        f'<section class="journal"{ident}>',
        f"<{h}>Journal <code>{esc(run['path'])}</code>: {esc(run['status'])}</{h}>",
    ]
    out += _banner(run, "the journal fails verification there; its evidence verdict is not to be believed.")
    out += _kv(detail_rows(run))
    flags = run["audit_flags"]
    out.append(f"<{sub}>Findings ({esc(flags['count'])})</{sub}>")
    if flags["count"]:
        out += _grid(["line", "code", "message"], [[f["line"], f["code"], f["message"]] for f in flags["items"]])
    else:
        out.append('<p class="good">None.</p>')
    return [*out, "</section>"]


def _head(title: str, *, script: bool) -> str:
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{csp(script=script)}">',
            '<meta name="referrer" content="no-referrer">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="generator" content="ract trace project --format html">',
            f"<title>{esc(title)}</title>",
            f"<style>{CSS}</style>",
            "</head>",
            "<body>",
            "",
        ]
    )


def _foot(*, script: bool) -> str:
    out = [
        "<footer>Written by <code>ract trace project --format html</code>: one self-contained page that loads "
        "nothing; every value from the log is shown as text.</footer>",
    ]
    if script:
        out.append(f"<script>{SCRIPT}</script>")
    return "\n".join([*out, "</body>", "</html>", ""])


def anchors(runs: Sequence[Report] | Iterator[Report], limit: int = FLEET_SECTIONS) -> list[str]:
    """The section ids of a fleet page's first ``limit`` runs: ``run-<run_id>``, else ``run-<n>``; unique."""
    used: set[str] = set()
    out: list[str] = []
    for i, run in enumerate(runs):
        if i >= limit:
            break
        rid = run.get("run_id")
        base = (
            f"run-{rid}"
            if isinstance(rid, str) and _ANCHOR_SAFE.fullmatch(rid) and not is_journal(run)
            else f"run-{i + 1}"
        )
        ident, k = base, 1
        while ident in used:
            k += 1
            ident = f"{base}-{k}"
        used.add(ident)
        out.append(ident)
    return out


def _fleet_row(run: Report, anchor: str | None) -> list[object]:
    cells = fleet_row(run)
    text = esc(cells[0])
    cells[0] = Cell(f'<a href="#{anchor}">{text}</a>' if anchor else text, "mono nowrap")
    cells[1] = Cell(esc(cells[1]), "mono")
    cells[2] = _status(run["status"])
    cells[3] = _trusted(run, long=False)
    cells[6] = Cell(esc(cells[6]), "nowrap")
    duration = run.get("timing", {}).get("duration_ns")
    cells[7] = Cell(esc(cells[7]), "num nowrap", duration if type(duration) is int else None)
    return cells


def _fleet(result: ProjectResult, timelines: Sequence[JSONObject] | None) -> Iterator[str]:
    totals = result.totals()
    yield _head(f"ract run summary: {totals['runs']} run(s)", script=True)
    ids = anchors(result.runs)
    summary = [
        '<h1 id="summary">ract run summary</h1>',
        f"<p>{esc(totals['runs'])} run(s); by status: {esc(counts_text(totals['by_status']))}; "
        f"untrusted: {esc(totals['untrusted'])}; flagged: {esc(totals['flagged'])}; "
        f"exit code {int(result.exit_code)}</p>",
        '<p class="note"><span class="js-hint">Click a column header to sort. </span>'
        "Each run links to its section below.</p>",
    ]
    rows = [_fleet_row(run, ids[i] if i < len(ids) else None) for i, run in enumerate(result.runs)]
    summary += _grid(FLEET_COLUMNS, rows, "grid sortable", "fleet")
    if result.findings:
        summary.append('<ul class="findings">')
        summary += [f'<li class="bad">{esc(f.path)}: {esc(f.message)}</li>' for f in result.findings]
        summary.append("</ul>")
    if len(result.runs) > len(ids):
        summary.append(
            f'<p class="note">Sections are written for the first {len(ids)} runs; the other '
            f"{len(result.runs) - len(ids)} are in the table only (project them one at a time for their page).</p>"
        )
    yield "\n".join(summary) + "\n"
    for i, ident in enumerate(ids):
        run = result.runs[i]
        back = '<p class="note"><a href="#summary">back to the summary</a></p>'
        if is_journal(run):
            lines = journal_html(run, anchor=ident)
        else:
            lines = run_html(run, timelines[i] if timelines is not None and i < len(timelines) else None, anchor=ident)
        yield "\n".join([*lines[:-1], back, lines[-1]]) + "\n"
    yield _foot(script=True)


def html_chunks(result: ProjectResult) -> Iterator[str]:
    """The page, a section at a time (``"".join`` is ``to_html``): one log in detail, else a fleet page."""
    timelines = result.timelines
    if len(result.runs) == 1 and result.detailed:
        run = result.runs[0]
        timeline = timelines[0] if timelines is not None and len(timelines) else None
        what = "journal" if is_journal(run) else "run"
        yield _head(f"ract {what} report: {run['path'] if is_journal(run) else run['run_id']}", script=False)
        body = journal_html(run) if is_journal(run) else run_html(run, timeline)
        yield "\n".join(["<h1>ract run report</h1>", *body]) + "\n"
        yield _foot(script=False)
        return
    yield from _fleet(result, timelines)


def to_html(result: ProjectResult) -> str:
    """The whole page as one string."""
    return "".join(html_chunks(result))
