"""``ract trace replay``: re-walk a run event by event (SPEC §5)."""

from __future__ import annotations

import enum
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TextIO

import orjson
import typer
from rich.console import Console

from ract_cli.cli.app import trace_app
from ract_cli.cli.options import Dialect, DialectOption, MaxLineBytes, Quiet, SchemaVersion
from ract_cli.cli.raxol_render import journal_state_lines, journal_timeline_line
from ract_cli.cli.render import (
    above_progress,
    byte_progress,
    ci_safe,
    ci_safe_bytes,
    clean,
    finding_line,
    progress_enabled,
    silence_stdout,
    stderr_console,
    stdout_closed,
    stdout_is_terminal,
)
from ract_cli.errors import ExitCode
from ract_cli.findings import warning
from ract_cli.format.json_types import Event, Report
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.read.discovery import resolve_log_path
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES
from ract_cli.replay.controls import MAX_PACE_SLEEP_S, format_elapsed, pace_delay, parse_pace, parse_until
from ract_cli.replay.journal import JournalReplaySession, JournalReplayStep
from ract_cli.replay.result import ReplayResult
from ract_cli.replay.session import ReplayOptions, ReplaySession, replay
from ract_cli.replay.state import ReplayStep
from ract_cli.replay.summary import safe_repr, summarize


class Format(enum.StrEnum):
    text = "text"
    jsonl = "jsonl"


EPILOG = (
    "Examples: ract trace replay evals/runs/<run_id>/events.jsonl --until 40 ; "
    "ract trace replay RUN --format jsonl | jq -c .kind ; "
    "ract trace replay RUN --workspace ../repo --strict-head --check-commits"
)

# --- options --------------------------------------------------------------------

LogPath = Annotated[
    str, typer.Argument(metavar="PATH", help="The log (events.jsonl), or its run directory.", show_default=False)
]
UntilOption = Annotated[
    str | None,
    typer.Option(
        "--until",
        metavar="N|EVENT_ID",
        help="Stop at the Nth replayed event (1-based) or at the event with this 32-hex id, and print the state there.",
    ),
]
FormatOption = Annotated[
    Format,
    typer.Option("--format", help="text: the timeline; jsonl: the replayed events' original lines, byte for byte."),
]
WorkspaceOption = Annotated[
    Path,
    typer.Option(
        "--workspace",
        metavar="DIR",
        exists=True,
        file_okay=False,
        dir_okay=True,
        help="Git workspace checked against the run's initial snapshot (default: the current directory).",
    ),
]
StrictHead = Annotated[
    bool,
    typer.Option("--strict-head", help="A workspace HEAD that differs from the run's initial snapshot exits 6."),
]
CheckCommits = Annotated[
    bool,
    typer.Option(
        "--check-commits",
        help="Check that every step.committed's parent_snapshot_after is a commit of the workspace repository "
        "descending from its parent_snapshot_before (failures exit 6).",
    ),
]
PaceOption = Annotated[
    str | None,
    typer.Option(
        "--pace",
        metavar="realtime|Nx",
        help=f"Replay with the recorded timing, N times faster (e.g. 10x); each pause is capped at "
        f"{MAX_PACE_SLEEP_S:g}s.",
    ),
]

Session = ReplaySession | JournalReplaySession
Step = ReplayStep | JournalReplayStep


@trace_app.command("replay", epilog=EPILOG)
def replay_command(
    path: LogPath,
    until: UntilOption = None,
    format: FormatOption = Format.text,
    workspace: WorkspaceOption = Path("."),
    strict_head: StrictHead = False,
    check_commits: CheckCommits = False,
    pace: PaceOption = None,
    schema_version: SchemaVersion = LATEST_SCHEMA_VERSION,
    max_line_bytes: MaxLineBytes = DEFAULT_MAX_LINE_BYTES,
    dialect: DialectOption = Dialect.auto,
    quiet: Quiet = False,
) -> None:
    """Replay a run: verify while walking, print its timeline, or the state at --until.

    The timeline goes to stdout, one line per event: index, time since the
    start, kind and a compact payload summary, indented under its step.
    Warnings (workspace HEAD, dirty tree) and findings go to stderr. A log
    whose chain breaks is replayed up to the break only, and exits 1. -q prints
    nothing (the run is still walked and checked; --pace does not sleep).

    Example: ract trace replay evals/runs/<run_id>/events.jsonl --until 40
    """
    err = stderr_console(quiet=quiet)
    options = ReplayOptions(
        schema_version=schema_version,
        max_line_bytes=max_line_bytes,
        dialect=dialect.value,
        until=parse_until(until) if until is not None else None,
        workspace=str(workspace),
        strict_head=strict_head,
        check_commits=check_commits,
    )
    factor = parse_pace(pace) if pace is not None else None
    # the bar (stderr, a terminal, a large log) follows the walk and the verifying read of the rest
    with byte_progress("replaying", enabled=progress_enabled(quiet=quiet, json=format is Format.jsonl)) as progress:
        session = replay(resolve_log_path(path), options, progress=progress)

        journal = not isinstance(session, ReplaySession)  # a Raxol agent journal (SPEC §8)
        shown = _say_precondition(err, session, journal)
        # -q never touches stdout; without -q, a stdout closed at start (`>&-`) is said once and the run
        # is still walked for the verdict, as when the reader of stdout goes away
        silent = quiet
        if not quiet and stdout_closed():
            err.print("ract trace replay: stdout is closed: the replay was not written", markup=False)
            silent = True
        result = _walk(session, journal, format is Format.jsonl, silent, factor)
    _say_verdict(err, result, shown, until)
    raise typer.Exit(int(result.exit_code))


