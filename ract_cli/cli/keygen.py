"""``ract trace keygen``: an Ed25519 key pair for signing checkpoints (SPEC §14, docs/checkpoints.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ract_cli.cli.app import trace_app
from ract_cli.cli.options import Quiet
from ract_cli.cli.render import clean, flush_stdout, silence_stdout, stderr_console, stdout_closed
from ract_cli.errors import ExitCode, RactError, UsageError


@trace_app.command(
    "keygen",
    epilog="Example: ract trace keygen example.com/ract/ci --output ci\n\n"
    "writes ci.skey (secret, mode 0600) and ci.vkey (give it to verifiers). See docs/checkpoints.md.",
)
def keygen_command(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            help="Key name, e.g. example.com/ract/ci (no spaces or '+'); use it as the checkpoints' --origin.",
            show_default=False,
        ),
    ],
    output: Annotated[
        str,
        typer.Option("-o", "--output", metavar="PREFIX", help="Write PREFIX.skey and PREFIX.vkey.", show_default=False),
    ],
    force: Annotated[bool, typer.Option("--force", help="Replace PREFIX.skey / PREFIX.vkey if they exist.")] = False,
    quiet: Quiet = False,
) -> None:
    """Generate an Ed25519 key pair in the text forms of Go's golang.org/x/mod/sumdb/note.

    PREFIX.skey holds PRIVATE+KEY+NAME+HASH+BASE64 (mode 0600: keep it
    secret); PREFIX.vkey holds NAME+HASH+BASE64, also printed on stdout.
    An existing file is never replaced without --force (exit 2).

    Example: ract trace keygen example.com/ract/ci --output ci
    """
    from ract_cli.atomic import write_atomic
    from ract_cli.proofs.note import NoteError, SignerKey

    console = stderr_console(quiet=quiet)
    skey_path, vkey_path = Path(output + ".skey"), Path(output + ".vkey")
    try:
        key = SignerKey.generate(name)
    except NoteError as exc:
        raise UsageError(exc.message) from None
    if not force:
        for p in (skey_path, vkey_path):
            if p.exists() or p.is_symlink():
                raise UsageError(f"{p} already exists: refusing to replace a key (use --force)")
    write_atomic(skey_path, (key.text() + "\n").encode("utf-8"), mode=0o600, overwrite=force)
    try:
        write_atomic(vkey_path, (key.verifier().text() + "\n").encode("utf-8"), mode=0o644, overwrite=force)
    except RactError:
        if not force:
            skey_path.unlink(missing_ok=True)  # never leave a secret key without its verifier key
        raise
    console.print(
        f"wrote {clean(skey_path)} (secret signer key, mode 0600) and {clean(vkey_path)} "
        f"(verifier key {clean(key.name)} {key.key_id:08x})",
        markup=False,
    )
    if not stdout_closed():
        try:
            typer.echo(key.verifier().text())
            flush_stdout()
        except BrokenPipeError:
            silence_stdout()
    raise typer.Exit(int(ExitCode.OK))
