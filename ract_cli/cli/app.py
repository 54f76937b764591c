"""The ``ract`` command: a Typer app whose ``trace`` group holds every command.

Each command module under ``ract_cli.cli`` registers itself on ``trace_app``.
``main(argv)`` runs in-process and returns the exit code, so tests can call
it without a subprocess.
"""

from __future__ import annotations

import importlib
import sys


import typer

from ..errors import EXIT_CODE_MEANINGS, RactError
from .render import markup_safe, stderr_console

EPILOG = "Exit codes (the lowest non-zero code among all findings wins):\n\n" + "\n\n".join(
    f"{int(code)} {code.name}: {meaning}" for code, meaning in EXIT_CODE_MEANINGS.items()
)

app = typer.Typer(
    name="ract",
    help="Verify, replay, repair, project and grep hash-chained JSONL run logs.",
    epilog=EPILOG,
    no_args_is_help=True,
    add_completion=False,
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


@app.callback()
def _root() -> None:
    """ract: a toolkit for hash-chained JSONL run logs."""


COMMAND_MODULES = ("verify", "repair", "replay", "grep", "project")


def _register_commands(argv: list[str] | None = None) -> None:
    """Import the command modules; each adds its command to ``trace_app``.

    ``ract trace grep ...`` needs only the grep module: importing just the
    one asked for keeps start-up short, which matters when a script runs
    ract once per file. Help and anything else import them all.
    """
    wanted = COMMAND_MODULES
    if argv is not None and len(argv) >= 2 and argv[0] == "trace" and argv[1] in COMMAND_MODULES:
        wanted = (argv[1],)
    for name in wanted:
        importlib.import_module(f"{__package__}.{name}")


def main(argv: list[str] | None = None) -> int:
    """Run ``ract`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    args = list(argv) if argv is not None else sys.argv[1:]
    _register_commands(args)
    try:
        app(args=args, prog_name="ract", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        return code if isinstance(code, int) else 1
    except RactError as exc:  # a library error that escaped a command
        stderr_console().print(f"ract: {markup_safe(exc.message)}")
        return int(exc.exit_code)
    except typer.Abort:
        return 130
    return 0
