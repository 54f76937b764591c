"""``ProjectResult``: the reports of every log found, and the JSON shape of several."""

from __future__ import annotations

from dataclasses import dataclass, field

from ract_cli.errors import ExitCode, lowest_nonzero
from ract_cli.findings import Finding
from ract_cli.format.json_types import JSONObject, Report
from ract_cli.project.options import REPORT_VERSION


@dataclass
class ProjectResult:
    """Reports for every log found, plus path-level findings (a missing path...)."""

    runs: list[Report] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    detailed: bool = True  # one log given as a file: render it in detail; else a fleet summary

    @property
    def exit_code(self) -> ExitCode:
        """SPEC §3: the lowest non-zero code over every file and path."""
        return lowest_nonzero([*(r["exit_code"] for r in self.runs), *(f.exit_code for f in self.findings)])

    def totals(self) -> JSONObject:
        by_status: dict[str, int] = {}
        for r in self.runs:
            by_status[r["status"]] = by_status.get(r["status"], 0) + 1
        return {
            "runs": len(self.runs),
            "by_status": dict(sorted(by_status.items())),
            "untrusted": sum(1 for r in self.runs if not r["trusted"]),
            "flagged": sum(1 for r in self.runs if r["audit_flags"]["count"]),
            "events": sum(r["chain"]["events"] for r in self.runs),
        }

    def to_dict(self) -> Report:
        """JSON shape: the run report itself when detailed, else ``{"runs": [...], ...}``."""
        if self.detailed and len(self.runs) == 1 and not self.findings:
            return self.runs[0]
        return {
            "report_version": REPORT_VERSION,
            "exit_code": int(self.exit_code),
            "runs": self.runs,
            "totals": self.totals(),
            "findings": [f.to_dict() for f in self.findings],
        }
