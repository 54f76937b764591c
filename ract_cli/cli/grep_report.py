"""``ract trace grep``'s stderr and its streaming loop, without typer: the CLI (``cli/grep.py``) and the
quick path of ``cli/launch.py`` run the same loop and say the same things.

rich comes in only once something is to be said on a terminal's stderr (``Stderr``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ract_cli.cli.grep_output import Sink, Stop
from ract_cli.cli.render import (
    BROKEN_PIPE_EXIT,
    clean,
    finding_line,
    silence_stdout,
    stderr_console,
    stderr_is_terminal,
    write_stderr_lines,
)
from ract_cli.findings import ERROR
from ract_cli.grep.filters import unknown_kind_patterns
from ract_cli.grep.results import FileResult, Match
from ract_cli.grep.search import GrepSearch

if TYPE_CHECKING:
    from rich.console import Console

SHOWN_FINDINGS_PER_FILE = 10


class Stderr:
    """What grep says on stderr: on a terminal through rich's console, made on the first line said (rich
    costs ~40 ms to import); into a pipe or a file as the same bytes without rich
    (``render.write_stderr_lines``): ``--no-verify`` always says what it gives up (start-up, issue 14)."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self._console: Console | None = None

    def print(self, text: str) -> None:
        """One line, every log-derived part of it ``clean``ed."""
        if self.quiet:
            return
        if not stderr_is_terminal():
            write_stderr_lines([text])
            return
        if self._console is None:
            self._console = stderr_console()
        self._console.print(text, markup=False)


def warn(err: Stderr, kinds: Sequence[str], schema_version: int, no_verify: bool) -> None:
    """Before the search: kind patterns that match no RACT kind, and what --no-verify gives up."""
    for pattern in unknown_kind_patterns(kinds, schema_version):
        err.print(
            f"ract trace grep: warning: --kind {clean(pattern)!r} matches no RACT event kind "
            f"(schema version {schema_version})"
        )
    if no_verify:
        err.print(
            "ract trace grep: --no-verify: hash chains are NOT checked; matches are printed without a "
            "verdict on their logs"
        )


def stream(err: Stderr, search: GrepSearch, sink: Sink) -> int:
    """Stream the search into ``sink`` (findings to stderr, file by file); its exit code
    (``BROKEN_PIPE_EXIT`` when stdout went away)."""
    try:
        for item in search:
            if isinstance(item, Match):
                sink.match(item)
            else:
                report(err, item)
                sink.file_done(item)
        sink.finish(search)
    except (Stop, BrokenPipeError):  # BrokenPipeError: from the table's console (render.stdout_console)
        silence_stdout()
        return BROKEN_PIPE_EXIT
    finally:
        search.close()  # with --jobs: stop the workers now, not at interpreter exit
    return int(search.exit_code)


def report(err: Stderr, result: FileResult) -> None:
    """Say on stderr what went wrong in one file (errors, the stop, a repaired log)."""
    if not result.is_file:
        for f in result.findings:
            err.print(f"ract trace grep: {clean(f.message)}")
        return
    errors = [f for f in result.findings if f.severity == ERROR]
    for f in errors[:SHOWN_FINDINGS_PER_FILE]:
        err.print(finding_line(f))
    if len(errors) > SHOWN_FINDINGS_PER_FILE:
        err.print(f"{clean(result.path)}: {len(errors) - SHOWN_FINDINGS_PER_FILE} more error(s) not shown")
    if result.suppressed:
        # past the reader's cap, findings are only counted: their severity is not known here
        err.print(
            f"{clean(result.path)}: {result.suppressed} further finding(s), errors or warnings, past the "
            f"first {len(result.findings)} not kept (the exit code counts them)"
        )
    for f in result.findings:
        if f.code == "REPAIRED":
            err.print(finding_line(f))
    if result.stopped_at is not None:
        first_hidden = result.stopped_at
        err.print(
            f"{clean(result.path)}:{result.stopped_at}: chain not verified from here: grep stopped this file; "
            f"nothing at or after line {first_hidden} was printed"
        )
