"""The ``ract`` executable: ``--version`` and a quiet verify are answered before the CLI is imported.

``ract --version`` is what a script runs to learn which core it gets (SPEC
§11): it needs neither typer, nor rich, nor a command module, so it imports
none of them. ``ract trace verify -q [--jobs N] PATH...``, what CI runs on
every log, prints nothing and only needs the verdict: it is verified here
without typer (40 ms of the ~130 ms a call took on a small log; start-up,
issue 14). Anything else, and any error, goes to ``ract_cli.cli.app.main``,
which then runs the same verify again and says what went wrong.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ract_cli import __version__
from ract_cli.cli.limits import DEFAULT_MAX_FINDINGS, MAX_JOBS
from ract_cli.errors import RactError
from ract_cli.read.core import core_name

if TYPE_CHECKING:
    from ract_cli.verify.verifier import VerifyOptions

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
    if (verdict := _quiet_verify(args)) is not None:
        return verdict
    from ract_cli.cli.app import main as run

    return run(args)


def quick_verify_options(jobs: int) -> VerifyOptions:
    """What ``trace verify`` runs with when given only ``-q``, ``--jobs`` and paths: its defaults."""
    from ract_cli.verify.verifier import VerifyOptions

    return VerifyOptions(max_findings=DEFAULT_MAX_FINDINGS, jobs=jobs)


def _quiet_verify(args: list[str]) -> int | None:
    """The exit code of ``trace verify -q [--jobs N] PATH...`` (only those options, each path a name that
    does not start with ``-``), or None: the CLI runs it (any other form, or an error to be said)."""
    if len(args) < 4 or args[0] != "trace" or args[1] != "verify":
        return None
    quiet, jobs, paths = False, 1, []
    rest = iter(args[2:])
    for arg in rest:
        if arg in ("-q", "--quiet"):
            quiet = True
        elif arg in ("-j", "--jobs"):
            value = next(rest, "")
            if not (value.isascii() and value.isdigit() and 1 <= int(value) <= MAX_JOBS):
                return None  # (the CLI's usage error, worded)
            jobs = int(value)
        elif arg.startswith("-"):
            return None  # another option, "--", or "-" (standard input: read once, by the CLI)
        else:
            paths.append(arg)
    if not quiet or not paths:
        return None
    from ract_cli.verify.verifier import verify_paths

    try:
        report = verify_paths(paths, quick_verify_options(jobs))
    except KeyboardInterrupt:
        return 130  # (as the CLI's typer.Abort)
    except Exception:  # (verify changes nothing: the CLI reads it again and says what went wrong)
        return None
    return int(report.exit_code)
