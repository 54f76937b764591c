"""``ract trace grep``: find events across many runs, verified while searching (SPEC §6).

The options live here; stderr and the streaming loop in ``ract_cli.cli.grep_report`` (shared with the quick
path of ``cli/launch.py``); stdout in ``ract_cli.cli.grep_output`` and ``grep_table``.
"""

from __future__ import annotations

import enum
from typing import Annotated

import typer

from ract_cli.cli.app import trace_app
from ract_cli.cli.grep_output import (
    OUT,
    CountSink,
    FilesSink,
    JsonlSink,
    JsonSink,
    Sink,
)
from ract_cli.cli.grep_report import Stderr, stream, warn
from ract_cli.cli.grep_table import TableSink
from ract_cli.cli.options import (
    Dialect,
    DialectOption,
    GrepJobs,
    MaxLineBytes,
    Paths,
    Quiet,
    SchemaVersion,
    complete_kind,
)
from ract_cli.cli.render import (
    BROKEN_PIPE_EXIT,
    byte_progress,
    clean,
    progress_enabled,
    stdout_closed,
    stdout_is_terminal,
)
from ract_cli.errors import RactError, UsageError
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.grep.filters import build_filter
from ract_cli.grep.results import GrepOptions
from ract_cli.grep.search import GrepSearch, grep_paths
from ract_cli.grep.times import parse_time
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES
from ract_cli.read.parallel import AUTO_JOBS


class Format(enum.StrEnum):
    jsonl = "jsonl"
    table = "table"
    json = "json"


# --- options --------------------------------------------------------------------

KindOption = Annotated[
    list[str] | None,
    typer.Option(
        "--kind",
        "-k",
        metavar="PATTERN",
        help="Event kind, exact or glob (process.*, *). Repeat to OR.",
        autocompletion=complete_kind,
    ),
]
RunOption = Annotated[list[str] | None, typer.Option("--run", metavar="ID", help="run_id (32 hex). Repeat to OR.")]
StepOption = Annotated[list[str] | None, typer.Option("--step", metavar="ID", help="step_id (32 hex). Repeat to OR.")]


def _checked_time(value: str | None, *, end_of_day: bool) -> str | None:
    """A ``--since``/``--until`` value the library's ``parse_time`` reads, or a usage error (exit 2).

    Only the ASCII digits 0-9 are digits here: ``²`` or ``٣`` pass ``str.isdigit`` (and ``\\d``) but are no
    time, and ``int`` rejects some of them with a ``ValueError``. Whatever the library raises on the
    value that is not its own ``UsageError`` becomes the message of a bad option value, never a traceback.
    """
    if value is None:
        return None
    stray = next((ch for ch in value if ch.isdigit() and not "0" <= ch <= "9"), None)
    if stray is not None:
        raise typer.BadParameter(f"cannot read time {clean(value)[:80]!r}: {clean(stray)!r} is not a digit 0-9")
    try:
        parse_time(value, end_of_day=end_of_day)
    except RactError:
        return value  # a usage error the search itself reports (exit 2), in its own words
    except (ValueError, OverflowError) as exc:
        raise typer.BadParameter(f"cannot read time {clean(value)[:80]!r}: {clean(exc)}") from None
    return value


def _since(value: str | None) -> str | None:
    return _checked_time(value, end_of_day=False)


def _until(value: str | None) -> str | None:
    return _checked_time(value, end_of_day=True)


SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="WHEN",
        callback=_since,
        help="Inclusive lower bound: ISO-8601 (UTC unless a zone is given) or integer ns.",
    ),
]
UntilOption = Annotated[
    str | None,
    typer.Option(
        "--until",
        metavar="WHEN",
        callback=_until,
        help="Inclusive upper bound; a bare date means the end of that day.",
    ),
]
SynthesizedOption = Annotated[
    bool | None,
    typer.Option(
        "--synthesized/--no-synthesized",
        help="Only closes synthesized by repair / only events that are not.",
        show_default=False,
    ),
]
WhereOption = Annotated[
    list[str] | None,
    typer.Option(
        "--where",
        "-w",
        metavar="EXPR",
        help="PATH=V, PATH!=V, <, <=, >, >=, PATH~REGEX, PATH!~REGEX, PATH? on dotted paths "
        "(payload.ok=false). V is JSON when it parses, else a string. Repeat to AND.",
    ),
]
FormatOption = Annotated[
    Format | None,
    typer.Option(
        "--format",
        help="jsonl (default when piped: the lines byte for byte), table (default on a terminal) or json.",
        show_default=False,
    ),
]
WithFilename = Annotated[
    bool, typer.Option("-H", "--with-filename", help="Prefix lines with path:line: (and counts with path:).")
]
Count = Annotated[
    bool,
    typer.Option("-c", "--count", help="Print the number of matching events (path:count per file when several files)."),
]
FilesWithMatches = Annotated[
    bool, typer.Option("-l", "--files-with-matches", help="Print only the paths of files with a match.")
]
NoVerify = Annotated[
    bool,
    typer.Option(
        "--no-verify",
        help="Skip hashing for speed: lines are prefiltered on raw bytes and nothing is verified (said on stderr).",
    ),
]


