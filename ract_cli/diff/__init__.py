"""``ract trace diff``: where two runs part (SPEC §15, docs/diff.md).

>>> from ract_cli.diff import DiffOptions, diff_logs
>>> result = diff_logs("evals/runs/A/events.jsonl", "evals/runs/B/events.jsonl", DiffOptions())
>>> result.exit_code, result.first, result.to_dict()["summary"]

Both logs are read and verified through the one ``ChainReader``; only their
trusted events are compared, after the normalisation table
(:data:`RULES`) has taken out what always differs between two runs (ids,
times, hashes), with references (``parent_id``, ``step_id``, ``call_id``...)
compared through the alignment. The library never prints.
"""

from ract_cli.diff.align import DEFAULT_MAX_EDITS, DEFAULT_MAX_WORK, DEFAULT_WINDOW, Alignment, align
from ract_cli.diff.engine import DEFAULT_MAX_ENTRIES, DiffOptions, diff_logs
from ract_cli.diff.normalise import Normalised, Normaliser
from ract_cli.diff.result import (
    FORMAT,
    FORMAT_VERSION,
    DiffResult,
    Divergence,
    Entry,
    EventAt,
    FieldDiff,
    SideReport,
    Target,
)
from ract_cli.diff.rules import COMPARABLE, RULES, FieldPolicy, Rule, rules_markdown

__all__ = [
    "COMPARABLE",
    "DEFAULT_MAX_EDITS",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_MAX_WORK",
    "DEFAULT_WINDOW",
    "FORMAT",
    "FORMAT_VERSION",
    "RULES",
    "Alignment",
    "DiffOptions",
    "DiffResult",
    "Divergence",
    "Entry",
    "EventAt",
    "FieldDiff",
    "FieldPolicy",
    "Normalised",
    "Normaliser",
    "Rule",
    "SideReport",
    "Target",
    "align",
    "diff_logs",
    "rules_markdown",
]
