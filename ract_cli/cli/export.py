"""``ract trace export``: logs written for other tools (docs/export.md).

Each ``--format`` is a library function (``ract_cli.export.EXPORT_FORMATS``);
this module only parses the command line, shows progress and says the
verdict. To add a format: register it in the library, add its value to
``Format`` below, and (if it needs one) a line in ``_describe``.
"""

from __future__ import annotations

import enum
import io
import os
import sys
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from ract_cli.cli.app import trace_app
from ract_cli.cli.limits import DEFAULT_MAX_FINDINGS
from ract_cli.cli.options import (
    DEFAULTS,
    Dialect,
    DialectOption,
    MaxLineBytes,
    Paths,
    Quiet,
    ReadJobs,
    RequireClosed,
    SchemaVersion,
)
from ract_cli.cli.render import (
    BROKEN_PIPE_EXIT,
    byte_progress,
    ci_safe_bytes,
    clean,
    explain_failure,
    flush_stdout,
    progress_enabled,
    silence_stdout,
    stderr_console,
    stdout_closed,
)
from ract_cli.errors import ExitCode, LogIOError, UsageError
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION

if TYPE_CHECKING:
    from ract_cli.export import ExportResult


class Format(enum.StrEnum):
    """``--format``: one value per ``ract_cli.export.EXPORT_FORMATS`` entry."""

    parquet = "parquet"  # SPEC §12.1: OUT is a directory of three table directories
    otlp_json = "otlp-json"  # SPEC §12.2: OUT is a file of OTLP/JSON lines, one per run ("-": stdout)


@trace_app.command(
    "export",
    epilog="Examples:\n\n"
    "ract trace export --format parquet --output fleet/ evals/runs/\n\n"
    "ract trace export --format parquet --output fleet/ --overwrite --jobs 4 evals/runs/\n\n"
    "ract trace export --format otlp-json --output traces.jsonl evals/runs/\n\n"
    "duckdb -c \"SELECT kind, count(*) FROM read_parquet('fleet/events/**/*.parquet') GROUP BY kind\"\n\n"
    "See docs/export.md and docs/exit-codes.md.",
)
def export_command(
    paths: Paths,
    format: Annotated[
        Format,
        typer.Option(
            "--format",
            case_sensitive=False,
            help="parquet: OUT is a directory holding events/, runs/ and findings/ tables (SPEC §12.1). "
            "otlp-json: OUT is a file of OpenTelemetry traces, one OTLP/JSON line per run (SPEC §12.2).",
        ),
    ],
    output: Annotated[
        str,
        typer.Option(
            "--output",
            "-o",
            metavar="OUT",
            help="Where to write (parquet: a directory, created if missing; otlp-json: a file, or - for stdout).",
            show_default=False,
        ),
    ],
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="Replace the tables of a previous export in a non-empty OUT (each table swapped in whole).",
        ),
    ] = False,
    quiet: Quiet = False,
    schema_version: SchemaVersion = LATEST_SCHEMA_VERSION,
    require_closed: RequireClosed = False,
    max_findings: Annotated[
        int,
        typer.Option(
            "--max-findings",
            min=1,
            metavar="N",
            help="Keep at most N findings per log in the findings table (the rest are counted in "
            "runs.suppressed_findings, and still decide the exit code).",
        ),
    ] = DEFAULT_MAX_FINDINGS,
    jobs: ReadJobs = 1,
    max_line_bytes: MaxLineBytes = DEFAULTS["max_line_bytes"],
    dialect: DialectOption = Dialect.auto,
    service_name: Annotated[
        str,
        typer.Option("--service-name", metavar="NAME", help="otlp-json: the resource's service.name."),
    ] = "ract",
) -> None:
    """Verify every log and write it for other tools; exit with the lowest non-zero code of the inputs.

    Every usable event is written, with its trust stated (events.trusted), even
    when a log does not verify. Prints a summary and each log that did not
    verify on stderr; -q prints nothing.

    Example: ract trace export --format parquet --output fleet/ evals/runs/
    """
    if format is Format.otlp_json:
        _export_otlp(
            paths,
            output,
            overwrite=overwrite,
            quiet=quiet,
            service_name=service_name,
            schema_version=schema_version,
            max_line_bytes=max_line_bytes,
        )
    from ract_cli.export import ExportOptions, export

    options = ExportOptions(
        schema_version=schema_version,
        require_closed=require_closed,
        max_findings=max_findings,
        max_line_bytes=max_line_bytes,
        jobs=jobs,
        dialect=dialect.value,
    )
    with byte_progress("exporting", enabled=progress_enabled(quiet=quiet)) as progress:
        result = export(format.value, paths, output, options, overwrite=overwrite, progress=progress)
    if not quiet:
        _say(result)
    raise typer.Exit(int(result.exit_code))


