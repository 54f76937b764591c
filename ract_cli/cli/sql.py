"""``ract trace sql``: one read-only SQL query over events, runs and findings (docs/sql.md).

The library (``ract_cli.sql``) builds the tables and runs the query; this
module writes the result: a table on a terminal, JSON lines when piped, or
``--format table|jsonl|csv|json``. On a terminal every value is made safe to
show (control, bidi and ANSI characters escaped: a forged log cannot paint
the screen); piped output carries the values exactly.
"""

from __future__ import annotations

import csv
import enum
import io
import sys
from collections.abc import Iterator
from typing import Annotated, Any

import orjson
import typer

from ract_cli.cli.app import trace_app
from ract_cli.cli.options import (
    DEFAULTS,
    Dialect,
    DialectOption,
    MaxLineBytes,
    Paths,
    ReadJobs,
    RequireClosed,
    SchemaVersion,
)
from ract_cli.cli.render import (
    byte_progress,
    ci_safe,
    ci_safe_bytes,
    clean,
    clean_json,
    flush_stdout,
    progress_enabled,
    silence_stdout,
    stderr_console,
    stdout_closed,
    stdout_console,
    stdout_is_terminal,
)
from ract_cli.errors import ExitCode
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION

#: rows a terminal table shows at most (the rest are counted on stderr: use --format jsonl for all)
TABLE_MAX_ROWS = 10_000


class Format(enum.StrEnum):
    table = "table"
    jsonl = "jsonl"
    csv = "csv"
    json = "json"


@trace_app.command(
    "sql",
    epilog="Examples:\n\n"
    'ract trace sql "SELECT status, count(*) FROM runs GROUP BY status" evals/runs/\n\n'
    "ract trace sql \"SELECT run_id FROM events WHERE kind = 'process.reaped' "
    "AND payload->>'reason' = 'dispose_unsuccessful' GROUP BY run_id HAVING count(*) > 2\" fleet/\n\n"
    'ract trace sql --format csv "SELECT * FROM findings" evals/runs/ > findings.csv\n\n'
    "See docs/sql.md and docs/exit-codes.md.",
)
def sql_command(
    query: Annotated[
        str,
        typer.Argument(
            metavar="QUERY", help="One read-only SQL statement (DuckDB dialect) over events, runs, findings."
        ),
    ],
    paths: Paths,
    format: Annotated[
        Format | None,
        typer.Option(
            "--format",
            case_sensitive=False,
            help="table (default on a terminal), jsonl (default when piped: one object per row), "
            "csv (with a header), json (one array).",
            show_default=False,
        ),
    ] = None,
    schema_version: SchemaVersion = LATEST_SCHEMA_VERSION,
    require_closed: RequireClosed = False,
    jobs: ReadJobs = 1,
    max_line_bytes: MaxLineBytes = DEFAULTS["max_line_bytes"],
    dialect: DialectOption = Dialect.auto,
) -> None:
    """Run one SQL query (DuckDB, embedded) over the events, runs and findings of the logs.

    A PATH is a log, a directory of logs (read and verified now) or a directory
    written by `ract trace export --format parquet` (read in place). Exit code:
    2 for a SQL error (DuckDB's message on stderr), else the lowest non-zero
    verification code of the inputs (0 when every input verified).

    Example: ract trace sql "SELECT kind, count(*) FROM events GROUP BY kind" evals/runs/
    """
    from ract_cli.sql import SqlError, SqlOptions, SqlSession

    terminal = stdout_is_terminal()
    fmt = format if format is not None else (Format.table if terminal else Format.jsonl)
    options = SqlOptions(
        schema_version=schema_version,
        require_closed=require_closed,
        max_line_bytes=max_line_bytes,
        jobs=jobs,
        dialect=dialect.value,
    )
    # a bar on a terminal's stderr while logs are read (not for a JSON form: its reader may be a program)
    show = progress_enabled(quiet=False, json=fmt in (Format.json, Format.jsonl))
    try:
        with byte_progress("reading logs", enabled=show) as progress:
            session = SqlSession(paths, options, progress=progress)  # the bar is gone before any output
        with session:
            result = session.query(query)
            try:
                shown = _write(result, fmt, terminal)
            except BrokenPipeError:  # the reader went away (| head): the verdict is still the exit code
                silence_stdout()
                shown = None
            code = session.exit_code
            failures = session.failures() if code != ExitCode.OK else ([], 0)
    except SqlError as exc:  # exit 2 with DuckDB's message (several lines: its caret under the query)
        console = stderr_console()
        for i, line in enumerate(exc.message.splitlines() or [""]):
            console.print(clean(f"ract trace sql: {line}" if i == 0 else line), markup=False)
        raise typer.Exit(int(exc.exit_code)) from None
    if shown is not None and shown[1] > shown[0]:
        stderr_console().print(
            f"ract trace sql: {shown[1] - shown[0]} more row(s) not shown in the table (--format jsonl shows all)",
            markup=False,
        )
    if code != ExitCode.OK:
        console = stderr_console()
        kept, total = failures
        for path, line, finding, message in kept:  # why, not only that: e.g. the permission an input lacked
            where = f"{path}:{line}" if line is not None else f"{path}"
            console.print(clean(f"{where}: {finding} {message}"), markup=False)
        if total > len(kept):
            console.print(f"... {total - len(kept)} more finding(s)", markup=False)
        console.print(
            f"ract trace sql: not every input verified: exit {int(code)} ({code.name}); "
            "see SELECT * FROM findings WHERE exit_code <> 0",
            markup=False,
        )
    raise typer.Exit(int(code))


