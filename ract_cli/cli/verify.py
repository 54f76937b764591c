"""``ract trace verify``: the CI gate (docs/verify.md)."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

import typer

from ract_cli.cli.app import trace_app
from ract_cli.cli.limits import DEFAULT_MAX_FINDINGS
from ract_cli.cli.options import Dialect, DialectOption, Jobs, MaxLineBytes, Paths, Quiet, RequireClosed, SchemaVersion
from ract_cli.cli.render import (
    byte_progress,
    ci_safe,
    clean,
    clean_json,
    dumps_json,
    finding_detail,
    finding_line,
    flush_stdout,
    print_lines,
    progress_enabled,
    silence_stdout,
    stderr_console,
    stdout_closed,
    stdout_is_terminal,
)
from ract_cli.errors import ExitCode
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.format.text import iso_utc
from ract_cli.read.line import DEFAULT_MAX_LINE_BYTES
from ract_cli.read.parallel import AUTO_JOBS
from ract_cli.verify.verifier import FileReport, VerifyOptions, VerifyReport, verify_paths

if TYPE_CHECKING:
    pass


class Format(enum.StrEnum):
    text = "text"
    json = "json"
    github = "github"


def format_ts(ns: int | None) -> str:
    """UTC ISO-8601 with microseconds truncated (``format.text.iso_utc``), or ``-``."""
    return "-" if ns is None else iso_utc(ns)


CheckpointOption = Annotated[
    list[str] | None,
    typer.Option(
        "--checkpoint",
        metavar="FILE",
        help="A signed checkpoint (ract trace checkpoint) the single log must hold: same first N events "
        "(CHECKPOINT_MISMATCH), at least N (CHECKPOINT_TRUNCATED), a valid signature (CHECKPOINT_SIGNATURE). "
        "Repeatable; needs --vkey.",
        show_default=False,
    ),
]
VkeyOption = Annotated[
    list[str] | None,
    typer.Option(
        "--vkey",
        metavar="FILE",
        help="A verifier key (ract trace keygen) the checkpoints are signed with. Repeatable. Without "
        "--checkpoint: check the log's sealing sidecar (<log>.checkpoints).",
        show_default=False,
    ),
]


@trace_app.command(
    "verify",
    epilog="Examples:\n\n"
    "ract trace verify evals/runs/\n\n"
    "ract trace verify --require-closed --format json evals/runs/ > report.json\n\n"
    "ract trace verify --expect-head HASH evals/runs/RUN/events.jsonl\n\n"
    "See docs/verify.md and docs/exit-codes.md.",
)
def verify_command(
    paths: Paths,
    format: Annotated[
        Format,
        typer.Option(
            "--format",
            case_sensitive=False,
            help="text: verdicts on stderr; json: one report on stdout; github: GitHub Actions annotations on stdout.",
        ),
    ] = Format.text,
    quiet: Quiet = False,
    expect_head: Annotated[
        str | None,
        typer.Option(
            "--expect-head",
            metavar="HASH",
            help="The single log given must end at this chain head (64 hex), recorded elsewhere: catches "
            "truncated whole lines and wholesale rewrites. Mismatch: HEAD_MISMATCH, exit 1.",
        ),
    ] = None,
    schema_version: SchemaVersion = LATEST_SCHEMA_VERSION,
    require_closed: RequireClosed = False,
    max_findings: Annotated[
        int | None,
        typer.Option(
            "--max-findings",
            min=1,
            metavar="N",
            help="Keep at most N findings per file (the rest are counted, and still decide the exit code). "
            "Default 1000: a small hostile file of blank lines would otherwise hold one finding per byte.",
        ),
    ] = DEFAULT_MAX_FINDINGS,
    jobs: Jobs = None,
    max_line_bytes: MaxLineBytes = DEFAULT_MAX_LINE_BYTES,
    dialect: DialectOption = Dialect.auto,
    checkpoint: CheckpointOption = None,
    vkey: VkeyOption = None,
) -> None:
    """Verify hash chains, envelopes and payloads; exit with the lowest non-zero code (SPEC §3).

    Prints a PASS/FAIL line per file (events, time range, chain head), then each
    finding as path:line: CODE message, on stderr. -q prints nothing.

    Example: ract trace verify evals/runs/*/events.jsonl
    """
    options = VerifyOptions(
        schema_version=schema_version,
        require_closed=require_closed,
        expect_head=expect_head,
        max_findings=max_findings,
        max_line_bytes=max_line_bytes,
        jobs=AUTO_JOBS if jobs is None else jobs,
        dialect=dialect.value,
        checkpoints=tuple(checkpoint or ()),
        vkeys=tuple(vkey or ()),
    )
    # the bar: stderr a terminal, large logs, never under -q nor with the JSON report
    with byte_progress("verifying", enabled=progress_enabled(quiet=quiet, json=format is Format.json)) as progress:
        report = verify_paths(paths, options, progress=progress)
    if not quiet:
        render(report, format)
    raise typer.Exit(int(report.exit_code))


def render(report: VerifyReport, fmt: Format) -> None:
    if fmt is not Format.text:
        text = report_json(report) if fmt is Format.json else "\n".join(github_annotations(report))
        # a terminal is not a data sink: format characters become JSON escapes (the same values)
        _write_stdout(clean_json(text) if fmt is Format.json and stdout_is_terminal() else text, fmt)
    if fmt is not Format.json:
        render_text(report)


def _write_stdout(text: str, fmt: Format) -> None:
    """The json report or the annotations on stdout. A closed stdout, or a reader that went away
    (``| head``), leaves the exit code the verdict: the logs were verified all the same."""
    if stdout_closed():  # started with `>&-`
        stderr_console().print(
            f"ract trace verify: stdout is closed: the {fmt.value} output was not written", markup=False
        )
        return
    try:
        if text:
            typer.echo(text)
        flush_stdout()
    except BrokenPipeError:
        silence_stdout()


def report_json(report: VerifyReport) -> str:
    """The documented JSON report (docs/verify.md)."""
    return dumps_json(report.to_dict(), indent=True)


def render_text(report: VerifyReport) -> None:
    print_lines(stderr_console(), _text_lines(report))


def _text_lines(report: VerifyReport) -> Iterator[str]:
    for file in report.files:
        yield _verdict_line(file)
        for f in file.findings:
            yield finding_line(f)
        if file.suppressed:
            yield f"{clean(file.path)}: {file.suppressed} more finding(s) not shown (--max-findings)"
    for f in report.findings:
        yield f"FAIL {clean(f.path)}  exit {int(f.exit_code)} ({ExitCode(f.exit_code).name})"
        yield finding_line(f)


def _verdict_line(file: FileReport) -> str:
    verdict = (
        f"PASS {clean(file.path)}"
        if file.ok
        else f"FAIL {clean(file.path)}  exit {int(file.exit_code)} ({file.exit_code.name})"
    )
    head = file.head or "-"
    line = f"{verdict}  {file.events} events  {format_ts(file.first_ts)} .. {format_ts(file.last_ts)}  head {head}"
    return f"{line}  {file.checkpoint_summary}" if file.checkpoint_summary else line


def github_annotations(report: VerifyReport) -> list[str]:
    """``::error file=PATH,line=N::CODE message`` per finding (``::warning`` for warnings)."""
    lines: list[str] = []
    for f in [*(f for file in report.files for f in file.findings), *report.findings]:
        level = "error" if f.severity == "error" else "warning"
        props = f"file={_gh_prop(f.path or '')}" + (f",line={f.line}" if f.line is not None else "")
        lines.append(f"::{level} {props}::{_gh_data(f'{f.code} {f.message}{finding_detail(f)}')}")
    for file in report.files:
        if file.suppressed:
            lines.append(
                f"::warning file={_gh_prop(file.path)}::{file.suppressed} more finding(s) not shown (--max-findings)"
            )
    return lines


def _gh_data(text: str) -> str:
    # GitHub workflow-command escaping of the message: %, CR and LF.
    return ci_safe(clean(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _gh_prop(text: str) -> str:
    # Property values also escape ':' and ','.
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")
