"""What every export format returns (SPEC §12): what was written, and the verdict on the inputs."""

from __future__ import annotations

from dataclasses import dataclass, field

from ract_cli.errors import ExitCode, lowest_nonzero
from ract_cli.export.rows import LogSummary
from ract_cli.findings import Finding


@dataclass
class ExportResult:
    """One export: the logs read (each with its exit code), path-level findings, rows written."""

    output: str
    format: str
    logs: list[LogSummary] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # path-level: a path that gave no log
    counts: dict[str, int] = field(default_factory=dict)  # what was written, e.g. rows per table

    @property
    def exit_code(self) -> ExitCode:
        """SPEC §12: the lowest non-zero verification code of the inputs (everything usable is written)."""
        return lowest_nonzero([*(s.exit_code for s in self.logs), *(f.exit_code for f in self.findings)])
