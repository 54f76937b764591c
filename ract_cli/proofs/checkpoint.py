"""C2SP tlog-checkpoints of run logs (SPEC §14): make them, and check a log against them.

A checkpoint is a signed note whose text is exactly::

    <origin>\\n
    <tree size: number of events, decimal>\\n
    <base64 RFC 9162 root over the events' hashes>\\n

The tree's leaves are the log's events in file order; leaf data is the 32
raw bytes of the event's ``hash`` (SPEC §14). The log is streamed through
``ChainReader`` once, keeping O(log n) subtree hashes (and the reader its id set, which grows with the log).

* ``make_checkpoint``: the signed checkpoint of a log as it is; refuses a
  log that does not verify (a checkpoint must never bless tampering).
* ``check_checkpoints``: for ``verify --checkpoint``: every checkpoint's
  signature, then the root of the log's first N events against it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ract_cli.dialects import ChainReader
from ract_cli.errors import ExitCode, RactError, UsageError, lowest_nonzero
from ract_cli.findings import ERROR, Finding, error, exit_code_for, warning
from ract_cli.proofs.files import read_small
from ract_cli.proofs.merkle import TreeBuilder, leaf_hash
from ract_cli.proofs.note import (
    NoteError,
    SignerKey,
    VerifiedNote,
    VerifierKey,
    b64decode_strict,
    b64encode,
    parse_note,
    read_key_file,
    sign_note,
    verify_note,
)
from ract_cli.proofs.sidecar import SIDECAR_SUFFIX, entry_is_torn, split_notes
from ract_cli.read.event import LogEvent

_DECIMAL = re.compile(r"0|[1-9][0-9]*")
MAX_TREE_SIZE = 2**64 - 1  # tlog-checkpoint sizes are uint64 in every implementation
#: findings kept from a log that does not verify (the rest are counted; the exit code counts them all)
MAX_FINDINGS = 1000


class CheckpointError(ValueError):
    """A checkpoint text (note body) that is not a tlog-checkpoint."""


class CheckpointRefused(RactError):
    """``checkpoint``/``prove`` will not act on this log (it does not verify, or does not match)."""

    def __init__(self, message: str, findings: Sequence[Finding], exit_code: ExitCode) -> None:
        super().__init__(message, exit_code=exit_code)
        self.findings = list(findings)


# --- the checkpoint text ------------------------------------------------------


def valid_origin(origin: str) -> bool:
    """What ``checkpoint --origin`` accepts: non-empty, no spaces, ``+`` or control characters.

    tlog-checkpoint only requires non-empty; the rest is its SHOULD (a
    schema-less URL such as ``example.com/ract/ci``), enforced here for the
    checkpoints ract writes so the origin can also be a key name.
    """
    return bool(origin) and "+" not in origin and not any(ch.isspace() or ord(ch) < 0x20 for ch in origin)


@dataclass(frozen=True)
class Checkpoint:
    """A tlog-checkpoint note text: origin, tree size, root hash (and extension lines, kept as read)."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def text(self) -> str:
        lines = [self.origin, str(self.size), b64encode(self.root), *self.extensions]
        return "".join(line + "\n" for line in lines)

    @property
    def root_hex(self) -> str:
        return self.root.hex()

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        """tlog-checkpoint "Note text": at least three non-empty lines, each ending in ``\\n``."""
        if not text.endswith("\n"):
            raise CheckpointError("checkpoint text does not end with a newline")
        lines = text[:-1].split("\n")
        if len(lines) < 3:
            raise CheckpointError("checkpoint text has fewer than three lines (origin, size, root)")
        if any(not line for line in lines):
            raise CheckpointError("checkpoint text holds an empty line")
        origin, size_text, root_text, *extensions = lines
        if not _DECIMAL.fullmatch(size_text):
            raise CheckpointError("checkpoint tree size is not a decimal number without leading zeros")
        size = int(size_text)
        if size > MAX_TREE_SIZE:
            raise CheckpointError("checkpoint tree size is larger than 2^64 - 1")
        try:
            root = b64decode_strict(root_text, "checkpoint root hash")
        except NoteError as exc:
            raise CheckpointError(exc.message) from None
        if len(root) != 32:
            raise CheckpointError(f"checkpoint root hash is {len(root)} bytes, not 32")
        return cls(origin, size, root, tuple(extensions))


