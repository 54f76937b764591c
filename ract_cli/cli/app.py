"""The ``ract`` command: a Typer app whose ``trace`` group holds every command.

Each command module under ``ract_cli.cli`` registers itself on ``trace_app``.
``main(argv)`` runs in-process and returns the exit code, so tests can call
it without a subprocess.
"""

from __future__ import annotations

import errno
import functools
import importlib
import re
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from ract_cli.cli.completion import completion_request
from ract_cli.cli.launch import version_line
from ract_cli.cli.render import (
    BROKEN_PIPE_EXIT,
    clean,
    explain_failure,
    explain_os_error,
    flush_stdout,
    markup_safe,
    silence_stderr,
    silence_stdout,
    stderr_console,
    stdout_closed,
)
from ract_cli.errors import EXIT_CODE_MEANINGS, RactError

EPILOG = "Exit codes (the lowest non-zero code among all findings wins):\n\n" + "\n\n".join(
    f"{int(code)} {code.name}: {meaning}" for code, meaning in EXIT_CODE_MEANINGS.items()
)

app = typer.Typer(
    name="ract",
    help="Verify, replay, repair, project and grep hash-chained JSONL run logs.",
    epilog=EPILOG,
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
trace_app = typer.Typer(
    help="Commands over run logs (evals/runs/<run_id>/events.jsonl).",
    epilog=EPILOG,
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(trace_app, name="trace")


def _print_version(value: bool) -> None:
    if value:  # (``launch.main`` answers a lone --version itself; this is --version among other words)
        typer.echo(version_line())  # SPEC §11: which per-line core runs
        raise typer.Exit(0)


@app.callback()
def _root(
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            is_eager=True,
            callback=_print_version,
            help="Print the version and the per-line core (ract X.Y.Z (core: native|python)) and exit.",
        ),
    ] = False,
) -> None:
    """ract: a toolkit for hash-chained JSONL run logs."""


#: the command table: every ``ract trace`` command, in help order, and the module that defines it
COMMANDS: dict[str, str] = {
    "verify": "verify",
    "repair": "repair",
    "replay": "replay",
    "grep": "grep",
    "project": "project",
    "diff": "diff",
    "export": "export",
    "sql": "sql",
    "keygen": "keygen",
    "checkpoint": "checkpoint",
    "prove": "prove",
    "verify-proof": "prove",
}
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))


def _register_commands(argv: list[str] | None = None) -> None:
    """Import the command modules; each adds its command to ``trace_app``.

    ``ract trace grep ...`` needs only the grep module: importing just the
    one asked for keeps start-up short, which matters when a script runs
    ract once per file. Help and anything else import them all.
    """
    wanted: tuple[str, ...] = COMMAND_MODULES
    if argv is not None and len(argv) >= 2 and argv[0] == "trace" and argv[1] in COMMANDS:
        wanted = (COMMANDS[argv[1]],)
    for name in wanted:
        importlib.import_module(f"{__package__}.{name}")
    for info in trace_app.registered_commands:
        if info.callback is not None and not getattr(info.callback, "_ract_boundary", False):
            info.callback = _boundary(info.name or info.callback.__name__, info.callback)
    # Help lists the commands in registration order, which is import order: one in-process run of
    # ``trace project`` before ``--help`` would otherwise list project first. Keep one order.
    order = {name: i for i, name in enumerate(COMMANDS)}
    trace_app.registered_commands.sort(key=lambda info: order.get(info.name or "", len(order)))


#: the command running now and its -q, for the error boundary in ``_run`` (in-process runs come one at a time)
_RUNNING: list[tuple[str, bool]] = []


def _boundary(command: str, callback: Callable[..., Any]) -> Callable[..., Any]:
    """Note which command runs and whether it was given ``-q``, so ``_run``'s one ``except RactError`` can
    say ``ract trace COMMAND: message``. ``functools.wraps`` keeps the signature typer reads the options from."""

    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        _RUNNING.append((command, bool(kwargs.get("quiet", False))))
        return callback(*args, **kwargs)

    run._ract_boundary = True  # type: ignore[attr-defined]  # wrapped once per process, however often main runs
    return run


#: click's messages for a bad number ("'x' is not a valid int range.") and an out-of-range one; click shows
#: the value as repr() does: in double quotes when it holds a single quote ("it's")
_NOT_A_NUMBER = re.compile(r"""(?P<value>'.*'|".*") is not a valid (?P<type>int|integer|float)(?: range)?\.""", re.S)
_OUT_OF_RANGE = re.compile(r"(?P<value>.*) is not in the range (?P<range>\S+)\.", re.S)
_SHOWN_VALUE = 80  # characters of a command-line value repeated in an error


