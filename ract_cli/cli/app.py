"""The ``ract`` command: a Typer app whose ``trace`` group holds every command.

Each command module under ``ract_cli.cli`` registers itself on ``trace_app``.
``main(argv)`` runs in-process and returns the exit code, so tests can call
it without a subprocess.
"""

from __future__ import annotations

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


def _register_commands() -> None:
    # Imported for their side effect: each module adds its command to trace_app.
    from . import verify  # noqa: F401

    for name in ("repair", "replay", "grep", "project"):
        try:
            __import__(f"{__package__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.{name}":
                raise


def main(argv: list[str] | None = None) -> int:
    """Run ``ract`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    _register_commands()
    try:
        app(args=argv if argv is not None else sys.argv[1:], prog_name="ract", standalone_mode=True)
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
