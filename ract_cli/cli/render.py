"""Rendering helpers shared by every command: consoles and terminal-safe text.

Every string that came from a log is untrusted. Before it reaches a
terminal it goes through ``clean`` (control characters, ANSI escapes,
bidi overrides become visible escapes) and, when rich markup is
interpreted, ``markup_safe`` (rich's ``[...]`` tags are escaped too), so a
forged log can never paint a fake PASS.
"""

from __future__ import annotations

import codecs
import errno
import functools
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

from ract_cli.errors import ExitCode, LogIOError, RactError
from ract_cli.findings import Finding
from ract_cli.format.text import UNSAFE, escape_unsafe, json_escape, json_escape_char

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID
    from rich.segment import Segment


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
    if "::" not in text and _CI_LEGACY not in text:
        return text  # (a command needs "::"; the regex scan below tries every position: 12 us a log line)
    text = _CI_COMMAND_START.sub(r"\1\2\\x3a", text)
    return text.replace(_CI_LEGACY, "##\\u005b" if json else "##\\x5b") if _CI_LEGACY in text else text


def ci_safe_bytes(data: bytes, *, json: bool = False) -> bytes:
    """``ci_safe`` for bytes written to stdout as they are (grep's lines): every other byte unchanged."""
    if b"::" not in data and b"##[" not in data:
        return data
    text = data.decode("utf-8", "surrogateescape")
    safe = ci_safe(text, json=json)
    return data if safe == text else safe.encode("utf-8", "surrogateescape")


def line_safe_path(path: str) -> bytes:
    """A path for line-oriented data output (grep ``-l``/``-c``/``-H``): its own bytes, unless it holds a
    line break or would read as a workflow command; then escaped as on a terminal (``clean``, ``ci_safe``)."""
    if "\n" not in path and "\r" not in path and ci_safe(path) == path:
        return os.fsencode(path)
    return ci_safe(clean(path)).encode("utf-8", "backslashreplace")


def clean_json(text: str) -> str:
    """Serialized JSON for a terminal: what ``clean`` escapes, written as JSON ``\\u`` escapes instead
    (surrogate pairs past U+FFFF), so it is still JSON, with the same values."""
    return UNSAFE.sub(json_escape, text)


def markup_safe(text: object) -> str:
    """``clean`` plus rich-markup escaping: safe inside a markup string."""
    from rich.markup import escape

    return escape(clean(text))


def explain_failure(command: str, exc: RactError, *, quiet: bool = False) -> int:
    """Say on stderr why ``ract trace COMMAND`` could not run; return the exit code to end with.

    Under ``-q`` only a bad command line (exit 2) is said: the exit code is the
    verdict, but a typo must not fail in silence.
    """
    if not quiet or exc.exit_code == ExitCode.USAGE:
        write_stderr_lines([f"ract trace {command}: {clean(exc.message)}"])  # (a stderr gone: said to no one)
    return int(exc.exit_code)


def explain_os_error(command: str | None, exc: OSError) -> int:
    """Say an OS error no command turned into a finding (stdout on a full disk: ``>/dev/full``), as
    ``ract trace COMMAND: message``; return 5 (IO). What stdout still holds is flushed, or, when stdout is
    what fails, dropped, so that the interpreter's last flush does not fail again (exit 120)."""
    try:
        flush_stdout()
    except OSError:
        silence_stdout()
    where = f"{exc.filename}: " if exc.filename is not None else ""
    prefix = f"ract trace {command}" if command else "ract"
    write_stderr_lines([clean(f"{prefix}: {where}{exc.strerror or exc}")])
    return int(ExitCode.IO)


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


@functools.cache
def _consoles() -> tuple[type[Console], type[Console]]:
    """The stderr and stdout console classes, made on first use: rich is imported only once something
    is printed through it (``-q`` runs never import it: start-up, issue 14)."""
    from rich.console import Console

    class _CiSafeConsole(Console):
        """A console whose every line is ``ci_safe``: nothing it prints can be read as a workflow command."""

        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            return ci_safe(super()._render_buffer(buffer))

    class _StderrConsole(_CiSafeConsole):
        """stderr: when its reader is gone, say nothing more (rich would exit 1, which means TAMPERED).

        A line printed while a progress bar is on the terminal is printed above it (``above_progress``).
        """

        def _write_buffer(self) -> None:
            if _BAR is None or self._buffer_index or not self._buffer:
                super()._write_buffer()
                return
            with above_progress(stdout=False):
                super()._write_buffer()

        def on_broken_pipe(self) -> None:
            self.quiet = True
            _to_devnull(2)  # the interpreter's last flush of stderr must not fail either

    class _StdoutConsole(_CiSafeConsole):
        """stdout: a reader that went away surfaces as ``BrokenPipeError`` for the command to handle.

        rich's own ``on_broken_pipe`` raises ``SystemExit(1)``, and 1 is TAMPERED (SPEC §3). What it prints
        while a progress bar is on the same terminal goes above the bar (``above_progress``).
        """

        def _write_buffer(self) -> None:
            if _BAR is None or self._buffer_index or not self._buffer:
                super()._write_buffer()
                return
            with above_progress():
                super()._write_buffer()

        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    return _StderrConsole, _StdoutConsole


