"""``ract trace project``: the run report (SPEC §7), as terminal text, JSON or Markdown.

The library (``ract_cli.project``) builds the report dict; this module only
renders it. Every log-derived string goes through ``clean`` (terminal text,
inside rich ``Text`` so markup is never interpreted) or ``md`` (Markdown).
"""

from __future__ import annotations

import enum
import re
from typing import Annotated

import typer
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ract_cli.cli.app import trace_app
from ract_cli.cli.options import Dialect, DialectOption, MaxLineBytes, Paths, Quiet, SchemaVersion
from ract_cli.cli.raxol_render import journal_detail_renderable, journal_fleet_row, journal_markdown
from ract_cli.cli.render import (
    clean,
    dumps_json,
    explain_failure,
    flush_stdout,
    silence_stdout,
    stderr_console,
    stdout_closed,
    stdout_console,
    stdout_is_terminal,
)
from ract_cli.errors import ExitCode, RactError
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.project.report import DEFAULT_MAX_ITEMS, ProjectOptions, ProjectResult, project_paths
from ract_cli.read.line import DEFAULT_MAX_LINE_BYTES


class Format(str, enum.Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


@trace_app.command(
    "project",
    epilog="Examples: ract trace project evals/runs/<run_id>/events.jsonl ; "
    'ract trace project evals/runs/ --format markdown >> "$GITHUB_STEP_SUMMARY"',
)
def project_command(
    paths: Paths,
    format: Annotated[
        Format | None,
        typer.Option("--format", help="text (rich), json or markdown. Default: text on a terminal, json when piped."),
    ] = None,
    schema_version: SchemaVersion = LATEST_SCHEMA_VERSION,
    require_closed: Annotated[bool, typer.Option("--require-closed", help="An open run is exit 4.")] = False,
    max_items: Annotated[
        int,
        typer.Option(
            "--max-items",
            min=1,
            metavar="N",
            help="Keep at most N entries per itemized list (flags, reaps, findings...).",
        ),
    ] = DEFAULT_MAX_ITEMS,
    max_line_bytes: MaxLineBytes = DEFAULT_MAX_LINE_BYTES,
    dialect: DialectOption = Dialect.auto,
    quiet: Quiet = False,
) -> None:
    """Project run logs into a run report: one log in detail, several as a summary table.

    The report is written to stdout; verdicts on untrusted or failing logs go to
    stderr. The exit code is the SPEC §3 code of the reading (1: tampered, ...).
    -q prints neither.

    Example: ract trace project evals/runs/ --format json > runs.json
    """
    # -q never touches stdout (it may be closed: `>&-`)
    fmt = format if format is not None else (Format.text if not quiet and stdout_is_terminal() else Format.json)
    options = ProjectOptions(
        schema_version=schema_version,
        require_closed=require_closed,
        max_line_bytes=max_line_bytes,
        max_items=max_items,
        dialect=dialect.value,
    )
    try:
        result = project_paths(paths, options)
    except RactError as exc:
        raise typer.Exit(explain_failure("project", exc, quiet=quiet)) from None
    if quiet:
        raise typer.Exit(int(result.exit_code))
    _verdicts(result)
    if stdout_closed():  # started with `>&-`: as with a reader that went away, the exit code is the verdict
        stderr_console().print("ract trace project: stdout is closed: the report was not written", markup=False)
    elif result.runs or fmt is Format.json:
        try:
            render(result, fmt)
            flush_stdout()
        except BrokenPipeError:
            silence_stdout()  # the reader went away (`| head`): the exit code still carries the verdict
    raise typer.Exit(int(result.exit_code))


def render(result: ProjectResult, fmt: Format, console: Console | None = None) -> None:
    """Write the report to stdout in ``fmt``."""
    if fmt is Format.json:
        typer.echo(to_json(result), nl=False)
    elif fmt is Format.markdown:
        typer.echo(to_markdown(result), nl=False)
    else:
        console = console or text_console()
        if len(result.runs) == 1 and result.detailed:
            run = result.runs[0]
            console.print(journal_detail_renderable(run) if _is_journal(run) else detail_renderable(run))
        else:
            console.print(fleet_renderable(result))


def text_console() -> Console:
    """stdout console for the text report: the terminal's width, or 160 columns when piped."""
    # soft_wrap=False: rich wraps the report's tables to the width
    return stdout_console(width=None if stdout_is_terminal() else 160, soft_wrap=False)


def _verdicts(result: ProjectResult) -> None:
    err = stderr_console()
    for f in result.findings:
        err.print(f"ract trace project: {clean(f.path)}: {clean(f.message)}", markup=False)
    for run in result.runs:
        if run["exit_code"] == 0 and run["trusted"]:
            continue
        name = ExitCode(run["exit_code"]).name
        if not run["trusted"]:
            # the failure is on that line or the next (which leaves that event unconfirmed)
            start = run["untrusted_from_line"]
            first = next(
                (
                    f
                    for f in run["findings"]
                    if f["severity"] == "error"
                    and f["line"] is not None
                    and start is not None
                    and f["line"] in (start, start + 1)
                ),
                None,
            )
            why = f" ({first['code']} at line {first['line']}: {first['message']})" if first else ""
            covers = (
                "its evidence verdict is not to be believed"
                if _is_journal(run)
                else "the report covers the lines before it"
            )
            text = f"UNTRUSTED from line {run['untrusted_from_line']}{why}; {covers}"
        else:
            first = next((f for f in run["findings"] if f["severity"] == "error"), None)
            text = f"{first['code']}: {first['message']}" if first else name
        err.print(f"ract trace project: FAIL ({name}) {clean(run['path'])}: {clean(text)}", markup=False)


# --- JSON -----------------------------------------------------------------


def to_json(result: ProjectResult) -> str:
    """Stable JSON: sorted keys, two-space indent, one trailing newline."""
    return dumps_json(result.to_dict(), indent=True, sort_keys=True) + "\n"


# --- human formatting shared by text and Markdown -------------------------


def fmt_duration(ns: int | None) -> str:
    if ns is None:
        return "-"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < 1_000_000:
        return f"{sign}{ns / 1e3:.1f}µs"
    if ns < 1_000_000_000:
        return f"{sign}{ns / 1e6:.1f}ms"
    seconds = ns / 1e9
    if seconds < 60:
        return f"{sign}{seconds:.3f}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{sign}{int(minutes)}m{seconds:06.3f}s"
    hours, minutes = divmod(int(minutes), 60)
    return f"{sign}{hours}h{minutes:02d}m{seconds:06.3f}s"


def fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _outcome_text(run: dict) -> str:
    o = run["outcome"]
    if o["closed_by"] is None:
        return "not closed"
    parts = [o["closed_by"]]
    if o["final_decision"] is not None:
        parts.append(f"final_decision={o['final_decision']}")
    if o["termination_cause"] is not None:
        parts.append(f"termination_cause={o['termination_cause']}")
    if o["reason"] is not None:
        parts.append(f"reason={o['reason']}")
    if o["synthesized"]:
        parts.append("(synthesized by repair)")
    return " ".join(parts)


def _refused_text(row: dict) -> str:
    parts = [f"{k}:{v}" for k, v in row["refused_by"].items()]
    parts += [f"gate {k}:{v}" for k, v in row["refused_by_gate"].items()]
    return f"{row['refused']}" + (f" ({', '.join(parts)})" if parts else "")


def _counts_text(table: dict) -> str:
    return ", ".join(f"{k}: {v}" for k, v in table.items()) or "-"


def _steps_text(run: dict) -> str:
    s = run["steps"]
    return f"{s['committed']}/{s['rolled_back']}/{s['open']}"


def _tools_text(run: dict) -> str:
    t = run["tools"]["totals"]
    return f"{t['called']} ({t['failed']} failed, {t['refused']} refused)"


# --- terminal text (rich) -------------------------------------------------


def _t(value: object, style: str | None = None) -> Text:
    """A table cell from any value: cleaned, never interpreted as markup."""
    return Text("-" if value is None else clean(value), style=style or "")


def _kv_table(title: str, rows: list[tuple[str, object]]) -> Table:
    table = Table(title=title, show_header=False, title_justify="left", box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(Text(key), value if isinstance(value, Text) else _t(value))
    return table


def _grid(title: str, columns: list[str], rows: list[list[object]]) -> Table:
    table = Table(title=title, title_justify="left")
    for name in columns:
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(*(cell if isinstance(cell, Text) else _t(cell) for cell in row))
    return table


_STATUS_STYLE = {"completed": "green", "aborted": "yellow", "open": "yellow", "repaired": "magenta", "unknown": "red"}


def detail_renderable(run: dict) -> Group:
    """The detailed report of one run as rich renderables."""
    parts: list = []
    if not run["trusted"]:
        u = run["untrusted"]
        parts.append(
            Text(
                f"UNTRUSTED from line {run['untrusted_from_line']}: the log fails verification there; "
                f"everything below covers lines 1-{run['untrusted_from_line'] - 1} only "
                f"({u['events']} unverified event(s) not counted).",
                style="bold red",
            )
        )
    chain, timing = run["chain"], run["timing"]
    parts.append(
        _kv_table(
            f"ract run report: {clean(run['path'])}",
            [
                ("run", run["run_id"]),
                ("status", _t(run["status"], _STATUS_STYLE.get(run["status"]))),
                ("outcome", _outcome_text(run)),
                ("start", timing["start"]),
                ("end", timing["end"]),
                ("duration", fmt_duration(timing["duration_ns"])),
                ("exit code", f"{run['exit_code']} ({run['exit_name']})"),
                (
                    "trusted",
                    _t(
                        "yes" if run["trusted"] else f"no, from line {run['untrusted_from_line']}",
                        None if run["trusted"] else "bold red",
                    ),
                ),
                ("events", f"{chain['verified_events']} verified of {chain['events']}"),
                ("chain head", chain["head"]),
                ("verified head", chain["verified_head"]),
                ("verified range", f"{chain['first'] or '-'} .. {chain['last'] or '-'}"),
            ],
        )
    )
    s = run["steps"]
    d = s["duration"] or {}
    parts.append(
        _kv_table(
            "steps",
            [
                ("committed / rolled back / open", f"{s['committed']} / {s['rolled_back']} / {s['open']}"),
                ("by outcome", _counts_text(s["by_outcome"])),
                (
                    "duration p50/p90/p99/max ms",
                    " / ".join(fmt_ms(d.get(k)) for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")) if d else "-",
                ),
            ],
        )
    )
    tools = run["tools"]["by_tool"]
    if tools:
        rows = []
        for name, row in tools.items():
            lat = row["latency"] or {}
            latency = "/".join(f"{lat[k]:.1f}" for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")) if lat else "-"
            rows.append(
                [
                    name,
                    row["called"],
                    row["ok"],
                    row["failed"],
                    row["unknown"],
                    _refused_text(row),
                    row["bypassed"],
                    row["open"],
                    latency,
                ]
            )
        parts.append(
            _grid(
                "tool calls",
                ["tool", "calls", "ok", "fail", "unkn", "refused", "bypass", "open", "latency ms p50/p90/p99/max"],
                rows,
            )
        )
    prov = run["providers"]
    if prov["by_provider"] or prov["rejected"] or prov["validated"]:
        rows = [
            [name, p["prompts"], p["responses"], p["timed_out"], p["open"], p["prompt_chars"]]
            for name, p in prov["by_provider"].items()
        ]
        parts.append(
            _grid(
                f"provider I/O (validated {prov['validated']}, rejected {prov['rejected']}, "
                f"halting {prov['rejected_halting']})",
                ["provider", "prompts", "responses", "timed out", "open", "prompt chars"],
                rows,
            )
        )
    preds = run["predicates"]
    if preds["latest"]:
        rows = [
            [
                pid,
                p["kind"],
                p["required"],
                _t(p["ok"], "green" if p["ok"] else "red"),
                p["reason"],
                p["line"],
                p["evaluations"],
            ]
            for pid, p in preds["latest"].items()
        ]
        parts.append(
            _grid(
                "predicates (latest verdict)",
                ["predicate", "kind", "required", "ok", "reason", "line", "evaluations"],
                rows,
            )
        )
    hs, sb, reaps = run["handshakes"], run["sandbox"], run["process_reaps"]
    parts.append(
        _kv_table(
            "signals",
            [
                ("handshakes", f"{hs['requested']} requested; " + _counts_text(hs["by_status"])),
                (
                    "sandbox",
                    f"granted {sb['granted']}, denied {sb['denied']}, unenforced {sb['unenforced']['count']}, "
                    f"never_passthrough_denied {sb['never_passthrough_denied']['total']}, "
                    f"credential_shaped_unblocked {sb['credential_shaped_unblocked']['total']}",
                ),
                ("process reaps", f"{reaps['count']}; " + _counts_text(reaps["by_reason"])),
                (
                    "assumptions",
                    f"proposed {run['assumptions']['proposed']}, violated {run['assumptions']['violated']['count']}",
                ),
                ("budgets exceeded", run["budgets"]["exceeded"]["count"]),
                ("*_error events", f"{run['errors']['count']}; " + _counts_text(run["errors"]["by_kind"])),
                ("synthesized closes", run["synthesized_closes"]["count"]),
            ],
        )
    )
    flags = run["audit_flags"]
    if flags["count"]:
        rows = [
            [f["line"], _t(f["code"], "bold red" if f["source"] == "verify" else "yellow"), f["kind"], f["message"]]
            for f in flags["items"]
        ]
        title = f"audit flags ({flags['count']}" + (f", {flags['omitted']} not shown)" if flags["omitted"] else ")")
        parts.append(_grid(title, ["line", "code", "kind", "message"], rows))
    else:
        parts.append(Text("audit flags: none", style="green"))
    return Group(*parts)


_FLEET_COLUMNS = [
    "run",
    "path",
    "status",
    "trusted",
    "exit",
    "events",
    "start",
    "duration",
    "steps c/rb/open",
    "tool calls",
    "flags",
]


def _fleet_row(run: dict) -> list[object]:
    return [
        (run["run_id"] or "-")[:12],
        run["path"],
        run["status"],
        "yes" if run["trusted"] else f"no (line {run['untrusted_from_line']})",
        run["exit_code"],
        run["chain"]["events"],
        run["timing"]["start"],
        fmt_duration(run["timing"]["duration_ns"]),
        _steps_text(run),
        _tools_text(run),
        run["audit_flags"]["count"],
    ]


def _is_journal(run: dict) -> bool:
    return run.get("dialect") == "raxol"


def _row_of(run: dict) -> list[object]:
    return journal_fleet_row(run) if _is_journal(run) else _fleet_row(run)


def fleet_renderable(result: ProjectResult) -> Group:
    rows = [_row_of(r) for r in result.runs]
    totals = result.totals()
    table = _grid(f"ract run summary: {totals['runs']} run(s)", _FLEET_COLUMNS, rows)
    foot = Text(
        f"by status: {_counts_text(totals['by_status'])}; untrusted: {totals['untrusted']}; "
        f"flagged: {totals['flagged']}; exit code {int(result.exit_code)}"
    )
    parts: list = [table, foot]
    for f in result.findings:
        parts.append(Text(f"{clean(f.path)}: {clean(f.message)}", style="red"))
    return Group(*parts)


# --- Markdown -------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")


def md(value: object) -> str:
    """A Markdown-table-safe cell: control chars (newlines included) visible, punctuation escaped."""
    if value is None:
        return "-"
    if value is True or value is False:
        return "yes" if value else "no"
    return _MD_SPECIAL.sub(r"\\\1", clean(value))


def _md_table(columns: list[str], rows: list[list[object]]) -> list[str]:
    out = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    out += ["| " + " | ".join(md(c) for c in row) + " |" for row in rows]
    return out + [""]


def _md_run(run: dict, level: str = "##") -> list[str]:
    out: list[str] = [f"{level} Run {md(run['run_id'])}: {md(run['status'])}", ""]
    if not run["trusted"]:
        out += [
            f"> **UNTRUSTED from line {run['untrusted_from_line']}**: the log fails verification there; "
            f"this report covers lines 1-{run['untrusted_from_line'] - 1} only "
            f"({run['untrusted']['events']} unverified event(s) not counted).",
            "",
        ]
    chain, timing = run["chain"], run["timing"]
    out += _md_table(
        ["field", "value"],
        [
            ["path", run["path"]],
            ["status", run["status"]],
            ["outcome", _outcome_text(run)],
            ["start", timing["start"]],
            ["end", timing["end"]],
            ["duration", fmt_duration(timing["duration_ns"])],
            ["exit code", f"{run['exit_code']} ({run['exit_name']})"],
            ["trusted", run["trusted"]],
            ["events", f"{chain['verified_events']} verified of {chain['events']}"],
            ["chain head", chain["head"]],
            ["verified head", chain["verified_head"]],
            ["verified range", f"{chain['first'] or '-'} .. {chain['last'] or '-'}"],
        ],
    )
    s = run["steps"]
    d = s["duration"] or {}
    out += [f"{level}# Steps", ""]
    out += _md_table(
        ["committed", "rolled back", "open", "by outcome", "p50 ms", "p90 ms", "p99 ms", "max ms"],
        [
            [
                s["committed"],
                s["rolled_back"],
                s["open"],
                _counts_text(s["by_outcome"]),
                *(fmt_ms(d.get(k)) for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")),
            ]
        ],
    )
    tools = run["tools"]["by_tool"]
    if tools:
        out += [f"{level}# Tool calls", ""]
        rows = []
        for name, row in tools.items():
            lat = row["latency"] or {}
            rows.append(
                [
                    name,
                    row["called"],
                    row["ok"],
                    row["failed"],
                    row["unknown"],
                    _refused_text(row),
                    row["bypassed"],
                    row["open"],
                    *(fmt_ms(lat.get(k)) for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")),
                ]
            )
        out += _md_table(
            [
                "tool",
                "called",
                "ok",
                "failed",
                "unknown",
                "refused",
                "bypassed",
                "open",
                "p50 ms",
                "p90 ms",
                "p99 ms",
                "max ms",
            ],
            rows,
        )
    prov = run["providers"]
    if prov["by_provider"] or prov["rejected"] or prov["validated"]:
        out += [
            f"{level}# Provider I/O",
            "",
            f"validated {prov['validated']}, rejected {prov['rejected']} ({prov['rejected_halting']} halting)",
            "",
        ]
        out += _md_table(
            ["provider", "prompts", "responses", "timed out", "open", "prompt chars"],
            [
                [n, p["prompts"], p["responses"], p["timed_out"], p["open"], p["prompt_chars"]]
                for n, p in prov["by_provider"].items()
            ],
        )
    preds = run["predicates"]
    if preds["latest"]:
        out += [f"{level}# Predicates (latest verdict)", ""]
        out += _md_table(
            ["predicate", "kind", "required", "ok", "reason", "line", "evaluations"],
            [
                [pid, p["kind"], p["required"], p["ok"], p["reason"], p["line"], p["evaluations"]]
                for pid, p in preds["latest"].items()
            ],
        )
    hs, sb, reaps = run["handshakes"], run["sandbox"], run["process_reaps"]
    out += [f"{level}# Signals", ""]
    out += _md_table(
        ["signal", "value"],
        [
            ["handshakes", f"{hs['requested']} requested; " + _counts_text(hs["by_status"])],
            [
                "sandbox",
                f"granted {sb['granted']}, denied {sb['denied']}, unenforced {sb['unenforced']['count']}, "
                f"never_passthrough_denied {sb['never_passthrough_denied']['total']}, "
                f"credential_shaped_unblocked {sb['credential_shaped_unblocked']['total']}",
            ],
            ["process reaps", f"{reaps['count']}; " + _counts_text(reaps["by_reason"])],
            [
                "assumptions",
                f"proposed {run['assumptions']['proposed']}, violated {run['assumptions']['violated']['count']}",
            ],
            ["budgets exceeded", run["budgets"]["exceeded"]["count"]],
            ["error events", f"{run['errors']['count']}; " + _counts_text(run["errors"]["by_kind"])],
            ["synthesized closes", run["synthesized_closes"]["count"]],
        ],
    )
    flags = run["audit_flags"]
    out += [f"{level}# Audit flags ({flags['count']})", ""]
    if flags["count"]:
        out += _md_table(
            ["line", "code", "kind", "message"],
            [[f["line"], f["code"], f["kind"], f["message"]] for f in flags["items"]],
        )
        if flags["omitted"]:
            out += [f"{flags['omitted']} more not shown (--max-items).", ""]
    else:
        out += ["None.", ""]
    return out


def to_markdown(result: ProjectResult) -> str:
    """GitHub-flavoured Markdown (for ``$GITHUB_STEP_SUMMARY``)."""
    if len(result.runs) == 1 and result.detailed:
        run = result.runs[0]
        body = journal_markdown(run, md, _md_table) if _is_journal(run) else _md_run(run)
        return "\n".join(["# ract run report", ""] + body).rstrip("\n") + "\n"
    totals = result.totals()
    out = [
        "# ract run summary",
        "",
        f"{totals['runs']} run(s); by status: {md(_counts_text(totals['by_status']))}; "
        f"untrusted: {totals['untrusted']}; flagged: {totals['flagged']}; exit code {int(result.exit_code)}",
        "",
    ]
    out += _md_table(_FLEET_COLUMNS, [_row_of(r) for r in result.runs])
    for f in result.findings:
        out += [f"- {md(f.path)}: {md(f.message)}"]
    return "\n".join(out).rstrip("\n") + "\n"