@trace_app.command(
    "grep",
    epilog="Example: ract trace grep --kind process.reaped --where 'payload.reap_latency_ms>1000' evals/runs/ | jq .payload",
)
def grep_command(
    paths: Paths,
    kind: KindOption = None,
    run: RunOption = None,
    step: StepOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    synthesized: SynthesizedOption = None,
    where: WhereOption = None,
    format: FormatOption = None,
    with_filename: WithFilename = False,
    count: Count = False,
    files_with_matches: FilesWithMatches = False,
    no_verify: NoVerify = False,
    quiet: Quiet = False,
    jobs: GrepJobs = None,
    schema_version: SchemaVersion = LATEST_SCHEMA_VERSION,
    max_line_bytes: MaxLineBytes = DEFAULT_MAX_LINE_BYTES,
    dialect: DialectOption = Dialect.auto,
) -> None:
    """Filter events across logs and directories, verifying each chain while searching.

    Options combine with AND; a repeated option ORs its values (--where ANDs).
    Exit 0: matches found; 7: nothing matched and every chain verified;
    otherwise the lowest non-zero code of SPEC §3 (1 at a chain break, where
    grep stops that file and prints nothing at or after the break).

    Example: ract trace grep --kind 'tool.*refused' evals/runs/ | jq -c .payload
    """
    err = Stderr(quiet=quiet)
    if count and files_with_matches:
        raise UsageError("-c/--count and -l/--files-with-matches cannot be combined")
    if (count or files_with_matches) and format in (Format.table, Format.json):
        raise UsageError(f"-c/-l print plain lines; they cannot be combined with --format {format.value}")
    flt = build_filter(
        kinds=kind or (),
        runs=run or (),
        steps=step or (),
        since=since,
        until=until,
        synthesized=synthesized,
        where=where or (),
        any_root=dialect is Dialect.raxol,
    )
    options = GrepOptions(
        verify=not no_verify,
        schema_version=schema_version,
        max_line_bytes=max_line_bytes,
        dialect=dialect.value,
        jobs=AUTO_JOBS if jobs is None else jobs,
    )
    # the bar (stderr, a terminal, large logs): never under -q nor a JSON form asked for by name
    shown = progress_enabled(quiet=quiet, json=format in (Format.json, Format.jsonl))
    with byte_progress("grepping", enabled=shown) as progress:
        search = grep_paths(paths, flt, options, progress=progress)

        warn(err, (kind or ()) if dialect is not Dialect.raxol else (), schema_version, no_verify)
        if not quiet and stdout_closed():  # started with `>&-`: nowhere to print the matches
            search.close()
            err.print(
                "ract trace grep: stdout is closed: the matches cannot be printed (-q tests for a match "
                f"without printing); exit {BROKEN_PIPE_EXIT}"
            )
            raise typer.Exit(BROKEN_PIPE_EXIT)
        terminal = False if quiet else stdout_is_terminal()  # -q never touches stdout
        OUT.reset()
        sink = _sink(search, quiet, count, files_with_matches, format, terminal, with_filename)
        raise typer.Exit(stream(err, search, sink))


def _sink(
    search: GrepSearch,
    quiet: bool,
    count: bool,
    files_with_matches: bool,
    format: Format | None,
    terminal: bool,
    with_filename: bool,
) -> Sink:
    """The sink of the output form asked for (-q, -c, -l, --format, or the default for stdout)."""
    if quiet:
        return Sink()
    if count:
        return CountSink(search, terminal, with_filename)
    if files_with_matches:
        return FilesSink(terminal)
    fmt = format or (Format.table if terminal else Format.jsonl)
    if fmt is Format.json:
        return JsonSink(terminal)
    if fmt is Format.table:
        return TableSink(with_filename, terminal)
    return JsonlSink(terminal, with_filename)
