"""The ``ract`` executable: ``--version``, a quiet verify and a plain grep are answered before the CLI is imported.

``ract --version`` is what a script runs to learn which core it gets (SPEC
§11): it needs neither typer, nor rich, nor a command module, so it imports
none of them. ``ract trace verify [-q] [--format F] [--require-closed] [--jobs N]
PATH...``, what CI runs on every log, is verified and printed here without
typer (``cli/verify_report.py``, the CLI's own output functions) and, unless
stderr is a terminal, without rich: 40 ms of the ~130 ms a ``-q`` call took on
a small log, ~90 ms of a call that prints its verdicts (start-up, issue 14). ``ract trace grep --kind PATTERN... [--jobs N] [--no-verify] PATH...`` into a
pipe, what an auditor or a benchmark runs, prints the matched lines as the CLI
does, through the same streaming loop (``cli/grep_report.py``), without typer
or (until something is said on stderr) rich: ~0.1 s of a 1 s search of a
250 MB log. Anything else, and any error before a byte is printed, goes to
``ract_cli.cli.app.main``, which then runs the same command again and says
what went wrong.
"""

from __future__ import annotations

import gc
import os
import sys

from ract_cli import __version__
from ract_cli.cli.limits import COMPLETE_VAR, DEFAULT_MAX_FINDINGS, MAX_JOBS
from ract_cli.errors import RactError
from ract_cli.read.core import core_name

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import NoReturn

    from ract_cli.verify.verifier import VerifyOptions

VERSION_FLAGS = (["--version"], ["-V"])


def version_line() -> str:
    """``ract X.Y.Z (core: native|python)`` (SPEC §11); raises ``UsageError`` on a bad ``RACT_CORE``."""
    return f"ract {__version__} (core: {core_name()})"


def run() -> NoReturn:
    """The ``ract`` executable (and ``python -m ract_cli``): ``main``, then exit with its code.

    Before the interpreter shuts down, every object the call made is frozen out of the garbage
    collector: the collections that shutdown runs would otherwise walk them all to free a process
    that is about to end, ~7 ms of a 50 ms call (``bench/rows_startup.py``). Objects are still freed by
    their counts, and atexit handlers still run; in-process callers (tests) use ``main``, which
    freezes nothing. Ctrl-C in the ~25 ms before a command catches it itself (its modules load lazily)
    exits 130 without a traceback too.
    """
    try:
        code = main()
    except KeyboardInterrupt:  # Ctrl-C while a command's modules still load: 130, as during the command itself
        code = 130
    gc.freeze()
    sys.exit(code)


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
            except OSError as exc:  # (no space left...): as the CLI says it
                from ract_cli.cli.render import explain_os_error

                return explain_os_error(None, exc)
            return 0
    if COMPLETE_VAR in os.environ:  # a shell asks for completions: typer answers
        from ract_cli.cli.app import main as complete

        return complete(args)
    try:
        for quick in (_quick_verify, _quick_project, _quick_grep):
            if (verdict := quick(args)) is not None:
                return verdict
    except BrokenPipeError:
        raise
    except OSError as exc:  # (a stdout that cannot be written: no space left...): as the CLI says it
        from ract_cli.cli.render import explain_os_error

        return explain_os_error(args[1] if len(args) > 1 else None, exc)
    from ract_cli.cli.app import main as run

    return run(args)


def quick_verify_options(jobs: int | None, *, require_closed: bool = False) -> VerifyOptions:
    """What ``trace verify`` runs with when given only ``--jobs`` (None: not given), ``--require-closed``, the
    output options and paths: its defaults."""
    from ract_cli.read.parallel import AUTO_JOBS
    from ract_cli.verify.verifier import VerifyOptions

    return VerifyOptions(
        max_findings=DEFAULT_MAX_FINDINGS, jobs=AUTO_JOBS if jobs is None else jobs, require_closed=require_closed
    )


