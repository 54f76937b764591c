"""``ract trace grep`` (SPEC §6): filter events across logs, verifying as it goes.

``times`` (``--since``/``--until``), ``where`` (``--where`` conditions),
``filters`` (``GrepFilter``, ``build_filter``), ``results`` (options, matches,
per-file verdicts), ``file_search`` (one file), ``search`` (many files, workers).
"""

from ract_cli.grep.file_search import grep_file
from ract_cli.grep.filters import GrepFilter, build_filter
from ract_cli.grep.results import FileResult, GrepOptions, Match
from ract_cli.grep.search import GrepSearch, grep_paths
from ract_cli.grep.times import format_ns, parse_time
from ract_cli.grep.where import Condition, parse_where

__all__ = [
    "Condition",
    "FileResult",
    "GrepFilter",
    "GrepOptions",
    "GrepSearch",
    "Match",
    "build_filter",
    "format_ns",
    "grep_file",
    "grep_paths",
    "parse_time",
    "parse_where",
]
