"""Signed checkpoints and inclusion proofs for run logs (SPEC §14), in the transparency-log formats.

* ``merkle``: RFC 9162 §2.1 trees (leaf/node hashes, streaming roots, inclusion and consistency proofs);
* ``note``: C2SP signed notes, Ed25519 keys in Go's ``golang.org/x/mod/sumdb/note`` text forms;
* ``checkpoint``: C2SP tlog-checkpoints of a log; ``check_checkpoints`` for ``verify --checkpoint``;
* ``proof``: C2SP tlog-proof files for one event, consistency proofs between two checkpoints;
* ``seal``: ``Sealer`` (what ``EventWriter(seal_key=...)`` drives) and ``SealingWriter``: a checkpoint every N
  events in a sidecar beside the log.

No typer, no rich: the CLI is ``ract_cli.cli.keygen`` / ``checkpoint`` / ``prove``. See docs/checkpoints.md.
"""

from ract_cli.proofs.checkpoint import (
    Checkpoint,
    CheckpointCheck,
    CheckpointRefused,
    CheckpointReport,
    check_checkpoints,
    load_signer,
    load_verifiers,
    make_checkpoint,
    open_checkpoint,
    read_log_tree,
)
from ract_cli.proofs.note import NoteError, SignatureError, SignerKey, VerifierKey, sign_note, verify_note
from ract_cli.proofs.proof import (
    ConsistencyProof,
    ProofVerdict,
    TlogProof,
    make_consistency_proof,
    make_proof,
    verify_proof,
)
from ract_cli.proofs.seal import Sealer, SealingWriter, seal
from ract_cli.proofs.sidecar import find_sidecar, sidecar_path

__all__ = [
    "Checkpoint",
    "CheckpointCheck",
    "CheckpointRefused",
    "CheckpointReport",
    "ConsistencyProof",
    "NoteError",
    "ProofVerdict",
    "Sealer",
    "SealingWriter",
    "SignatureError",
    "SignerKey",
    "TlogProof",
    "VerifierKey",
    "check_checkpoints",
    "find_sidecar",
    "load_signer",
    "load_verifiers",
    "make_checkpoint",
    "make_consistency_proof",
    "make_proof",
    "open_checkpoint",
    "read_log_tree",
    "seal",
    "sidecar_path",
    "sign_note",
    "verify_note",
    "verify_proof",
]
