"""``ract trace grep``: find events across many runs, verified while searching (SPEC §6)."""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Iterable
from typing import Annotated, NamedTuple

import typer
from rich.cells import cell_len, get_character_cell_size
from rich.table import Table
from rich.text import Text

from ract_cli.cli.app import trace_app
from ract_cli.cli.options import Dialect, DialectOption, GrepJobs, MaxLineBytes, Paths, Quiet, SchemaVersion
from ract_cli.cli.render import (
    BROKEN_PIPE_EXIT,
    clean,
    dumps_json,
    explain_failure,
    silence_stdout,
    stderr_console,
    stdout_closed,
    stdout_console,
    stdout_is_terminal,
)
from ract_cli.errors import RactError, UsageError
from ract_cli.findings import ERROR, Finding
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.grep.search import (
    FileResult,
    GrepOptions,
    GrepSearch,
    Match,
    build_filter,
    format_ns,
    grep_paths,
    unknown_kind_patterns,
)
from ract_cli.read.line import DEFAULT_MAX_LINE_BYTES

SHOWN_FINDINGS_PER_FILE = 10
TABLE_BATCH = 200
PAYLOAD_WIDTH = 160  # the payload summary is cut here even when nothing else limits it
# Table layout (docs/grep.md, "The table"): the location keeps at least WHERE_MIN cells; the payload
# summary gets what it needs of the rest, down to PAYLOAD_MIN; below that each match takes two lines.
WHERE_MIN = 32  # … + 14 hex of the run id + /events.jsonl (13) + :NNN (4) = 32 cells
PAYLOAD_MIN = 20
KIND_WIDTH = 32  # longer kinds fold onto more lines
STEP_WIDTH = 8
NARROW_FIRST_MIN = 12
NARROW_SECOND_MIN = 16
MIN_TABLE_WIDTH = 40  # a narrower console is laid out as this wide (the terminal wraps the lines)
ELLIPSIS = "\u2026"


class Format(str, enum.Enum):
    jsonl = "jsonl"
    table = "table"
    json = "json"


class _Stop(Exception):
    """stdout went away (``| head``): stop quietly."""


