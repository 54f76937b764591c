"""The ``ract`` executable: ``--version`` is answered before the CLI is imported (start-up, issue 14).

``ract --version`` is what a script runs to learn which core it gets (SPEC
§11): it needs neither typer, nor rich, nor a command module, so it imports
none of them. Everything else goes to ``ract_cli.cli.app.main``.
"""

from __future__ import annotations

import sys

from ract_cli import __version__
from ract_cli.errors import RactError
from ract_cli.read.core import core_name

VERSION_FLAGS = (["--version"], ["-V"])


def version_line() -> str:
    """``ract X.Y.Z (core: native|python)`` (SPEC §11); raises ``UsageError`` on a bad ``RACT_CORE``."""
    return f"ract {__version__} (core: {core_name()})"


def main(argv: list[str] | None = None) -> int:
    """Run ``ract`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args in VERSION_FLAGS and sys.stdout is not None:
        try:
            line = version_line()
        except RactError:
            pass  # a bad RACT_CORE: the CLI says so (exit 2)
        else:
            try:
                sys.stdout.write(line + "\n")
                sys.stdout.flush()
            except BrokenPipeError:
                from ract_cli.cli.render import BROKEN_PIPE_EXIT, silence_stdout

                silence_stdout()
                return BROKEN_PIPE_EXIT
            return 0
    from ract_cli.cli.app import main as run

    return run(args)
