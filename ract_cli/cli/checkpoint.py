"""``ract trace checkpoint``: a signed C2SP checkpoint of a log as it is (SPEC §14, docs/checkpoints.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ract_cli.cli.app import trace_app
from ract_cli.cli.options import MaxLineBytes, Quiet, SchemaVersion
from ract_cli.cli.render import (
    BROKEN_PIPE_EXIT,
    clean,
    flush_stdout,
    show_refusal,
    silence_stdout,
    stderr_console,
    stdout_closed,
)
from ract_cli.errors import ExitCode
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.read.discovery import resolve_log_path
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES

LogArgument = Annotated[
    str,
    typer.Argument(metavar="LOG", help="The log (or its run directory holding events.jsonl).", show_default=False),
]
OutputOption = Annotated[
    str | None,
    typer.Option("-o", "--output", metavar="FILE", help="Write to FILE (atomically) instead of stdout."),
]


@trace_app.command(
    "checkpoint",
    epilog="Example: ract trace checkpoint evals/runs/RUN/events.jsonl --key ci.skey "
    "--origin example.com/ract/ci --output RUN.checkpoint\n\nSee docs/checkpoints.md.",
)
def checkpoint_command(
    log: LogArgument,
    key: Annotated[
        str, typer.Option("--key", metavar="SKEY", help="The signer key file (ract trace keygen).", show_default=False)
    ],
    origin: Annotated[
        str,
        typer.Option(
            "--origin",
            metavar="ORIGIN",
            help="The checkpoint's first line: who vouches for this log, e.g. example.com/ract/ci "
            "(no spaces or '+'; usually the key's name).",
            show_default=False,
        ),
    ],
    output: OutputOption = None,
    quiet: Quiet = False,
    schema_version: SchemaVersion = LATEST_SCHEMA_VERSION,
    max_line_bytes: MaxLineBytes = DEFAULT_MAX_LINE_BYTES,
) -> None:
    """Sign a C2SP tlog-checkpoint of the log: origin, number of events, RFC 9162 root.

    The note goes to stdout (or --output FILE); a summary goes to stderr. A
    log that does not verify is refused, exit 1 (5 when it cannot be read),
    and nothing is written: a checkpoint must never bless tampering.

    Example: ract trace checkpoint LOG --key ci.skey --origin example.com/ract/ci > LOG.checkpoint
    """

    from ract_cli.proofs.checkpoint import CheckpointRefused, load_signer, make_checkpoint

    console = stderr_console(quiet=quiet)
    try:
        signer = load_signer(key)
        path = resolve_log(log)
        made = make_checkpoint(path, signer, origin, schema_version=schema_version, max_line_bytes=max_line_bytes)
    except CheckpointRefused as exc:
        show_refusal(console, "checkpoint", exc.message, exc.findings)
        console.print("  nothing was written", markup=False)
        raise typer.Exit(int(exc.exit_code)) from None
    code = write_output(console, "checkpoint", made.note, output)
    cp = made.checkpoint
    if code == ExitCode.OK:
        where = f" -> {clean(output)}" if output else ""
        console.print(
            f"checkpoint {clean(made.path)}: {cp.size} events, root {cp.root_hex}, origin {clean(cp.origin)}, "
            f"signed by {clean(signer.name)} ({signer.key_id:08x}){where}",
            markup=False,
        )
    raise typer.Exit(int(code))


def resolve_log(log: str) -> Path:
    """A log file as given, or ``DIR/events.jsonl`` (``ract_cli.resolve_log_path``, as repair takes it)."""
    return resolve_log_path(log)


def write_output(console, command: str, data: bytes, output: str | None) -> int:  # type: ignore[no-untyped-def]
    """``data`` to ``output`` (atomic) or to stdout; the exit code.

    Not written: the error's code (5 for IO, 2 for a directory); stdout closed or its reader gone:
    ``BROKEN_PIPE_EXIT`` (141), as for every command whose output is its data (docs/exit-codes.md).
    """
    from ract_cli.atomic import write_atomic

    if output is not None:
        write_atomic(output, data)  # a RactError (5 for IO, 2 for a directory) is the app's to explain
        return int(ExitCode.OK)
    if stdout_closed():
        stderr_console().print(f"ract trace {command}: stdout is closed: nothing was written", markup=False)
        return BROKEN_PIPE_EXIT
    import sys

    try:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        flush_stdout()
    except BrokenPipeError:
        silence_stdout()
        return BROKEN_PIPE_EXIT
    return int(ExitCode.OK)
