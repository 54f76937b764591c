"""Option definitions shared by several commands, so each is spelled once."""

from __future__ import annotations

import enum
from typing import Annotated, Any

import typer

from ract_cli.cli.limits import MAX_JOBS
from ract_cli.format.kinds import KINDS, LATEST_SCHEMA_VERSION
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES

Paths = Annotated[
    list[str],
    typer.Argument(
        metavar="PATH...",
        help="Log files (- reads standard input; gzip is read as such), or directories searched for "
        "events.jsonl and events.jsonl.gz.",
        show_default=False,
    ),
]


def complete_kind(incomplete: str) -> list[str]:
    """Shell completion for ``--kind``: every RACT kind, each family's glob (``process.*``), Raxol's types."""
    from ract_cli.dialects.raxol.contract import LOOP_TYPES  # (only when completing: start-up)

    names = [k.name for k in KINDS]
    families = sorted({n.split(".", 1)[0] + ".*" for n in names if "." in n})
    return [c for c in dict.fromkeys([*names, *families, *LOOP_TYPES]) if c.startswith(incomplete)]


SchemaVersion = Annotated[
    int,
    typer.Option(
        "--schema-version",
        min=1,
        max=LATEST_SCHEMA_VERSION,
        metavar="N",
        help="Vocabulary version to check against (1-9).",
    ),
]
#: the largest ``--max-line-bytes`` (1 TiB, far past any line a reader can hold in memory): a larger value,
#: e.g. 2^63 - 1 for "no limit", is a usage error (exit 2), never an ``OverflowError`` in the reader
MAX_LINE_BYTES_LIMIT = 1 << 40


def _max_line_bytes(value: int) -> int:
    """At most ``MAX_LINE_BYTES_LIMIT``, checked here so that the help and the ``x>=1`` wording stay as they are."""
    if value > MAX_LINE_BYTES_LIMIT:
        shown = str(value) if value < 10**30 else f"{str(value)[:27]}..."
        raise typer.BadParameter(
            f"{shown} is not in the range 1<=x<={MAX_LINE_BYTES_LIMIT} (1 TiB, the largest limit)."
        )
    return value


MaxLineBytes = Annotated[
    int,
    typer.Option(
        "--max-line-bytes",
        min=1,
        metavar="N",
        callback=_max_line_bytes,
        help="A longer line is a LINE_TOO_LONG finding instead of being read.",
    ),
]
RequireClosed = Annotated[
    bool,
    typer.Option(
        "--require-closed", help="A run without run.completed/run.aborted is OPEN_RUN exit 4 (else a warning)."
    ),
]
Quiet = Annotated[bool, typer.Option("-q", "--quiet", help="Print nothing; the exit code is the verdict.")]


def _jobs_option(help: str) -> Any:
    """``-j``/``--jobs N``: worker processes, 1 to ``MAX_JOBS`` (each command says what they share)."""
    return typer.Option("--jobs", "-j", min=1, max=MAX_JOBS, metavar="N", help=help)


Jobs = Annotated[
    int | None,
    _jobs_option(
        "Worker processes: files in parallel, and a log of 8 MB or more in two threads or "
        "parallel byte ranges. Default: one under 8 MB in all; a single larger log as N = 2 when a core is "
        "free (the native core's two threads, the Python core's two processes), else one; more logs: one "
        "per CPU (at most 8). "
        "The verdict does not depend on N."
    ),
]
GrepJobs = Annotated[
    int | None,
    _jobs_option(
        "Worker processes grepping files in parallel (a log of 8 MB or more is grepped by the "
        "main process, streaming; with --kind, verified, in the native core's two threads when N > 1). "
        "Default: one under 8 MB in all; a single larger log as N = 2 when a core is free, else one; more "
        "logs: one per CPU (at most 8). Output and exit code do not depend on N."
    ),
]


class Dialect(enum.StrEnum):
    """Which format a log is read as (SPEC §8): detected per file, or forced."""

    auto = "auto"
    ract = "ract"
    raxol = "raxol"


DialectOption = Annotated[
    Dialect,
    typer.Option(
        "--dialect",
        case_sensitive=False,
        help="ract (run logs), raxol (agent journals: records with type, no kind) or auto (detect per "
        "file). With raxol, directories are searched for *.jsonl too.",
    ),
]

DEFAULTS = {"schema_version": LATEST_SCHEMA_VERSION, "max_line_bytes": DEFAULT_MAX_LINE_BYTES}

#: ``--jobs`` of export and sql: whole logs in parallel (the verifier's byte ranges need no rows; these do)
ReadJobs = Annotated[
    int,
    typer.Option(
        "--jobs",
        "-j",
        min=1,
        max=MAX_JOBS,
        metavar="N",
        help="Worker processes reading logs in parallel (each log is read whole by one). "
        "The tables do not depend on N.",
    ),
]
ProjectJobs = Annotated[
    int | None,
    _jobs_option(
        "Worker processes: the logs of a fleet projected in parallel; one log is folded in order (with the "
        "native core in two threads when N > 1; with the Python core, from 8 MB, N - 1 workers (at most 4) "
        "prove its lines). "
        "Default: one under 8 MB of logs in all; a single larger log as N = 2 when a core is free; more logs: "
        "one per CPU (at most 8). The report does not depend on N."
    ),
]
