"""``ract trace prove`` and ``ract trace verify-proof``: C2SP tlog-proofs of events (SPEC §14).

``prove`` writes the proof that one event is in a signed checkpoint of its
log (or, with ``--from-checkpoint``, that a newer checkpoint extends an older
one); ``verify-proof`` checks such a file offline, without the log.
"""

from __future__ import annotations

import enum
import json
from typing import Annotated

import typer

from ract_cli.cli.app import trace_app
from ract_cli.cli.checkpoint import LogArgument, OutputOption, resolve_log, write_output
from ract_cli.cli.options import Quiet
from ract_cli.cli.render import (
    ci_safe,
    clean,
    dumps_json,
    finding_line,
    flush_stdout,
    show_refusal,
    silence_stdout,
    stderr_console,
    stdout_closed,
)
from ract_cli.errors import ExitCode, UsageError

CheckpointFile = Annotated[
    str,
    typer.Option(
        "--checkpoint", metavar="FILE", help="The signed checkpoint (ract trace checkpoint).", show_default=False
    ),
]
FromCheckpoint = Annotated[
    str | None,
    typer.Option(
        "--from-checkpoint",
        metavar="OLD",
        help="An older checkpoint of the same log: prove (or check) that --checkpoint only appended to it "
        "(an RFC 9162 consistency proof).",
    ),
]
VkeyFiles = Annotated[
    list[str],
    typer.Option(
        "--vkey",
        metavar="FILE",
        help="Verifier key file (ract trace keygen); repeat for several trusted keys.",
        show_default=False,
    ),
]


@trace_app.command(
    "prove",
    epilog="Examples:\n\n"
    "ract trace prove LOG --line 42 --checkpoint LOG.checkpoint --output event42.tlog-proof\n\n"
    "ract trace prove LOG --from-checkpoint OLD.checkpoint --checkpoint NEW.checkpoint > grew.proof\n\n"
    "See docs/checkpoints.md.",
)
def prove_command(
    log: LogArgument,
    checkpoint: CheckpointFile,
    event: Annotated[str | None, typer.Option("--event", metavar="ID", help="The event's id.")] = None,
    line: Annotated[int | None, typer.Option("--line", min=1, metavar="N", help="The event's 1-based line.")] = None,
    from_checkpoint: FromCheckpoint = None,
    output: OutputOption = None,
    quiet: Quiet = False,
) -> None:
    """Write a c2sp.org/tlog-proof@v1 file: one event is in the checkpointed log.

    The proof holds the event's line (base64, the extra line), its index,
    its RFC 9162 inclusion proof and the checkpoint verbatim, so anyone with
    the verifier key can check it without the log (ract trace verify-proof).
    The log is read once, in O(log n) memory; one that does not verify, or
    does not match the checkpoint, is refused (exit 1) and nothing is written.

    Example: ract trace prove LOG --event ID --checkpoint LOG.checkpoint > ID.tlog-proof
    """

    from ract_cli.proofs.checkpoint import CheckpointRefused
    from ract_cli.proofs.files import read_small
    from ract_cli.proofs.proof import make_consistency_proof, make_proof

    console = stderr_console(quiet=quiet)
    try:
        if from_checkpoint is not None and (event is not None or line is not None):
            raise UsageError("--from-checkpoint proves a checkpoint, not an event: drop --event / --line")
        if from_checkpoint is None and (event is None) == (line is None):
            raise UsageError("name the event with exactly one of --event ID or --line N")
        note = read_small(checkpoint, "checkpoint")
        path = resolve_log(log)
        if from_checkpoint is not None:
            consistency = make_consistency_proof(path, read_small(from_checkpoint, "checkpoint"), note)
            data = consistency.to_bytes()
            summary = (
                f"consistency proof {clean(path)}: {consistency.old_size} -> the checkpoint's events, "
                f"{len(consistency.hashes)} hashes"
            )
        else:
            made = make_proof(path, note, event_id=event, line=line)
            data = made.to_bytes()
            cp = made.checkpoint
            summary = (
                f"proof {clean(path)}: event {clean(made.event.get('id'))} ({clean(made.event.get('kind'))}, "
                f"line {made.line}, index {made.proof.index}) in {clean(cp.origin)}'s checkpoint of {cp.size} "
                f"events, {len(made.proof.hashes)} hashes"
            )
    except CheckpointRefused as exc:
        show_refusal(console, "prove", exc.message, exc.findings)
        console.print("  nothing was written", markup=False)
        raise typer.Exit(int(exc.exit_code)) from None
    code = write_output(console, "prove", data, output)
    if code == ExitCode.OK:
        console.print(summary + (f" -> {clean(output)}" if output else ""), markup=False)
    raise typer.Exit(int(code))