def _export_otlp(
    paths: list[str],
    output: str,
    *,
    overwrite: bool,
    quiet: bool,
    service_name: str,
    schema_version: int,
    max_line_bytes: int,
) -> NoReturn:
    """``--format otlp-json``: traces to a file (atomically) or to stdout; the verdict on stderr."""
    from ract_cli.otel import OtlpOptions, export_otlp

    options = OtlpOptions(service_name=service_name, schema_version=schema_version, max_line_bytes=max_line_bytes)
    try:
        if (
            output != "-"
            and os.path.exists(output)
            and not overwrite
            and (not os.path.isfile(output) or os.path.getsize(output) > 0)
        ):
            raise UsageError(f"{output} exists: pass --overwrite to replace it")
        if output == "-":
            if stdout_closed():
                raise LogIOError("stdout is closed: nothing was written")
            result = export_otlp(paths, _CiSafeStdout(), options)
            flush_stdout()
        else:
            result = export_otlp(paths, output, options)
    except BrokenPipeError:
        silence_stdout()
        raise typer.Exit(BROKEN_PIPE_EXIT) from None
    except OSError as exc:
        error = LogIOError(f"cannot write {output}: {exc.strerror or exc}")
        raise typer.Exit(explain_failure("export", error, quiet=quiet)) from None
    if not quiet:
        console = stderr_console()
        for log in result.files:
            if log.exit_code:
                first = next((f for f in log.findings if f.severity == "error"), None)
                where = f":{first.line}" if first is not None and first.line is not None else ""
                detail = f"  {first.code} {first.message}" if first is not None else ""
                console.print(
                    clean(f"FAIL {log.path}{where}  exit {int(log.exit_code)} ({log.exit_code.name}){detail}"),
                    markup=False,
                )
        for f in result.findings:
            console.print(clean(f"FAIL {f.path}: {f.code} {f.message}"), markup=False)
        # counted from what was written: a log with no event read (unreadable, empty, a Raxol journal) has no line
        skipped = sum(1 for log in result.files if not log.events)
        failed = sum(1 for log in result.files if log.events and log.exit_code)
        said = [f"{failed} did not verify"] if failed else []
        said += [f"{skipped} not exported"] if skipped else []
        verdict = ", ".join(said) or "all verified"
        spans = sum(log.spans for log in result.files)
        code = result.exit_code
        console.print(
            clean(
                f"exported {len(result.files) - skipped} run(s) ({verdict}) to {'stdout' if output == '-' else output}: "
                f"{spans} spans  exit {int(code)} ({code.name})"
            ),
            markup=False,
        )
    raise typer.Exit(int(result.exit_code))


def _say(result: ExportResult) -> None:
    """Each log that did not verify, each path that gave no log, then one summary line (stderr)."""
    console = stderr_console()
    for log in result.logs:
        if log.exit_code:
            code = ExitCode(log.exit_code)
            first = log.first_error
            where = f":{first['line']}" if first and first.get("line") is not None else ""
            detail = f"  {first['code']} {first['message']}" if first else ""
            console.print(clean(f"FAIL {log.path}{where}  exit {int(code)} ({code.name}){detail}"), markup=False)
    for f in result.findings:
        console.print(clean(f"FAIL {f.path}: {f.code} {f.message}"), markup=False)
    console.print(_describe(result), markup=False)


def _describe(result: ExportResult) -> str:
    counts = result.counts
    logs = result.logs
    failed = sum(1 for log in logs if log.exit_code)
    code = result.exit_code
    verdict = "all verified" if not failed else f"{failed} did not verify"
    rows = ", ".join(f"{counts.get(t, 0)} {t}" for t in ("events", "runs", "findings"))
    return clean(f"exported {len(logs)} log(s) ({verdict}) to {result.output}: {rows}  exit {int(code)} ({code.name})")


class _CiSafeStdout(io.BytesIO):
    """stdout for ``--output -``: each JSON line the exporter writes, with ``##[`` in a string written
    ``##\\u005b`` (the same value; ``render.ci_safe``), so a log string cannot forge a workflow command."""

    def write(self, data: Any) -> int:  # nothing is kept: every line goes straight to stdout
        sys.stdout.buffer.write(ci_safe_bytes(bytes(data), json=True))
        return len(data)