@dataclass(frozen=True)
class SignedCheckpoint:
    """A checkpoint whose note verified, with the bytes it was read from."""

    checkpoint: Checkpoint
    note: VerifiedNote
    data: bytes

    @property
    def signers(self) -> list[str]:
        return [f"{v.name} ({v.key_id:08x})" for v in self.note.verified_by]


def open_checkpoint(data: bytes, verifiers: Sequence[VerifierKey]) -> SignedCheckpoint:
    """Verify the note's signature first, then parse its text (``NoteError`` / ``CheckpointError``)."""
    note = verify_note(data, verifiers)
    return SignedCheckpoint(Checkpoint.parse(note.text), note, data)


def sign_checkpoint(checkpoint: Checkpoint, signer: SignerKey) -> bytes:
    return sign_note(checkpoint.text(), [signer])


# --- keys from files ----------------------------------------------------------


def load_signer(path: str | os.PathLike[str]) -> SignerKey:
    """A ``.skey`` file: ``LogIOError`` (exit 5) if unreadable, ``UsageError`` (exit 2) if not a signer key."""
    read_small(path, "signer key", limit=4096)  # the same IO errors as every other input
    try:
        return SignerKey.parse(read_key_file(str(path), kind="signer"))
    except NoteError as exc:
        raise UsageError(f"signer key {path}: {exc.message}") from None


def load_verifiers(paths: Sequence[str | os.PathLike[str]]) -> list[VerifierKey]:
    """``.vkey`` files (each holds one key per line; blank lines and ``#`` comments are skipped)."""
    keys: list[VerifierKey] = []
    for path in paths:
        text = read_small(path, "verifier key", limit=1 << 20)
        try:
            lines = text.decode("utf-8").splitlines()
        except UnicodeDecodeError:
            raise UsageError(f"verifier key {path}: not UTF-8 text") from None
        found = 0
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                keys.append(VerifierKey.parse(line))
            except NoteError as exc:
                raise UsageError(f"verifier key {path}: {exc.message}") from None
            found += 1
        if not found:
            raise UsageError(f"verifier key {path}: holds no key")
    return keys


# --- the log as a tree ----------------------------------------------------------


@dataclass
class LogTree:
    """What one streaming read of a log gave: its verdict and its tree."""

    path: str
    size: int  # events read (the leaves)
    root: bytes  # RFC 9162 root over all of them
    roots: dict[int, bytes]  # root at each size asked for (sizes larger than the log are absent)
    exit_code: ExitCode  # the log's own verification verdict (SPEC §3)
    findings: list[Finding]
    suppressed: int = 0
    builder: TreeBuilder = field(default_factory=TreeBuilder)  # the tree's frontier, to go on appending
    run_log: bool = True  # False: not a RACT run log (a Raxol journal): no tree to make, whatever its verdict


def event_leaf(event: dict[str, Any]) -> bytes:
    """SPEC §14: the leaf hash of an event, SHA-256(0x00 || 32 raw bytes of its ``hash``)."""
    value = event.get("hash")
    if not (type(value) is str and len(value) == 64):
        raise CheckpointError("event has no 64-hex hash")
    try:
        return leaf_hash(bytes.fromhex(value))
    except ValueError:
        raise CheckpointError("event hash is not hex") from None


