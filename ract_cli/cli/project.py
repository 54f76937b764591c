"""``ract trace project``: the run report (SPEC §7), as terminal text, JSON, Markdown or HTML.

The library (``ract_cli.project``) builds the report dict and its documented
Markdown and HTML forms (``ract_cli.project.markdown``, ``ract_cli.project.html``);
this module parses the options, calls the library, shows progress, renders the
terminal form and writes ``--output``. Every log-derived string on a terminal
goes through ``clean``, inside rich ``Text`` so markup is never interpreted.
"""

from __future__ import annotations

import contextlib
import enum
import io
from collections.abc import Iterator
from typing import Annotated

import typer
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from ract_cli.atomic import AtomicFile, atomic_output
from ract_cli.cli.app import trace_app
from ract_cli.cli.options import Dialect, DialectOption, MaxLineBytes, Paths, ProjectJobs, Quiet, SchemaVersion
from ract_cli.cli.project_output import json_report_chunks, to_json, verdicts, write_json
from ract_cli.cli.raxol_render import journal_detail_renderable
from ract_cli.cli.render import (
    byte_progress,
    ci_safe,
    clean,
    flush_stdout,
    progress_enabled,
    silence_stdout,
    stdout_closed,
    stdout_console,
    stdout_is_terminal,
    write_stderr_lines,
    write_stdout,
)
from ract_cli.errors import LogIOError
from ract_cli.format.json_types import Report
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.project import DEFAULT_MAX_ITEMS, ProjectOptions, ProjectResult, project_paths, to_markdown
from ract_cli.project.html import html_chunks
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
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES
from ract_cli.read.parallel import AUTO_JOBS

__all__ = ["Format", "project_command", "render", "report_chunks", "text_console", "to_json", "to_markdown"]


