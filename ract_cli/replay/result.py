"""The verdict of one replay, as data (shared by RACT logs and Raxol journals)."""

from __future__ import annotations

from dataclasses import dataclass

from ract_cli.errors import ExitCode, lowest_nonzero
from ract_cli.findings import Finding
from ract_cli.format.json_types import Report
from ract_cli.replay.workspace import WorkspaceReport


@dataclass
class ReplayResult:
    """The verdict of one replay, as data."""

    path: str
    events: int  # events replayed (shown)
    stop: str  # "end" | "until" | "break"
    until_reached: bool | None  # None when no --until was given
    broken_at: int | None  # line of the first integrity failure
    state: Report  # the state where replay stopped (ReplayState.to_dict())
    findings: list[Finding]  # the reader's, then the workspace's and --check-commits'
    workspace: WorkspaceReport | None
    suppressed: int = 0  # reader findings past ``max_findings``: counted, not kept
    chain_exit_code: ExitCode = ExitCode.OK  # the chain reader's verdict, suppressed findings included

    @property
    def exit_code(self) -> ExitCode:
        """SPEC §3: lowest non-zero code; ``--until`` naming no replayed event adds USAGE (2)."""
        codes = [f.exit_code for f in self.findings]
        codes.append(self.chain_exit_code)
        if self.until_reached is False:
            codes.append(ExitCode.USAGE)
        return lowest_nonzero(codes)

    def to_dict(self) -> Report:
        return {
            "path": self.path,
            "exit_code": int(self.exit_code),
            "events": self.events,
            "stop": self.stop,
            "until_reached": self.until_reached,
            "broken_at": self.broken_at,
            "state": self.state,
            "findings": [f.to_dict() for f in self.findings],
            "workspace": self.workspace.to_dict() if self.workspace else None,
            "suppressed_findings": self.suppressed,
        }
