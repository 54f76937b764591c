"""``ract trace replay``: re-walk a run event by event (SPEC §5)."""

from __future__ import annotations

import enum
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from ract_cli.cli.app import trace_app
from ract_cli.cli.options import Dialect, DialectOption, MaxLineBytes, Quiet, SchemaVersion
from ract_cli.cli.raxol_render import journal_state_lines, journal_timeline_line
from ract_cli.cli.render import (
    clean,
    explain_failure,
    silence_stdout,
    stderr_console,
    stdout_closed,
    stdout_is_terminal,
)
from ract_cli.errors import ExitCode, RactError
from ract_cli.findings import Finding, warning
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.read.line import DEFAULT_MAX_LINE_BYTES
from ract_cli.replay.result import ReplayResult
from ract_cli.replay.session import (
    MAX_PACE_SLEEP_S,
    ReplayOptions,
    ReplaySession,
    ReplayStep,
    format_elapsed,
    pace_delay,
    parse_pace,
    parse_until,
    replay,
    resolve_log_path,
    summarize,
)


class Format(str, enum.Enum):
    text = "text"
    jsonl = "jsonl"


EPILOG = (
    "Examples: ract trace replay evals/runs/<run_id>/events.jsonl --until 40 ; "
    "ract trace replay RUN --format jsonl | jq -c .kind ; "
    "ract trace replay RUN --workspace ../repo --strict-head --check-commits"
)


@trace_app.command("replay", epilog=EPILOG)
def replay_command(
    path: Annotated[
        str, typer.Argument(metavar="PATH", help="The log (events.jsonl), or its run directory.", show_default=False)
    ],
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            metavar="N|EVENT_ID",
            help="Stop at the Nth replayed event (1-based) or at the event with this 32-hex id, and print the state "
            "there.",
        ),
    ] = None,
    format: Annotated[
        Format,
        typer.Option("--format", help="text: the timeline; jsonl: the replayed events' original lines, byte for byte."),
    ] = Format.text,
    workspace: Annotated[
        Path,
        typer.Option(
            "--workspace",
            metavar="DIR",
            exists=True,
            file_okay=False,
            dir_okay=True,
            help="Git workspace checked against the run's initial snapshot (default: the current directory).",
        ),
    ] = Path("."),
    strict_head: Annotated[
        bool,
        typer.Option("--strict-head", help="A workspace HEAD that differs from the run's initial snapshot exits 6."),
    ] = False,
    check_commits: Annotated[
        bool,
        typer.Option(
            "--check-commits",
            help="Check that every step.committed's parent_snapshot_after is a commit of the workspace repository "
            "descending from its parent_snapshot_before (failures exit 6).",
        ),
    ] = False,
    pace: Annotated[
        str | None,
        typer.Option(
            "--pace",
            metavar="realtime|Nx",
            help=f"Replay with the recorded timing, N times faster (e.g. 10x); each pause is capped at "
            f"{MAX_PACE_SLEEP_S:g}s.",
        ),
    ] = None,
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
    try:
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
        session = replay(resolve_log_path(path), options)
    except RactError as exc:
        raise typer.Exit(explain_failure("replay", exc, quiet=quiet)) from None

    journal = not isinstance(session, ReplaySession)  # a Raxol agent journal (SPEC §8)
    shown: set[int] = set()
    if session.workspace is not None:
        for f in session.workspace.findings:
            err.print(_finding_text(f), markup=False)
            shown.add(id(f))
    elif journal:
        err.print(
            _finding_text(
                warning(
                    "PRECONDITION_UNCHECKED",
                    "determinism precondition cannot be checked: a Raxol agent journal records no repository snapshot",
                    path=str(session.path),
                )
            ),
            markup=False,
        )
    line_of, state_of = _renderers(journal)

    jsonl = format is Format.jsonl
    # -q never touches stdout; without -q, a stdout closed at start (`>&-`) is said once and the run
    # is still walked for the verdict, as when the reader of stdout goes away
    silent = quiet
    if not quiet and stdout_closed():
        err.print("ract trace replay: stdout is closed: the replay was not written", markup=False)
        silent = True
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
            if jsonl and terminal:
                out.write(clean(step.event.raw.decode("utf-8", "replace").rstrip("\r\n")) + "\n")
            elif jsonl:
                # The original bytes. Ephemeral records never reach here: a Raxol journal's session
                # skips item_delta; for RACT logs the hook is ReplayOptions.exclude (is_ephemeral).
                _write_raw(out, step.event.raw)
            else:
                out.write(clean(line_of(step)) + "\n")
            if factor is not None:
                out.flush()
        result = session.finish()
        if not jsonl and not silent:
            if result.stop == "break":
                out.write(
                    clean(
                        f"!! chain broken at line {result.broken_at}: replay stopped; nothing after "
                        f"this point is trustworthy"
                    )
                    + "\n"
                )
            if result.until_reached:
                out.write("\n".join(clean(line) for line in state_of(result.state)) + "\n")
        if not silent:
            out.flush()
    except BrokenPipeError:
        # The reader of stdout went away (e.g. `| head`): stop writing, keep the verdict.
        silence_stdout()
        result = session.finish()

    for f in result.findings:
        if id(f) not in shown:
            err.print(_finding_text(f), markup=False)
    suppressed = getattr(result, "suppressed", 0)
    if suppressed:
        err.print(
            clean(f"{result.path}: {suppressed} more finding(s) not shown (ract trace verify lists them all)"),
            markup=False,
        )
    err.print(clean(verdict_line(result, until)), markup=False)
    raise typer.Exit(int(result.exit_code))


def _renderers(journal: bool) -> tuple[Callable[[Any], str], Callable[[dict[str, Any]], list[str]]]:
    if journal:
        return journal_timeline_line, journal_state_lines
    return timeline_line, state_lines


def _event_ns(event: dict) -> int | None:
    """An event's time in ns: RACT ``timestamp_ns``, or a journal record's ``at_ms`` when it has one."""
    ts = event.get("timestamp_ns")
    if type(ts) is int:
        return ts
    at_ms = event.get("at_ms")
    return at_ms * 1_000_000 if type(at_ms) is int else None


def _write_raw(out: Any, raw: bytes) -> None:
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
    import orjson

    try:
        return orjson.dumps(value).decode()
    except Exception:
        try:
            return repr(value)
        except RecursionError:
            return f"<{type(value).__name__} nested too deeply>"


def state_lines(state: dict[str, Any]) -> list[str]:
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


def _finding_text(f: Finding) -> str:
    where = f.path or "-"
    if f.line is not None:
        where += f":{f.line}"
    return clean(f"{where}: {f.severity} {f.code} {f.message}")


def verdict_line(result: ReplayResult, until: str | None) -> str:
    code = result.exit_code
    text = f"replayed {result.events} event(s) of {result.path}"
    if result.stop == "break":
        text += f"; chain broken at line {result.broken_at}: replay stopped there, nothing after it is trustworthy"
    if result.until_reached is False:
        where = "before the chain break" if result.stop == "break" else "in the log"
        text += f"; --until {until}: no such event {where}"
    return f"{text}; exit {int(code)} ({ExitCode(code).name})"
