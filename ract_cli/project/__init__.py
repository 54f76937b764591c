"""``ract trace project`` (SPEC §7): the run report, a projection over the log."""

from ract_cli.project.report import (
    FLAG_CODES,
    REPORT_VERSION,
    STATUSES,
    ProjectOptions,
    Projector,
    ProjectResult,
    percentiles,
    project_events,
    project_file,
    project_paths,
)

__all__ = [
    "FLAG_CODES",
    "REPORT_VERSION",
    "STATUSES",
    "ProjectOptions",
    "ProjectResult",
    "Projector",
    "percentiles",
    "project_events",
    "project_file",
    "project_paths",
]