@trace_app.command(
    "grep",
    epilog="Example: ract trace grep --kind process.reaped --where 'payload.reap_latency_ms>1000' evals/runs/ | jq .payload",
)
def grep_command(
    paths: Paths,
    kind: Annotated[
        list[str] | None,
        typer.Option("--kind", "-k", metavar="PATTERN", help="Event kind, exact or glob (process.*, *). Repeat to OR."),
    ] = None,
    run: Annotated[
        list[str] | None, typer.Option("--run", metavar="ID", help="run_id (32 hex). Repeat to OR.")
    ] = None,
    step: Annotated[
        list[str] | None, typer.Option("--step", metavar="ID", help="step_id (32 hex). Repeat to OR.")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="WHEN",
            help="Inclusive lower bound: ISO-8601 (UTC unless a zone is given) or integer ns.",
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option("--until", metavar="WHEN", help="Inclusive upper bound; a bare date means the end of that day."),
    ] = None,
    synthesized: Annotated[
        bool | None,
        typer.Option(
            "--synthesized/--no-synthesized",
            help="Only closes synthesized by repair / only events that are not.",
            show_default=False,
        ),
    ] = None,
    where: Annotated[
        list[str] | None,
        typer.Option(
            "--where",
            "-w",
            metavar="EXPR",
            help="PATH=V, PATH!=V, <, <=, >, >=, PATH~REGEX, PATH!~REGEX, PATH? on dotted paths "
            "(payload.ok=false). V is JSON when it parses, else a string. Repeat to AND.",
        ),
    ] = None,
    format: Annotated[
        Format | None,
        typer.Option(
            "--format",
            help="jsonl (default when piped: the lines byte for byte), table (default on a terminal) or json.",
            show_default=False,
        ),
    ] = None,
    with_filename: Annotated[
        bool, typer.Option("-H", "--with-filename", help="Prefix lines with path:line: (and counts with path:).")
    ] = False,
    count: Annotated[
        bool,
        typer.Option(
            "-c", "--count", help="Print the number of matching events (path:count per file when several files)."
        ),
    ] = False,
    files_with_matches: Annotated[
        bool, typer.Option("-l", "--files-with-matches", help="Print only the paths of files with a match.")
    ] = False,
    no_verify: Annotated[
        bool,
        typer.Option(
            "--no-verify",
            help="Skip hashing for speed: lines are prefiltered on raw bytes and nothing is verified (said on stderr).",
        ),
    ] = False,
    quiet: Quiet = False,
    jobs: GrepJobs = 1,
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
    err = stderr_console(quiet=quiet)
    try:
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
        search = grep_paths(
            paths,
            flt,
            GrepOptions(
                verify=not no_verify,
                schema_version=schema_version,
                max_line_bytes=max_line_bytes,
                dialect=dialect.value,
                jobs=jobs,
            ),
        )
    except RactError as exc:
        raise typer.Exit(explain_failure("grep", exc, quiet=quiet)) from None

    for pattern in unknown_kind_patterns(kind or (), schema_version) if dialect is not Dialect.raxol else ():
        err.print(
            f"ract trace grep: warning: --kind {clean(pattern)!r} matches no RACT event kind "
            f"(schema version {schema_version})",
            markup=False,
        )
    if no_verify:
        err.print(
            "ract trace grep: --no-verify: hash chains are NOT checked; matches are printed without a "
            "verdict on their logs",
            markup=False,
        )

    if not quiet and stdout_closed():  # started with `>&-`: nowhere to print the matches
        search.close()
        err.print(
            "ract trace grep: stdout is closed: the matches cannot be printed (-q tests for a match "
            f"without printing); exit {BROKEN_PIPE_EXIT}",
            markup=False,
        )
        raise typer.Exit(BROKEN_PIPE_EXIT)
    terminal = False if quiet else stdout_is_terminal()  # -q never touches stdout
    _OUT.parts.clear()
    _OUT.size = 0
    sink: _Sink
    if quiet:
        sink = _Sink()
    elif count:
        sink = _CountSink(search, terminal, with_filename)
    elif files_with_matches:
        sink = _FilesSink(terminal)
    else:
        fmt = format or (Format.table if terminal else Format.jsonl)
        if fmt is Format.json:
            sink = _JsonSink(terminal)
        elif fmt is Format.table:
            sink = _TableSink(with_filename, terminal)
        else:
            sink = _JsonlSink(terminal, with_filename)

    try:
        for item in search:
            if isinstance(item, Match):
                sink.match(item)
            else:
                _report(err, item)
                sink.file_done(item)
        sink.finish(search)
    except (_Stop, BrokenPipeError):  # BrokenPipeError: from the table's console (render.stdout_console)
        silence_stdout()
        raise typer.Exit(BROKEN_PIPE_EXIT) from None
    finally:
        search.close()  # with --jobs: stop the workers now, not at interpreter exit
    raise typer.Exit(int(search.exit_code))


# --- stderr -------------------------------------------------------------------


def _report(err, result: FileResult) -> None:
    """Say on stderr what went wrong in one file (errors, the stop, a repaired log)."""
    if not result.is_file:
        for f in result.findings:
            err.print(f"ract trace grep: {clean(f.message)}", markup=False)
        return
    errors = [f for f in result.findings if f.severity == ERROR]
    for f in errors[:SHOWN_FINDINGS_PER_FILE]:
        err.print(_finding_line(f), markup=False)
    if len(errors) > SHOWN_FINDINGS_PER_FILE:
        err.print(
            f"{clean(result.path)}: {len(errors) - SHOWN_FINDINGS_PER_FILE} more error(s) not shown", markup=False
        )
    if result.suppressed:
        # past the reader's cap, findings are only counted: their severity is not known here
        err.print(
            f"{clean(result.path)}: {result.suppressed} further finding(s), errors or warnings, past the "
            f"first {len(result.findings)} not kept (the exit code counts them)",
            markup=False,
        )
    for f in result.findings:
        if f.code == "REPAIRED":
            err.print(_finding_line(f), markup=False)
    if result.stopped_at is not None:
        first_hidden = result.stopped_at
        err.print(
            f"{clean(result.path)}:{result.stopped_at}: chain not verified from here: grep stopped this file; "
            f"nothing at or after line {first_hidden} was printed",
            markup=False,
        )


def _finding_line(f: Finding) -> str:
    where = f"{f.path}:{f.line}" if f.line is not None else f"{f.path}"
    return clean(f"{where}: {f.code} {f.message}")


# --- stdout -------------------------------------------------------------------


class _Out:
    """stdout as bytes, written in chunks of up to 64 KiB (stdout may be unbuffered: one syscall per
    match would dominate a fast search). Flushed at the end of every file, so output keeps streaming."""

    LIMIT = 1 << 16

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def write(self, data: bytes) -> None:
        self.parts.append(data)
        self.size += len(data)
        if self.size >= self.LIMIT:
            self.flush()

    def flush(self) -> None:
        data = b"".join(self.parts)
        self.parts.clear()
        self.size = 0
        try:
            if data:
                sys.stdout.buffer.write(data)
            sys.stdout.flush()
        except BrokenPipeError:
            raise _Stop() from None


_OUT = _Out()


def _write_bytes(data: bytes) -> None:
    _OUT.write(data)


def _flush() -> None:
    _OUT.flush()


class _Sink:
    """Receives the search's items in order; the base prints nothing (--quiet)."""

    def match(self, m: Match) -> None:
        pass

    def file_done(self, result: FileResult) -> None:
        pass

    def finish(self, search: GrepSearch) -> None:
        pass


class _JsonlSink(_Sink):
    """The lines byte for byte (piped), or escaped for display (on a terminal)."""

    def __init__(self, terminal: bool, with_filename: bool) -> None:
        self.terminal = terminal
        self.with_filename = with_filename
        self._prefix_path: str | None = None
        self._prefix: bytes = b""

    def match(self, m: Match) -> None:
        if self.terminal:  # a terminal is not a data sink: escape what the log says
            text = m.raw.decode("utf-8", "replace").rstrip("\r\n")
            prefix = f"{m.path}:{m.line}:" if self.with_filename else ""
            _write_bytes((clean(prefix + text) + "\n").encode("utf-8", "replace"))
        else:
            # A file's last line may lack its newline (MISSING_FINAL_NEWLINE): give it one,
            # as GNU grep does, or it would run into the next file's first match.
            raw = m.raw if m.raw.endswith(b"\n") else m.raw + b"\n"
            if self.with_filename:
                if m.path != self._prefix_path:
                    self._prefix_path, self._prefix = m.path, os.fsencode(m.path)
                raw = self._prefix + b":" + str(m.line).encode() + b":" + raw
            _write_bytes(raw)

    def file_done(self, result: FileResult) -> None:
        _flush()

    def finish(self, search: GrepSearch) -> None:
        _flush()


class _JsonSink(_Sink):
    """One JSON object, streamed: {"matches": [...], "files": [...], "exit_code": N}."""

    def __init__(self, terminal: bool) -> None:
        self.first = True
        self.terminal = terminal
        self.files: list[FileResult] = []
        _write_bytes(b'{"matches":[')

    def match(self, m: Match) -> None:
        data = dumps_json(m.to_dict()).encode()
        if self.terminal:  # shown, not stored: bidi overrides and C1 controls become visible escapes
            data = clean(data.decode()).encode()
        _write_bytes((b"\n" if self.first else b",\n") + data)
        self.first = False

    def file_done(self, result: FileResult) -> None:
        self.files.append(result)

    def finish(self, search: GrepSearch) -> None:
        files = dumps_json([f.to_dict() for f in self.files]).encode()
        tail = dumps_json(
            {
                "total_matches": search.total_matches,
                "verified": search.options.verify,
                "exit_code": int(search.exit_code),
            }
        ).encode()
        _write_bytes(b'\n],\n"files":' + files + b",\n" + tail[1:] + b"\n")
        _flush()


class _CountSink(_Sink):
    def __init__(self, search: GrepSearch, terminal: bool, with_filename: bool) -> None:
        self.terminal = terminal
        self.prefix = with_filename or search.several

    def file_done(self, result: FileResult) -> None:
        if not result.is_file:
            return
        if self.prefix:
            _write_path_line(result.path, self.terminal, f":{result.matches}")
        else:
            _write_bytes(f"{result.matches}\n".encode())

    def finish(self, search: GrepSearch) -> None:
        _flush()


class _FilesSink(_Sink):
    def __init__(self, terminal: bool) -> None:
        self.terminal = terminal

    def file_done(self, result: FileResult) -> None:
        if result.is_file and result.matches:
            _write_path_line(result.path, self.terminal, "")

    def finish(self, search: GrepSearch) -> None:
        _flush()


def _write_path_line(path: str, terminal: bool, suffix: str) -> None:
    if terminal:
        _write_bytes((clean(path) + suffix + "\n").encode("utf-8", "replace"))
    else:
        _write_bytes(os.fsencode(path) + suffix.encode() + b"\n")


class _Row(NamedTuple):
    """One table row as display text; every log-derived string already went through ``clean``."""

    path: str
    line: int
    time: str
    kind: str
    step: str
    payload: str


class _Layout(NamedTuple):
    narrow: bool  # two lines per match in two columns (see docs/grep.md, "The table")
    where: int  # cells for path:line
    time: int
    kind: int
    step: int
    payload: int


def _shorten_left(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells: the start is cut and replaced by an ellipsis."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS
    kept: list[str] = []
    used = cell_len(ELLIPSIS)
    for ch in reversed(text):
        size = get_character_cell_size(ch)
        if used + size > width:
            break
        kept.append(ch)
        used += size
    return ELLIPSIS + "".join(reversed(kept))


def _location(row: _Row, width: int | None) -> str:
    """``path:line``; with a width, the path is shortened from the left, the line number always kept."""
    suffix = f":{row.line}"
    if width is None:
        return row.path + suffix
    return _shorten_left(row.path, max(width - len(suffix), 1)) + suffix


def _payload_summary(payload: object) -> str:
    # dumps_json: a payload nested deeper than orjson writes (the reader accepts it) must not crash the table
    text = clean(dumps_json(payload))
    if len(text) > PAYLOAD_WIDTH:
        text = text[: PAYLOAD_WIDTH - 3] + "..."
    return text


def _table_layout(rows: list[_Row], width: int | None, full_path: bool = False) -> _Layout:
    """Column widths for ``rows`` in a console ``width`` cells wide (None: not fitted, every column natural).

    The location (path:line) is never dropped. Of what time, kind and step leave, the location keeps
    WHERE_MIN cells (its path shortened from the left), the payload summary takes what it needs of the
    rest and the location the remainder. With -H (``full_path``) the location comes first (up to its
    whole length) and the payload gets the rest. When even PAYLOAD_MIN cells of payload do not fit, each
    match takes two lines in two columns.
    """

    def widest(texts: Iterable[str], header: str) -> int:
        return max([cell_len(header), *(cell_len(t) for t in texts)])

    where = widest((_location(r, None) for r in rows), "path:line")
    time = widest((r.time for r in rows), "time (UTC)")
    kind = widest((r.kind for r in rows), "kind")
    step = widest((r.step for r in rows), "step")
    payload = widest((r.payload for r in rows), "payload")
    if width is None:
        return _Layout(False, where, time, kind, step, payload)
    kind, step = min(kind, KIND_WIDTH), min(step, STEP_WIDTH)
    avail = width - 2 * 4  # five columns, two cells between neighbours
    fixed = time + kind + step
    if min(where, WHERE_MIN) + fixed + min(payload, PAYLOAD_MIN) <= avail:
        rest = avail - fixed
        if full_path:  # the whole path on one line when it fits beside PAYLOAD_MIN cells of payload
            where = min(where, rest - min(payload, PAYLOAD_MIN))
        else:  # the payload first; the location keeps WHERE_MIN cells and gets what is left
            where = min(where, max(WHERE_MIN, rest - payload))
        return _Layout(False, where, time, kind, step, min(payload, rest - where))
    avail = width - 2  # two columns: path:line over time | kind and step over payload
    first = min(max(time, min(where, avail // 2)), max(avail - NARROW_SECOND_MIN, NARROW_FIRST_MIN))
    first = max(1, min(first, avail - 1))
    second = max(1, avail - first)
    return _Layout(True, first, first, second, second, second)


class _TableSink(_Sink):
    """A table on the terminal, printed in batches so memory stays bounded.

    Fitted to the console width (the terminal's, or COLUMNS), laid out once from the first batch so the
    columns stay aligned; without a terminal and without COLUMNS, not fitted: every column at its natural
    width. ``path:line`` is always shown; -H shows the full path (folded onto more lines when long)
    instead of shortening it from the left.
    """

    def __init__(self, full_path: bool, terminal: bool) -> None:
        self.console = stdout_console()
        self.full_path = full_path
        self.fitted = terminal or os.environ.get("COLUMNS", "").strip().isdigit()
        self.layout: _Layout | None = None
        self.rows: list[_Row] = []
        self.header = True

    def match(self, m: Match) -> None:
        event = m.event
        step = event.get("step_id")
        kind = event.get("kind", event.get("type"))  # a Raxol journal record's kind is its type (SPEC §8)
        self.rows.append(
            _Row(
                clean(m.path),
                m.line,
                format_ns(event.get("timestamp_ns")),
                "-" if kind is None else clean(kind),
                clean(step[:8]) if isinstance(step, str) else "-",
                _payload_summary(event.get("payload")),
            )
        )
        if len(self.rows) >= TABLE_BATCH:
            self._print()

    def _print(self) -> None:
        if self.fitted:
            if self.layout is None:
                self.console.width = max(self.console.width, MIN_TABLE_WIDTH)
                self.layout = _table_layout(self.rows, self.console.width, self.full_path)
            layout = self.layout
        else:  # a file or a pipe: nothing is cut but the payload (at PAYLOAD_WIDTH); columns only widen
            layout = _table_layout(self.rows, None)
            if self.layout is not None:
                layout = _Layout(False, *(max(a, b) for a, b in zip(layout[1:], self.layout[1:])))
            self.layout = layout
            self.console.width = layout.where + layout.time + layout.kind + layout.step + layout.payload + 8
        shorten = None if self.full_path or not self.fitted else layout.where
        table = Table(show_header=self.header, header_style="bold", box=None, pad_edge=False)
        if layout.narrow:
            table.add_column(Text("path:line\ntime (UTC)"), width=layout.where, overflow="fold")
            table.add_column(Text("kind  step\npayload"), width=layout.payload, overflow="fold")
            for i, row in enumerate(self.rows):
                if i or not self.header:
                    table.add_row("", "")  # a blank line between matches
                payload = Text(row.payload)
                payload.truncate(layout.payload, overflow="ellipsis")
                table.add_row(
                    Text(f"{_location(row, shorten)}\n{row.time}"), Text.assemble(f"{row.kind}  {row.step}\n", payload)
                )
        else:
            table.add_column("path:line", width=layout.where, overflow="fold")
            table.add_column("time (UTC)", width=layout.time, overflow="fold")
            table.add_column("kind", width=layout.kind, overflow="fold")
            table.add_column("step", width=layout.step, overflow="fold")
            table.add_column("payload", width=layout.payload, overflow="ellipsis", no_wrap=True)
            for row in self.rows:
                table.add_row(
                    Text(_location(row, shorten)), Text(row.time), Text(row.kind), Text(row.step), Text(row.payload)
                )
        self.console.print(table)
        self.rows.clear()
        self.header = False

    def finish(self, search: GrepSearch) -> None:
        if self.rows:
            self._print()
        noun = "match" if search.total_matches == 1 else "matches"
        self.console.print(
            Text(
                f"{search.total_matches} {noun} in {search.files_with_matches} of {len(search.files)} file(s)",
                style="dim",
            )
        )
