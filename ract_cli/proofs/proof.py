"""C2SP tlog-proof files for one event of a log (SPEC §14), and consistency proofs between checkpoints.

Inclusion (``c2sp.org/tlog-proof@v1``)::

    c2sp.org/tlog-proof@v1
    extra <base64 of the event's line bytes, exactly as in the log>
    index <0-based index of the event>
    <base64 hash>            (the inclusion proof, the leaf's sibling first)
    ...
                             (an empty line)
    <the checkpoint note, verbatim>

``verify_proof`` needs no log: the checkpoint's signature, the event's hash
recomputed from its line (SPEC §2.3, the reader's own ``analyze_line``), its
leaf hash, then the inclusion proof against the checkpoint's root.

Consistency (the body of a C2SP tlog-witness ``add-checkpoint`` request)::

    old <size of the older checkpoint>
    <base64 hash>            (RFC 9162 §2.1.4 consistency proof)
    ...
                             (an empty line)
    <the newer checkpoint note, verbatim>

checked against an older checkpoint the auditor holds: both signatures, then
that the newer tree only appended to the older one.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from ract_cli.errors import ExitCode, UsageError
from ract_cli.findings import ERROR, FINDING_CODES, Finding, error, exit_code_for
from ract_cli.proofs.checkpoint import (
    Checkpoint,
    CheckpointCheck,
    CheckpointError,
    CheckpointRefused,
    event_leaf,
    open_check,
    read_log_tree,
    refusal,
)
from ract_cli.proofs.merkle import (
    InclusionProver,
    RangeHasher,
    consistency_ranges,
    verify_consistency,
    verify_inclusion,
)
from ract_cli.proofs.note import NoteError, VerifierKey, b64decode_strict, b64encode, parse_note
from ract_cli.read.line import analyze_line

TLOG_PROOF_HEADER = "c2sp.org/tlog-proof@v1"
_DECIMAL = re.compile(r"0|[1-9][0-9]*")
MAX_PROOF_HASHES = 64  # a tree of at most 2^64 leaves


class ProofFormatError(ValueError):
    """A proof file that does not parse."""


def _split_header(data: bytes, what: str) -> tuple[list[str], bytes]:
    """The header lines of a proof (up to its first empty line) and the checkpoint bytes after it."""
    end = data.find(b"\n\n")
    if end < 0:
        raise ProofFormatError(f"{what} has no empty line before its checkpoint")
    try:
        head = data[:end].decode("utf-8")
    except UnicodeDecodeError:
        raise ProofFormatError(f"{what} is not valid UTF-8") from None
    if any(ord(ch) < 0x20 and ch != "\n" for ch in head):
        raise ProofFormatError(f"{what} holds a control character (CRLF line endings?)")
    checkpoint = data[end + 2 :]
    if not checkpoint:
        raise ProofFormatError(f"{what} has no checkpoint after its empty line")
    return head.split("\n"), checkpoint


def _hashes(lines: list[str], what: str) -> list[bytes]:
    if len(lines) > MAX_PROOF_HASHES:
        raise ProofFormatError(f"{what} has more than {MAX_PROOF_HASHES} hashes")
    out = []
    for n, line in enumerate(lines, 1):
        try:
            value = b64decode_strict(line, f"{what} hash {n}")
        except NoteError as exc:
            raise ProofFormatError(exc.message) from None
        if len(value) != 32:
            raise ProofFormatError(f"{what} hash {n} is {len(value)} bytes, not 32")
        out.append(value)
    return out


def _decimal(text: str, what: str) -> int:
    if not _DECIMAL.fullmatch(text):
        raise ProofFormatError(f"{what} is not a decimal number without leading zeros")
    value = int(text)
    if value >= 2**64:
        raise ProofFormatError(f"{what} is larger than 2^64 - 1")
    return value


@dataclass(frozen=True)
class TlogProof:
    """A parsed ``c2sp.org/tlog-proof@v1`` file."""

    index: int
    hashes: tuple[bytes, ...]
    checkpoint: bytes  # the checkpoint note, verbatim
    extra: bytes | None = None

    def to_bytes(self) -> bytes:
        lines = [TLOG_PROOF_HEADER]
        if self.extra is not None:
            lines.append(f"extra {b64encode(self.extra)}")
        lines.append(f"index {self.index}")
        lines.extend(b64encode(h) for h in self.hashes)
        return ("\n".join(lines) + "\n\n").encode("ascii") + self.checkpoint

    @classmethod
    def parse(cls, data: bytes) -> TlogProof:
        lines, checkpoint = _split_header(data, "proof")
        if lines[0] != TLOG_PROOF_HEADER:
            raise ProofFormatError(f"proof does not start with {TLOG_PROOF_HEADER}")
        rest = lines[1:]
        extra = None
        if rest and rest[0].startswith("extra "):
            try:
                extra = b64decode_strict(rest[0][len("extra ") :], "proof extra data")
            except NoteError as exc:
                raise ProofFormatError(exc.message) from None
            rest = rest[1:]
        if not rest or not rest[0].startswith("index "):
            raise ProofFormatError("proof has no index line")
        index = _decimal(rest[0][len("index ") :], "proof index")
        return cls(index, tuple(_hashes(rest[1:], "proof")), checkpoint, extra)


@dataclass(frozen=True)
class ConsistencyProof:
    """``old SIZE``, the RFC 9162 consistency proof hashes, the newer checkpoint verbatim."""

    old_size: int
    hashes: tuple[bytes, ...]
    checkpoint: bytes

    def to_bytes(self) -> bytes:
        lines = [f"old {self.old_size}", *(b64encode(h) for h in self.hashes)]
        return ("\n".join(lines) + "\n\n").encode("ascii") + self.checkpoint

    @classmethod
    def parse(cls, data: bytes) -> ConsistencyProof:
        lines, checkpoint = _split_header(data, "consistency proof")
        if not lines[0].startswith("old "):
            raise ProofFormatError("consistency proof does not start with 'old SIZE'")
        old = _decimal(lines[0][len("old ") :], "old size")
        return cls(old, tuple(_hashes(lines[1:], "consistency proof")), checkpoint)


def proof_kind(data: bytes) -> str:
    """``"inclusion"``, ``"consistency"`` or ``"unknown"``, from the first line."""
    if data.startswith(TLOG_PROOF_HEADER.encode() + b"\n"):
        return "inclusion"
    if data.startswith(b"old "):
        return "consistency"
    return "unknown"


# --- making proofs ----------------------------------------------------------------


def _unverified_checkpoint(data: bytes) -> Checkpoint:
    """The checkpoint a note holds, structure only (``prove`` has no key to verify it with)."""
    try:
        return Checkpoint.parse(parse_note(data).text)
    except NoteError as exc:
        raise UsageError(f"checkpoint is not a signed note: {exc.message}") from None
    except CheckpointError as exc:
        raise UsageError(f"checkpoint is not a tlog-checkpoint: {exc}") from None


@dataclass
class ProofMade:
    proof: TlogProof
    checkpoint: Checkpoint
    line: int  # the event's line in the log
    event: dict[str, Any]

    def to_bytes(self) -> bytes:
        return self.proof.to_bytes()


def make_proof(
    path: str | os.PathLike[str],
    checkpoint_note: bytes,
    *,
    event_id: str | None = None,
    line: int | None = None,
) -> ProofMade:
    """The tlog-proof of one event (by id or 1-based line) against a checkpoint of the log (SPEC §14).

    One streaming pass, O(log n) memory beside the reader's id set. Refuses (``CheckpointRefused``) a
    log that does not verify, holds fewer events than the checkpoint
    (``CHECKPOINT_TRUNCATED``) or whose first N events have another root
    (``CHECKPOINT_MISMATCH``); ``UsageError`` when no such event is covered.
    """
    if (event_id is None) == (line is None):
        raise UsageError("name the event with exactly one of --event ID or --line N")
    cp = _unverified_checkpoint(checkpoint_note)
    if cp.size == 0:
        raise UsageError("the checkpoint covers no event (tree size 0)")
    prover = InclusionProver(cp.size)
    found: dict[str, Any] = {}

    def on_event(index: int, ev: Any, leaf: bytes) -> None:
        target = not found and (ev.line == line if line is not None else ev.event.get("id") == event_id)
        if target:
            found.update(index=index, line=ev.line, raw=ev.raw, event=ev.event)
            if index >= cp.size:
                return  # not covered: said below, once the log is read
        prover.add(leaf, target=target)

    tree = read_log_tree(path, on_event=on_event)
    if tree.exit_code != ExitCode.OK:
        raise refusal(tree, "no proof is made from a log that fails verification")
    if tree.size < cp.size:
        finding = error(
            "CHECKPOINT_TRUNCATED",
            f"the log holds {tree.size} events, the checkpoint {cp.size}",
            path=tree.path,
        )
        raise CheckpointRefused(f"{tree.path}: {finding.message}", [finding], ExitCode.TAMPERED)
    if prover.root != cp.root:
        finding = error(
            "CHECKPOINT_MISMATCH",
            f"the log's first {cp.size} event(s) do not have the checkpoint's root",
            path=tree.path,
            expected=cp.root_hex,
            actual=prover.root.hex() if prover.root else None,
        )
        raise CheckpointRefused(f"{tree.path}: {finding.message}", [finding], ExitCode.TAMPERED)
    what = f"event {event_id}" if event_id is not None else f"line {line}"
    if not found:
        raise UsageError(f"{tree.path}: no {what} in the log ({tree.size} events)")
    if found["index"] >= cp.size:
        raise UsageError(
            f"{tree.path}: {what} is event {found['index'] + 1}, after the {cp.size} events the checkpoint "
            "covers: make a newer checkpoint"
        )
    proof = TlogProof(found["index"], tuple(prover.proof()), checkpoint_note, extra=found["raw"])
    return ProofMade(proof, cp, found["line"], found["event"])


def make_consistency_proof(path: str | os.PathLike[str], old_note: bytes, new_note: bytes) -> ConsistencyProof:
    """RFC 9162 consistency proof from an older checkpoint of the log to a newer one, from the log."""
    old, new = _unverified_checkpoint(old_note), _unverified_checkpoint(new_note)
    if old.size > new.size:
        raise UsageError(f"--from-checkpoint ({old.size} events) is newer than --checkpoint ({new.size})")
    ranges = consistency_ranges(old.size, new.size)
    hasher = RangeHasher(ranges)
    tree = read_log_tree(path, sizes=[old.size, new.size], on_event=lambda i, ev, leaf: hasher.add(leaf))
    if tree.exit_code != ExitCode.OK:
        raise refusal(tree, "no proof is made from a log that fails verification")
    for cp, label in ((old, "--from-checkpoint"), (new, "--checkpoint")):
        if cp.size > tree.size:
            finding = error("CHECKPOINT_TRUNCATED", f"{label}: the log holds {tree.size} events, not {cp.size}")
            raise CheckpointRefused(f"{tree.path}: {finding.message}", [finding], ExitCode.TAMPERED)
        if tree.roots[cp.size] != cp.root:
            finding = error("CHECKPOINT_MISMATCH", f"{label}: the log's first {cp.size} events have another root")
            raise CheckpointRefused(f"{tree.path}: {finding.message}", [finding], ExitCode.TAMPERED)
    return ConsistencyProof(old.size, tuple(hasher.hashes()), new_note)


# --- verifying proofs ---------------------------------------------------------------


@dataclass
class ProofVerdict:
    """What ``verify_proof`` found: findings (none when the proof holds) and what it proves."""

    source: str
    kind: str  # "inclusion" or "consistency"
    findings: list[Finding] = field(default_factory=list)
    checkpoint: Checkpoint | None = None
    signers: list[str] = field(default_factory=list)
    index: int | None = None
    event: dict[str, Any] | None = None  # the proven event (inclusion)
    line: bytes | None = None  # its line bytes, from ``extra``
    old_checkpoint: Checkpoint | None = None  # consistency

    @property
    def ok(self) -> bool:
        return self.exit_code == ExitCode.OK

    @property
    def exit_code(self) -> ExitCode:
        return exit_code_for(self.findings)

    def to_dict(self) -> dict[str, Any]:
        cp = self.checkpoint
        data: dict[str, Any] = {
            "proof": self.source,
            "kind": self.kind,
            "ok": self.ok,
            "origin": cp.origin if cp else None,
            "size": cp.size if cp else None,
            "root": cp.root_hex if cp else None,
            "signed_by": self.signers,
        }
        if self.kind == "inclusion":
            data["index"] = self.index
            data["event"] = self.event if self.ok else None
        else:
            old = self.old_checkpoint
            data["old_size"] = old.size if old else None
            data["old_root"] = old.root_hex if old else None
        data["findings"] = [f.to_dict() for f in self.findings]
        return data


def _checked_checkpoint(
    verdict: ProofVerdict, note: bytes, verifiers: list[VerifierKey], origin: str | None, label: str
) -> CheckpointCheck | None:
    check = open_check(note, verifiers, label, verdict.source)
    verdict.findings.extend(check.findings)
    if check.checkpoint is None:
        return None
    if origin is not None and check.checkpoint.origin != origin:
        verdict.findings.append(
            error(
                "CHECKPOINT_ORIGIN",
                f"{label}: origin is not the one expected",
                path=verdict.source,
                expected=origin,
                actual=check.checkpoint.origin,
            )
        )
        return None
    return check


def verify_proof(
    data: bytes,
    verifiers: list[VerifierKey],
    *,
    origin: str | None = None,
    old_checkpoint: bytes | None = None,
    source: str = "proof",
) -> ProofVerdict:
    """Check a proof file offline (SPEC §14 ``verify-proof``); never raises on hostile input."""
    kind = proof_kind(data)
    if kind == "consistency":
        return _verify_consistency(data, verifiers, origin, old_checkpoint, source)
    verdict = ProofVerdict(source, "inclusion")
    try:
        proof = TlogProof.parse(data)
    except ProofFormatError as exc:
        verdict.findings.append(error("PROOF_MALFORMED", f"not a {TLOG_PROOF_HEADER} file: {exc}", path=source))
        return verdict
    verdict.index = proof.index
    check = _checked_checkpoint(verdict, proof.checkpoint, verifiers, origin, "the proof's checkpoint")
    if check is None or check.checkpoint is None:
        return verdict
    cp = verdict.checkpoint = check.checkpoint
    verdict.signers = check.signers
    leaf = _event_leaf_from_extra(verdict, proof.extra)
    if leaf is None:
        return verdict
    if not verify_inclusion(proof.index, cp.size, leaf, proof.hashes, cp.root):
        reason = (
            f"index {proof.index} is outside the checkpoint's {cp.size} events"
            if proof.index >= cp.size
            else f"the inclusion proof of event {proof.index} does not lead to the checkpoint's root"
        )
        verdict.findings.append(
            error("PROOF_INCLUSION", reason, path=source, event_id=_event_id(verdict.event), expected=cp.root_hex)
        )
    return verdict


def _event_id(event: dict[str, Any] | None) -> str | None:
    value = event.get("id") if event else None
    return value if type(value) is str else None


def _event_leaf_from_extra(verdict: ProofVerdict, extra: bytes | None) -> bytes | None:
    """The leaf hash of the event in ``extra``, recomputed from its line (SPEC §2.3); None + a finding if not."""
    if extra is None:
        verdict.findings.append(
            error("PROOF_EVENT", "the proof has no extra line: it carries no event to check", path=verdict.source)
        )
        return None
    verdict.line = extra
    body = extra
    if body.endswith(b"\n"):
        body = body[:-1]
        if body.endswith(b"\r"):
            body = body[:-1]
    if b"\n" in body:
        verdict.findings.append(
            error("PROOF_EVENT", "the proof's extra data is more than one line", path=verdict.source)
        )
        return None
    result = analyze_line(body)
    integrity = [p for p in result.problems if p.severity == ERROR and _is_integrity(p.code)]
    if result.event is None or integrity:
        reasons = "; ".join(f"{p.code} {p.message}" for p in (integrity or result.problems)[:3]) or "not an event"
        verdict.findings.append(
            error(
                "PROOF_EVENT",
                f"the proof's event line does not verify: {reasons}",
                path=verdict.source,
                event_id=_event_id(result.event),
            )
        )
        return None
    verdict.event = result.event
    return event_leaf(result.event)


def _is_integrity(code: str) -> bool:
    entry = FINDING_CODES.get(code)
    return entry is None or entry[0] == ExitCode.TAMPERED


def _verify_consistency(
    data: bytes,
    verifiers: list[VerifierKey],
    origin: str | None,
    old_note: bytes | None,
    source: str,
) -> ProofVerdict:
    verdict = ProofVerdict(source, "consistency")
    try:
        proof = ConsistencyProof.parse(data)
    except ProofFormatError as exc:
        verdict.findings.append(error("PROOF_MALFORMED", f"not a consistency proof: {exc}", path=source))
        return verdict
    if old_note is None:
        raise UsageError("a consistency proof is checked against the older checkpoint: give --from-checkpoint FILE")
    new = _checked_checkpoint(verdict, proof.checkpoint, verifiers, origin, "the proof's checkpoint")
    old = _checked_checkpoint(verdict, old_note, verifiers, origin, "--from-checkpoint")
    if new is None or old is None or new.checkpoint is None or old.checkpoint is None:
        return verdict
    verdict.checkpoint, verdict.old_checkpoint, verdict.signers = new.checkpoint, old.checkpoint, new.signers
    o, n = old.checkpoint, new.checkpoint
    if proof.old_size != o.size:
        verdict.findings.append(
            error(
                "PROOF_CONSISTENCY",
                f"the proof starts from {proof.old_size} events, the older checkpoint has {o.size}",
                path=source,
            )
        )
    elif not verify_consistency(o.size, n.size, o.root, n.root, proof.hashes):
        verdict.findings.append(
            error(
                "PROOF_CONSISTENCY",
                f"the tree of {n.size} events is not an append-only extension of the tree of {o.size}: "
                "the log was rewritten between the two checkpoints (or the proof is wrong)",
                path=source,
            )
        )
    return verdict
