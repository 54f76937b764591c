"""``ract trace diff A B``: where two runs part (SPEC §15, docs/diff.md)."""

from __future__ import annotations

import enum
import sys
from typing import Annotated, Any

import typer

from ract_cli.cli.app import trace_app
from ract_cli.cli.options import DEFAULTS, Dialect, DialectOption, MaxLineBytes, Quiet, SchemaVersion
from ract_cli.cli.render import (
    byte_progress,
    ci_safe,
    clean,
    dumps_json,
    finding_line,
    flush_stdout,
    progress_enabled,
    silence_stdout,
    stderr_console,
    stdout_closed,
    stdout_is_terminal,
)
from ract_cli.diff import DiffOptions, DiffResult, FieldDiff, diff_logs
from ract_cli.diff.align import DEFAULT_MAX_EDITS
from ract_cli.errors import ExitCode
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION

#: text output: characters of one value, of one event, and entries listed (JSON has them all)
VALUE_CHARS = 120
EVENT_CHARS = 600
TEXT_ENTRIES = 50


class Format(enum.StrEnum):
    text = "text"
    json = "json"


EPILOG = (
    "Examples: ract trace diff evals/runs/RUN_A evals/runs/RUN_B ; "
    "ract trace diff A B --format json | jq .first_divergence ; "
    "ract trace diff A B --ignore-snapshots --ignore preview ; "
    "ract trace diff A B -q && echo faithful. "
    "Exit 0: equivalent; 8: they diverge; 1-5: a log does not verify (the lowest code wins). See docs/diff.md."
)


FormatOption = Annotated[
    Format,
    typer.Option(
        "--format",
        case_sensitive=False,
        help="text: the first divergence and a summary; json: the documented report (docs/diff.md).",
    ),
]


IgnoreOption = Annotated[
    list[str] | None,
    typer.Option(
        "--ignore",
        metavar="FIELD",
        help="Do not compare this field (a payload key, a dotted path into a payload such as "
        "usage.input_tokens, or an envelope key). Repeatable.",
        show_default=False,
    ),
]


CompareOption = Annotated[
    list[str] | None,
    typer.Option(
        "--compare",
        metavar="FIELD",
        help="Compare a field the normalisation table leaves out (e.g. timestamp_ns), or a reference "
        "(e.g. step_id) by its text. Repeatable.",
        show_default=False,
    ),
]


IgnoreSnapshotsOption = Annotated[
    bool,
    typer.Option(
        "--ignore-snapshots",
        help="Do not compare workspace snapshots (parent_snapshot, parent_snapshot_before/_after): for a "
        "re-run in another clone.",
    ),
]


MaxEditsOption = Annotated[
    int,
    typer.Option(
        "--max-edits",
        min=1,
        max=1_000_000,
        metavar="N",
        help="Bound of the exact alignment (insertions + deletions); past it the rest is aligned greedily "
        "and the report says so.",
    ),
]


LogA = Annotated[
    str, typer.Argument(metavar="A", help="The first log (events.jsonl), or its run directory.", show_default=False)
]


LogB = Annotated[
    str, typer.Argument(metavar="B", help="The log compared with A, or its run directory.", show_default=False)
]