def cli_wording(exc: typer.BadParameter) -> str | None:
    """A bad option value said plainly, or ``None`` to keep typer's message.

    Click names the type of an option with bounds "int range" ("'x' is not a
    valid int range."); this says "'x' is not a valid integer." instead, and
    cuts a value longer than 80 characters, so a pasted blob does not fill the
    terminal. Anything else keeps its message.
    """
    message = exc.message
    if m := _NOT_A_NUMBER.fullmatch(message):
        kind = "number" if m["type"] == "float" else "integer"
        return f"{_shorten(m['value'], quoted=True)} is not a valid {kind}."
    if m := _OUT_OF_RANGE.fullmatch(message):
        return f"{_shorten(m['value'], quoted=False)} is not in the range {m['range']}."
    return None


def _shorten(value: str, *, quoted: bool) -> str:
    """``value`` as click showed it, cut to ``_SHOWN_VALUE`` characters (its quotes kept, ' or ")."""
    quote = value[0] if quoted else ""
    inner = value[1:-1] if quoted else value
    if len(inner) > _SHOWN_VALUE:
        inner = inner[: _SHOWN_VALUE - 3] + "..."
    return clean(f"{quote}{inner}{quote}")


def main(argv: list[str] | None = None) -> int:
    """Run ``ract`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    A reader of stdout that went away (``ract --help | head -c0``) ends the run quietly with
    ``BROKEN_PIPE_EXIT`` (141), never with a traceback or rich's exit 1 (1 is TAMPERED). The commands
    whose exit code is a verdict (verify, project, replay) catch their own broken pipe and keep it.
    """
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        code = _run(args)
        flush_stdout()  # help and --version are still in stdout's buffer when piped
    except BrokenPipeError:
        silence_stdout()
        return BROKEN_PIPE_EXIT
    except OSError as exc:  # (a stdout that cannot be written: no space left...): exit 5, said, no traceback
        return explain_os_error(_RUNNING[-1][0] if _RUNNING else None, exc)
    if code == 0 and stdout_closed() and _STDOUT_ONLY.intersection(args[: args.index("--")] if "--" in args else args):
        # started with `>&-`: click printed the help or the version into nothing
        stderr_console().print("ract: stdout is closed: nothing was printed", markup=False)
        return BROKEN_PIPE_EXIT
    return code


#: options whose whole output is on stdout (their run is a failure when stdout is closed)
_STDOUT_ONLY = frozenset({"--help", "--version", "-V"})


def _unwrap_after_epipe() -> bool:
    """Undo what typer does when stdout's reader goes away (--help, --version, typer.echo): it wraps
    sys.stdout and sys.stderr in click's ``PacifyFlushWrapper`` and exits 1. True if it did."""
    pacified = False
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if type(stream).__name__ == "PacifyFlushWrapper" and hasattr(stream, "wrapped"):
            setattr(sys, name, stream.wrapped)
            pacified = True
    return pacified


def _on_stderr(show: Callable[[], object]) -> None:
    """Show a usage error; if stderr's reader is gone, the exit code (2) is all that is left to say."""
    try:
        show()
    except BrokenPipeError:
        silence_stderr()


def _run(args: list[str]) -> int:
    _RUNNING.clear()
    if (completed := completion_request(args)) is not None:
        return completed
    _register_commands(args)
    try:
        # not standalone: a usage error comes back here, to be reworded before typer shows it
        code = app(args=args, prog_name="ract", standalone_mode=False)
        return code if isinstance(code, int) else 0
    except typer.BadParameter as exc:
        wording = cli_wording(exc)
        if wording is not None:
            exc.message = wording
        _on_stderr(exc.show)
        return int(exc.exit_code)
    except typer.TyperException as exc:  # other usage errors (no such option, missing argument...)
        show = getattr(exc, "show", None)
        if callable(show):
            _on_stderr(show)
        else:
            stderr_console().print(f"Error: {markup_safe(exc.format_message())}")
        return int(exc.exit_code)
    except SystemExit as exc:
        if _unwrap_after_epipe():  # typer's own handling of a broken pipe: sys.exit(1), and 1 is TAMPERED
            raise BrokenPipeError(errno.EPIPE, "Broken pipe") from None
        code = exc.code
        if code is None:
            return 0
        return code if isinstance(code, int) else 1
    except RactError as exc:  # THE boundary: every library error a command lets through ends here
        if _RUNNING:
            command, quiet = _RUNNING[-1]
            return explain_failure(command, exc, quiet=quiet)  # under -q, a bad command line is still said
        stderr_console().print(f"ract: {markup_safe(exc.message)}")  # before any command ran (--version)
        return int(exc.exit_code)
    except typer.Abort:
        return 130
