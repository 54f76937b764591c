"""What one ``grep`` takes and gives, as data: its options, a match, the verdict on one file."""

from __future__ import annotations

from dataclasses import dataclass, field

from ract_cli.errors import ExitCode
from ract_cli.findings import Finding
from ract_cli.format.json_types import Event, Report
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.read.line import DEFAULT_MAX_LINE_BYTES

__all__ = ["DEFAULT_MAX_FINDINGS", "FileResult", "GrepOptions", "Match"]

DEFAULT_MAX_FINDINGS = 100  # per file: keeps memory bounded on a hostile log; the exit code still counts the rest


@dataclass(frozen=True)
class GrepOptions:
    verify: bool = True
    schema_version: int = LATEST_SCHEMA_VERSION
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_findings: int | None = DEFAULT_MAX_FINDINGS
    dialect: str = "auto"  # "auto" | "ract" | "raxol" (SPEC §8), as ChainReader takes it
    jobs: int = 1  # worker processes across files (see GrepSearch); output is the same for any value


@dataclass(slots=True)
class Match:
    """One matching event: where it is, its exact bytes, and the parsed event."""

    path: str
    line: int  # 1-based
    offset: int  # byte offset of the line's first byte
    raw: bytes  # the line exactly as in the file, line ending included
    event: Event

    def to_dict(self) -> Report:
        """The documented JSON shape of one match (``--format json``)."""
        return {"path": self.path, "line": self.line, "offset": self.offset, "event": self.event}


@dataclass
class FileResult:
    """What grep learned about one file (or one path that gave no file)."""

    path: str
    matches: int = 0
    exit_code: ExitCode = ExitCode.OK
    findings: list[Finding] = field(default_factory=list)
    suppressed: int = 0  # findings past max_findings: counted in exit_code, not kept
    verified: bool = True  # False under --no-verify
    stopped_at: int | None = None  # line of the integrity failure where grep abandoned the file
    is_file: bool = True  # False: a path that gave no log file at all (discovery finding)

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
