"""``ract trace repair``: close what an interrupted run left open (SPEC §4)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from ract_cli.cli.app import trace_app
from ract_cli.cli.options import Dialect, DialectOption, MaxLineBytes, Quiet, SchemaVersion
from ract_cli.cli.render import byte_progress, clean, print_lines, progress_enabled, show_refusal, stderr_console
from ract_cli.errors import ExitCode
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES
from ract_cli.repair.repairer import RepairOptions, RepairRefused, RepairResult, repair_file


@trace_app.command(
    "repair",
    epilog="Example: ract trace repair --check evals/runs/<run_id>/events.jsonl || "
    "ract trace repair evals/runs/<run_id>/events.jsonl",
)
def repair_command(
    path: Annotated[
        str,
        typer.Argument(
            metavar="PATH",
            help="The log file (or its run directory holding events.jsonl); not - (standard input) nor a "
            "gzip archive: repair rewrites the file.",
            show_default=False,
        ),
    ],
    output: Annotated[
        str | None,
        typer.Option(
            "-o", "--output", metavar="FILE", help="Write the repaired log to FILE; the source is left untouched."
        ),
    ] = None,
    backup: Annotated[
        bool,
        typer.Option("--backup/--no-backup", help="Keep the original next to the log as <log>.bak (in-place repair)."),
    ] = True,
    check: Annotated[
        bool, typer.Option("--check", help="Change nothing: exit 4 if repair would change the log, 0 if not.")
    ] = False,
    quiet: Quiet = False,
    schema_version: SchemaVersion = LATEST_SCHEMA_VERSION,
    max_line_bytes: MaxLineBytes = DEFAULT_MAX_LINE_BYTES,
    dialect: DialectOption = Dialect.auto,
    follow_symlinks: Annotated[
        bool,
        typer.Option(
            "--follow-symlinks",
            help="In place on a symlinked log: rewrite the link's target (without it: refused, exit 5).",
        ),
    ] = False,
) -> None:
    """Close the open handles of an interrupted run and move a torn tail aside.

    Refuses (exit 1, file untouched) a log that fails verification for any
    other reason, and (exit 5) a log whose writer still holds its lock.
    Rewrites atomically and keeps the original as <log>.bak.

    Example: ract trace repair evals/runs/<run_id>/events.jsonl
    """
    console = stderr_console(quiet=quiet)
    options = RepairOptions(
        backup=backup,
        output=output,
        check=check,
        schema_version=schema_version,
        max_line_bytes=max_line_bytes,
        dialect=dialect.value,
        follow_symlinks=follow_symlinks,
    )
    try:
        with byte_progress("repairing", enabled=progress_enabled(quiet=quiet)) as progress:
            result = repair_file(path, options, progress=progress)
    except RepairRefused as exc:
        show_refusal(console, "repair", exc.message, exc.findings)
        console.print("  the log was left untouched", markup=False)
        raise typer.Exit(int(exc.exit_code)) from None
    render(console, result, check=check)
    if check and result.changed:
        raise typer.Exit(int(ExitCode.INCOMPLETE))
    raise typer.Exit(0)


def render(console: Console, result: RepairResult, *, check: bool) -> None:
    """What was (or would be) done, one line per action, on stderr."""
    path = clean(result.path)
    out = console.print
    if not result.changed:
        out(f"nothing to repair: {path}", markup=False)
        if result.written_to is not None:
            out(f"  copied unchanged to {clean(result.written_to)}", markup=False)
        return
    if check:
        out(f"would repair {path}:", markup=False)
    elif result.written_to is not None and result.written_to != result.path:
        out(f"repaired {path} -> {clean(result.written_to)} (source left untouched):", markup=False)
    else:
        out(f"repaired {path}:", markup=False)
    verb_move, verb_close = ("would move", "would close") if check else ("moved", "closed")
    if result.torn is not None:
        t = result.torn
        where = f" to {clean(t.sidecar)}" if t.sidecar is not None else " to a sidecar"
        out(f"  torn tail: {t.length} bytes of line {t.line} (offset {t.offset}) {verb_move}{where}", markup=False)
    print_lines(  # (not a print each: rich's per-call cost made 20,000 closes 5 s)
        console,
        (
            clean(
                f"  {verb_close} {c.source_kind} {c.source_event_id} (line {c.source_line}) "
                f"with synthesized {c.close_kind} {c.close_id}"
            )
            for c in result.closes
        ),
    )
    if result.newline_added:
        out("  added the missing final newline of the last event before the closes", markup=False)
    if result.backup is not None:
        out(f"  original kept as {clean(result.backup)}", markup=False)
    if check:
        out(f"  {len(result.closes)} close(s) would be synthesized; nothing was changed (--check)", markup=False)
