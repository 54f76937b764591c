"""``ract trace verify``'s output, without typer: the CLI (``cli/verify.py``) and the quick path of
``cli/launch.py`` print a report through these same functions, so they print the same bytes.

Verdicts go to stderr (``write_stderr_lines``: rich only on a terminal), the JSON report or the
GitHub annotations to stdout.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator

from ract_cli.cli.render import (
    ci_safe,
    clean,
    clean_json,
    dumps_json,
    finding_detail,
    finding_line,
    flush_stdout,
    silence_stdout,
    stdout_closed,
    stdout_is_terminal,
    write_stderr_lines,
    write_stdout,
)
from ract_cli.errors import ExitCode, LogIOError
from ract_cli.format.text import iso_utc
from ract_cli.verify.verifier import FileReport, VerifyReport


class Format(enum.StrEnum):
    text = "text"
    json = "json"
    github = "github"


def format_ts(ns: int | None) -> str:
    """UTC ISO-8601 with microseconds truncated (``format.text.iso_utc``), or ``-``."""
    return "-" if ns is None else iso_utc(ns)


def render(report: VerifyReport, fmt: Format) -> None:
    lost: LogIOError | None = None  # stdout could not be written: said after the verdicts, which still are
    if fmt is not Format.text:
        text = report_json(report) if fmt is Format.json else "\n".join(github_annotations(report))
        # a terminal is not a data sink: format characters become JSON escapes (the same values)
        try:
            _write_stdout(clean_json(text) if fmt is Format.json and stdout_is_terminal() else text, fmt)
        except LogIOError as exc:
            lost = exc
    if fmt is not Format.json:
        render_text(report)
    if lost is not None:
        raise lost


def _write_stdout(text: str, fmt: Format) -> None:
    """The json report or the annotations on stdout. A closed stdout, or a reader that went away
    (``| head``), leaves the exit code the verdict: the logs were verified all the same. A stdout that
    cannot be written (a full disk) is ``LogIOError``: the report asked for is lost."""
    if stdout_closed():  # started with `>&-`
        write_stderr_lines([f"ract trace verify: stdout is closed: the {fmt.value} output was not written"])
        return
    try:
        if text:
            write_stdout(text + "\n", json=fmt is Format.json)
        flush_stdout()
    except BrokenPipeError:
        silence_stdout()


def report_json(report: VerifyReport) -> str:
    """The documented JSON report (docs/verify.md)."""
    return dumps_json(report.to_dict(), indent=True)


def render_text(report: VerifyReport) -> None:
    write_stderr_lines(_text_lines(report))


def _text_lines(report: VerifyReport) -> Iterator[str]:
    for file in report.files:
        yield _verdict_line(file)
        for f in file.findings:
            yield finding_line(f)
        if file.suppressed:
            yield f"{clean(file.path)}: {file.suppressed} more finding(s) not shown (--max-findings)"
    for f in report.findings:
        yield f"FAIL {clean(f.path)}  exit {int(f.exit_code)} ({ExitCode(f.exit_code).name})"
        yield finding_line(f)


def _verdict_line(file: FileReport) -> str:
    verdict = (
        f"PASS {clean(file.path)}"
        if file.ok
        else f"FAIL {clean(file.path)}  exit {int(file.exit_code)} ({file.exit_code.name})"
    )
    head = file.head or "-"
    line = f"{verdict}  {file.events} events  {format_ts(file.first_ts)} .. {format_ts(file.last_ts)}  head {head}"
    return f"{line}  {file.checkpoint_summary}" if file.checkpoint_summary else line


def github_annotations(report: VerifyReport) -> list[str]:
    """``::error file=PATH,line=N::CODE message`` per finding (``::warning`` for warnings)."""
    lines: list[str] = []
    for f in [*(f for file in report.files for f in file.findings), *report.findings]:
        level = "error" if f.severity == "error" else "warning"
        props = f"file={_gh_prop(f.path or '')}" + (f",line={f.line}" if f.line is not None else "")
        lines.append(f"::{level} {props}::{_gh_data(f'{f.code} {f.message}{finding_detail(f)}')}")
    for file in report.files:
        if file.suppressed:
            lines.append(
                f"::warning file={_gh_prop(file.path)}::{file.suppressed} more finding(s) not shown (--max-findings)"
            )
    return lines


def _gh_data(text: str) -> str:
    # GitHub workflow-command escaping of the message: %, CR and LF.
    return ci_safe(clean(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _gh_prop(text: str) -> str:
    # Property values also escape ':' and ','.
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")
