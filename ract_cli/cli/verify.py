"""``ract trace verify``: the CI gate."""

from __future__ import annotations

import enum
from datetime import datetime, timezone
from typing import Annotated, Optional

import orjson
import typer

from ..errors import ExitCode, RactError
from ..findings import Finding
from ..kinds import LATEST_SCHEMA_VERSION
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..verify import FileReport, VerifyOptions, VerifyReport, verify_paths
from .app import trace_app
from .options import MaxLineBytes, Paths, Quiet, SchemaVersion
from .render import clean, markup_safe, stderr_console


class Format(str, enum.Enum):
    text = "text"
    json = "json"
    github = "github"


def format_ts(ns: int | None) -> str:
    if ns is None:
        return "-"
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def finding_line(f: Finding) -> str:
    where = f"{f.path}:{f.line}" if f.line is not None else f"{f.path}"
    return f"{where}: {f.code} {f.message}"


@trace_app.command("verify", epilog="Example: ract trace verify evals/runs/ --format json > report.json")
def verify_command(
    paths: Paths,
    format: Annotated[Format, typer.Option("--format", help="text (stderr), json or github (stdout).")] = Format.text,
    quiet: Quiet = False,
    expect_head: Annotated[Optional[str], typer.Option("--expect-head", metavar="HASH",
                           help="The single log must end at this chain head.")] = None,
    schema_version: SchemaVersion = LATEST_SCHEMA_VERSION,
    require_closed: Annotated[bool, typer.Option("--require-closed", help="An open run is exit 4.")] = False,
    max_findings: Annotated[Optional[int], typer.Option("--max-findings", min=1, help="Keep at most N findings per file.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Parallel workers.")] = 1,
    max_line_bytes: MaxLineBytes = DEFAULT_MAX_LINE_BYTES,
) -> None:
    """Verify hash chains, envelopes and payloads; exit with the SPEC §3 code.

    Example: ract trace verify evals/runs/*/events.jsonl
    """
    options = VerifyOptions(schema_version=schema_version, require_closed=require_closed, expect_head=expect_head,
                            max_findings=max_findings, max_line_bytes=max_line_bytes, jobs=jobs)
    try:
        report = verify_paths(paths, options)
    except RactError as exc:
        stderr_console().print(f"ract trace verify: {markup_safe(exc.message)}")
        raise typer.Exit(int(exc.exit_code)) from None
    if not quiet:
        render(report, format)
    raise typer.Exit(int(report.exit_code))


def render(report: VerifyReport, fmt: Format) -> None:
    if fmt is Format.json:
        typer.echo(orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode())
    elif fmt is Format.github:
        for f in _all_findings(report):
            level = "error" if f.severity == "error" else "warning"
            props = f"file={_gh_prop(f.path or '')}" + (f",line={f.line}" if f.line is not None else "")
            typer.echo(f"::{level} {props},title={f.code}::{_gh_data(f.message)}")
    else:
        console = stderr_console()
        for file in report.files:
            console.print(_verdict_line(file), markup=False)
            for f in file.findings:
                console.print(clean(finding_line(f)), markup=False)
            if file.suppressed:
                console.print(f"{clean(file.path)}: {file.suppressed} more finding(s) not shown (--max-findings)",
                              markup=False)
        for f in report.findings:
            console.print(f"FAIL {clean(f.path)}  ({ExitCode(f.exit_code).name})", markup=False)
            console.print(clean(finding_line(f)), markup=False)


def _verdict_line(file: FileReport) -> str:
    verdict = "PASS" if file.ok else f"FAIL ({file.exit_code.name})"
    head = file.head or "-"
    return (f"{verdict} {clean(file.path)}  {file.events} events  "
            f"{format_ts(file.first_ts)} .. {format_ts(file.last_ts)}  head {head}")


def _all_findings(report: VerifyReport) -> list[Finding]:
    return [f for file in report.files for f in file.findings] + list(report.findings)


def _gh_data(text: str) -> str:
    # GitHub workflow-command escaping: %, CR and LF in the message.
    return clean(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")
