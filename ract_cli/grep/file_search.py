"""One file searched by ``grep`` (SPEC §6): verified through the chain reader, or ``--no-verify``.

``grep_file`` is the one per-file search, used in this process and in the
worker processes of ``--jobs`` alike.

Verified mode reads through the one ``ChainReader``. A match is held back
until the *next* event has been verified (or the file ends): an event edited
with its hash recomputed is only caught at the following line, whose
``prev_hash`` no longer links to it, so the edited event itself must not have
been handed out. At the first integrity failure the file is abandoned and the
held match dropped: nothing at or after an unverified point is returned.

``--no-verify`` reads through ``iter_lines_unverified``: the same framing, a
raw-bytes prefilter (only lines holding a literal of the kind pattern are
parsed), no hashing.

Both take an optional ``progress(offset)``, called with the byte offset
reached every few MB (``PROGRESS_EVERY``): the chain reader's own hook, or,
under ``--no-verify``, the offsets of the lines the stream yields (a line the
prefilter skips is never seen, so a selective filter reports less often).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from ract_cli.dialects import ChainReader
from ract_cli.errors import ExitCode, LogIOError, lowest_nonzero
from ract_cli.findings import Finding, error
from ract_cli.grep.filters import GrepFilter
from ract_cli.grep.results import FileResult, GrepOptions, Match
from ract_cli.read.chain import not_a_log_message
from ract_cli.read.event import has_record_shape
from ract_cli.read.files import open_log
from ract_cli.read.framing import LineFramer, RawLine, iter_lines_unverified
from ract_cli.read.json_rules import LineResult

__all__ = ["PROGRESS_EVERY", "grep_file", "grep_file_packed"]

#: bytes between two calls of ``progress`` under ``--no-verify`` (the chain reader has its own, the same)
PROGRESS_EVERY = 4 << 20

_NEVER = 1 << 62  # an offset no file reaches: the report of a search without a callback

#: ``progress(offset)``: the byte offset reached in the file being grepped
Progress = Callable[[int], None]


def _no_progress(offset: int) -> None:
    pass


def grep_file(
    path: str, flt: GrepFilter, options: GrepOptions, result: FileResult, progress: Progress | None = None
) -> Iterator[Match]:
    """Stream one file's matches; its verdict lands in ``result`` once the iterator is exhausted.

    ``progress(offset)`` is called with the byte offset reached, every few MB.
    """
    return (_verified if options.verify else _unverified)(path, flt, options, result, progress)


def grep_file_packed(path: str, flt: GrepFilter, options: GrepOptions) -> bytes:
    """Grep one file; pickle its matches as (line, offset, raw) and its result."""
    import pickle  # (in a pool's worker only: not at every start-up)

    result = FileResult(path, verified=options.verify)
    found = [(m.line, m.offset, m.raw) for m in grep_file(path, flt, options, result)]
    return pickle.dumps((found, result), pickle.HIGHEST_PROTOCOL)


def grep_files_packed(paths: list[str], flt: GrepFilter, options: GrepOptions) -> list[bytes]:
    """Worker entry point: grep a task of files (``parallel.file_tasks``), each packed alone."""
    return [grep_file_packed(path, flt, options) for path in paths]


def _verified(
    path: str, flt: GrepFilter, options: GrepOptions, result: FileResult, progress: Progress | None
) -> Iterator[Match]:
    try:
        reader = ChainReader(
            path,
            schema_version=options.schema_version,
            max_line_bytes=options.max_line_bytes,
            max_findings=options.max_findings,
            dialect=options.dialect,
            wanted=flt.kind_ok if flt.kinds else None,  # the other kinds are verified in C, never built
            threads=2 if options.jobs > 1 else 1,  # --jobs on a file grepped here: C's helper thread
        )
    except LogIOError as exc:
        finding = error("IO_ERROR", exc.message, path=path)
        result.findings, result.exit_code = [finding], finding.exit_code
        return
    reader.progress = progress
    matches = flt.compile()
    for ev in reader:
        # ``trusted`` is final: the reader hands event k out only once line k+1
        # has confirmed (or failed to confirm) k's hash, so an edit with its
        # hash recomputed is never printed.
        if not ev.trusted:
            break
        if matches(ev.event):
            yield Match(path, ev.line, ev.offset, ev.raw, ev.event)
    if reader.broken_at is not None:  # also set by a malformed line, which yields no event
        result.stopped_at = reader.broken_at
    result.findings = reader.findings
    result.suppressed = reader.state.suppressed
    result.exit_code = reader.exit_code


def _problem_finding(path: str, item: RawLine) -> Finding:
    """The finding of a line that is not a JSON object (``item.event`` is None, ``item.problem`` says why)."""
    p = item.problem
    assert p is not None  # RawLine: no event exactly when there is a problem
    return Finding(p.code, p.severity, p.message, path=path, line=item.line, offset=item.offset)


def _unverified(
    path: str, flt: GrepFilter, options: GrepOptions, result: FileResult, progress: Progress | None
) -> Iterator[Match]:
    matches = flt.compile()
    cap = options.max_findings
    codes: set[int] = set()
    saw_record = False
    # without a callback the next report is never due: one comparison per line is all it costs
    report, next_report = (progress, PROGRESS_EVERY) if progress is not None else (_no_progress, _NEVER)
    try:
        for item in iter_lines_unverified(path, prefilter=flt.prefilter(), max_line_bytes=options.max_line_bytes):
            if item.offset >= next_report:
                report(item.offset)
                next_report = item.offset + PROGRESS_EVERY
            event = item.event
            if not saw_record and event is not None and ("kind" in event or "type" in event):
                saw_record = True
            if event is None:
                finding = _problem_finding(path, item)
                codes.add(int(finding.exit_code))
                if cap is None or len(result.findings) < cap:
                    result.findings.append(finding)
                else:
                    result.suppressed += 1
            elif matches(event):
                yield Match(path, item.line, item.offset, item.raw, event)
    except LogIOError as exc:
        finding = error("IO_ERROR", exc.message, path=path)
        result.findings.append(finding)
        codes.add(int(finding.exit_code))
    if not saw_record and int(ExitCode.IO) not in codes:  # (a real log: stops at its first line)
        lines = _lines_if_not_a_log(path, options.max_line_bytes)
        if lines:  # the reader's NOT_A_LOG verdict (ChainState.finish_file), not a finding per line
            result.findings = [error("NOT_A_LOG", not_a_log_message(lines), path=path)]
            result.suppressed = 0
            codes = {int(ExitCode.IO)}
    result.exit_code = lowest_nonzero(codes)


def _lines_if_not_a_log(path: str, max_line_bytes: int) -> int:
    """The number of lines of a file none of whose lines has a record's shape; 0 when one has (or unreadable).

    ``--no-verify`` skips lines its prefilter rules out, so when what it saw
    held no record this pass looks at every line, stopping at the first
    record-shaped one (a real log's first line).
    """
    unparsed = LineResult(None, None, [], parsed=False)
    try:
        with open_log(Path(path)) as f:
            framer = LineFramer(f, max_line_bytes)
            lines = 0
            for _, _, raw in framer:
                lines += 1
                if has_record_shape(raw, unparsed):
                    return 0
            return 0 if framer.read_error is not None else lines
    except LogIOError:
        return 0