def _say_precondition(err: Console, session: Session, journal: bool) -> set[int]:
    """The workspace's findings (or why a journal has none) on stderr; the ids of the findings said."""
    shown: set[int] = set()
    if session.workspace is not None:
        for f in session.workspace.findings:
            err.print(finding_line(f, severity=True), markup=False)
            shown.add(id(f))
    elif journal:
        unchecked = warning(
            "PRECONDITION_UNCHECKED",
            "determinism precondition cannot be checked: a Raxol agent journal records no repository snapshot",
            path=str(session.path),
        )
        err.print(finding_line(unchecked, severity=True), markup=False)
    return shown


def _walk(session: Session, journal: bool, jsonl: bool, silent: bool, factor: float | None) -> ReplayResult:
    """Walk the replay, printing (and pacing) each step unless ``silent``; return its verdict."""
    line_of, state_of = _renderers(journal)
    # a terminal is not a data sink: --format jsonl escapes each line there (bidi overrides, C1 controls)
    terminal = not silent and stdout_is_terminal()
    out = sys.stdout
    prev_ts: int | None = None
    try:
        for step in session.steps():
            if silent:
                continue  # walked for the verdict only: nothing to print, nothing to pace
            ts = _event_ns(step.event.event)
            if factor is not None and ts is not None:
                time.sleep(pace_delay(prev_ts, ts, factor))
                prev_ts = ts
            if terminal:  # a progress bar on this terminal too: the line goes above it
                with above_progress():
                    _show(out, step, jsonl, terminal, line_of)
                    out.flush()
            else:
                _show(out, step, jsonl, terminal, line_of)
            if factor is not None:
                out.flush()
        result = session.finish()
        if not jsonl and not silent:
            with above_progress():
                _show_end(out, result, state_of)
                out.flush()
        if not silent:
            out.flush()
    except BrokenPipeError:
        # The reader of stdout went away (e.g. `| head`): stop writing, keep the verdict.
        silence_stdout()
        result = session.finish()
    return result


def _show(out: TextIO, step: Step, jsonl: bool, terminal: bool, line_of: Callable[[Any], str]) -> None:
    """One replayed event on stdout: its original line (jsonl), escaped on a terminal, or its timeline line."""
    if jsonl and terminal:
        out.write(ci_safe(clean(step.event.raw.decode("utf-8", "replace").rstrip("\r\n"))) + "\n")
    elif jsonl:
        # The original bytes. Ephemeral records never reach here: a Raxol journal's session
        # skips item_delta; for RACT logs the hook is ReplayOptions.exclude (is_ephemeral).
        _write_raw(out, ci_safe_bytes(step.event.raw, json=True))
    else:
        out.write(ci_safe(clean(line_of(step))) + "\n")


def _show_end(out: TextIO, result: ReplayResult, state_of: Callable[[Report], list[str]]) -> None:
    """After the timeline: the chain break, and the state block at ``--until``."""
    if result.stop == "break":
        out.write(
            ci_safe(clean(f"!! {break_text(result)}: replay stopped; nothing after this point is trustworthy")) + "\n"
        )
    if result.until_reached:
        out.write("\n".join(ci_safe(clean(line)) for line in state_of(result.state)) + "\n")


def _say_verdict(err: Console, result: ReplayResult, shown: set[int], until: str | None) -> None:
    """The findings not said yet, how many were not kept, and the verdict line, on stderr."""
    for f in result.findings:
        if id(f) not in shown:
            err.print(finding_line(f, severity=True), markup=False)
    suppressed = result.suppressed
    if suppressed:
        err.print(
            clean(f"{result.path}: {suppressed} more finding(s) not shown (ract trace verify lists them all)"),
            markup=False,
        )
    err.print(clean(verdict_line(result, until)), markup=False)


def _renderers(journal: bool) -> tuple[Callable[[Any], str], Callable[[Report], list[str]]]:
    if journal:
        return journal_timeline_line, journal_state_lines
    return timeline_line, state_lines


