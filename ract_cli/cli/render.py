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
from collections.abc import Sequence

import orjson
from rich.console import Console
from rich.markup import escape as _escape_markup

from ract_cli.errors import ExitCode, RactError
from ract_cli.findings import Finding

# C0 controls, DEL, C1 controls, bidi overrides/isolates, line/paragraph separators.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: object) -> str:
    """Text with every control/format character shown as an escape."""
    return _UNSAFE.sub(_visible, str(text))


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
    return clean(f"{indent}{where}: {level}{f.code} {f.message}")


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


class _StderrConsole(Console):
    """stderr: when its reader is gone, say nothing more (rich would exit 1, which means TAMPERED)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        _to_devnull(2)  # the interpreter's last flush of stderr must not fail either


class _StdoutConsole(Console):
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
    escapes (``ensure_ascii``), so the report is still written.
    """
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
