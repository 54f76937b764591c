"""``ract trace verify``: the CI gate (docs/verify.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from ract_cli.cli.app import trace_app
from ract_cli.cli.limits import DEFAULT_MAX_FINDINGS
from ract_cli.cli.options import Dialect, DialectOption, Jobs, MaxLineBytes, Paths, Quiet, RequireClosed, SchemaVersion
from ract_cli.cli.render import byte_progress, progress_enabled
from ract_cli.cli.verify_report import Format, render
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES
from ract_cli.read.parallel import AUTO_JOBS
from ract_cli.verify.verifier import VerifyOptions, verify_paths

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
        "--checkpoint: check the log's sealing sidecar (<log>.checkpoints). Without --vkey a sidecar "
        "is still read: the log must hold what its seals cover (signatures unchecked).",
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