class Format(enum.StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"
    html = "html"


@trace_app.command(
    "project",
    epilog="Examples: ract trace project evals/runs/<run_id>/events.jsonl ; "
    'ract trace project evals/runs/ --format markdown >> "$GITHUB_STEP_SUMMARY" ; '
    "ract trace project evals/runs/ --format html --output runs.html",
)
def project_command(
    paths: Paths,
    format: Annotated[
        Format | None,
        typer.Option(
            "--format",
            help="text (rich), json, markdown or html (one self-contained page with a timeline). "
            "Default: text on a terminal, json when piped or written to --output.",
        ),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option(
            "-o",
            "--output",
            metavar="FILE",
            help="Write the report to FILE (atomically: a temporary file in its directory, then renamed; "
            "an existing FILE is replaced) instead of stdout. '-' is stdout.",
        ),
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
    jobs: ProjectJobs = None,
) -> None:
    """Project run logs into a run report: one log in detail, several as a summary table.

    The report is written to stdout (or --output FILE); verdicts on untrusted or
    failing logs go to stderr. The exit code is the SPEC §3 code of the reading
    (1: tampered, ...). -q prints neither (an --output FILE is still written).
    --format html is one self-contained page (no network) with a timeline; for
    several logs, a sortable summary linking to each run's section.

    Example: ract trace project evals/runs/ --format json > runs.json
    """
    to_file = output is not None and output != "-"
    # -q never touches stdout (it may be closed: `>&-`)
    terminal = not to_file and not quiet and stdout_is_terminal()
    fmt = format if format is not None else (Format.text if terminal else Format.json)
    options = ProjectOptions(
        schema_version=schema_version,
        require_closed=require_closed,
        max_line_bytes=max_line_bytes,
        max_items=max_items,
        dialect=dialect.value,
        jobs=AUTO_JOBS if jobs is None else jobs,
    )
    with _output_file(output if to_file else None) as target:  # made first: a bad FILE fails at once
        # the bar: stderr a terminal, logs of 32 MB or more, never under -q nor for JSON
        with byte_progress("projecting", enabled=progress_enabled(quiet=quiet, json=fmt is Format.json)) as progress:
            result = project_paths(
                paths, options, progress=progress, timelines=fmt is Format.html, as_written=fmt is Format.json
            )
        if not quiet:
            verdicts(result)
        if target is not None:  # a file is written under -q too: it was asked for, and prints nothing
            _write_text(target, report_chunks(result, fmt))
        elif quiet:
            pass
        elif stdout_closed():  # started with `>&-`: as with a reader that went away, the exit code is the verdict
            write_stderr_lines(["ract trace project: stdout is closed: the report was not written"])
        elif result.runs or fmt in (Format.json, Format.html):
            try:
                render(result, fmt)
                flush_stdout()
            except BrokenPipeError:
                silence_stdout()  # the reader went away (`| head`): the exit code still carries the verdict
            except OSError as exc:  # (rich's text form; the others raise LogIOError): the report is lost
                silence_stdout()
                raise LogIOError(f"cannot write to stdout: {exc.strerror or exc}") from None
    raise typer.Exit(int(result.exit_code))


def render(result: ProjectResult, fmt: Format, console: Console | None = None) -> None:
    """Write the report to stdout in ``fmt``."""
    if fmt is Format.json:
        write_json(result)
    elif fmt is Format.markdown:
        write_stdout(ci_safe(to_markdown(result)))
    elif fmt is Format.html:
        for chunk in html_chunks(result):  # every value is escaped there, ':' and '[' included (no CI command)
            write_stdout(chunk)
    else:
        console = console or text_console()
        if len(result.runs) == 1 and result.detailed:
            run = result.runs[0]
            console.print(journal_detail_renderable(run) if is_journal(run) else detail_renderable(run))
        else:
            console.print(fleet_renderable(result))


def report_chunks(result: ProjectResult, fmt: Format) -> Iterator[str]:
    """The report in ``fmt`` as text pieces for a file (``--output``): what ``render`` writes to a pipe."""
    if fmt is Format.json:
        yield from json_report_chunks(result)
        yield "\n"
    elif fmt is Format.markdown:
        yield ci_safe(to_markdown(result))
    elif fmt is Format.html:
        yield from html_chunks(result)
    elif result.runs:
        buffer = io.StringIO()
        console = Console(file=buffer, width=160, soft_wrap=False, highlight=False, emoji=False, color_system=None)
        render(result, fmt, console)
        yield ci_safe(buffer.getvalue())


def _output_file(path: str | None) -> contextlib.AbstractContextManager[AtomicFile | None]:
    """``--output FILE``: written all at once (``atomic_output``), its temporary file made before any log is
    read, so a FILE that cannot be written fails at once (exit 5; a directory is a usage error, exit 2)."""
    return atomic_output(path) if path is not None else contextlib.nullcontext()


def _write_text(file: AtomicFile, chunks: Iterator[str]) -> None:
    """The report's text into ``file``: UTF-8, a lone surrogate of a log's bytes as its escape."""
    for chunk in chunks:
        file.write(chunk.encode("utf-8", "backslashreplace"))


def text_console() -> Console:
    """stdout console for the text report: the terminal's width, or 160 columns when piped."""
    # soft_wrap=False: rich wraps the report's tables to the width
    return stdout_console(width=None if stdout_is_terminal() else 160, soft_wrap=False)


def _t(value: object, style: str | None = None) -> Text:
    """A table cell from any value: cleaned, never interpreted as markup."""
    return Text("-" if value is None else clean(value), style=style or "")


def _title(title: str) -> Text:
    """A table title as plain text: rich would read a ``str`` title as markup (a path ``[/]`` raises
    ``MarkupError``, ``[link=...]`` draws a hyperlink)."""
    return Text(clean(title))


def _kv_table(title: str, rows: list[tuple[str, object]]) -> Table:
    table = Table(title=_title(title), show_header=False, title_justify="left", box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(Text(key), value if isinstance(value, Text) else _t(value))
    return table


def _grid(title: str, columns: list[str], rows: list[list[object]]) -> Table:
    table = Table(title=_title(title), title_justify="left")
    for name in columns:
        table.add_column(Text(clean(name)), overflow="fold")
    for row in rows:
        table.add_row(*(cell if isinstance(cell, Text) else _t(cell) for cell in row))
    return table


_STATUS_STYLE = {"completed": "green", "aborted": "yellow", "open": "yellow", "repaired": "magenta", "unknown": "red"}


def _untrusted_banner(run: Report) -> Text:
    return Text(
        f"UNTRUSTED from line {run['untrusted_from_line']}: the log fails verification there; "
        f"everything below covers lines 1-{run['untrusted_from_line'] - 1} only "
        f"({run['untrusted']['events']} unverified event(s) not counted).",
        style="bold red",
    )


def _head_table(run: Report) -> Table:
    chain, timing = run["chain"], run["timing"]
    trusted = _t(
        "yes" if run["trusted"] else f"no, from line {run['untrusted_from_line']}",
        None if run["trusted"] else "bold red",
    )
    return _kv_table(
        f"ract run report: {run['path']}",
        [
            ("run", run["run_id"]),
            ("status", _t(run["status"], _STATUS_STYLE.get(run["status"]))),
            ("outcome", outcome_text(run)),
            ("start", timing["start"]),
            ("end", timing["end"]),
            ("duration", fmt_duration(timing["duration_ns"])),
            ("exit code", f"{run['exit_code']} ({run['exit_name']})"),
            ("trusted", trusted),
            ("events", f"{chain['verified_events']} verified of {chain['events']}"),
            ("chain head", chain["head"]),
            ("verified head", chain["verified_head"]),
            ("verified range", f"{chain['first'] or '-'} .. {chain['last'] or '-'}"),
        ],
    )


def _steps_table(run: Report) -> Table:
    s = run["steps"]
    d = s["duration"] or {}
    return _kv_table(
        "steps",
        [
            ("committed / rolled back / open", f"{s['committed']} / {s['rolled_back']} / {s['open']}"),
            ("by outcome", counts_text(s["by_outcome"])),
            ("duration p50/p90/p99/max ms", " / ".join(fmt_ms(d.get(k)) for k in PERCENTILE_KEYS) if d else "-"),
        ],
    )


def _tools_grid(run: Report) -> Table | None:
    tools = run["tools"]["by_tool"]
    if not tools:
        return None
    rows = []
    for name, row in tools.items():
        lat = row["latency"] or {}
        latency = "/".join(f"{lat[k]:.1f}" for k in PERCENTILE_KEYS) if lat else "-"
        rows.append([*tool_cells(name, row), latency])
    return _grid(
        "tool calls",
        ["tool", "calls", "ok", "fail", "unkn", "refused", "bypass", "open", "latency ms p50/p90/p99/max"],
        rows,
    )


def _providers_grid(run: Report) -> Table | None:
    prov = run["providers"]
    if not (prov["by_provider"] or prov["rejected"] or prov["validated"]):
        return None
    return _grid(
        f"provider I/O (validated {prov['validated']}, rejected {prov['rejected']}, "
        f"halting {prov['rejected_halting']})",
        ["provider", "prompts", "responses", "timed out", "open", "prompt chars"],
        [provider_cells(name, p) for name, p in prov["by_provider"].items()],
    )


def _predicates_grid(run: Report) -> Table | None:
    latest = run["predicates"]["latest"]
    if not latest:
        return None
    rows: list[list[object]] = [
        [
            pid,
            p["kind"],
            p["required"],
            _t(p["ok"], "green" if p["ok"] else "red"),
            p["reason"],
            p["line"],
            p["evaluations"],
        ]
        for pid, p in latest.items()
    ]
    return _grid(
        "predicates (latest verdict)", ["predicate", "kind", "required", "ok", "reason", "line", "evaluations"], rows
    )


def _flags_part(run: Report) -> RenderableType:
    flags = run["audit_flags"]
    if not flags["count"]:
        return Text("audit flags: none", style="green")
    rows: list[list[object]] = [
        [f["line"], _t(f["code"], "bold red" if f["source"] == "verify" else "yellow"), f["kind"], f["message"]]
        for f in flags["items"]
    ]
    title = f"audit flags ({flags['count']}" + (f", {flags['omitted']} not shown)" if flags["omitted"] else ")")
    return _grid(title, ["line", "code", "kind", "message"], rows)


def detail_renderable(run: Report) -> Group:
    """The detailed report of one run as rich renderables."""
    parts: list[RenderableType] = [] if run["trusted"] else [_untrusted_banner(run)]
    parts += [_head_table(run), _steps_table(run)]
    parts += [t for t in (_tools_grid(run), _providers_grid(run), _predicates_grid(run)) if t is not None]
    parts.append(_kv_table("signals", signal_rows(run, "*_error events")))
    parts.append(_flags_part(run))
    return Group(*parts)


def fleet_renderable(result: ProjectResult) -> Group:
    """The summary table of several logs, its totals line, and the path-level findings."""
    totals = result.totals()
    table = _grid(f"ract run summary: {totals['runs']} run(s)", FLEET_COLUMNS, [fleet_row(r) for r in result.runs])
    foot = Text(
        f"by status: {counts_text(totals['by_status'])}; untrusted: {totals['untrusted']}; "
        f"flagged: {totals['flagged']}; exit code {int(result.exit_code)}"
    )
    parts: list[RenderableType] = [table, foot]
    for f in result.findings:
        parts.append(Text(f"{clean(f.path)}: {clean(f.message)}", style="red"))
    return Group(*parts)
