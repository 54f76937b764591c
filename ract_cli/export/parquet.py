"""``export --format parquet``: a directory per table, written by DuckDB (SPEC §12.1).

Layout of ``OUT`` (docs/export.md)::

    OUT/_ract_export.json                             what wrote it, counts, exit code
    OUT/events/date=YYYY-MM-DD/data_00000_0.parquet   hive-partitioned by the UTC day of ts,
    OUT/events/date=YYYY-MM-DD/data_00001_0.parquet   one file per batch of rows that has rows of that day
    OUT/runs/data_0.parquet
    OUT/findings/data_0.parquet

Steps: the rows are staged as JSON lines (``rows.stage_rows``: one read per
log, bounded memory), DuckDB reads them back with the column types of
``tables.py`` and ``COPY``s each table into a staging directory inside
``OUT`` (same file system), then each table directory is swapped in by
rename: a reader of ``OUT/events`` sees the old table or the new one, never
half of one. A failure before the swap leaves ``OUT`` as it was.

Memory (``WriteLimits``): DuckDB's partitioned ``COPY`` buffers a partition's
rows until it holds ``partitioned_write_flush_threshold`` of them (524,288 by
default) and then flushes them while it goes on buffering the next ones
(DuckDB issue 25920); that flush needs memory in proportion to the threshold
times the row width (measured: several times the rows flushed) and runs out
of it under the limit instead of spilling, so one ``COPY`` of a fleet with
more than ~500,000 events in a day failed under the 256 MB limit, with one
partition. Below the threshold, a ``COPY`` buffers its rows (spilling what
does not fit) and writes them at its end. So ``events`` is
written one batch at a time: each ``COPY`` reads at most ``batch_rows`` rows
(``batch_bytes`` of staged JSON), below the flush threshold, which it never
reaches; everything it buffers may spill, and it writes one file per day it
holds (``FILENAME_PATTERN data_<batch>_{i}``). Memory is bounded by the
batch, whatever the number of runs.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ract_cli import __version__
from ract_cli.atomic import write_atomic
from ract_cli.errors import LogIOError, UsageError
from ract_cli.export.result import ExportResult
from ract_cli.export.rows import (
    DEFAULT_BATCH_BYTES,
    DEFAULT_BATCH_ROWS,
    DEFAULT_OBJECT_BYTES,
    DEFAULT_OPTIONS,
    ExportOptions,
    StagedFile,
    StageResult,
    stage_rows,
)
from ract_cli.export.tables import (
    EVENTS,
    LAYOUT_VERSION,
    MARKER,
    PARTITION_COLUMN,
    TABLES,
    Table,
    duckdb_columns,
    quote_ident,
    select_list,
)

#: the date directory an export with no event at all holds its one empty file in, so that every engine
#: still finds the table and its columns (an empty partitioned COPY writes no file)
EMPTY_PARTITION = "1970-01-01"
_STAGING_PREFIX = ".ract-export-"
#: DuckDB's memory while writing the tables: past it, a COPY spills to disk instead of growing
#: (measured: a 100 MB log, 200,000 events, peaks at 470 MB RSS without a limit, 225 MB with 128 MB)
WRITE_MEMORY_LIMIT = "256MB"
#: DuckDB's own default of ``partitioned_write_flush_threshold``, set explicitly: a batch stays below it
FLUSH_THRESHOLD_ROWS = 524_288


@dataclass(frozen=True)
class WriteLimits:
    """How DuckDB writes the tables: its memory and threads, and the batches ``events`` is written in.

    Each ``COPY`` of ``events`` reads at most ``batch_rows`` rows (and about ``batch_bytes`` bytes of staged
    JSON); ``batch_rows`` must stay below ``flush_rows``, DuckDB's ``partitioned_write_flush_threshold``,
    so that no ``COPY`` ever takes DuckDB's mid-write flush, whose memory is not bounded by the limit.
    The defaults are the command's; a test passes smaller ones to meet the same bounds with a small fleet.
    """

    memory_limit: str = WRITE_MEMORY_LIMIT
    # one: a partitioned COPY writes a file per thread and partition, and which rows land in which file,
    # in which order, is whichever thread got there first (an export differed from run to run); one thread
    # writes every file in the logs' order, the same bytes each time. None: DuckDB's default (the cores)
    threads: int | None = 1
    batch_rows: int = DEFAULT_BATCH_ROWS
    batch_bytes: int = DEFAULT_BATCH_BYTES
    flush_rows: int = FLUSH_THRESHOLD_ROWS

    def __post_init__(self) -> None:
        if not 1 <= self.batch_rows < self.flush_rows:
            raise ValueError(f"batch_rows must be 1 to flush_rows - 1 ({self.flush_rows - 1}), not {self.batch_rows}")
        if self.batch_bytes < 1:
            raise ValueError("batch_bytes must be at least 1")


DEFAULT_LIMITS = WriteLimits()


# --- SQL text -------------------------------------------------------------------


def sql_string(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def glob_escape(path: str) -> str:
    """A literal path inside a DuckDB glob pattern: ``*``, ``?`` and ``[`` each in a character class."""
    return "".join(f"[{ch}]" if ch in "*?[" else ch for ch in path)


def connect(spill_dir: Path, *, threads: int | None = None, memory_limit: str | None = None) -> Any:
    """A private in-memory DuckDB: UTC session, no progress bar, spills under ``spill_dir``."""
    import duckdb

    config: dict[str, Any] = {}
    if threads is not None:
        config["threads"] = threads
    con = duckdb.connect(":memory:", config=config)
    con.execute("SET enable_progress_bar = false")  # DuckDB's own bar would draw on the terminal
    con.execute("SET TimeZone = 'UTC'")  # ts is derived through TIMESTAMP -> TIMESTAMPTZ: the session zone
    con.execute(f"SET temp_directory = {sql_string(str(spill_dir))}")
    if memory_limit is not None:
        con.execute(f"SET memory_limit = {sql_string(memory_limit)}")
    return con


def _source(patterns: Sequence[str], table: Table, object_bytes: int) -> str:
    """``read_json`` of staged files (each a glob pattern: escape a literal path) with ``table``'s types."""
    files = ", ".join(sql_string(p) for p in patterns)
    return (
        f"read_json([{files}], format = 'newline_delimited', records = true, "
        f"columns = {duckdb_columns(table)}, maximum_object_size = {object_bytes})"
    )


def batches(files: Iterable[StagedFile], *, rows: int, size: int) -> list[list[StagedFile]]:
    """Consecutive staged events files grouped into batches of at most ``rows`` rows and ``size`` bytes (a
    file alone may be over ``size`` by its last row); files without rows are left out."""
    out: list[list[StagedFile]] = []
    current: list[StagedFile] = []
    n = b = 0
    for f in files:
        if not f.rows:
            continue
        if current and (n + f.rows > rows or b + f.bytes > size):
            out.append(current)
            current, n, b = [], 0, 0
        current.append(f)
        n += f.rows
        b += f.bytes
    if current:
        out.append(current)
    return out


def write_tables(rows_dir: Path, target: Path, staged: StageResult, *, limits: WriteLimits = DEFAULT_LIMITS) -> None:
    """``COPY`` the staged rows of every table into ``target/<table>/`` as Parquet (``events`` in batches)."""
    # read_json refuses a line longer than its object limit: tell it the longest one staged
    object_bytes = max(DEFAULT_OBJECT_BYTES, staged.longest_row + 1024)
    spill = rows_dir / "duckdb.tmp"
    con = connect(spill, threads=limits.threads, memory_limit=limits.memory_limit)
    staged_dir = glob_escape(str(rows_dir))
    try:
        con.execute(f"SET partitioned_write_flush_threshold = {int(limits.flush_rows)}")
        for table in TABLES:
            every_file = _source([f"{staged_dir}/{table.name}-*.jsonl"], table, object_bytes)
            query = f"SELECT {select_list(table)} FROM {every_file}"
            if table is EVENTS:
                groups = batches(staged.events_files, rows=limits.batch_rows, size=limits.batch_bytes)
                for k, group in enumerate(groups):
                    _copy_events(con, [f"{staged_dir}/{glob_escape(f.name)}" for f in group], object_bytes, target, k)
                if groups:
                    continue
                # nothing to partition: one empty file, in a partition directory like any other
                empty = target / table.name / f"{PARTITION_COLUMN}={EMPTY_PARTITION}"
                empty.mkdir(parents=True)
                columns = ", ".join(quote_ident(c.name) for c in table.columns if c.name != PARTITION_COLUMN)
                con.execute(
                    f"COPY (SELECT {columns} FROM ({query})) TO {sql_string(str(empty / 'data_0.parquet'))} "
                    "(FORMAT parquet)"
                )
                continue
            (target / table.name).mkdir()
            con.execute(f"COPY ({query}) TO {sql_string(str(target / table.name / 'data_0.parquet'))} (FORMAT parquet)")
    except Exception as exc:
        if _is_duckdb_error(exc):
            raise LogIOError(f"writing Parquet failed: {exc}") from None
        raise
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


def _copy_events(con: Any, files: list[str], object_bytes: int, target: Path, batch: int) -> None:
    """One batch of ``events`` rows into ``target/events/date=.../data_<batch>_<i>.parquet``."""
    query = f"SELECT {select_list(EVENTS)} FROM {_source(files, EVENTS, object_bytes)}"
    # OVERWRITE_OR_IGNORE: the directory the batches before wrote into; no file is overwritten, each batch
    # has its own names (zero-padded: a glob lists them in the logs' order)
    con.execute(
        f"COPY ({query}) TO {sql_string(str(target / EVENTS.name))} "
        f"(FORMAT parquet, PARTITION_BY ({quote_ident(PARTITION_COLUMN)}), OVERWRITE_OR_IGNORE, "
        f"FILENAME_PATTERN {sql_string(f'data_{batch:05d}_{{i}}')})"
    )


def _is_duckdb_error(exc: BaseException) -> bool:
    import duckdb

    return isinstance(exc, duckdb.Error)


# --- the output directory ---------------------------------------------------------


def check_output(out: Path, *, overwrite: bool) -> None:
    """Refuse an ``OUT`` that would be clobbered (UsageError, exit 2); nothing is touched here."""
    if os.path.lexists(out) and not os.path.isdir(out):
        raise UsageError(f"--output {out} exists and is not a directory")
    if not os.path.isdir(out):
        return
    try:
        entries = sorted(os.listdir(out))
    except OSError as exc:
        raise LogIOError(f"cannot list --output {out}: {exc.strerror or exc}") from None
    if not entries:
        return
    if not overwrite:
        raise UsageError(f"--output {out} is not empty: give --overwrite to replace its tables")
    ours = os.path.isfile(out / MARKER)
    for table in TABLES:
        dest = out / table.name
        if not os.path.lexists(dest):
            continue
        if os.path.islink(dest) or not os.path.isdir(dest):
            raise UsageError(f"--overwrite: {dest} is not a table directory; refusing to replace it")
        if not ours:
            raise UsageError(f"--overwrite: {out} holds {table.name}/ but no {MARKER}: not a ract export; refusing")


def _install(staging: Path, out: Path, marker: dict[str, Any]) -> None:
    """Swap each new table directory in by rename (old one aside first), then the marker."""
    for table in TABLES:
        new, dest, old = staging / table.name, out / table.name, staging / f"{table.name}.old"
        moved = False
        if os.path.lexists(dest):
            os.rename(dest, old)
            moved = True
        try:
            os.rename(new, dest)
        except OSError:
            if moved:
                os.rename(old, dest)  # put the old table back
            raise
    write_atomic(out / MARKER, (json.dumps(marker, indent=2, sort_keys=True) + "\n").encode())  # (0644, as the tables)


def _marker(result: StageResult) -> dict[str, Any]:
    return {
        "format": "parquet",
        "layout_version": LAYOUT_VERSION,
        "written_by": f"ract {__version__}",
        "written_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "exit_code": int(result.exit_code),
        "counts": result.counts,
        "tables": {
            t.name: {
                "columns": [{"name": c.name, "type": c.type} for c in t.columns],
                "partition_by": [PARTITION_COLUMN] if t is EVENTS else [],
            }
            for t in TABLES
        },
    }


# --- the entry points -----------------------------------------------------------------


def build_tables(
    paths: Iterable[str | os.PathLike[str]],
    target: Path,
    options: ExportOptions = DEFAULT_OPTIONS,
    *,
    progress: Callable[[int, int], None] | None = None,
    limits: WriteLimits = DEFAULT_LIMITS,
) -> StageResult:
    """Read the logs and write the three table directories into ``target`` (an empty directory).

    No swap and no marker: ``sql`` uses this for logs it reads on the fly.
    """
    rows_dir = Path(tempfile.mkdtemp(prefix="rows-", dir=target))
    try:
        staged = stage_rows(
            paths, options, rows_dir, progress=progress, batch_rows=limits.batch_rows, batch_bytes=limits.batch_bytes
        )
        write_tables(rows_dir, target, staged, limits=limits)
    finally:
        shutil.rmtree(rows_dir, ignore_errors=True)
    return staged


def export_parquet(
    paths: Iterable[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    options: ExportOptions = DEFAULT_OPTIONS,
    *,
    overwrite: bool = False,
    progress: Callable[[int, int], None] | None = None,
    limits: WriteLimits = DEFAULT_LIMITS,
) -> ExportResult:
    """SPEC §12.1: verify every log under ``paths`` and write its tables under ``output``.

    Raises ``UsageError`` (exit 2) before reading anything when ``output`` is a
    non-empty directory and ``overwrite`` is false (or it is not a directory).
    Otherwise everything usable is written, and ``ExportResult.exit_code`` is
    the lowest non-zero verification code of the inputs. ``limits``: how
    DuckDB writes (memory, threads, batches); the defaults are the command's.
    """
    options.check()
    out = Path(output)
    check_output(out, overwrite=overwrite)
    try:
        out.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=out))
    except OSError as exc:
        raise LogIOError(f"cannot create --output {out}: {exc.strerror or exc}") from None
    try:
        staged = build_tables(paths, staging, options, progress=progress, limits=limits)
        _install(staging, out, _marker(staged))
    except OSError as exc:
        raise LogIOError(f"cannot write --output {out}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ExportResult(str(out), "parquet", staged.logs, staged.findings, staged.counts)
