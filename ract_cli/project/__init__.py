"""``ract trace project`` (SPEC §7): the run report, a projection over the log.

``report`` reads logs (``project_file``, ``project_paths``); ``projector``
folds events (``Projector``), one module per concern of the report (``run``,
``steps``, ``tools``, ``providers``, ``predicates``, ``handshakes``,
``sandbox``, ``signals``); ``trust`` adds what only the reader knows;
``result`` holds the reports of many logs; ``markdown`` is the documented
Markdown form (the JSON form is ``ProjectResult.to_dict``); ``html`` the HTML
page (``html_assets``: its style, script and CSP), with the timeline of
``timeline`` (collected) and ``timeline_svg`` (drawn); ``journal`` is a
Raxol journal's report.
"""

from ract_cli.project.flags import FLAG_CODES
from ract_cli.project.options import DEFAULT_MAX_ITEMS, REPORT_VERSION, STATUSES, ProjectOptions
from ract_cli.project.projector import Projector
from ract_cli.project.report import RunProjection, project_events, project_file, project_paths
from ract_cli.project.result import ProjectResult
from ract_cli.project.tallies import percentiles

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from ract_cli.project.markdown import to_markdown

__all__ = [
    "DEFAULT_MAX_ITEMS",
    "FLAG_CODES",
    "REPORT_VERSION",
    "STATUSES",
    "ProjectOptions",
    "ProjectResult",
    "Projector",
    "RunProjection",
    "percentiles",
    "project_events",
    "project_file",
    "project_paths",
    "to_markdown",
]


if not TYPE_CHECKING:  # (mypy sees the import above, and still flags a name this module does not have)

    def __getattr__(name: str) -> object:
        """``to_markdown``, imported when first asked for: a JSON report (``project``'s quick path) needs none
        of the Markdown form (start-up, issue 14)."""
        if name == "to_markdown":
            from ract_cli.project.markdown import to_markdown

            return to_markdown
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*globals(), "to_markdown"})
