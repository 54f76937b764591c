"""``verify``: read each log through the chain reader and report (SPEC §2-3)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from .discovery import discover
from .errors import ExitCode, UsageError, lowest_nonzero
from .findings import Finding, error
from .kinds import LATEST_SCHEMA_VERSION
from .model import HEX64
from .reader import DEFAULT_MAX_LINE_BYTES, ChainReader


@dataclass(frozen=True)
class VerifyOptions:
    schema_version: int = LATEST_SCHEMA_VERSION
    require_closed: bool = False
    expect_head: str | None = None
    max_findings: int | None = None
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    jobs: int = 1


@dataclass
class FileReport:
    """The verdict on one file; ``to_dict`` is the documented JSON shape."""

    path: str
    exit_code: ExitCode
    events: int
    head: str | None
    first_ts: int | None
    last_ts: int | None
    findings: list[Finding]
    suppressed: int = 0  # findings past --max-findings, counted not kept

    @property
    def ok(self) -> bool:
        return self.exit_code == ExitCode.OK

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "ok": self.ok,
            "exit_code": int(self.exit_code),
            "events": self.events,
            "head": self.head,
            "first_ts": self.first_ts,
            "last_ts": self.last_ts,
            "findings": [f.to_dict() for f in self.findings],
            "suppressed_findings": self.suppressed,
        }


@dataclass
class VerifyReport:
    files: list[FileReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # path-level (IO) findings with no file report

    @property
    def exit_code(self) -> ExitCode:
        return lowest_nonzero([*(f.exit_code for f in self.files), *(f.exit_code for f in self.findings)])

    def to_dict(self) -> dict:
        files = [f.to_dict() for f in self.files]
        for finding in self.findings:  # a path that gave no file still appears, as a failed entry
            files.append({"path": finding.path, "ok": False, "exit_code": int(finding.exit_code), "events": 0,
                          "head": None, "first_ts": None, "last_ts": None, "findings": [finding.to_dict()],
                          "suppressed_findings": 0})
        return {"exit_code": int(self.exit_code), "files": files}


def check_options(options: VerifyOptions, n_files: int | None = None) -> None:
    if options.expect_head is not None and not HEX64.fullmatch(options.expect_head):
        raise UsageError("--expect-head must be 64 lowercase hex characters")
    if options.expect_head is not None and n_files is not None and n_files > 1:
        raise UsageError("--expect-head applies to a single log; give exactly one file")
    if options.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if options.max_findings is not None and options.max_findings < 1:
        raise UsageError("--max-findings must be at least 1")


def verify_file(path: str | os.PathLike[str], options: VerifyOptions = VerifyOptions()) -> FileReport:
    """Verify one log sequentially through the one chain reader."""
    reader = ChainReader(path, schema_version=options.schema_version, require_closed=options.require_closed,
                         max_line_bytes=options.max_line_bytes, max_findings=options.max_findings)
    reader.read_all()
    state = reader.state
    if options.expect_head is not None and state.head != options.expect_head:
        state.add(error("HEAD_MISMATCH", "chain head differs from --expect-head", path=str(path),
                        expected=options.expect_head, actual=state.head))
    return FileReport(str(path), state.exit_code, state.events, state.head, state.first_ts, state.last_ts,
                      state.findings, state.suppressed)


def verify_paths(paths: Sequence[str | os.PathLike[str]], options: VerifyOptions = VerifyOptions()) -> VerifyReport:
    """Verify every log under the given files and directories."""
    found = discover(paths)
    check_options(options, len(found.files) + len(found.findings))
    report = VerifyReport(findings=list(found.findings))
    for path in found.files:
        report.files.append(verify_file(path, options))
    return report
