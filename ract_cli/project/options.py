"""How ``project`` reads a log, how much of it a report keeps, and the report's fixed names."""

from __future__ import annotations

from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES
from ract_cli.records import FrozenRecord

REPORT_VERSION = 1
#: run status, in order of precedence (the first that applies wins)
STATUSES = ("unknown", "repaired", "completed", "aborted", "open")
DEFAULT_MAX_ITEMS = 1000  # per itemized list (flags, reaps, unenforced sandboxes...)
MAX_KEYS = 1000  # distinct names kept per table (tools, providers...; the rest pool in "(other)"), predicate rows shown
MAX_TEXT = 200  # characters kept of any log-derived string
OTHER = "(other)"
NONE = "(none)"


class ProjectOptions(FrozenRecord):
    """How to read and how much to keep (a ``FrozenRecord``, not a dataclass: ``records.py`` says why)."""

    __slots__ = ("schema_version", "require_closed", "max_line_bytes", "max_items", "dialect", "jobs")
    schema_version: int
    require_closed: bool
    max_line_bytes: int
    max_items: int  # per itemized list
    dialect: str  # SPEC §8: "ract", "raxol", or "auto" (detected per file)
    #: worker processes for a fleet (each log is projected whole by one); for a lone log, > 1: two threads
    #: in C (``project_file``); ``read.parallel.AUTO_JOBS`` (0): picked from the logs found (``auto_jobs``),
    #: as the CLI does without ``--jobs``
    jobs: int

    def __init__(
        self,
        schema_version: int = LATEST_SCHEMA_VERSION,
        require_closed: bool = False,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_items: int = DEFAULT_MAX_ITEMS,
        dialect: str = "auto",
        jobs: int = 1,
    ) -> None:
        self._freeze(schema_version, require_closed, max_line_bytes, max_items, dialect, jobs)