@trace_app.command("diff", epilog=EPILOG)
def diff_command(
    path_a: LogA,
    path_b: LogB,
    format: FormatOption = Format.text,
    ignore: IgnoreOption = None,
    compare: CompareOption = None,
    ignore_snapshots: IgnoreSnapshotsOption = False,
    max_edits: MaxEditsOption = DEFAULT_MAX_EDITS,
    schema_version: SchemaVersion = LATEST_SCHEMA_VERSION,
    max_line_bytes: MaxLineBytes = DEFAULTS["max_line_bytes"],
    dialect: DialectOption = Dialect.auto,
    quiet: Quiet = False,
) -> None:
    """Compare two runs event by event and say where they first diverge.

    Both logs are verified as `ract trace verify` does; only trusted events
    are compared. Ids, run ids, timestamps, hashes, durations and latencies
    are not compared; parent_id, step_id and other ids of the run are compared
    as what they point to. The report goes to stdout: the first divergence
    (index and line in each log, both events, the fields that differ), then
    counts of changed / inserted (in B only) / deleted (in A only) events by
    kind. Findings and the verdict go to stderr. -q prints nothing.

    Example: ract trace diff evals/runs/RUN_A/events.jsonl evals/runs/RUN_B/events.jsonl
    """
    options = DiffOptions(
        schema_version=schema_version,
        max_line_bytes=max_line_bytes,
        dialect=dialect.value,
        ignore=tuple(ignore or ()),
        compare=tuple(compare or ()),
        ignore_snapshots=ignore_snapshots,
        max_edits=max_edits,
    )
    with byte_progress("comparing", enabled=progress_enabled(quiet=quiet, json=format is Format.json)) as progress:
        result = diff_logs(path_a, path_b, options, progress=progress)
    if not quiet:
        err = stderr_console()
        for side in ("A", "B"):
            report = result.a if side == "A" else result.b
            for f in report.findings:
                err.print(finding_line(f, severity=True, indent=f"{side} "), markup=False)
            if report.suppressed:
                err.print(
                    clean(
                        f"{side} {report.path}: {report.suppressed} more finding(s) not shown (ract trace verify "
                        "lists them all)"
                    ),
                    markup=False,
                )
        _write_report(result, format, err)
        err.print(clean(verdict_line(result)), markup=False)
    raise typer.Exit(int(result.exit_code))


def _write_report(result: DiffResult, fmt: Format, err: Any) -> None:
    if stdout_closed():  # started with `>&-`: the verdict is still the exit code
        err.print("ract trace diff: stdout is closed: the report was not written", markup=False)
        return
    text = dumps_json(result.to_dict(), indent=True) if fmt is Format.json else "\n".join(report_lines(result))
    if fmt is Format.json and stdout_is_terminal():
        # a terminal is not a data sink: bidi overrides and C1 controls in a log string are shown escaped
        text = "\n".join(clean(line) for line in text.split("\n"))
    try:
        sys.stdout.write(ci_safe(text, json=fmt is Format.json) + "\n")
        flush_stdout()
    except BrokenPipeError:  # the reader went away (`| head`): the exit code is still the verdict
        silence_stdout()


# --- text rendering (pure functions: every log-derived string goes through clean) -----------------


def _short(value: Any, limit: int = VALUE_CHARS) -> str:
    text = dumps_json(value)
    return clean(text if len(text) <= limit else text[: limit - 3] + "...")


def _side_line(name: str, result: DiffResult) -> str:
    side = result.a if name == "A" else result.b
    parts = [side.dialect]
    if side.run_id:
        parts.append(f"run {side.run_id}")
    parts.append(f"{side.events} event(s) compared")
    if side.excluded:
        parts.append(f"{side.excluded} item_delta record(s) left out")
    text = f"{name}: {side.path}  ({', '.join(parts)})"
    if side.exit_code == ExitCode.IO:
        text += f"  COULD NOT BE READ: exit {int(side.exit_code)} ({side.exit_code.name})"
    elif not side.verified:
        text += f"  DOES NOT VERIFY: exit {int(side.exit_code)} ({side.exit_code.name})"
        if side.untrusted_from_line is not None:
            text += f"; nothing from line {side.untrusted_from_line} on is compared"
    return clean(text)


def field_line(f: FieldDiff) -> str:
    """``payload ok: A false; B true`` (a reference also says where each side points)."""

    def side(name: str, present: bool, value: Any, target: Any) -> str:
        if not present:
            return f"{name} (absent)"
        text = f"{name} {_short(value)}"
        return f"{text} -> {clean(target.describe())}" if target is not None else text

    return (
        f"{f.where} {clean(f.field)}: {side('A', f.a_present, f.a, f.a_target)}; "
        f"{side('B', f.b_present, f.b, f.b_target)}"
    )


def _where(name: str, index: int | None, line: int | None) -> str:
    return f"{name} #{index} (line {line})" if index is not None else f"{name} -"