def _jobs(value: str) -> int | None:
    """``--jobs``' value as the CLI takes it, or None (the CLI's usage error, worded)."""
    if not value.isascii() or not value.isdigit() or len(value) > 4:  # (int() refuses 4,300 digits and more)
        return None
    return int(value) if 1 <= int(value) <= MAX_JOBS else None


class _Call:
    """A ``trace verify`` or ``trace project`` command line the quick paths take: the options they know."""

    __slots__ = ("fmt", "jobs", "paths", "quiet", "require_closed")

    def __init__(self) -> None:
        self.quiet = False
        self.require_closed = False
        self.jobs: int | None = None  # (not given: the library picks the number)
        self.fmt: str | None = None  # (not given)
        self.paths: list[str] = []


def _parse(args: list[str], command: str, formats: tuple[str, ...], *, fold_case: bool) -> _Call | None:
    """``trace COMMAND`` with only ``-q``, ``--require-closed``, ``--format`` (one of ``formats``; any case
    with ``fold_case``, as click's choice ignoring case), ``--jobs N`` and paths, each a name
    that does not start with ``-``; else None (another option, ``--``, or ``-``: standard input, read once,
    by the CLI)."""
    if len(args) < 3 or args[0] != "trace" or args[1] != command:
        return None
    call = _Call()
    rest = iter(args[2:])
    for arg in rest:
        if arg in ("-q", "--quiet"):
            call.quiet = True
        elif arg == "--require-closed":
            call.require_closed = True
        elif arg in ("-j", "--jobs"):
            call.jobs = _jobs(next(rest, ""))
            if call.jobs is None:
                return None
        elif arg == "--format" or arg.startswith("--format="):
            fmt = arg[len("--format=") :] if "=" in arg else next(rest, "")
            call.fmt = fmt.lower() if fold_case else fmt
            if call.fmt not in formats:
                return None
        elif arg.startswith("-"):
            return None
        else:
            call.paths.append(arg)
    return call if call.paths else None


def _quick_verify(args: list[str]) -> int | None:
    """The exit code of ``trace verify [-q] [--format text|json|github] [--require-closed] [--jobs N] PATH...``
    printed as the CLI prints it (``cli/verify_report.py``), or None: the CLI runs it (any other form, a
    progress bar to draw on a terminal, or an error to be said)."""
    # (--format's values: cli/verify_report.Format, which the CLI takes in any case)
    if (call := _parse(args, "verify", ("text", "json", "github"), fold_case=True)) is None:
        return None
    quiet, fmt = call.quiet, call.fmt or "text"
    from ract_cli.cli.render import progress_enabled

    if progress_enabled(quiet=quiet, json=fmt == "json"):
        return None  # stderr is a terminal: the CLI draws the bar over a large log
    from ract_cli.verify.verifier import verify_paths

    try:
        report = verify_paths(call.paths, quick_verify_options(call.jobs, require_closed=call.require_closed))
    except KeyboardInterrupt:
        return 130  # (as the CLI's typer.Abort)
    except Exception:  # (verify changes nothing: the CLI reads it again and says what went wrong)
        return None
    if not quiet:
        from ract_cli.cli.verify_report import Format, render

        try:
            render(report, Format(fmt))
        except KeyboardInterrupt:
            return 130
        except RactError as exc:  # stdout cannot be written (a full disk): said as the CLI's boundary says it
            from ract_cli.cli.render import explain_failure

            return explain_failure("verify", exc)
    return int(report.exit_code)


