"""The three tables of ``export --format parquet`` and ``sql`` (SPEC §12.1), defined once.

Everything that knows a column reads it from here: the row builder
(``rows.py``), the DuckDB writer (``parquet.py``, which types the staged JSON
with these types), ``sql`` (the same tables over logs or an export), the
schema section of ``docs/export.md`` (``schema_markdown``; a test checks the
doc holds exactly that text) and the tests.

Types are DuckDB's names for the engine-portable Parquet types: ``VARCHAR``
(UTF-8 string), ``BIGINT`` (INT64), ``INTEGER`` (INT32), ``BOOLEAN``,
``TIMESTAMPTZ`` (INT64 microseconds, UTC-adjusted) and ``DATE``. No unsigned
integer and no nanosecond timestamp: Spark reads neither (SPEC §12.1).
"""

from __future__ import annotations

from dataclasses import dataclass

#: the version of this layout, written into an export's ``_ract_export.json``
LAYOUT_VERSION = 1
#: the file in an export directory that says it is one (the leading ``_`` makes Spark and Hive skip it)
MARKER = "_ract_export.json"
#: the events table's hive partition column (``events/date=YYYY-MM-DD/*.parquet``): the UTC day of ``ts``
PARTITION_COLUMN = "date"


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # DuckDB type name
    meaning: str
    #: computed by DuckDB from other columns when the table is written (not in the staged rows)
    derived: str | None = None
    #: beyond the columns SPEC §12.1 lists (documented as such)
    extra: bool = False


