"""Rows of the three tables, staged as JSON lines, from one read of each log.

``stage_rows`` reads every log under the given paths through the one chain
reader and writes its rows to JSON-lines files in a staging directory (one
``runs`` and one ``findings`` file per chunk of logs; the ``events`` rows of a
chunk in files of at most ``batch_rows`` rows and ``batch_bytes`` bytes
each (a longer row alone), ``StagedFile``), never holding more than one event in memory:
DuckDB then types and writes them (``parquet.py``), a batch of event files
per ``COPY``, so that no ``COPY`` holds more rows than DuckDB can buffer
under its memory limit, however many runs there are. With ``jobs > 1``
chunks of logs are read by worker processes, each into its own files; the
rows do not depend on the number of jobs.

One read per log for the events and the findings: each ``LogEvent`` the
reader yields becomes an ``events`` row (``trusted`` is the reader's own
flag), and the reader's findings and chain state after the last event give
the ``findings`` rows and the verdict columns of the ``runs`` row. The run's
*projection* columns (status, final decision, step / tool / reap / flag
counts) are ``project``'s own report, built by ``RunProjection`` on the same
read, so ``runs`` and ``project`` agree on the same bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson

from ract_cli.dialects import ChainReader
from ract_cli.errors import ExitCode, UsageError, lowest_nonzero
from ract_cli.findings import ERROR, Finding
from ract_cli.format.canonical import canonical_bytes
from ract_cli.format.json_types import Report
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.format.text import utf8_text
from ract_cli.project import RunProjection
from ract_cli.read.discovery import discover
from ract_cli.read.event import LogEvent
from ract_cli.read.files import is_stdin, log_size
from ract_cli.read.handles import is_synthesized_close
from ract_cli.read.parallel import make_pool, pool_failures

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

#: findings kept per log by default (as ``verify --max-findings``): a small hostile file of blank lines
#: would otherwise hold one finding per byte; the rest are counted in ``runs.suppressed_findings``
DEFAULT_MAX_FINDINGS = 1000
_INT64_MAX = 2**63 - 1
_NS_PER_MS = 1_000_000
#: a staged row longer than this needs DuckDB's ``read_json`` told so (its default object limit: 16 MiB)
DEFAULT_OBJECT_BYTES = 16 << 20
#: ``events`` rows per staged file at most: one ``COPY`` writes at most this many (``parquet.WriteLimits``)
DEFAULT_BATCH_ROWS = 100_000
#: bytes of ``events`` rows per staged file at most (a longer row alone): a ``COPY``'s input at most
DEFAULT_BATCH_BYTES = 64 << 20


@dataclass(frozen=True)
class ExportOptions:
    """How logs are read for ``export`` and ``sql`` (the same knobs as ``verify``)."""

    schema_version: int = LATEST_SCHEMA_VERSION
    require_closed: bool = False
    max_line_bytes: int | None = None  # None: the reader's default
    max_findings: int = DEFAULT_MAX_FINDINGS
    jobs: int = 1
    dialect: str = "auto"  # "auto" | "ract" | "raxol" (SPEC §8)

    def check(self) -> None:
        if not 1 <= self.schema_version <= LATEST_SCHEMA_VERSION:
            raise UsageError(f"schema version must be 1-{LATEST_SCHEMA_VERSION}, not {self.schema_version}")
        if self.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        if self.max_findings < 1:
            raise UsageError("--max-findings must be at least 1")
        if self.max_line_bytes is not None and self.max_line_bytes < 1:
            raise UsageError("--max-line-bytes must be at least 1")
        if self.dialect not in ("auto", "ract", "raxol"):
            raise UsageError(f"dialect must be ract, raxol or auto, not {self.dialect!r}")


DEFAULT_OPTIONS = ExportOptions()


@dataclass
class LogSummary:
    """What one log gave: its verdict and how many rows (the rows themselves are staged on disk)."""

    path: str
    exit_code: int
    events: int
    findings: int
    first_error: dict[str, Any] | None = None  # the first error finding (code, line, message), for the CLI to say
    bytes: int = 0


@dataclass(frozen=True)
class StagedFile:
    """One staged file of ``events`` rows: its name in the staging directory, its rows and bytes."""

    name: str
    rows: int
    bytes: int


@dataclass
class StageResult:
    logs: list[LogSummary] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # path-level: a path that gave no log
    longest_row: int = 0  # bytes of the longest staged JSON line
    events_files: list[StagedFile] = field(default_factory=list)  # in the logs' order

    @property
    def exit_code(self) -> ExitCode:
        return lowest_nonzero([*(s.exit_code for s in self.logs), *(f.exit_code for f in self.findings)])

    @property
    def counts(self) -> dict[str, int]:
        return {
            "events": sum(s.events for s in self.logs),
            "runs": len(self.logs),
            "findings": sum(s.findings for s in self.logs) + len(self.findings),
        }


# --- text that must be valid UTF-8 in a Parquet string ---------------------


def text(value: object) -> str | None:
    """A string column value (Parquet strings are UTF-8): ``None`` stays NULL.

    Python hands over a file name that is not UTF-8 with lone surrogates
    (``surrogateescape``); its bytes are kept visible as ``\\xNN`` instead.
    """
    if value is None:
        return None
    return utf8_text(value if type(value) is str else str(value))


def _str(value: object) -> str | None:
    return value if type(value) is str else None


# --- staging files -----------------------------------------------------------


def _dumps(row: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(row)
    except (TypeError, orjson.JSONEncodeError):  # a string that is not valid Unicode
        return orjson.dumps({k: text(v) if isinstance(v, str) else v for k, v in row.items()})


class _Sink:
    """The staged rows of one chunk of logs: ``runs-TAG.jsonl``, ``findings-TAG.jsonl``, and the events in
    ``events-TAG-00000.jsonl``, ``events-TAG-00001.jsonl``... each of at most ``batch_rows`` rows and
    ``batch_bytes`` bytes, a longer row alone (``self.events_files``; the first one exists even when empty,
    for the globs)."""

    def __init__(
        self,
        directory: Path,
        tag: str,
        *,
        batch_rows: int = DEFAULT_BATCH_ROWS,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
    ) -> None:
        self.directory, self.tag = directory, tag
        self.batch_rows, self.batch_bytes = batch_rows, batch_bytes
        self.files: dict[str, IO[bytes]] = {}
        self.events_files: list[StagedFile] = []
        self._events: IO[bytes] | None = None
        self._events_name = ""
        self._rows = self._bytes = 0
        self.longest = 0
        try:
            for table in ("runs", "findings"):
                self.files[table] = open(directory / f"{table}-{tag}.jsonl", "wb", buffering=1 << 20)
            self._next_events_file()
        except BaseException:
            self.close()
            raise

    def _next_events_file(self) -> None:
        self._end_events_file()
        self._events_name = f"events-{self.tag}-{len(self.events_files):05d}.jsonl"
        self._events = open(self.directory / self._events_name, "wb", buffering=1 << 20)

    def _end_events_file(self) -> None:
        if self._events is None:
            return
        self._events.close()
        self._events = None
        self.events_files.append(StagedFile(self._events_name, self._rows, self._bytes))
        self._rows = self._bytes = 0

    def write(self, table: str, row: dict[str, Any]) -> None:
        """A ``runs`` or ``findings`` row."""
        data = _dumps(row)
        if len(data) > self.longest:
            self.longest = len(data)
        f = self.files[table]
        f.write(data)
        f.write(b"\n")

    def event(self, row: dict[str, Any]) -> None:
        """An ``events`` row, in the current events file (a new one when this one is full)."""
        data = _dumps(row)
        n = len(data)
        if n > self.longest:
            self.longest = n
        if self._rows and (self._rows >= self.batch_rows or self._bytes + n + 1 > self.batch_bytes):
            self._next_events_file()
        f = self._events
        assert f is not None  # open from __init__ to close
        f.write(data)
        f.write(b"\n")
        self._rows += 1
        self._bytes += n + 1

    def close(self) -> None:
        self._end_events_file()
        for f in self.files.values():
            f.close()


# --- one log -----------------------------------------------------------------


def _reader(path: str, options: ExportOptions) -> ChainReader:
    kwargs: dict[str, Any] = {}
    if options.max_line_bytes is not None:
        kwargs["max_line_bytes"] = options.max_line_bytes
    return ChainReader(
        path,
        schema_version=options.schema_version,
        require_closed=options.require_closed,
        max_findings=options.max_findings,
        display_path=path,
        dialect=options.dialect,
        **kwargs,
    )


def _payload_text(payload: object) -> str:
    """The payload's JCS text. The reader hashed exactly this form, so for a RACT event it never fails."""
    try:
        return canonical_bytes(payload).decode("utf-8")
    except Exception:  # a journal record's payload the canonical form refuses: its plain JSON, sorted
        return orjson.dumps(payload, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=repr).decode()