def read_log_tree(
    path: str | os.PathLike[str],
    *,
    sizes: Sequence[int] = (),
    on_event: Callable[[int, LogEvent, bytes], None] | None = None,
    display_path: str | None = None,
    **reader_options: Any,
) -> LogTree:
    """Stream a log once through ``ChainReader``: its verdict, its root, and its root at each of ``sizes``.

    The leaves are the events the reader yields, in file order (for a log
    that verifies: every line). ``on_event(index, event, leaf)`` sees each.
    Memory: O(log n) hashes plus the reader's state, whose id set grows with the log (docs/reader.md).
    """
    reader_options.setdefault("max_findings", MAX_FINDINGS)
    reader = ChainReader(path, display_path=display_path, **reader_options)
    if reader.dialect != "ract":  # read all the same: its own verdict counts too (the lowest code wins)
        reader.read_all()
        shown = display_path or str(path)
        not_a_log = error("IO_ERROR", "checkpoints cover RACT run logs (SPEC §14); this is a Raxol journal", path=shown)
        return LogTree(
            path=shown,
            size=0,
            root=TreeBuilder().root(),
            roots={},
            exit_code=lowest_nonzero([reader.exit_code, ExitCode.IO]),
            findings=[*reader.findings, not_a_log],
            suppressed=0,
            builder=TreeBuilder(),
            run_log=False,
        )
    builder = TreeBuilder()
    wanted = sorted({s for s in sizes if s >= 0})
    roots: dict[int, bytes] = {}
    if wanted and wanted[0] == 0:
        roots[0] = builder.root()
        wanted.pop(0)
    for ev in reader:
        leaf = event_leaf(ev.event)
        if on_event is not None:
            on_event(builder.size, ev, leaf)
        builder.append(leaf)
        while wanted and wanted[0] == builder.size:
            roots[builder.size] = builder.root()
            wanted.pop(0)
    return LogTree(
        path=display_path or str(path),
        size=builder.size,
        root=builder.root(),
        roots=roots,
        exit_code=ExitCode(reader.exit_code),
        findings=list(reader.findings),
        suppressed=getattr(getattr(reader, "state", None), "suppressed", 0),
        builder=builder,
    )


def refusal(tree: LogTree, why: str) -> CheckpointRefused:
    """Why a command will not act on a log that does not verify: exit 1 (SPEC §14), whatever the log's
    own verdict (named in the message), but 5 for what is no run log to verify (SPEC §3's IO): missing,
    unreadable or not a log (``NOT_A_LOG``) with nothing worse found, or a Raxol journal, whatever its own."""
    errors = [f for f in tree.findings if f.severity == ERROR]
    if tree.exit_code == ExitCode.IO or not tree.run_log:
        # (past the findings kept, the IO finding may be only counted: the verdict decides, not the list)
        unreadable = next((f for f in reversed(errors) if f.exit_code == ExitCode.IO), None)
        said = unreadable.message if unreadable else f"{tree.path} cannot be read as a run log (verify: exit 5 IO)"
        return CheckpointRefused(said, [f for f in errors if f is not unreadable], ExitCode.IO)
    return CheckpointRefused(
        f"{tree.path} does not verify (verify: exit {int(tree.exit_code)} {tree.exit_code.name}): {why}",
        errors,
        ExitCode.TAMPERED,
    )


# --- checkpoint ---------------------------------------------------------------


@dataclass
class CheckpointMade:
    path: str
    checkpoint: Checkpoint
    note: bytes
    findings: list[Finding]  # the log's warnings (it verified)


def make_checkpoint(
    path: str | os.PathLike[str], signer: SignerKey, origin: str, **reader_options: Any
) -> CheckpointMade:
    """The signed checkpoint of the log as it is now (SPEC §14).

    Refuses (``CheckpointRefused``) a log that does not verify: exit 1, or 5
    when there is no run log to verify (``refusal``).
    """
    if not valid_origin(origin):
        raise UsageError(f"invalid origin {origin[:80]!r}: non-empty, without spaces, '+' or control characters")
    tree = read_log_tree(path, **reader_options)
    if tree.exit_code != ExitCode.OK:
        raise refusal(tree, "a checkpoint must never bless a log that fails verification")
    checkpoint = Checkpoint(origin, tree.size, tree.root)
    return CheckpointMade(tree.path, checkpoint, sign_checkpoint(checkpoint, signer), tree.findings)


# --- verify --checkpoint ----------------------------------------------------------


