"""Rendering helpers shared by every command: consoles and terminal-safe text.

Every string that came from a log is untrusted. Before it reaches a
terminal it goes through ``clean`` (control characters, ANSI escapes,
bidi overrides become visible escapes) and, when rich markup is
interpreted, ``markup_safe`` (rich's ``[...]`` tags are escaped too), so a
forged log can never paint a fake PASS.
"""

from __future__ import annotations

import errno
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

import orjson
from rich.console import Console
from rich.markup import escape as _escape_markup
from rich.segment import Segment

from ract_cli.errors import ExitCode, RactError
from ract_cli.findings import Finding
from ract_cli.format.text import UNSAFE, escape_unsafe


def clean(text: object) -> str:
    """Text with every control and format character (``format.text.UNSAFE``) shown as an escape: ``\\x1b``,
    ``\\u200b``, ``\\U000e0041``."""
    return escape_unsafe(str(text))


#: what the GitHub Actions runner reads as a workflow command in a line of stdout *or* stderr: ``::`` first
#: after leading whitespace (it trims with .NET's ``TrimStart``: ``\s`` here is a superset; SGR colour codes
#: in front are skipped as well, should a viewer strip them), and the legacy
#: ``##[`` anywhere in the line
_CI_COMMAND_START = re.compile(r"(\A|[\r\n])((?:[^\S\r\n]|\x1b\[[0-9;]*m)*):(?=:)")  # rich's colours too
_CI_LEGACY = "##["


def ci_safe(text: str, *, json: bool = False) -> str:
    """``text`` with every GitHub workflow command neutralised, line by line: the one place this is done.

    A line that would start with ``::`` gets its first colon as ``\\x3a``; ``##[`` anywhere becomes
    ``##\\x5b``. With ``json=True`` (serialized JSON, where ``##[`` can only be inside a string) it becomes
    ``##\\u005b``, the same string value. Every line ract prints that carries a log- or path-derived
    string goes through this (the consoles of ``stdout_console``/``stderr_console`` do it to all they
    print), so a run directory named ``::error file=app.py,line=1::forged`` cannot add an annotation.
    """
    text = _CI_COMMAND_START.sub(r"\1\2\\x3a", text)
    return text.replace(_CI_LEGACY, "##\\u005b" if json else "##\\x5b") if _CI_LEGACY in text else text


def ci_safe_bytes(data: bytes, *, json: bool = False) -> bytes:
    """``ci_safe`` for bytes written to stdout as they are (grep's lines): every other byte unchanged."""
    text = data.decode("utf-8", "surrogateescape")
    safe = ci_safe(text, json=json)
    return data if safe == text else safe.encode("utf-8", "surrogateescape")


def line_safe_path(path: str) -> bytes:
    """A path for line-oriented data output (grep ``-l``/``-c``/``-H``): its own bytes, unless it holds a
    line break or would read as a workflow command; then escaped as on a terminal (``clean``, ``ci_safe``)."""
    if "\n" not in path and "\r" not in path and ci_safe(path) == path:
        return os.fsencode(path)
    return ci_safe(clean(path)).encode("utf-8", "backslashreplace")


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def clean_json(text: str) -> str:
    """Serialized JSON for a terminal: what ``clean`` escapes, written as JSON ``\\u`` escapes instead
    (surrogate pairs past U+FFFF), so it is still JSON, with the same values."""
    return UNSAFE.sub(_json_escape, text)


def markup_safe(text: object) -> str:
    """``clean`` plus rich-markup escaping: safe inside a markup string."""
    return _escape_markup(clean(text))


def explain_failure(command: str, exc: RactError, *, quiet: bool = False) -> int:
    """Say on stderr why ``ract trace COMMAND`` could not run; return the exit code to end with.

    Under ``-q`` only a bad command line (exit 2) is said: the exit code is the
    verdict, but a typo must not fail in silence.
    """
    stderr_console(quiet=quiet and exc.exit_code != ExitCode.USAGE).print(
        f"ract trace {command}: {clean(exc.message)}", markup=False
    )
    return int(exc.exit_code)


def finding_line(f: Finding, *, severity: bool = False, indent: str = "") -> str:
    """The one text form of a finding, escaped for the terminal: ``path:line: [severity ]CODE message``.

    Without a line it is ``path: CODE message``; without a path, ``-``.
    """
    where = f.path if f.path is not None else "-"
    if f.line is not None:
        where += f":{f.line}"
    level = f"{f.severity} " if severity else ""
    return clean(f"{indent}{where}: {level}{f.code} {f.message}{finding_detail(f)}")


#: findings whose text form names what was compared: the values are in no other line (``--expect-head`` was
#: typed elsewhere, e.g. a CI secret), while other findings' messages already say what differs
SHOW_COMPARED = frozenset({"HEAD_MISMATCH"})


def finding_detail(f: Finding) -> str:
    """`` (expected X, actual Y)`` for a finding of ``SHOW_COMPARED``: HEAD_MISMATCH's ``--expect-head``
    and the chain's real head, so the text and github forms say as much as the JSON one."""
    if f.code not in SHOW_COMPARED:
        return ""
    parts = [f"{name} {value}" for name, value in (("expected", f.expected), ("actual", f.actual)) if value is not None]
    return f" ({', '.join(parts)})" if parts else ""