def _journal_ts(record: dict[str, Any]) -> int | None:
    """A Raxol record's time (``at_ms``, milliseconds) in nanoseconds, when it has one that fits."""
    at_ms = record.get("at_ms")
    if type(at_ms) is int and 0 <= at_ms <= _INT64_MAX // _NS_PER_MS:
        return at_ms * _NS_PER_MS
    return None


def _event_row(ev: LogEvent, shown: str, journal: bool) -> dict[str, Any]:
    """The ``events`` row of one event the reader yielded."""
    e = ev.event
    if journal:  # a Raxol record (SPEC §8): its type is the kind; no envelope ids
        payload = e.get("payload")
        payload = payload if type(payload) is dict else {}
        ts = _journal_ts(e)
        row = {
            "run_id": _str(e.get("run_id")),
            "path": shown,
            "line": ev.line,
            "byte_offset": ev.offset,
            "id": _str(e.get("id")),
            "step_id": None,
            "parent_id": None,
            "timestamp_ns": ts,
            "kind": ev.kind,
            "payload": _payload_text(payload),
            "prev_hash": _str(e.get("prev_hash")),
            "hash": _str(e.get("hash")),
            "trusted": ev.trusted,
            "synthesized": is_synthesized_close(ev.kind, payload),
        }
    else:
        payload = e["payload"]
        ts = e["timestamp_ns"]
        row = {
            "run_id": e["run_id"],
            "path": shown,
            "line": ev.line,
            "byte_offset": ev.offset,
            "id": e["id"],
            "step_id": e["step_id"],
            "parent_id": e["parent_id"],
            "timestamp_ns": ts,
            "kind": e["kind"],
            "payload": _payload_text(payload),
            "prev_hash": e["prev_hash"],
            "hash": e["hash"],
            "trusted": ev.trusted,
            "synthesized": is_synthesized_close(e["kind"], payload),
        }
    return row


