"""``ract trace project``'s verdicts and JSON report, without typer or rich: the CLI (``cli/project.py``)
and the quick path of ``cli/launch.py`` print through these same functions, so they print the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator

from ract_cli.cli.render import (
    ci_safe,
    clean,
    clean_json,
    dumps_json,
    stdout_is_terminal,
    write_stderr_lines,
    write_stdout,
)
from ract_cli.errors import ExitCode
from ract_cli.format.json_types import Report
from ract_cli.project.human import is_journal
from ract_cli.project.result import ProjectResult
from ract_cli.read import json_text


def verdicts(result: ProjectResult) -> None:
    """On stderr: what could not be read, and each run that failed or is not trusted to its end."""
    write_stderr_lines(_verdict_lines(result))


def _verdict_lines(result: ProjectResult) -> list[str]:
    lines = [f"ract trace project: {clean(f.path)}: {clean(f.message)}" for f in result.findings]
    for run in result.unclean_runs():
        name = ExitCode(run["exit_code"]).name
        text = _untrusted_verdict(run) if not run["trusted"] else _failure_verdict(run, name)
        lines.append(f"ract trace project: FAIL ({name}) {clean(run['path'])}: {clean(text)}")
    return lines


def _untrusted_verdict(run: Report) -> str:
    # the failure is on that line or the next (which leaves that event unconfirmed)
    start = run["untrusted_from_line"]
    first = next(
        (
            f
            for f in run["findings"]
            if f["severity"] == "error"
            and f["line"] is not None
            and start is not None
            and f["line"] in (start, start + 1)
        ),
        None,
    )
    why = f" ({first['code']} at line {first['line']}: {first['message']})" if first else ""
    covers = (
        "its evidence verdict is not to be believed" if is_journal(run) else "the report covers the lines before it"
    )
    return f"UNTRUSTED from line {run['untrusted_from_line']}{why}; {covers}"


def _failure_verdict(run: Report, name: str) -> str:
    first = next((f for f in run["findings"] if f["severity"] == "error"), None)
    return f"{first['code']}: {first['message']}" if first else name


def sorted_indented(data: object) -> str:
    return dumps_json(data, indent=True, sort_keys=True)


def to_json(result: ProjectResult) -> str:
    """The documented JSON (``ProjectResult.to_dict``), stable: sorted keys, two-space indent, one newline."""
    return sorted_indented(result.to_dict()) + "\n"


def _sorted_indented_text(data: object) -> str:
    return json_text.text(data, indent=True, sort_keys=True)


def json_report_chunks(result: ProjectResult) -> Iterator[str]:
    """``to_json``'s text but its last newline, a run's report at a time (a fleet streams). Reports kept as
    written (``project_paths(as_written=True)``) are copied; every chunk is then neutralized once, as
    ``sorted_indented`` neutralizes what it writes: ``ci_safe`` works line by line, and every chunk ends
    between two JSON tokens, so chunk by chunk is the whole text's result."""
    for chunk in result.json_chunks(_sorted_indented_text, written=True):
        yield ci_safe(chunk, json=True)


def write_json(result: ProjectResult) -> None:
    """The JSON report on stdout (``render.write_stdout``), one run's report in memory at a time (a fleet
    streams); the bytes are ``to_json``'s. A terminal is not a data sink: bidi and other format characters become JSON escapes
    (the same values)."""
    terminal = stdout_is_terminal()
    for chunk in json_report_chunks(result):
        write_stdout(clean_json(chunk) if terminal else chunk, json=True)
    write_stdout("\n")