#: findings listed under a refusal; the rest are counted
SHOWN_FINDINGS = 10


def show_refusal(console: Console, command: str, message: str, findings: Sequence[Finding]) -> None:
    """``ract trace COMMAND: refused: ...`` and its first findings, indented, on stderr."""
    console.print(f"ract trace {command}: refused: {clean(message)}", markup=False)
    for f in findings[:SHOWN_FINDINGS]:
        console.print(finding_line(f, indent="  "), markup=False)
    if len(findings) > SHOWN_FINDINGS:
        console.print(f"  ... {len(findings) - SHOWN_FINDINGS} more", markup=False)


#: the exit code of a command whose stdout went away (``| head``) or was closed (``>&-``): 128 + SIGPIPE,
#: as a shell reports a reader that went away (see docs/exit-codes.md for which commands use it)
BROKEN_PIPE_EXIT = 141


class _CiSafeConsole(Console):
    """A console whose every line is ``ci_safe``: nothing it prints can be read as a workflow command."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return ci_safe(super()._render_buffer(buffer))


class _StderrConsole(_CiSafeConsole):
    """stderr: when its reader is gone, say nothing more (rich would exit 1, which means TAMPERED)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        _to_devnull(2)  # the interpreter's last flush of stderr must not fail either


class _StdoutConsole(_CiSafeConsole):
    """stdout: a reader that went away surfaces as ``BrokenPipeError`` for the command to handle.

    rich's own ``on_broken_pipe`` raises ``SystemExit(1)``, and 1 is TAMPERED (SPEC §3).
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def stderr_console(*, quiet: bool = False) -> Console:
    """Verdicts, warnings and progress go to stderr."""
    # emoji=False: "path:100: CODE" must never turn into a 💯 (rich reads :100: as an emoji code)
    return _StderrConsole(stderr=True, quiet=quiet, highlight=False, soft_wrap=True, emoji=False)


def stdout_console(*, width: int | None = None, soft_wrap: bool = True) -> Console:
    """Data (tables, reports) goes to stdout; a closed pipe raises ``BrokenPipeError`` (see ``_StdoutConsole``)."""
    return _StdoutConsole(highlight=False, soft_wrap=soft_wrap, emoji=False, width=width)


def stdout_closed() -> bool:
    """True when the process has no stdout at all (started with fd 1 closed: ``>&-``)."""
    return sys.stdout is None


def stdout_is_terminal() -> bool:
    return _is_terminal(sys.stdout)


def stderr_is_terminal() -> bool:
    return _is_terminal(sys.stderr)


def _is_terminal(stream: object) -> bool:
    if stream is None:  # the descriptor was closed when the process started
        return False
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):  # no file descriptor, or a closed stream
        return False


def flush_stdout() -> None:
    """Flush stdout if there is one (raises ``BrokenPipeError`` when its reader went away)."""
    if sys.stdout is not None:
        sys.stdout.flush()


def silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so nothing written later (nor the interpreter's
    final flush) fails again."""
    try:
        fd = sys.stdout.fileno() if sys.stdout is not None else None
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (in-process tests)
        fd = None
    if fd is not None:
        _to_devnull(fd)


def silence_stderr() -> None:
    """After a broken pipe on stderr: the same, for file descriptor 2."""
    _to_devnull(2)


def _to_devnull(fd: int) -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
    except OSError:
        pass


def dumps_json(data: object, *, indent: bool = False, sort_keys: bool = False) -> str:
    """JSON text for stdout that never fails on a path the OS gave as non-UTF-8.

    File names are bytes; Python hands undecodable ones over with lone
    surrogates, which orjson refuses. Those documents fall back to ``\\u``
    escapes (``ensure_ascii``), so the report is still written. ``##[`` in a string is written
    ``##\\u005b`` (the same value; see ``ci_safe``).
    """
    return ci_safe(_dumps_json(data, indent=indent, sort_keys=sort_keys), json=True)


def _dumps_json(data: object, *, indent: bool, sort_keys: bool) -> str:
    option = (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    try:
        return orjson.dumps(data, option=option).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(
            data,
            indent=2 if indent else None,
            sort_keys=sort_keys,
            ensure_ascii=True,
            separators=None if indent else (",", ":"),
        )


#: a progress bar is shown (stderr on a terminal only) once the logs total at least this many bytes
PROGRESS_MIN_BYTES = 32 << 20


@contextmanager
def byte_progress(label: str, *, enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    """``update(done_bytes, total_bytes)`` drawing a rich bar on stderr, started only once the logs prove
    large (``PROGRESS_MIN_BYTES``); ``None`` when disabled (``-q``, stderr not a terminal)."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TimeRemainingColumn, TransferSpeedColumn

    started: list[tuple[Progress, TaskID]] = []

    def update(done: int, total: int) -> None:
        if total < PROGRESS_MIN_BYTES:
            return
        if not started:
            bar = Progress(
                label,
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=stderr_console(),
                transient=True,
            )
            bar.start()
            started.append((bar, bar.add_task(label, total=total)))
        bar, task = started[0]
        bar.update(task, completed=done, total=total)

    try:
        yield update
    finally:
        if started:
            started[0][0].stop()