def stderr_console(*, quiet: bool = False) -> Console:
    """Verdicts, warnings and progress go to stderr."""
    # emoji=False: "path:100: CODE" must never turn into a 💯 (rich reads :100: as an emoji code)
    return _consoles()[0](stderr=True, quiet=quiet, highlight=False, soft_wrap=True, emoji=False)


def print_lines(console: Console, lines: Iterable[str], *, chunk: int = 1000) -> None:
    """Print plain lines (no markup), ``chunk`` to a call: a print costs rich ~0.25 ms, so one per file of
    a 10,000-run fleet cost more than verifying it."""
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) == chunk:
            console.print("\n".join(batch), markup=False)
            batch.clear()
    if batch:
        console.print("\n".join(batch), markup=False)


def write_stdout(text: str, *, json: bool = False) -> None:
    """``text`` on stdout, flushed, as ``typer.echo`` (click) writes it: to a stdout whose encoding is ASCII
    (``PYTHONIOENCODING=ascii``) as UTF-8, a character UTF-8 cannot hold (a lone surrogate of a non-UTF-8
    path) as ``?``. A character another encoding (Latin-1...) cannot hold, where click raised, is ``?`` too,
    or with ``json=True`` (``text`` is serialized JSON) its ``\\u`` escape, the same value.

    A reader that went away raises ``BrokenPipeError`` (the caller keeps its verdict); any other failure (a
    full disk) raises ``LogIOError`` (exit 5), stdout then pointing at /dev/null so that the interpreter's
    last flush does not fail again.
    """
    stream = sys.stdout
    if stream is None:
        return
    buffer = getattr(stream, "buffer", None)
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        if buffer is not None and _is_ascii(encoding):
            stream.flush()
            buffer.write(text.encode("utf-8", "replace"))
            buffer.flush()
            return
        try:
            stream.write(text)  # (a text stream encodes all of it before writing a byte)
        except UnicodeEncodeError:
            if buffer is None:
                raise
            stream.flush()
            buffer.write(text.encode(encoding, JSON_ESCAPES if json else "replace"))
            buffer.flush()
        stream.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        silence_stdout()
        raise LogIOError(f"cannot write to stdout: {exc.strerror or exc}") from None


def _json_escapes(error: UnicodeError) -> tuple[str, int]:
    """Codec error handler: what an encoding cannot hold, as JSON ``\\uXXXX`` escapes (a surrogate pair past
    U+FFFF). Only for serialized JSON, where such characters are inside strings."""
    assert isinstance(error, UnicodeEncodeError)
    return "".join(json_escape_char(c) for c in error.object[error.start : error.end]), error.end


JSON_ESCAPES = "ract.json_escapes"
codecs.register_error(JSON_ESCAPES, _json_escapes)


