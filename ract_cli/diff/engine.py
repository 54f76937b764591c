"""``diff_logs``: read two logs through the one reader, align them, say where they part (SPEC §15).

Both logs are read with ``ChainReader`` and verified as every command
verifies them. Only trusted events are compared (those before a log's first
integrity failure); a log that does not verify gives its usual exit code,
and the result says how much of it was compared.

Memory is bounded by the number of events, not their size: a first pass
keeps, per compared event, a 64-bit key, its line, offset, kind and resolved
references (plus one entry per event id and per generated id, for resolving
references); no payload is kept. The alignment is bounded as ``align`` says.
A second pass reads both logs again, in step, only as far as the last event
whose fields are reported (the first divergence and up to ``max_entries``
changed events), checking that every event it passes has the key it had in
the first pass (a log that changed in between is an IO error, exit 5).
``progress(done_bytes, total_bytes)``, when given, follows the first pass
over both logs (A, then B: the bytes of both are the total).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ract_cli.dialects import ChainReader
from ract_cli.diff.align import align
from ract_cli.diff.fields import _Cursor, _Fields
from ract_cli.diff.normalise import Normalised
from ract_cli.diff.references import Labels
from ract_cli.diff.result import (
    CHANGED,
    DiffResult,
    Divergence,
    Entry,
    EventAt,
)
from ract_cli.diff.rules import FieldPolicy
from ract_cli.diff.sides import DEFAULT_MAX_ENTRIES, DiffOptions, _Interned, _open, _Side, _Walk
from ract_cli.errors import ExitCode, UsageError, lowest_nonzero
from ract_cli.read.discovery import resolve_log_path
from ract_cli.read.files import log_size

__all__ = ["DEFAULT_MAX_ENTRIES", "DiffOptions", "diff_logs"]


# --- the whole diff ----------------------------------------------------------------


def diff_logs(
    path_a: str | os.PathLike[str],
    path_b: str | os.PathLike[str],
    options: DiffOptions | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> DiffResult:
    """Compare two runs event by event (SPEC §15); see docs/diff.md.

    Raises ``UsageError`` for options the normalisation table refuses, or for
    a RACT log compared with a Raxol journal; a log that cannot be read is
    an ``IO_ERROR`` finding of that side (exit 5), not an exception.
    ``progress(done_bytes, total_bytes)`` is called as both logs are read, every few MB.
    """
    options = options or DiffOptions()
    file_a, file_b = resolve_log_path(path_a), resolve_log_path(path_b)  # a run directory is its events.jsonl
    reader_a = _open(file_a, str(file_a), options, options.dialect)
    reader_b = _open(file_b, str(file_b), options, options.dialect)
    if reader_a.dialect != reader_b.dialect:
        raise UsageError(
            f"cannot diff a {reader_a.dialect} log against a {reader_b.dialect} log "
            f"({reader_a.display_path} vs {reader_b.display_path}); --dialect forces one reading of both"
        )
    policy = FieldPolicy(
        reader_a.dialect, ignore=options.ignore, compare=options.compare, ignore_snapshots=options.ignore_snapshots
    )
    interned, labels = _Interned(), Labels()
    a, b = _Side(reader_a), _Side(reader_b)
    if progress is not None:
        _follow(progress, reader_a, reader_b, log_size(file_a), log_size(file_b))
    a.read(policy, interned, labels)
    b.read(policy, interned, labels)
    ra, rb = a.report(), b.report()
    verification = lowest_nonzero([ra.exit_code, rb.exit_code])
    result = DiffResult(a=ra, b=rb, exit_code=verification, compared=False, options=options.to_dict())
    if ExitCode.IO in (ra.exit_code, rb.exit_code):
        return result  # a log that could not be read has nothing to align

    alignment = align(a.keys, b.keys, max_edits=options.max_edits, max_work=options.max_work, window=options.window)
    walk = _Walk(a, b, interned, labels, options.max_entries)
    walk.plan(alignment.opcodes)
    walk.run()
    result.compared = True
    result.alignment = {
        "method": alignment.method,
        "exact": alignment.exact,
        "edits": alignment.edits,
        "max_edits": options.max_edits,
    }
    result.equal = walk.equal
    result.counts = walk.counts
    result.by_kind = walk.by_kind
    result.entries_not_shown = walk.not_kept
    if walk.first is not None:
        _details(result, walk, a, b, options, policy)
    if result.exit_code == ExitCode.OK and result.different:
        result.exit_code = ExitCode.DIFFERENT
    return result


def _follow(
    progress: Callable[[int, int], None], reader_a: ChainReader, reader_b: ChainReader, size_a: int, size_b: int
) -> None:
    """The two readers' own progress (their byte offsets) as progress over both logs: A, then B."""
    total = size_a + size_b
    reader_a.progress = lambda offset: progress(min(offset, total), total)
    reader_b.progress = lambda offset: progress(min(size_a + offset, total), total)


def _details(result: DiffResult, walk: _Walk, a: _Side, b: _Side, options: DiffOptions, policy: FieldPolicy) -> None:
    """Pass two: the facing events of the first divergence, and the fields of every kept changed entry."""
    first = walk.first
    assert first is not None
    fields = _Fields(a, b, walk, policy.dialect == "raxol")
    names = walk.interned.kind_names
    cur_a, cur_b = _Cursor(a, options, policy), _Cursor(b, options, policy)
    try:
        at_a = cur_a.at(first.pos_a) if first.pos_a < len(a) else None
        at_b = cur_b.at(first.pos_b) if first.pos_b < len(b) else None
        aligned = first.op == CHANGED  # the facing events are a pair (else: one of them is unaligned)
        facing = (
            fields.diff(at_a[0].event, at_a[1], at_b[0].event, at_b[1], first.bad_refs if aligned else None)
            if at_a and at_b
            else []
        )
        result.first = Divergence(
            op=first.op,
            a_index=first.pos_a + 1,
            b_index=first.pos_b + 1,
            a=_event_at(at_a, first.pos_a) if at_a else None,
            b=_event_at(at_b, first.pos_b) if at_b else None,
            fields=facing,
        )
        for raw in walk.kept:
            entry = Entry(
                op=raw.op,
                kind=names[raw.kind],
                a_index=None if raw.i is None else raw.i + 1,
                a_line=None if raw.i is None else a.lines[raw.i],
                b_index=None if raw.j is None else raw.j + 1,
                b_line=None if raw.j is None else b.lines[raw.j],
            )
            if raw.op == CHANGED and raw.i is not None and raw.j is not None:
                if raw is first:
                    entry.fields = facing
                else:
                    ea, na = cur_a.at(raw.i)
                    eb, nb = cur_b.at(raw.j)
                    entry.fields = fields.diff(ea.event, na, eb.event, nb, raw.bad_refs)
            result.entries.append(entry)
    finally:
        cur_a.close()
        cur_b.close()


def _event_at(at: tuple[Any, Normalised], index: int) -> EventAt:
    ev, n = at
    return EventAt(index=index + 1, line=ev.line, offset=ev.offset, kind=n.kind, event=ev.event)