def _quick_project(args: list[str]) -> int | None:
    """The exit code of ``trace project [-q] [--format json] [--require-closed] [--jobs N] PATH...`` with the report in
    JSON (asked for, or the default into a pipe), printed as the CLI prints it (``cli/project_output.py``),
    or None: the CLI runs it (any other form, or an error to be said)."""
    if (call := _parse(args, "project", ("json",), fold_case=False)) is None:
        return None  # (text, Markdown and HTML are rendered by the CLI)
    quiet = call.quiet
    from ract_cli.cli.render import flush_stdout, silence_stdout, stdout_closed, stdout_is_terminal

    # the CLI's default form: text on a terminal, JSON otherwise (-q never looks at stdout)
    if call.fmt is None and not quiet and stdout_is_terminal():
        return None
    from ract_cli.project.options import ProjectOptions
    from ract_cli.project.report import project_paths
    from ract_cli.read.parallel import AUTO_JOBS

    try:
        options = ProjectOptions(require_closed=call.require_closed, jobs=AUTO_JOBS if call.jobs is None else call.jobs)
        result = project_paths(call.paths, options, as_written=not quiet)  # (kept as the JSON writes them)
    except KeyboardInterrupt:
        return 130
    except Exception:  # (project changes nothing: the CLI reads it again and says what went wrong)
        return None
    if quiet:
        return int(result.exit_code)
    from ract_cli.cli.project_output import verdicts, write_json
    from ract_cli.cli.render import write_stderr_lines

    try:
        verdicts(result)
        if stdout_closed():  # started with `>&-`: the exit code is the verdict
            write_stderr_lines(["ract trace project: stdout is closed: the report was not written"])
        else:
            try:
                write_json(result)
                flush_stdout()
            except BrokenPipeError:
                silence_stdout()  # the reader went away (`| head`): the exit code still carries the verdict
    except KeyboardInterrupt:
        return 130
    except RactError as exc:  # stdout cannot be written (a full disk): said as the CLI's boundary says it
        from ract_cli.cli.render import explain_failure

        return explain_failure("project", exc)
    return int(result.exit_code)


def _quick_grep(args: list[str]) -> int | None:
    """The exit code of ``trace grep --kind PATTERN... [--jobs N] [--no-verify] PATH...`` (only those options,
    each value and path a word that does not start with ``-``) with stdout and stderr not terminals (the CLI's
    output there: the lines byte for byte, no progress bar), or None: the CLI runs it (any other form, or an
    error before the search starts, to be said)."""
    if len(args) < 5 or args[0] != "trace" or args[1] != "grep":
        return None
    kinds: list[str] = []
    jobs: int | None = None  # (not given: the search picks the number)
    paths, verify = [], True
    rest = iter(args[2:])
    for arg in rest:
        if arg == "--no-verify":
            verify = False
        elif arg in ("-k", "--kind"):
            value = next(rest, "-")
            if value.startswith("-"):
                return None
            kinds.append(value)
        elif arg in ("-j", "--jobs"):
            if (n := _jobs(next(rest, ""))) is None:
                return None
            jobs = n
        elif arg.startswith("-"):
            return None
        else:
            paths.append(arg)
    from ract_cli.cli.render import explain_failure, stderr_is_terminal, stdout_closed, stdout_is_terminal

    if not kinds or not paths or stdout_closed() or stdout_is_terminal() or stderr_is_terminal():
        return None
    from ract_cli.cli.grep_output import OUT, JsonlSink
    from ract_cli.cli.grep_report import Stderr, stream, warn
    from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
    from ract_cli.grep.filters import build_filter
    from ract_cli.grep.results import GrepOptions
    from ract_cli.grep.search import grep_paths
    from ract_cli.read.parallel import AUTO_JOBS

    options = GrepOptions(verify=verify, schema_version=LATEST_SCHEMA_VERSION, jobs=AUTO_JOBS if jobs is None else jobs)
    try:
        flt = build_filter(kinds=kinds)
        search = grep_paths(paths, flt, options)
    except KeyboardInterrupt:
        return 130
    except Exception:  # (nothing printed yet: the CLI runs it again and says what went wrong)
        return None
    err = Stderr()
    try:
        warn(err, kinds, LATEST_SCHEMA_VERSION, no_verify=not verify)
        OUT.reset()
        return stream(err, search, JsonlSink(terminal=False, with_filename=False))
    except KeyboardInterrupt:
        return 130
    except RactError as exc:  # (as the CLI's one boundary says it)
        return explain_failure("grep", exc)
