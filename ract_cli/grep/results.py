"""What one ``grep`` takes and gives, as data: its options, a match, the verdict on one file."""

from __future__ import annotations

from ract_cli.errors import ExitCode
from ract_cli.findings import Finding
from ract_cli.format.json_types import Event, Report
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES
from ract_cli.records import FrozenRecord, Record

__all__ = ["DEFAULT_MAX_FINDINGS", "FileResult", "GrepOptions", "Match"]

DEFAULT_MAX_FINDINGS = 100  # per file: keeps memory bounded on a hostile log; the exit code still counts the rest


class GrepOptions(FrozenRecord):
    __slots__ = ("verify", "schema_version", "max_line_bytes", "max_findings", "dialect", "jobs")
    verify: bool
    schema_version: int
    max_line_bytes: int
    max_findings: int | None
    dialect: str  # "auto" | "ract" | "raxol" (SPEC §8), as ChainReader takes it
    jobs: int  # worker processes across files (see GrepSearch); output is the same for any value

    def __init__(
        self,
        verify: bool = True,
        schema_version: int = LATEST_SCHEMA_VERSION,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_findings: int | None = DEFAULT_MAX_FINDINGS,
        dialect: str = "auto",
        jobs: int = 1,
    ) -> None:
        self._freeze(verify, schema_version, max_line_bytes, max_findings, dialect, jobs)


class Match(Record):
    """One matching event: where it is, its exact bytes, and the parsed event."""

    __slots__ = ("path", "line", "offset", "raw", "event")
    path: str
    line: int  # 1-based
    offset: int  # byte offset of the line's first byte
    raw: bytes  # the line exactly as in the file, line ending included
    event: Event

    def __init__(self, path: str, line: int, offset: int, raw: bytes, event: Event) -> None:
        self.path = path
        self.line = line
        self.offset = offset
        self.raw = raw
        self.event = event

    def to_dict(self) -> Report:
        """The documented JSON shape of one match (``--format json``)."""
        return {"path": self.path, "line": self.line, "offset": self.offset, "event": self.event}


class FileResult(Record):
    """What grep learned about one file (or one path that gave no file)."""

    __slots__ = ("path", "matches", "exit_code", "findings", "suppressed", "verified", "stopped_at", "is_file")
    path: str
    matches: int
    exit_code: ExitCode
    findings: list[Finding]
    suppressed: int  # findings past max_findings: counted in exit_code, not kept
    verified: bool  # False under --no-verify
    stopped_at: int | None  # line of the integrity failure where grep abandoned the file
    is_file: bool  # False: a path that gave no log file at all (discovery finding)

    def __init__(
        self,
        path: str,
        matches: int = 0,
        exit_code: ExitCode = ExitCode.OK,
        findings: list[Finding] | None = None,
        suppressed: int = 0,
        verified: bool = True,
        stopped_at: int | None = None,
        is_file: bool = True,
    ) -> None:
        self.path = path
        self.matches = matches
        self.exit_code = exit_code
        self.findings = [] if findings is None else findings
        self.suppressed = suppressed
        self.verified = verified
        self.stopped_at = stopped_at
        self.is_file = is_file

    def to_dict(self) -> Report:
        return {
            "path": self.path,
            "matches": self.matches,
            "exit_code": int(self.exit_code),
            "verified": self.verified,
            "stopped_at": self.stopped_at,
            "findings": [f.to_dict() for f in self.findings],
            "suppressed_findings": self.suppressed,
        }
