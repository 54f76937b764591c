"""``sql``: one read-only SQL query over the tables of SPEC §12.1, on embedded DuckDB (SPEC §13).

``SqlSession(paths, options)`` serves three views, ``events``, ``runs`` and
``findings``, with exactly the columns of ``ract_cli.export.tables``:

- a PATH that is a directory written by ``export --format parquet`` is read
  in place (``read_parquet`` over its table directories, hive partitions
  included); it was verified when it was written, and its ``runs`` and
  ``findings`` tables say how that went;
- every other PATH (a log, a directory of logs) is read and verified now,
  through the same code ``export`` uses: rows staged as JSON lines, typed and
  written by DuckDB to Parquet in a private temporary directory (bounded
  memory), then read like an export. So a query gives the same answer over
  the logs and over their export.

Read-only (docs/sql.md): one statement, ``SELECT`` (``WITH``, ``FROM``,
``VALUES``, ``DESCRIBE``, ``SHOW``, ``SUMMARIZE`` are SELECTs to DuckDB) or
``EXPLAIN``; DuckDB's external access is off outside the table directories,
extensions are neither installed nor loaded, and the configuration is locked
before the query runs. A query DuckDB rejects, or one that is not read-only,
raises ``SqlError`` (exit 2) with DuckDB's message.

``exit_code`` is the lowest non-zero verification code of the inputs (the
``exit_code`` of every ``runs`` and ``findings`` row), 0 when all verified.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import math
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ract_cli.errors import ExitCode, RactError, lowest_nonzero
from ract_cli.export import DEFAULT_OPTIONS, MARKER, TABLES, ExportOptions
from ract_cli.export.parquet import DEFAULT_LIMITS, WriteLimits, build_tables, connect, glob_escape, sql_string
from ract_cli.export.tables import PARTITION_COLUMN, quote_ident

__all__ = ["FETCH_ROWS", "SqlError", "SqlOptions", "SqlResult", "SqlSession", "is_export_dir", "json_value", "query"]

#: rows fetched from DuckDB at a time
FETCH_ROWS = 1000
#: statement types a query may be (DuckDB's names)
READ_ONLY = frozenset({"SELECT", "EXPLAIN"})

#: how logs given to ``sql`` are read: the same knobs as ``export``
SqlOptions = ExportOptions


class SqlError(RactError):
    """DuckDB refused the query (or it is not read-only): exit 2 with DuckDB's message."""

    exit_code = ExitCode.USAGE


def is_export_dir(path: str | os.PathLike[str]) -> bool:
    """A directory written by ``export --format parquet``: its marker, or all three table directories."""
    # os.path: Path.is_dir raises on a name too long or a directory that denies search; these answer False
    if not os.path.isdir(path):
        return False
    if os.path.isfile(os.path.join(path, MARKER)):
        return True
    return all(os.path.isdir(os.path.join(path, t.name)) for t in TABLES)


@dataclass
class SqlResult:
    """A query's result: column names (made unique) and DuckDB types, then rows in batches."""

    columns: list[str]
    types: list[str]
    _cursor: Any

    def batches(self, size: int = FETCH_ROWS) -> Iterator[list[tuple[Any, ...]]]:
        import duckdb

        while True:
            try:
                rows = self._cursor.fetchmany(size)
            except duckdb.Error as exc:  # an error only met while producing rows
                raise SqlError(str(exc)) from None
            if not rows:
                return
            yield rows

    def rows(self) -> Iterator[tuple[Any, ...]]:
        for batch in self.batches():
            yield from batch


def unique_names(names: Sequence[str]) -> list[str]:
    """Column names made unique for JSON objects: a repeated ``a`` becomes ``a_1``, ``a_2``..."""
    seen: set[str] = set()
    out = []
    for name in names:
        candidate, n = name, 0
        while candidate in seen:
            n += 1
            candidate = f"{name}_{n}"
        seen.add(candidate)
        out.append(candidate)
    return out