def _is_ascii(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name == "ascii"
    except LookupError:
        return False


def write_stderr_lines(lines: Iterable[str], *, chunk: int = 1000) -> None:
    """Plain lines (no markup; every log-derived part already ``clean``) on stderr.

    On a terminal rich prints them (``print_lines``: above a progress bar, if one is drawn). Into a pipe
    or a file they are written as they are, ``ci_safe``, which is what rich writes there for such lines
    (``tests/test_stderr_lines.py`` holds the two to the same bytes), without importing rich: ~40 ms of a
    CI step's start-up (issue 14). A reader of stderr that went away, or a stderr that cannot be written,
    silences stderr (rich's console does so on a broken pipe).
    """
    if stderr_is_terminal():
        print_lines(stderr_console(), lines, chunk=chunk)
        return
    stream = sys.stderr
    if stream is None:  # started with fd 2 closed (rich writes nowhere then, too)
        return
    batch: list[str] = []
    try:
        for line in lines:
            batch.append(line)
            if len(batch) == chunk:
                stream.write(ci_safe("\n".join(batch)) + "\n")
                stream.flush()
                batch.clear()
        if batch:
            stream.write(ci_safe("\n".join(batch)) + "\n")
            stream.flush()
    except OSError:  # its reader went away, or it cannot be written (2>/dev/full): nothing more can be said
        silence_stderr()


def stdout_console(*, width: int | None = None, soft_wrap: bool = True) -> Console:
    """Data (tables, reports) goes to stdout; a closed pipe raises ``BrokenPipeError`` (see ``_StdoutConsole``)."""
    return _consoles()[1](highlight=False, soft_wrap=soft_wrap, emoji=False, width=width)


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
    from ract_cli.read import json_text  # (orjson's bytes, without importing orjson when the native core runs)

    return ci_safe(json_text.text(data, indent=indent, sort_keys=sort_keys), json=True)


#: a progress bar is shown (stderr on a terminal only) once the logs total at least this many bytes
PROGRESS_MIN_BYTES = 32 << 20
#: the bar is drawn again at most this often (seconds); the library reports every few MB
PROGRESS_REDRAW_S = 0.1
#: back to the start of the line, and erase it: where the bar is drawn, and how it is taken away
_ERASE_LINE = "\r\x1b[2K"


def progress_enabled(*, quiet: bool, json: bool = False) -> bool:
    """The one rule of every command's progress bar: stderr is a terminal that can move its cursor (not
    ``TERM=dumb``), no ``-q``, and the output is not a JSON form asked for (``--format json``/``jsonl``).
    Whether the work is large enough (``PROGRESS_MIN_BYTES``) is decided once its size is known."""
    if quiet or json or not stderr_is_terminal():
        return False
    return os.environ.get("TERM", "").lower() not in ("dumb", "unknown")


class _Bar:
    """One transient line on stderr: label, bar, bytes done / total, rate, time left.

    No thread draws it: ``update`` does, at most every ``PROGRESS_REDRAW_S``, and only once a rate is
    known (the second report), so a short job never flashes a bar. Whatever else is written to the
    terminal meanwhile is written above it: the line is erased first and drawn again after
    (``above_progress``; the consoles of ``stderr_console``/``stdout_console`` do it themselves).
    """

    def __init__(self, label: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

        # a plain console (not _StderrConsole): it only renders the line, which this class writes itself
        self.console = Console(stderr=True, highlight=False, emoji=False)
        self.progress = Progress(
            label,
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            auto_refresh=False,
        )
        self.label = label
        self.task: TaskID | None = None
        self.text = ""  # the line as last drawn
        self.shown = False
        self.last_draw = 0.0
        #: stdout is a terminal too (most likely this one): what is written there must go above the bar
        self.stdout_shared = stdout_is_terminal()
        self.broken = False

    def update(self, done: int, total: int) -> None:
        if total < PROGRESS_MIN_BYTES or self.broken:
            return
        progress = self.progress
        if self.task is None:
            self.task = progress.add_task(self.label, total=total)
        progress.update(self.task, completed=min(done, total), total=total)
        now = time.monotonic()
        if now - self.last_draw < PROGRESS_REDRAW_S:
            return
        if progress.tasks[0].speed is None:  # no rate yet: wait for the next report
            return
        self.last_draw = now
        width = max(self.console.width - 1, 20)  # one cell short of the edge: the line never wraps
        with self.console.capture() as captured:
            self.console.print(progress.get_renderable(), end="", width=width, crop=True, soft_wrap=False)
        self.text = captured.get().split("\n", 1)[0]
        self._write(_ERASE_LINE + self.text)
        self.shown = True

    def hide(self) -> None:
        if self.shown:
            self._write(_ERASE_LINE)
            self.shown = False

    def show(self) -> None:
        if self.text and not self.shown and not self.broken:
            self._write(_ERASE_LINE + self.text)
            self.shown = True

    def _write(self, text: str) -> None:
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):  # the terminal went away, or stderr was closed
            self.broken, self.shown = True, False


#: the bar on the terminal now, if any (one at a time: commands run one after the other)
_BAR: _Bar | None = None


@contextmanager
def above_progress(*, stdout: bool = True) -> Iterator[None]:
    """Write to the terminal with a progress bar on it: the bar is erased first and drawn again after.

    ``stdout=True``: what is written goes to stdout, which only matters when stdout is a terminal too
    (a pipe or a file is no concern of the bar). Costs one global lookup when no bar is shown.
    """
    bar = _BAR
    if bar is None or not bar.shown or (stdout and not bar.stdout_shared):
        yield
        return
    bar.hide()
    try:
        yield
    finally:
        bar.show()


@contextmanager
def byte_progress(label: str, *, enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    """``update(done_bytes, total_bytes)`` drawing a transient bar on stderr, drawn only once the logs prove
    large (``PROGRESS_MIN_BYTES``); ``None`` when disabled (``progress_enabled``: ``-q``, stderr not a
    terminal, a JSON output form). The bar is erased when the block ends."""
    global _BAR
    if not enabled:
        yield None
        return
    bar = _BAR = _Bar(label)
    try:
        yield bar.update
    finally:
        bar.hide()
        _BAR = None