def read_log(
    path: str, options: ExportOptions, sink: _Sink, *, progress: Callable[[int], None] | None = None
) -> LogSummary:
    """Stage the rows of one log: every event the reader yields, its findings, its run row."""
    shown = text(path) or ""
    reader = _reader(path, options)
    reader.progress = progress
    journal = reader.dialect == "raxol"
    write, put = sink.write, sink.event
    events = 0
    first_ts = last_ts = None
    projector = RunProjection(reader.dialect, options.max_findings)  # the runs row's report, on this same read
    for ev in reader:
        projector.feed(ev)
        row = _event_row(ev, shown, journal)
        put(row)
        events += 1
        ts = row["timestamp_ns"]
        if ts is not None:
            if first_ts is None or ts < first_ts:
                first_ts = ts
            if last_ts is None or ts > last_ts:
                last_ts = ts

    state = reader.state
    exit_code = int(state.exit_code)
    run_id = _str(getattr(state, "run_id", None)) if not journal else None
    for f in state.findings:
        write("findings", finding_row(f, run_id))
    projection = _projection(projector.report(reader, shown))
    broken = reader.broken_at
    write(
        "runs",
        {
            "run_id": run_id,
            "path": shown,
            "dialect": reader.dialect,
            "status": projection.get("status"),
            "exit_code": exit_code,
            "events": events,
            "first_ts_ns": first_ts,
            "last_ts_ns": last_ts,
            "head": _str(state.head),
            "verified": broken is None and exit_code != ExitCode.IO,
            "untrusted_from_line": broken,
            "final_decision": projection.get("final_decision"),
            "termination_cause": projection.get("termination_cause"),
            "steps": projection.get("steps"),
            "steps_committed": projection.get("steps_committed"),
            "steps_rolled_back": projection.get("steps_rolled_back"),
            "steps_open": projection.get("steps_open"),
            "tool_calls": projection.get("tool_calls"),
            "tool_calls_ok": projection.get("tool_calls_ok"),
            "tool_calls_failed": projection.get("tool_calls_failed"),
            "tool_calls_refused": projection.get("tool_calls_refused"),
            "reaps": projection.get("reaps"),
            "audit_flags": projection.get("audit_flags"),
            "gate_inconsistent": projection.get("gate_inconsistent"),
            "suppressed_findings": state.suppressed,
        },
    )
    first_error = next((f for f in state.findings if f.severity == ERROR), None)
    return LogSummary(
        path=path,
        exit_code=exit_code,
        events=events,
        findings=len(state.findings),
        first_error=(
            {"code": first_error.code, "line": first_error.line, "message": first_error.message}
            if first_error is not None
            else None
        ),
    )