@dataclass(frozen=True)
class Table:
    name: str
    meaning: str
    columns: tuple[Column, ...]

    @property
    def staged(self) -> tuple[Column, ...]:
        """The columns a row carries before DuckDB derives the rest."""
        return tuple(c for c in self.columns if c.derived is None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


_US = "make_timestamp(timestamp_ns // 1000)"  # epoch microseconds -> TIMESTAMP (UTC wall clock)

EVENTS = Table(
    "events",
    "one row per event the chain reader yields (every usable line, trusted or not)",
    (
        Column("run_id", "VARCHAR", "the event's `run_id` (32 hex)"),
        Column("path", "VARCHAR", "the log file, as given or found under a directory"),
        Column("line", "BIGINT", "1-based line number in the log"),
        Column("byte_offset", "BIGINT", "byte offset of the line's first byte"),
        Column("id", "VARCHAR", "the event's `id` (32 hex)"),
        Column("step_id", "VARCHAR", "`step_id` (32 hex) or NULL"),
        Column("parent_id", "VARCHAR", "`parent_id` (32 hex) or NULL"),
        Column("timestamp_ns", "BIGINT", "`timestamp_ns` exactly as logged (nanoseconds since the epoch)"),
        Column(
            "ts",
            "TIMESTAMPTZ",
            "`timestamp_ns` as a timestamp with time zone: UTC, truncated to microseconds",
            derived=f"CAST({_US} AS TIMESTAMPTZ)",
        ),
        Column("kind", "VARCHAR", "the event kind, e.g. `process.reaped`"),
        Column(
            "payload",
            "VARCHAR",
            "the payload's canonical JSON text (RFC 8785, exact integers): query it with JSON functions",
        ),
        Column("prev_hash", "VARCHAR", "`prev_hash` (64 hex)"),
        Column("hash", "VARCHAR", "`hash` as stored (64 hex)"),
        Column(
            "trusted",
            "BOOLEAN",
            "a clean successor confirms the event: false from the first integrity failure on "
            "(the event just before a break included), the rule `project` and `replay` apply",
        ),
        Column(
            "synthesized",
            "BOOLEAN",
            "a close written by `repair`: a close kind whose `payload.synthesized` is true (as `grep --synthesized`)",
        ),
        Column(
            PARTITION_COLUMN,
            "DATE",
            "hive partition: the UTC day of `ts` (in the directory name `date=YYYY-MM-DD`, not in the files)",
            derived=f"CAST({_US} AS DATE)",
            extra=True,
        ),
    ),
)

RUNS = Table(
    "runs",
    "one row per log file read (a file that could not be read too, with exit code 5)",
    (
        Column("run_id", "VARCHAR", "the log's `run_id` (NULL for a Raxol journal, or a log with no event)"),
        Column("path", "VARCHAR", "the log file"),
        Column("dialect", "VARCHAR", "`ract` (run log) or `raxol` (agent journal, SPEC §8)"),
        Column("status", "VARCHAR", "as `project` reports it: completed / aborted / open / repaired / unknown"),
        Column("exit_code", "INTEGER", "the log's verification exit code (SPEC §3): 0 verified"),
        Column("events", "BIGINT", "rows of this log in `events`"),
        Column("first_ts_ns", "BIGINT", "smallest `timestamp_ns` of those events"),
        Column("last_ts_ns", "BIGINT", "largest `timestamp_ns` of those events"),
        Column("head", "VARCHAR", "chain head: the last usable event's `hash` as written"),
        Column(
            "verified",
            "BOOLEAN",
            "`project`'s `trusted`: the chain verified over the whole log (no integrity failure) and the "
            "file was read; a schema error (3) or a torn tail (4) leaves it true, see `exit_code`",
        ),
        Column("untrusted_from_line", "BIGINT", "first untrusted line (as `project` reports it), or NULL"),
        Column("final_decision", "VARCHAR", "`run.completed`'s `final_decision` (verified prefix), or NULL"),
        Column("termination_cause", "VARCHAR", "`run.aborted`'s `termination_cause` (verified prefix), or NULL"),
        Column("steps", "BIGINT", "steps started (verified prefix, as `project` counts them)"),
        Column("steps_committed", "BIGINT", "steps committed"),
        Column("steps_rolled_back", "BIGINT", "steps rolled back"),
        Column("steps_open", "BIGINT", "steps never closed"),
        Column("tool_calls", "BIGINT", "tool calls (`tool.called`)"),
        Column("tool_calls_ok", "BIGINT", "tool results ok"),
        Column("tool_calls_failed", "BIGINT", "tool results not ok"),
        Column("tool_calls_refused", "BIGINT", "tool calls refused (by a gate or the runtime)"),
        Column("reaps", "BIGINT", "`process.reaped` events"),
        Column("audit_flags", "BIGINT", "`project`'s audit flag count (UNTRUSTED, GATE_INCONSISTENT, ...)"),
        Column(
            "gate_inconsistent",
            "BOOLEAN",
            "run.completed while a required predicate's latest verdict failed (`project`'s flag)",
            extra=True,
        ),
        Column(
            "suppressed_findings",
            "BIGINT",
            "findings past the per-log cap (`--max-findings`), counted but not in `findings`",
            extra=True,
        ),
    ),
)

FINDINGS = Table(
    "findings",
    "one row per finding of the verification (SPEC §3), warnings included",
    (
        Column("path", "VARCHAR", "the log file (or the path given, for a path that held no log)"),
        Column("run_id", "VARCHAR", "the log's `run_id`, or NULL"),
        Column("line", "BIGINT", "1-based line, or NULL for a whole-file finding"),
        Column("byte_offset", "BIGINT", "byte offset of that line, or NULL"),
        Column("event_id", "VARCHAR", "the event's `id` when known"),
        Column("code", "VARCHAR", "finding code, e.g. `HASH_MISMATCH`, `OPEN_RUN`"),
        Column("severity", "VARCHAR", "`error` or `warning`"),
        Column("exit_code", "INTEGER", "the exit code it carries (0 for a warning)"),
        Column("message", "VARCHAR", "what is wrong, in words"),
        Column("expected", "VARCHAR", "the expected value where it applies", extra=True),
        Column("actual", "VARCHAR", "the actual value where it applies", extra=True),
    ),
)

TABLES: tuple[Table, ...] = (EVENTS, RUNS, FINDINGS)
TABLES_BY_NAME = {t.name: t for t in TABLES}


def duckdb_columns(table: Table) -> str:
    """The ``columns={...}`` argument of DuckDB's ``read_json`` for the staged rows of ``table``."""
    return "{" + ", ".join(f"{c.name}: '{c.type}'" for c in table.staged) + "}"


def select_list(table: Table) -> str:
    """``SELECT`` list from the staged rows to the table, in column order (derived columns computed)."""
    return ", ".join(
        f"{c.derived} AS {quote_ident(c.name)}" if c.derived else quote_ident(c.name) for c in table.columns
    )


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def schema_markdown() -> str:
    """The tables as Markdown, for ``docs/export.md`` (between its ``<!-- tables -->`` markers)."""
    out: list[str] = []
    for table in TABLES:
        out.append(f"### `{table.name}`: {table.meaning}")
        out.append("")
        out.append("| column | type | meaning |")
        out.append("|---|---|---|")
        for c in table.columns:
            note = " *(beyond SPEC §12.1)*" if c.extra else ""
            out.append(f"| `{c.name}` | {c.type} | {c.meaning}{note} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