class SqlSession:
    """The three views over ``paths``; use as a context manager (it owns a temporary directory).

    ``progress(done_bytes, total_bytes)`` is called as the logs among ``paths`` are read (an export
    directory is not read ahead); ``limits``: how their tables are written (``export.parquet.WriteLimits``).
    """

    def __init__(
        self,
        paths: Sequence[str | os.PathLike[str]],
        options: SqlOptions = DEFAULT_OPTIONS,
        *,
        progress: Callable[[int, int], None] | None = None,
        limits: WriteLimits = DEFAULT_LIMITS,
    ) -> None:
        options.check()
        self.paths = [os.fspath(p) for p in paths]
        self.exports = [p for p in self.paths if is_export_dir(p)]
        logs = [p for p in self.paths if p not in self.exports]
        self._tmp = Path(tempfile.mkdtemp(prefix="ract-sql-"))
        try:
            sources = [Path(p).resolve() for p in self.exports]
            self.logs = None
            if logs or not sources:
                staged = self._tmp / "logs"
                staged.mkdir()
                self.logs = build_tables(logs, staged, options, progress=progress, limits=limits)
                sources.append(staged)
            self.con = connect(self._tmp / "spill")
            self._views(sources)
            self.exit_code = self._verdict()
            self._lock(sources)
        except BaseException:
            self.close()
            raise

    def _views(self, sources: list[Path]) -> None:
        import duckdb

        for table in TABLES:
            globs = ", ".join(sql_string(glob_escape(str(s)) + f"/{table.name}/**/*.parquet") for s in sources)
            hive = (
                f"hive_partitioning = true, hive_types = {{{quote_ident(PARTITION_COLUMN)}: 'DATE'}}"
                if table.name == "events"
                else "hive_partitioning = false"
            )
            columns = ", ".join(quote_ident(c.name) for c in table.columns)
            try:
                self.con.execute(
                    f"CREATE VIEW {table.name} AS SELECT {columns} FROM "
                    f"read_parquet([{globs}], {hive}, union_by_name = true)"
                )
            except duckdb.Error as exc:
                raise RactError(
                    f"cannot read the {table.name} table of {', '.join(map(str, sources))}: {exc}",
                    exit_code=ExitCode.IO,
                ) from None

    def failures(self, limit: int = 10) -> tuple[list[tuple[Any, ...]], int]:
        """The first ``limit`` error findings (path, line, code, message) and how many there are in all."""
        where = "FROM findings WHERE severity = 'error' AND exit_code <> 0"
        rows = self.con.execute(f"SELECT path, line, code, message {where} ORDER BY path, line LIMIT {int(limit)}")
        kept = [tuple(r) for r in rows.fetchall()]
        (total,) = self.con.execute(f"SELECT count(*) {where}").fetchone() or (0,)
        return kept, int(total)

    def _verdict(self) -> ExitCode:
        codes = self.con.execute(
            "SELECT DISTINCT exit_code FROM runs UNION SELECT DISTINCT exit_code FROM findings"
        ).fetchall()
        return lowest_nonzero(int(c) for (c,) in codes if c is not None)

    def _lock(self, sources: list[Path]) -> None:
        """No file access beyond the table directories, no extensions, no way to undo either."""
        # each directory as itself and as the glob pattern the views name it by (DuckDB checks the pattern)
        dirs = {d for s in [*sources, self._tmp] for d in (str(s), glob_escape(str(s)))}
        allowed = ", ".join(sql_string(d + os.sep) for d in sorted(dirs))
        for statement in (
            f"SET allowed_directories = [{allowed}]",
            "SET enable_external_access = false",
            "SET autoinstall_known_extensions = false",
            "SET autoload_known_extensions = false",
            "SET lock_configuration = true",
        ):
            self.con.execute(statement)

    def query(self, sql: str) -> SqlResult:
        """Run one read-only statement; ``SqlError`` with DuckDB's message when it fails."""
        import duckdb

        try:
            statements = self.con.extract_statements(sql)
        except duckdb.Error as exc:
            raise SqlError(str(exc)) from None
        if len(statements) != 1:
            raise SqlError(
                "no SQL statement given" if not statements else f"one statement at a time, not {len(statements)}"
            )
        kind = statements[0].type.name
        if kind not in READ_ONLY:
            raise SqlError(f"read-only: a query is a SELECT (or EXPLAIN), not {kind}")
        try:
            cursor = self.con.execute(sql)
        except duckdb.Error as exc:
            raise SqlError(str(exc)) from None
        description = cursor.description or []
        return SqlResult(unique_names([d[0] for d in description]), [str(d[1]) for d in description], cursor)

    def close(self) -> None:
        con = getattr(self, "con", None)
        if con is not None:
            con.close()
            self.con = None
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> SqlSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def query(
    sql: str, paths: Sequence[str | os.PathLike[str]], options: SqlOptions = DEFAULT_OPTIONS
) -> tuple[list[str], list[tuple[Any, ...]], ExitCode]:
    """Run ``sql`` over ``paths``; (column names, every row, exit code). For small results and tests."""
    with SqlSession(paths, options) as session:
        result = session.query(sql)
        return result.columns, list(result.rows()), session.exit_code


def json_value(value: Any) -> Any:
    """A DuckDB value as JSON: timestamps and dates ISO 8601, DECIMAL a number, BLOB base64,
    NaN and infinities null, lists and structs as arrays and objects."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None and value.utcoffset() == _dt.timedelta(0):  # TIMESTAMPTZ (the session is UTC)
            return value.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
        return value.isoformat(timespec="microseconds")
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    return str(value)