def _projection(report: Report) -> dict[str, Any]:
    """The ``runs`` columns only the projection knows, as ``project`` reports them (``RunProjection``,
    fed on the same read as the ``events`` rows, so ``runs`` and ``project`` cannot drift apart)."""
    if report.get("dialect") == "raxol":  # a journal's report (docs/raxol.md): no steps or tools
        return {"status": report.get("status"), "audit_flags": _get(report, "audit_flags", "count")}
    return {
        "status": report.get("status"),
        "final_decision": _get(report, "outcome", "final_decision"),
        "termination_cause": _get(report, "outcome", "termination_cause"),
        "steps": _get(report, "steps", "started"),
        "steps_committed": _get(report, "steps", "committed"),
        "steps_rolled_back": _get(report, "steps", "rolled_back"),
        "steps_open": _get(report, "steps", "open"),
        "tool_calls": _get(report, "tools", "totals", "called"),
        "tool_calls_ok": _get(report, "tools", "totals", "ok"),
        "tool_calls_failed": _get(report, "tools", "totals", "failed"),
        "tool_calls_refused": _get(report, "tools", "totals", "refused"),
        "reaps": _get(report, "process_reaps", "count"),
        "audit_flags": _get(report, "audit_flags", "count"),
        "gate_inconsistent": _get(report, "predicates", "gate_inconsistent"),
    }