class ProofFormat(enum.StrEnum):
    text = "text"
    json = "json"


@trace_app.command(
    "verify-proof",
    epilog="Examples:\n\n"
    "ract trace verify-proof event42.tlog-proof --vkey ci.vkey\n\n"
    "ract trace verify-proof grew.proof --vkey ci.vkey --from-checkpoint OLD.checkpoint\n\n"
    "See docs/checkpoints.md and docs/exit-codes.md.",
)
def verify_proof_command(
    proof: Annotated[
        str, typer.Argument(metavar="PROOF", help="The proof file (ract trace prove).", show_default=False)
    ],
    vkey: VkeyFiles,
    origin: Annotated[
        str | None,
        typer.Option("--origin", metavar="ORIGIN", help="The checkpoint must have this origin (CHECKPOINT_ORIGIN)."),
    ] = None,
    from_checkpoint: FromCheckpoint = None,
    format: Annotated[
        ProofFormat,
        typer.Option(
            "--format",
            case_sensitive=False,
            help="text: the event as JSON on stdout, the verdict on stderr; json: one report on stdout.",
        ),
    ] = ProofFormat.text,
    quiet: Quiet = False,
) -> None:
    """Check a proof offline: the checkpoint's signature, the event's hash, the inclusion proof.

    The event's hash is recomputed from its line (SPEC §2.3), hashed as an
    RFC 9162 leaf and carried up the inclusion proof to the signed root. On
    success the event is printed (JSON, non-ASCII escaped) and the exit code
    is 0; otherwise a finding (CHECKPOINT_SIGNATURE, PROOF_EVENT,
    PROOF_INCLUSION...) and exit 1. No log is needed.

    Example: ract trace verify-proof event42.tlog-proof --vkey ci.vkey
    """
    from ract_cli.proofs.checkpoint import load_verifiers
    from ract_cli.proofs.files import read_small
    from ract_cli.proofs.proof import verify_proof

    console = stderr_console(quiet=quiet)
    verifiers = load_verifiers(vkey)
    data = read_small(proof, "proof")
    old = read_small(from_checkpoint, "checkpoint") if from_checkpoint is not None else None
    verdict = verify_proof(data, verifiers, origin=origin, old_checkpoint=old, source=proof)
    code = int(verdict.exit_code)
    if quiet:
        raise typer.Exit(code)
    if format is ProofFormat.json:
        _echo(dumps_json(verdict.to_dict(), indent=True))
        raise typer.Exit(code)
    cp = verdict.checkpoint
    if verdict.ok and cp is not None:
        signers = ", ".join(verdict.signers)
        if verdict.kind == "inclusion" and verdict.event is not None:
            ev = verdict.event
            console.print(
                f"PASS {clean(proof)}  event {clean(ev.get('id'))} ({clean(ev.get('kind'))}) is event "
                f"{verdict.index} of {clean(cp.origin)}'s checkpoint of {cp.size} events, signed by {clean(signers)}",
                markup=False,
            )
            _echo(json.dumps(ev, ensure_ascii=True, separators=(",", ":")))
        elif verdict.old_checkpoint is not None:
            console.print(
                f"PASS {clean(proof)}  {clean(cp.origin)}'s checkpoint of {cp.size} events extends the one of "
                f"{verdict.old_checkpoint.size} events (append-only), signed by {clean(signers)}",
                markup=False,
            )
        raise typer.Exit(code)
    console.print(f"FAIL {clean(proof)}  exit {code} ({ExitCode(code).name})", markup=False)
    for f in verdict.findings:
        console.print(finding_line(f), markup=False)
    raise typer.Exit(code)


def _echo(text: str) -> None:
    """Data on stdout; a closed stdout or a reader gone leaves the exit code the verdict."""
    if stdout_closed():
        stderr_console().print("ract trace verify-proof: stdout is closed: the output was not written", markup=False)
        return
    try:
        typer.echo(ci_safe(text, json=True))  # JSON only: "##[" in a string is written "##\u005b"
        flush_stdout()
    except BrokenPipeError:
        silence_stdout()
