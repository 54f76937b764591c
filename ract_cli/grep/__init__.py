"""``ract trace grep`` (SPEC §6): filter events across logs, verifying as it goes."""

from ract_cli.grep.search import (
    Condition,
    FileResult,
    GrepFilter,
    GrepOptions,
    GrepSearch,
    Match,
    build_filter,
    format_ns,
    grep_file,
    grep_paths,
    parse_time,
    parse_where,
)

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