def _get(data: object, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def finding_row(f: Finding, run_id: str | None) -> dict[str, Any]:
    return {
        "path": text(f.path),
        "run_id": run_id,
        "line": f.line,
        "byte_offset": f.offset,
        "event_id": f.event_id,
        "code": f.code,
        "severity": f.severity,
        "exit_code": int(f.exit_code),
        "message": text(f.message),
        "expected": text(f.expected),
        "actual": text(f.actual),
    }


# --- many logs -----------------------------------------------------------------


#: what one chunk of logs gave: a summary per log, the longest staged row, the events files
_Chunk = tuple[list[LogSummary], int, list[StagedFile]]


def _stage_chunk(
    paths: Sequence[str], options: ExportOptions, directory: str, tag: str, batch: tuple[int, int]
) -> _Chunk:
    """Worker entry point: stage the rows of some logs into one set of files (``batch``: rows, bytes)."""
    sink = _Sink(Path(directory), tag, batch_rows=batch[0], batch_bytes=batch[1])
    try:
        summaries = [read_log(p, options, sink) for p in paths]
    finally:
        sink.close()
    return summaries, sink.longest, sink.events_files


def _chunks(n: int, jobs: int) -> list[range]:
    """Contiguous index ranges (so the staged files keep the logs' order), a few per worker."""
    count = max(1, min(n, jobs * 4))
    size, rest = divmod(n, count)
    out, start = [], 0
    for k in range(count):
        stop = start + size + (1 if k < rest else 0)
        out.append(range(start, stop))
        start = stop
    return out


def stage_rows(
    paths: Iterable[str | os.PathLike[str]],
    options: ExportOptions,
    directory: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
) -> StageResult:
    """Read every log under ``paths`` and stage its rows under ``directory`` (which must exist).

    ``progress(done_bytes, total_bytes)`` is called as logs are read (``log_size`` bytes each: 0 for
    stdin). Each staged file of ``events`` rows holds at most ``batch_rows`` rows and ``batch_bytes``
    bytes (a longer row alone).
    """
    options.check()
    if batch_rows < 1 or batch_bytes < 1:
        raise ValueError("batch_rows and batch_bytes must be at least 1")
    batch = (batch_rows, batch_bytes)
    found = discover(list(paths), suffixes=(".jsonl",) if options.dialect == "raxol" else ())
    result = StageResult(findings=list(found.findings))
    files = [str(p) for p in found.files]
    sizes = [log_size(p) for p in files]
    total = sum(sizes)
    sink = _Sink(directory, "paths", batch_rows=batch_rows, batch_bytes=batch_bytes)  # the path-level findings
    # (and the tag every glob can rely on: its one events file is empty, and not a batch)
    try:
        for f in found.findings:
            sink.write("findings", finding_row(f, None))
    finally:
        sink.close()

    def say(done: int) -> None:
        if progress is not None:
            progress(min(done, total), total)

    chunks = _chunks(len(files), options.jobs) if files else []
    pool = None
    if options.jobs > 1 and len(chunks) > 1 and not any(is_stdin(f) for f in files):  # (stdin: read here only)
        pool = _make_pool(options.jobs)
    done = 0
    if pool is None:
        for k, chunk in enumerate(chunks):
            sink = _Sink(directory, f"{k:06d}", batch_rows=batch_rows, batch_bytes=batch_bytes)
            try:
                for i in chunk:
                    summary = read_log(files[i], options, sink, progress=_shifted(say, done))
                    summary.bytes = sizes[i]
                    result.logs.append(summary)
                    done += sizes[i]
                    say(done)
            finally:
                sink.close()
            result.longest_row = max(result.longest_row, sink.longest)
            result.events_files.extend(sink.events_files)
        return result

    with pool:
        futures: list[Future[_Chunk]] = [
            pool.submit(_stage_chunk, [files[i] for i in chunk], options, str(directory), f"{k:06d}", batch)
            for k, chunk in enumerate(chunks)
        ]
        for k, (chunk, future) in enumerate(zip(chunks, futures, strict=True)):
            try:
                summaries, longest, staged = future.result()
            except pool_failures():  # a worker died: read this chunk here (its files are rewritten whole)
                summaries, longest, staged = _stage_chunk(
                    [files[i] for i in chunk], options, str(directory), f"{k:06d}", batch
                )
            for i, summary in zip(chunk, summaries, strict=True):
                summary.bytes = sizes[i]
                done += sizes[i]
            result.logs.extend(summaries)
            result.longest_row = max(result.longest_row, longest)
            result.events_files.extend(staged)
            say(done)
    return result


def _shifted(say: Callable[[int], None], base: int) -> Callable[[int], None]:
    """A log's own progress (its byte offset) as progress over every log (``base`` bytes done before it)."""
    return lambda offset: say(base + offset)


def _make_pool(jobs: int) -> ProcessPoolExecutor | None:
    """``parallel.make_pool``, or None where no pool can start (the files are then read here)."""
    try:
        return make_pool(jobs)
    except (OSError, NotImplementedError, ImportError):
        return None