@dataclass
class CheckpointCheck:
    """One checkpoint file's result against the log."""

    source: str  # the checkpoint file (or a label)
    checkpoint: Checkpoint | None  # None when its signature did not verify
    signers: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(f.severity == ERROR for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        cp = self.checkpoint
        return {
            "checkpoint": self.source,
            "ok": self.ok,
            "origin": cp.origin if cp else None,
            "size": cp.size if cp else None,
            "root": cp.root_hex if cp else None,
            "signed_by": self.signers,
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass
class CheckpointReport:
    """``check_checkpoints``'s answer: a finding per failed checkpoint, and what the good ones cover."""

    path: str
    events: int  # events in the log now
    checks: list[CheckpointCheck]
    log_exit_code: ExitCode  # the log's own chain verdict, from the same read (verify reports its findings)
    signed: bool = True  # False: a plain verify's look at the sealing sidecar, no key to check signatures with

    @property
    def findings(self) -> list[Finding]:
        return [f for c in self.checks for f in c.findings]

    @property
    def exit_code(self) -> ExitCode:
        """The checkpoints' verdict alone (the chain's findings are verify's to report)."""
        return exit_code_for(self.findings)

    @property
    def ok(self) -> bool:
        return self.exit_code == ExitCode.OK

    @property
    def covered(self) -> int | None:
        """Events the newest holding checkpoint covers (the largest size among those that hold)."""
        sizes = [c.checkpoint.size for c in self.checks if c.ok and c.checkpoint is not None]
        return max(sizes) if sizes else None

    def summary(self) -> str:
        """One line for a verdict: ``checkpoint covers 120 of 130 events`` or what failed."""
        n = len(self.checks)
        held = sum(c.ok for c in self.checks)
        if self.covered is None and not any(c.checkpoint is not None or not c.ok for c in self.checks):
            return "no checkpoint to check (nothing readable in it)"
        if self.covered is None:
            return f"no checkpoint holds ({n - held} of {n} failed)"
        grown = f" (the log grew by {self.events - self.covered} since)" if self.events > self.covered else ""
        which = f"{held} of {n} checkpoints hold" if n > 1 else "checkpoint holds"
        unsigned = "" if self.signed else " (sizes only: signatures and roots are checked with --vkey)"
        return f"{which}: covers {self.covered} of {self.events} events{grown}{unsigned}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "events": self.events,
            "covered": self.covered,
            "ok": self.ok,
            "signatures_checked": self.signed,
            "checkpoints": [c.to_dict() for c in self.checks],
        }


def check_checkpoints(
    path: str | os.PathLike[str],
    checkpoints: list[str],
    vkeys: list[str],
    *,
    display_path: str | None = None,
    **reader_options: Any,
) -> CheckpointReport:
    """``verify LOG --checkpoint FILE... --vkey FILE...`` (SPEC §14), as data.

    ``checkpoints`` and ``vkeys`` are file paths (a checkpoint file may
    also be a sealing sidecar holding several, see ``seal.py``). Each
    checkpoint must verify with one of the keys (``CHECKPOINT_SIGNATURE``),
    the log must hold at least its size in events (``CHECKPOINT_TRUNCATED``)
    and its first N events must have its root (``CHECKPOINT_MISMATCH``); all
    exit 1. A log that only grew since holds. Raises ``UsageError`` for a
    bad or missing vkey and ``LogIOError`` for an unreadable vkey; an
    unreadable checkpoint file is an ``IO_ERROR`` finding.
    """
    verifiers = load_verifiers(vkeys)
    if not checkpoints:
        raise UsageError("give at least one --checkpoint")
    shown = display_path or str(path)
    checks: list[CheckpointCheck] = []
    for source in checkpoints:
        checks.extend(_open_checks(source, verifiers, shown))
    sizes = [c.checkpoint.size for c in checks if c.checkpoint is not None]
    tree = read_log_tree(path, sizes=sizes, display_path=display_path, **reader_options)
    for check in checks:
        cp = check.checkpoint
        if cp is None:
            continue
        label = f"checkpoint {check.source} ({cp.origin}, {cp.size} events)"
        if cp.size > tree.size:
            check.findings.append(_truncated(check, tree.size, shown))
        elif tree.roots[cp.size] != cp.root:
            check.findings.append(
                error(
                    "CHECKPOINT_MISMATCH",
                    f"{label}: the log's first {cp.size} events have another Merkle root: "
                    "the log was rewritten since the checkpoint",
                    path=shown,
                    expected=cp.root_hex,
                    actual=tree.roots[cp.size].hex(),
                )
            )
    return CheckpointReport(shown, tree.size, checks, tree.exit_code)


def check_seal_sizes(sidecar: str, events: int, log_exit_code: ExitCode, *, display_path: str) -> CheckpointReport:
    """What a plain ``verify`` (no ``--checkpoint``, no ``--vkey``) does with the sealing sidecar beside a
    log of ``events`` events (SPEC §14: a truncated log is caught with no head kept elsewhere).

    With no key neither a seal's signature nor, then, its root is worth
    checking (whoever could rewrite the log could rewrite the sidecar), so
    only its size is: a seal that covers more events than the log holds is
    ``CHECKPOINT_TRUNCATED`` (exit 1), from the count of the read just done
    (no second read). A sidecar that cannot be read and a note that does
    not parse are warnings: only ``--vkey`` makes a seal binding. This can
    fail a log, never pass one a signed check would fail.
    """
    checks = [_unsigned(c) for c in _open_checks(sidecar, None, display_path)]
    for check in checks:
        if check.checkpoint is not None and check.checkpoint.size > events:
            check.findings.append(_truncated(check, events, display_path))
    return CheckpointReport(display_path, events, checks, log_exit_code, signed=False)


def _truncated(check: CheckpointCheck, events: int, shown: str) -> Finding:
    """``CHECKPOINT_TRUNCATED``: the checkpoint of ``check`` covers more than the log's ``events``."""
    cp = check.checkpoint
    assert cp is not None
    return error(
        "CHECKPOINT_TRUNCATED",
        f"checkpoint {check.source} ({cp.origin}, {cp.size} events): the log holds only {events} events: "
        "it was truncated since the checkpoint",
        path=shown,
        expected=f">= {cp.size} events",
        actual=f"{events} events",
    )


def _unsigned(check: CheckpointCheck) -> CheckpointCheck:
    """A check of a plain verify's: what it could not read is said, as a warning (no key makes it binding)."""
    for i, f in enumerate(check.findings):
        if f.severity == ERROR:
            check.findings[i] = warning(f.code, f"{f.message} (its seals are not checked)", path=f.path)
    return check


def _open_checks(source: str, verifiers: Sequence[VerifierKey] | None, shown: str) -> list[CheckpointCheck]:
    try:
        data = read_small(source, "checkpoint")
    except RactError as exc:
        return [CheckpointCheck(source, None, findings=[error("IO_ERROR", exc.message, path=shown)])]
    notes = split_notes(data) or [data]
    checks = []
    if str(source).endswith(SIDECAR_SUFFIX) and entry_is_torn(notes[-1]):
        torn = CheckpointCheck(
            f"{source}#{len(notes)}",
            None,
            findings=[
                warning(
                    "CHECKPOINT_TORN",
                    f"sidecar {source}: its last checkpoint is cut short (a writer killed while sealing); ignored",
                    path=shown,
                )
            ],
        )
        notes = notes[:-1]
        checks.append(torn)
    for i, note in enumerate(notes, 1):
        label = source if len(notes) == 1 else f"{source}#{i}"
        checks.append(open_check(note, verifiers, label, shown))
    return checks


def open_check(data: bytes, verifiers: Sequence[VerifierKey] | None, label: str, shown: str) -> CheckpointCheck:
    """One checkpoint note's signature and text, as a ``CheckpointCheck`` (a finding when it fails);
    ``verifiers`` None: its text only (a plain verify's sidecar, no key: ``check_seal_sizes`` makes a
    note that does not parse a warning)."""
    try:
        if verifiers is None:
            return CheckpointCheck(label, Checkpoint.parse(parse_note(data).text))
        signed = open_checkpoint(data, verifiers)
    except (NoteError, CheckpointError) as exc:
        message = exc.message if isinstance(exc, NoteError) else str(exc)
        return CheckpointCheck(
            label,
            None,
            findings=[error("CHECKPOINT_SIGNATURE", f"checkpoint {label}: {message}", path=shown)],
        )
    return CheckpointCheck(label, signed.checkpoint, signers=signed.signers)