def report_lines(result: DiffResult) -> list[str]:
    """The text report (already escaped)."""
    lines = [_side_line("A", result), _side_line("B", result)]
    if not result.compared:
        lines.append("not compared: a log could not be read")
        return lines
    if not result.verified:
        lines.append("(a log does not verify: what follows compares its trusted events only)")
    first = result.first
    if first is None:
        lines.append(f"no divergence: {result.equal} event(s) compared, all equivalent")
        return lines
    a_at = f"A #{first.a_index} (line {first.a.line})" if first.a else f"A #{first.a_index} (end of log)"
    b_at = f"B #{first.b_index} (line {first.b.line})" if first.b else f"B #{first.b_index} (end of log)"
    own = first.b if first.op == "inserted" else first.a
    kind = clean(own.kind) if own is not None else "-"
    what = {"changed": "changed", "inserted": "only in B", "deleted": "only in A"}[first.op]
    lines.append(f"first divergence at {a_at}, {b_at}: {kind} {what}")
    lines.extend(f"  {field_line(f)}" for f in first.fields)
    for name, at in (("A", first.a), ("B", first.b)):
        if at is None:
            lines.append(f"  {name}  (no event: the log ends here)")
        else:
            lines.append(f"  {name}  line {at.line}  {clean(at.kind)}  {_short(at.event, EVENT_CHARS)}")
    counts = result.counts
    alignment = result.alignment or {}
    lines.append(
        f"summary: {result.equal} equal, {counts['changed']} changed, {counts['inserted']} inserted (only in B), "
        f"{counts['deleted']} deleted (only in A)"
        + ("" if alignment.get("exact", True) else "  [alignment bounded: the tail is aligned greedily]")
    )
    rows = [(k, v) for k, v in sorted(result.by_kind.items()) if any(v.values())]
    if rows:
        width = max(len(clean(k)) for k, _ in rows)
        lines.append(f"  {'kind':<{width}}  changed  inserted  deleted")
        for kind, v in rows:
            lines.append(f"  {clean(kind):<{width}}  {v['changed']:>7}  {v['inserted']:>8}  {v['deleted']:>7}")
    shown = result.entries[:TEXT_ENTRIES]
    if shown:
        lines.append("events that differ:")
    for e in shown:
        mark = {"changed": "~", "inserted": "+", "deleted": "-"}[e.op]
        text = f"  {mark} {_where('A', e.a_index, e.a_line):<22} {_where('B', e.b_index, e.b_line):<22} {clean(e.kind)}"
        if e.fields:
            text += "  " + ", ".join(clean(f.field) for f in e.fields)
        lines.append(text)
    more = len(result.entries) - len(shown) + result.entries_not_shown
    if more:
        lines.append(f"  ... {more} more (--format json lists the first {len(result.entries)})")
    return lines


def verdict_line(result: DiffResult) -> str:
    """The last line on stderr: the verdict and the exit code (raw: ``clean`` it)."""
    code = result.exit_code
    tail = f"exit {int(code)} ({ExitCode(code).name})"
    if not result.verified:
        bad = [
            f"{name} does not verify (exit {int(s.exit_code)} {s.exit_code.name})"
            for name, s in (("A", result.a), ("B", result.b))
            if not s.verified
        ]
        return f"unverified: {'; '.join(bad)}; {tail}"
    first = result.first
    if first is None:
        return f"equivalent: {result.a.events} and {result.b.events} event(s), no divergence; {tail}"
    a_line = first.a.line if first.a else "end"
    b_line = first.b.line if first.b else "end"
    own = first.b if first.op == "inserted" else first.a
    kind = own.kind if own is not None else "-"
    names = ", ".join(f.field for f in first.fields[:5])
    c = result.counts
    return (
        f"different: first divergence at A line {a_line}, B line {b_line} ({kind} {first.op}"
        f"{': ' + names if names else ''}); {c['changed']} changed, {c['inserted']} inserted, "
        f"{c['deleted']} deleted; {tail}"
    )