def _write(result: Any, fmt: Format, terminal: bool) -> tuple[int, int]:
    """Write the rows; (rows shown, rows in the result)."""
    from ract_cli.sql import json_value

    if stdout_closed():  # started with `>&-`: the query ran, the exit code is still the verdict
        stderr_console().print("ract trace sql: stdout is closed: the result was not written", markup=False)
        total = sum(len(b) for b in result.batches())
        return total, total
    if fmt is Format.table:
        return _table(result, terminal)
    names = result.columns
    count = 0
    out = sys.stdout.buffer
    if fmt is Format.csv:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow([clean(n) if terminal else n for n in names])
        for batch in result.batches():
            for row in batch:
                writer.writerow([_csv_cell(json_value(v), terminal) for v in row])
            count += len(batch)
            out.write(ci_safe(buffer.getvalue()).encode("utf-8", "backslashreplace"))
            buffer.seek(0)
            buffer.truncate()
        out.write(ci_safe(buffer.getvalue()).encode("utf-8", "backslashreplace"))
        flush_stdout()
        return count, count
    first = True
    if fmt is Format.json:
        out.write(b"[")
    for batch in result.batches():
        parts = []
        for row in batch:
            line = _dumps({name: json_value(v) for name, v in zip(names, row, strict=True)}, terminal)
            if fmt is Format.json:
                parts.append(b"\n" + line if first else b",\n" + line)
                first = False
            else:
                parts.append(line + b"\n")
        out.write(b"".join(parts))
        count += len(batch)
    if fmt is Format.json:
        out.write(b"]\n" if first else b"\n]\n")
    flush_stdout()
    return count, count


def _dumps(value: object, terminal: bool) -> bytes:
    data = ci_safe_bytes(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS), json=True)
    if terminal:  # the same characters clean() escapes, as JSON escapes: still valid JSON, safe to show
        return clean_json(data.decode("utf-8")).encode("utf-8")
    return data


def _csv_cell(value: object, terminal: bool) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (dict, list)):
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
    else:
        text = str(value)
    return clean(text) if terminal else text


def _cell_text(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
    return str(value)


def _table(result: Any, terminal: bool) -> tuple[int, int]:
    """A rich table of at most TABLE_MAX_ROWS rows; every cell escaped (it may come from a log)."""
    from rich.table import Table
    from rich.text import Text

    from ract_cli.sql import json_value

    # One line per row, cells cut with an ellipsis (never folded: a fold could start a line with a log's own
    # "PASS" away from the escape before it), and a padded first column: no line starts with log text.
    table = Table(header_style="bold", box=None, pad_edge=True)
    numeric = [t.upper() in _NUMERIC for t in result.types]
    for name, right in zip(result.columns, numeric, strict=True):
        table.add_column(Text(clean(name)), justify="right" if right else "left", no_wrap=True, overflow="ellipsis")
    shown = total = 0
    for row in _rows(result):
        total += 1
        if shown < TABLE_MAX_ROWS:
            table.add_row(*(Text(clean(_cell_text(json_value(v))), style="dim" if v is None else "") for v in row))
            shown += 1
    console = stdout_console(width=None if terminal else 200, soft_wrap=False)
    console.print(table)
    console.print(Text(f"{total} row(s)", style="dim"))
    flush_stdout()
    return shown, total


def _rows(result: Any) -> Iterator[tuple[Any, ...]]:
    for batch in result.batches():
        yield from batch


_NUMERIC = frozenset(
    {
        "TINYINT",
        "SMALLINT",
        "INTEGER",
        "BIGINT",
        "HUGEINT",
        "UTINYINT",
        "USMALLINT",
        "UINTEGER",
        "UBIGINT",
        "UHUGEINT",
        "FLOAT",
        "DOUBLE",
    }
)