def _event_ns(event: Event) -> int | None:
    """An event's time in ns: RACT ``timestamp_ns``, or a journal record's ``at_ms`` when it has one."""
    ts = event.get("timestamp_ns")
    if type(ts) is int:
        return ts
    at_ms = event.get("at_ms")
    return at_ms * 1_000_000 if type(at_ms) is int else None


def _write_raw(out: TextIO, raw: bytes) -> None:
    buffer = getattr(out, "buffer", None)
    if buffer is not None:
        out.flush()
        buffer.write(raw)
    else:  # a text-only stream (stdout redirected in-process): the line is valid UTF-8
        out.write(raw.decode("utf-8"))


# --- rendering (pure functions: tested and used by the golden files) -------


def timeline_line(step: ReplayStep) -> str:
    """``index  +elapsed  [indent]kind  summary`` for one replayed event (raw: ``clean`` it)."""
    event = step.event.event
    depth = step.depth
    tag = ""
    if depth:
        if event["step_id"] != step.state.current_step_id:  # interleaved steps, or an event of a step never started
            tag = f"[step {event['step_id'][:12]}] "
    summary = summarize(event)
    text = f"{step.index:>6}  {format_elapsed(step.state.elapsed_ns):>10}  {'  ' * depth}{tag}{event['kind']}"
    return f"{text}  {summary}" if summary else text


def _plain(value: Any) -> str:
    if type(value) is str:
        return value if value and " " not in value and '"' not in value else _json(value)
    return _json(value)


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except Exception:
        return safe_repr(value)


def state_lines(state: Report) -> list[str]:
    """The state block printed at ``--until`` (raw: ``clean`` each line)."""
    lines = [
        f"== state after event #{state['index']} (line {state['line']}, {format_elapsed(state['elapsed_ns'])}): "
        f"{state['kind']} {state['event_id']}",
        f"run: {state['run']}",
    ]

    def section(title: str, items: list[str]) -> None:
        lines.append(f"{title} ({len(items)}):" if items else f"{title}: none")
        lines.extend(f"  {item}" for item in items)

    section(
        "open steps",
        [
            f"step {h['step_id']}  line {h['line']}  snapshot {_plain(h['parent_snapshot'])}  branch {_plain(h['branch'])}"
            f"  id {h['event_id']}"
            for h in state["open_steps"]
        ],
    )
    section(
        "tool calls in flight",
        [
            f"{_plain(h['tool'])}  step {h['step_id']}  line {h['line']}  id {h['event_id']}"
            for h in state["tool_calls"]
        ],
    )
    section(
        "unanswered prompts",
        [
            f"{_plain(h['provider'])}  intent {_plain(h['intent_id'])}  step {h['step_id']}  line {h['line']}"
            f"  id {h['event_id']}"
            for h in state["prompts"]
        ],
    )
    section(
        "pending handshakes",
        [
            f"{_plain(h['milestone_id'])}  {_plain(h['description'])}  line {h['line']}  id {h['event_id']}"
            for h in state["handshakes"]
        ],
    )
    assumptions = state["assumptions"]
    section("live assumptions", [f"{a['assumption_id']}  {a['status']}  line {a['line']}" for a in assumptions["live"]])
    section(
        "violated assumptions",
        [f"{a['assumption_id']}  root {_plain(a['root_id'])}  line {a['line']}" for a in assumptions["violated"]],
    )
    section(
        "latest predicate verdicts",
        [
            f"{p['predicate_id']}  {'ok' if p['ok'] is True else 'FAILED' if p['ok'] is False else _plain(p['ok'])}"
            f"  {'required' if p['required'] is True else 'optional'}  line {p['line']}  reason {_plain(p['reason'])}"
            for p in state["predicates"]
        ],
    )
    return lines


def break_text(result: ReplayResult) -> str:
    """Where trust ends, truthfully: ``chain broken at line L (CODE)`` when the failure is on line L, or
    ``chain not verified from line L (CODE at line L+1)`` when it is on the next line (nothing confirms
    line L's hash), as grep says "not verified from here"."""
    start = result.broken_at
    failures = [
        f
        for f in result.findings
        if f.exit_code == ExitCode.TAMPERED and f.line is not None and start is not None and f.line >= start
    ]
    first = min(failures, key=lambda f: f.line or 0, default=None)
    if first is None or first.line == start:
        return f"chain broken at line {start}" + (f" ({first.code})" if first is not None else "")
    return f"chain not verified from line {start} ({first.code} at line {first.line})"


def verdict_line(result: ReplayResult, until: str | None) -> str:
    code = result.exit_code
    text = f"replayed {result.events} event(s) of {result.path}"
    if result.stop == "break":
        text += f"; {break_text(result)}: replay stopped there, nothing after it is trustworthy"
    if result.until_reached is False:
        where = "before the chain break" if result.stop == "break" else "in the log"
        text += f"; --until {until}: no such event {where}"
    return f"{text}; exit {int(code)} ({ExitCode(code).name})"
