"""Findings: what every check produces (SPEC §3), and how they map to exit codes.

A finding is data. The reader produces them; commands render them. The table
``FINDING_CODES`` is the single place that says which exit code a finding
code carries, so every command agrees.
"""

from __future__ import annotations

from collections.abc import Iterable

from ract_cli.errors import ExitCode, lowest_nonzero
from ract_cli.records import Record

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import Any

ERROR = "error"
WARNING = "warning"

#: finding code -> (exit code it carries when it is an error, one-line meaning)
FINDING_CODES: dict[str, tuple[ExitCode, str]] = {
    # integrity (1)
    "MALFORMED_LINE": (ExitCode.TAMPERED, "line is not exactly one JSON object"),
    "DUPLICATE_KEY": (ExitCode.TAMPERED, "an object repeats a key (the hash would be ambiguous)"),
    "LINE_TOO_LONG": (ExitCode.TAMPERED, "line exceeds --max-line-bytes and cannot be checked"),
    "ENVELOPE_ERROR": (ExitCode.TAMPERED, "missing, extra or mistyped envelope key"),
    "HASH_MISMATCH": (ExitCode.TAMPERED, "stored hash differs from the canonical hash"),
    "CHAIN_BREAK": (ExitCode.TAMPERED, "prev_hash does not equal the previous event's hash"),
    "MISSING_GENESIS": (ExitCode.TAMPERED, "first event's prev_hash is not 64 zeros"),
    "FOREIGN_RUN_ID": (ExitCode.TAMPERED, "event run_id differs from the log's run_id"),
    "DUPLICATE_ID": (ExitCode.TAMPERED, "event id already used earlier in this file"),
    "HEAD_MISMATCH": (ExitCode.TAMPERED, "chain head differs from --expect-head"),
    # checkpoints and proofs (SPEC §14; docs/checkpoints.md)
    "CHECKPOINT_SIGNATURE": (ExitCode.TAMPERED, "checkpoint is not a signed note that verifies with the --vkey given"),
    "CHECKPOINT_TRUNCATED": (ExitCode.TAMPERED, "log holds fewer events than its signed checkpoint"),
    "CHECKPOINT_MISMATCH": (ExitCode.TAMPERED, "log's first N events do not have the checkpoint's Merkle root"),
    "CHECKPOINT_ORIGIN": (ExitCode.TAMPERED, "checkpoint's origin differs from --origin"),
    "PROOF_MALFORMED": (ExitCode.TAMPERED, "proof file is not a c2sp.org/tlog-proof@v1 (or consistency) proof"),
    "PROOF_EVENT": (ExitCode.TAMPERED, "proof's event line is missing or does not verify (SPEC §2.3)"),
    "PROOF_INCLUSION": (ExitCode.TAMPERED, "inclusion proof does not lead to the checkpoint's root"),
    "PROOF_CONSISTENCY": (ExitCode.TAMPERED, "newer checkpoint's tree does not extend the older one's"),
    "CHECKPOINT_TORN": (ExitCode.OK, "sidecar's last checkpoint is cut short (writer killed while sealing)"),
    # schema (3)
    "UNKNOWN_KIND": (ExitCode.SCHEMA, "kind outside the selected schema version's vocabulary"),
    "PAYLOAD_INVALID": (ExitCode.SCHEMA, "payload violates its kind's schema"),
    "CONTRACT_VIOLATION": (ExitCode.SCHEMA, "journal record violates the Raxol contract"),
    # incomplete (4)
    "TORN_TAIL": (ExitCode.INCOMPLETE, "last line is cut short (writer killed mid-write)"),
    "OPEN_RUN": (ExitCode.INCOMPLETE, "run was never closed"),
    "EMPTY_LOG": (ExitCode.INCOMPLETE, "log holds no event"),
    # io (5)
    "IO_ERROR": (ExitCode.IO, "path missing, unreadable or not a log"),
    "NOT_A_LOG": (ExitCode.IO, "non-empty file in which no line is a JSON object with `kind` or `type`"),
    # warnings only (exit 0)
    "MISSING_FINAL_NEWLINE": (ExitCode.OK, "last event lacks its newline"),
    "CLOCK_REGRESSION": (ExitCode.OK, "timestamp goes backwards"),
    "RUN_DIR_MISMATCH": (ExitCode.OK, "directory name differs from run_id"),
    "OPEN_HANDLE": (ExitCode.OK, "an opened step/tool call/prompt/handshake was never closed"),
    "REPAIRED": (ExitCode.OK, "log holds synthesized closes written by repair"),
    "UNKNOWN_TYPE": (ExitCode.OK, "journal record type outside the known vocabulary"),
    "CONTRACT_WARNING": (ExitCode.OK, "journal record is legal but suspicious"),
    # replay's workspace checks (SPEC §5; see docs/replay.md)
    "HEAD_DIVERGED": (
        ExitCode.DIVERGED,
        "workspace HEAD differs from the run's initial snapshot (error under --strict-head)",
    ),
    "COMMIT_MISSING": (ExitCode.DIVERGED, "--check-commits: a step's snapshot is not a commit of the repository"),
    "COMMIT_UNRELATED": (
        ExitCode.DIVERGED,
        "--check-commits: parent_snapshot_after does not descend from parent_snapshot_before",
    ),
    "WORKTREE_DIRTY": (ExitCode.OK, "workspace has uncommitted changes or untracked files"),
    "PRECONDITION_UNCHECKED": (
        ExitCode.OK,
        "replay's determinism precondition cannot be checked (no repository, no snapshot)",
    ),
}


class Finding(Record):
    """One result of one check, located in one file (SPEC §3)."""

    __slots__ = ("code", "severity", "message", "path", "line", "offset", "event_id", "expected", "actual")
    code: str
    severity: str
    message: str
    path: str | None
    line: int | None
    offset: int | None
    event_id: str | None
    expected: str | None
    actual: str | None

    def __init__(
        self,
        code: str,
        severity: str,
        message: str,
        path: str | None = None,
        line: int | None = None,
        offset: int | None = None,
        event_id: str | None = None,
        expected: str | None = None,
        actual: str | None = None,
    ) -> None:
        self.code = code
        self.severity = severity
        self.message = message
        self.path = path
        self.line = line
        self.offset = offset
        self.event_id = event_id
        self.expected = expected
        self.actual = actual

    @property
    def exit_code(self) -> ExitCode:
        if self.severity != ERROR:
            return ExitCode.OK
        return FINDING_CODES[self.code][0]

    @property
    def is_integrity_failure(self) -> bool:
        return self.exit_code == ExitCode.TAMPERED

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "offset": self.offset,
            "event_id": self.event_id,
            "message": self.message,
        }
        if self.expected is not None:
            data["expected"] = self.expected
        if self.actual is not None:
            data["actual"] = self.actual
        return data


def error(code: str, message: str, **where: Any) -> Finding:
    assert code in FINDING_CODES, code
    return Finding(code=code, severity=ERROR, message=message, **where)


def warning(code: str, message: str, **where: Any) -> Finding:
    assert code in FINDING_CODES, code
    return Finding(code=code, severity=WARNING, message=message, **where)


def exit_code_for(findings: Iterable[Finding]) -> ExitCode:
    """SPEC §3: the lowest non-zero exit code among the findings."""
    return lowest_nonzero(f.exit_code for f in findings)
