"""Parallel verification: across files, and within one large file.

Within a file, each line's own checks (parse, envelope, canonical hash, kind,
payload: ``reader.analyze_line``) do not depend on other lines. So the file
is cut at newline boundaries into byte ranges; worker processes (and the
main process, for a share of the ranges) read their range with the code the
sequential reader uses: its leading run of clean events in the Python
core's chain mode, sent back whole (``range_chain``) and taken by the main
process when it links on (``ChainState.take_run``; else the main process
reads that range again line by line), and the lines after it framed and
analyzed one by one (``LineFramer`` + ``verdict.line_result``), sent back as
compact per-line results that the main process feeds, in file order,
through ``ChainState.feed`` -- the same cross-line checks (genesis, linkage,
run_id, duplicate ids, clock, open handles) as a sequential read. Verdicts are
therefore identical to ``ChainReader``'s whatever the chunking;
``tests/test_parallel.py`` checks it on every fixture and on mutated logs
with cuts next to torn tails, CRLF and bad lines.

Only a file of at least ``PARALLEL_MIN_BYTES`` is split; smaller files go
whole to a worker (several files) or are read sequentially (one file).
"""

from __future__ import annotations

import gc
import os
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ract_cli.findings import error
from ract_cli.format.json_types import Event, Payload
from ract_cli.read import core
from ract_cli.read.chain import ChainState, TakenRun
from ract_cli.read.chain_mode import BATCH_LINE_BYTES
from ract_cli.read.dialect import resolve_dialect
from ract_cli.read.event import has_record_shape
from ract_cli.read.files import is_compressed, is_stdin, open_log
from ract_cli.read.framing import LineFramer
from ract_cli.read.handles import HANDLE_KINDS
from ract_cli.read.json_rules import LineResult, Problem
from ract_cli.read.verdict import line_result, not_an_object
from ract_cli.records import Record

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:  # (concurrent.futures imports logging: imported where a pool is made, not at start-up)
    from concurrent.futures import Executor, Future, ProcessPoolExecutor
    from types import TracebackType
    from typing import BinaryIO, TypeVar

    _R = TypeVar("_R")

PARALLEL_MIN_BYTES = 8 << 20  # a single file is split only from this size on
CHUNK_BYTES = 2 << 20  # target size of one byte range (finer: better pipelining, less memory in flight)
_IN_FLIGHT_PER_JOB = 2  # ranges queued per worker: bounds memory held by finished-but-unfed results


def pool_failures() -> tuple[type[BaseException], ...]:
    """What starting or using worker processes can raise (a worker killed, no fork, no semaphores):
    the answer is then to do the work in this process, with the same result. A function, so that an
    ``except pool_failures():`` imports concurrent.futures only when something was raised."""
    from concurrent.futures import BrokenExecutor  # BrokenProcessPool is a BrokenExecutor

    return (BrokenExecutor, OSError, NotImplementedError, ImportError)


_NO_PAYLOAD: Payload = {}

#: a clean event as a worker sends it back (see ``_Packer``):
#: (offset, id, run_id, prev_hash, timestamp_ns, kind, step_id, parent_id, payload, hash)
_PackedEvent = tuple[int, str, str | None, str | None, int, str, str | None, str | None, Payload | None, str | None]
#: a problem of a line: (code, message, expected, actual, severity), ``Problem``'s fields in order
_PackedProblem = tuple[str, str, str | None, str | None, str]
#: any other line: (offset, event or None, stored hash, problems, parsed)
_PackedOther = tuple[int, Event | None, str | None, tuple[_PackedProblem, ...], bool]
#: a line framing alone shows is MALFORMED_LINE, past the range's first ``max_findings`` such lines: (offset,)
_PackedSkipped = tuple[int]
#: one line as a worker sends it back: 10 items for a clean event, 5 for another line, 1 for a skipped one
PackedLine = _PackedEvent | _PackedOther | _PackedSkipped


def split_ranges(
    path: str | os.PathLike[str], chunk_bytes: int = CHUNK_BYTES, cuts: Sequence[int] | None = None
) -> list[tuple[int, int | None]]:
    """Byte ranges ``[start, end)`` covering the file, each starting at a line start.

    A cut is moved forward to just after the next ``\\n``. The last range's
    end is ``None``: it is read to end of file, as the sequential reader
    does. ``cuts`` (tests) gives the wanted cut offsets instead of every
    ``chunk_bytes``.
    """
    size = os.path.getsize(path)
    wanted = sorted(set(cuts)) if cuts is not None else list(range(chunk_bytes, size, chunk_bytes))
    starts = [0]
    # Every byte before ``scanned`` has been searched: a cut at or before it has the boundary
    # found last, already taken (or past the end). So the file is read once in all, however few
    # newlines it has (a file without one was read to its end from every cut: quadratic).
    scanned = 0
    with open(path, "rb") as f:
        for cut in wanted:
            if cut <= max(starts[-1], scanned) or cut >= size:
                continue
            boundary = _next_line_start(f, cut, size)
            if boundary is None:
                break  # no newline from here to the end: no later cut has one either
            scanned = boundary
            if boundary > starts[-1] and boundary < size:
                starts.append(boundary)
    return [(start, starts[i + 1] if i + 1 < len(starts) else None) for i, start in enumerate(starts)]


def _next_line_start(f: BinaryIO, position: int, size: int) -> int | None:
    """Offset just after the first ``\\n`` at or after ``position - 1`` (so a cut on a line start stays)."""
    f.seek(position - 1)
    pos = position - 1
    while pos < size:
        block = f.read(1 << 16)
        if not block:
            return None
        i = block.find(b"\n")
        if i != -1:
            return pos + i + 1
        pos += len(block)
    return None


# --- the worker side -----------------------------------------------------------


class RangeResult(Record):
    """What one worker sends back for one byte range."""

    __slots__ = ("start", "lines", "bytes_read", "read_error", "error_offset", "error_line", "saw_record", "run")
    start: int
    lines: list[PackedLine]  # compact per-line results (see _Packer)
    bytes_read: int
    read_error: str | None
    error_offset: int | None  # relative to ``start``
    error_line: int | None  # relative line number (1-based)
    saw_record: bool  # a line of the range has a record's shape (NOT_A_LOG, ChainState.finish_file)
    #: the range's leading run of clean events, taken whole (``range_chain``); ``lines`` are those after it
    run: TakenRun | None

    def __init__(
        self,
        start: int,
        lines: list[PackedLine],
        bytes_read: int,
        read_error: str | None = None,
        error_offset: int | None = None,
        error_line: int | None = None,
        saw_record: bool = False,
        run: TakenRun | None = None,
    ) -> None:
        self.start = start
        self.lines = lines
        self.bytes_read = bytes_read
        self.read_error = read_error
        self.error_offset = error_offset
        self.error_line = error_line
        self.saw_record = saw_record
        self.run = run


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building or loading one range's results.

    Tens of thousands of small tuples and dicts trigger collection after
    collection for nothing (they hold no cycles): unpickling one range's
    results took 7x longer with the collector running.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def scan_range_packed(
    path: str,
    start: int,
    end: int | None,
    schema_version: int,
    max_line_bytes: int,
    max_findings: int | None = None,
    take: bool = False,
) -> bytes:
    """Worker entry point: ``scan_range`` pickled here (the pool then moves one bytes object)."""
    import pickle  # (only where a pool runs: not at every start-up)

    with gc_paused():
        found = scan_range(path, start, end, schema_version, max_line_bytes, max_findings, take)
        return pickle.dumps(found, pickle.HIGHEST_PROTOCOL)


#: the most bytes of a range read at once for its leading run (a range holding a long line can be larger)
_RUN_BYTES = 2 * CHUNK_BYTES


def scan_range(
    path: str,
    start: int,
    end: int | None,
    schema_version: int,
    max_line_bytes: int,
    max_findings: int | None = None,
    take: bool = False,
) -> RangeResult:
    """Frame and analyze the lines of ``[start, end)`` (``end=None``: to end of file).

    ``take``: the range's leading run of clean events is taken whole first
    (``range_chain.take_run``: the Python core's chain mode); the lines after
    it are sent one by one.

    With ``max_findings``, a line framing alone shows is not an object
    (``verdict.not_an_object``) is analyzed only for the range's first
    ``max_findings`` such lines, then sent as ``(offset,)``: by then the
    main process keeps ``max_findings`` findings, so it only counts it
    (``ChainState.skip_malformed``), as the sequential reader does.
    """
    lines: list[PackedLine] = []
    pack = _Packer(lines)
    length = None if end is None else end - start
    reached = 0
    saw_record = False
    analyzed_bad = 0  # lines framing shows are not objects, analyzed in full so far
    run: TakenRun | None = None
    with open_log(Path(path)) as f:
        f.seek(start)
        if take:
            from ract_cli.read.range_chain import take_run  # (a split log only: not at every start-up)

            try:
                data = f.read(min(length, _RUN_BYTES) if length is not None else _RUN_BYTES)
            except OSError:
                data = b""  # (the framer below meets the failure again and reports it)
            # (as the reader's chain mode: no line of fewer bytes can hold more than MAX_LINE_NODES values)
            run = take_run(data, schema_version, min(max_line_bytes, BATCH_LINE_BYTES - 1))
            del data
            f.seek(start + (run.size if run is not None else 0))
        skip = run.size if run is not None else 0  # (the framer's offsets count from here)
        framer = LineFramer(f, max_line_bytes)
        for _, offset, raw in framer:
            offset += skip
            if length is not None and offset >= length:
                break
            if max_findings is not None and raw is not None and raw[-1:] == b"\n" and not_an_object(raw):
                if analyzed_bad >= max_findings:
                    lines.append((offset,))
                    pack.last_hash = None
                    reached = offset
                    continue
                analyzed_bad += 1
            result = line_result(raw, schema_version, max_line_bytes)
            pack(offset, result)
            if not saw_record:
                saw_record = has_record_shape(raw, result)
            reached = offset
        if framer.read_error is not None:
            error_offset = None if framer.error_offset is None else framer.error_offset + skip
            error_line = None if framer.error_line is None else framer.error_line + (run.lines if run else 0)
            return RangeResult(start, lines, reached, framer.read_error, error_offset, error_line, saw_record, run)
        if length is None:
            reached = skip + framer.end
    return RangeResult(start, lines, length if length is not None else reached, saw_record=saw_record, run=run)


class _Packer:
    """Turns ``LineResult``s into small picklable tuples.

    A clean event becomes ``(offset, id, run_id, prev_hash, ts, kind, step_id,
    parent_id, payload, hash)`` where ``run_id`` / ``prev_hash`` are ``None``
    when they equal the previous clean event's run_id / this range's previous
    line's hash (the main process restores them), and ``step_id``,
    ``parent_id`` and ``payload`` are ``None`` unless the event is of a kind
    the open-handle tracker reads (``HANDLE_KINDS``). Any other line becomes
    ``(offset, event_or_None, stored_hash, problems, parsed)``.
    """

    def __init__(self, out: list[PackedLine]) -> None:
        self.out = out
        self.last_hash: object = _UNSET
        self.last_run_id: object = _UNSET

    def __call__(self, offset: int, result: LineResult) -> None:
        event = result.event
        if event is not None and not result.problems:
            run_id, prev = event["run_id"], event["prev_hash"]
            kind = event["kind"]
            if kind in HANDLE_KINDS:
                step_id, parent_id, payload = event["step_id"], event["parent_id"], event["payload"]
            else:  # only the open-handle tracker reads these, and only for its kinds
                step_id = parent_id = payload = None
            self.out.append(
                (
                    offset,
                    event["id"],
                    None if run_id == self.last_run_id else run_id,
                    None if prev == self.last_hash else prev,
                    event["timestamp_ns"],
                    kind,
                    step_id,
                    parent_id,
                    payload,
                    result.stored_hash,
                )
            )
            self.last_run_id = run_id
        else:
            if event is not None:
                event = dict(event)
                if event.get("kind") not in HANDLE_KINDS:
                    event["payload"] = _NO_PAYLOAD
            problems = tuple((p.code, p.message, p.expected, p.actual, p.severity) for p in result.problems)
            self.out.append((offset, event, result.stored_hash, problems, result.parsed))
            if event is not None:
                self.last_run_id = event["run_id"]
        self.last_hash = result.stored_hash


_UNSET = object()


def unpack(start: int, lines: list[PackedLine]) -> Iterator[tuple[int, LineResult | None]]:
    """Inverse of ``_Packer``: ``(absolute offset, LineResult)`` per line, in order (None: a skipped line)."""
    from typing import cast  # (here: only a byte range's results need it, and typing costs start-up)

    last_hash: str | None = None
    last_run_id: str | None = None
    for item in lines:
        if len(item) == 1:
            yield start + item[0], None
            last_hash = None
            continue
        if len(item) == 10:  # mypy narrows a tuple union by len() only up to 8 items: hence the casts
            offset, id_, run_id, prev, ts, kind, step_id, parent_id, payload, stored = cast(_PackedEvent, item)
            if run_id is None:
                run_id = last_run_id
            if prev is None:
                prev = last_hash
            event: Event = {
                "id": id_,
                "run_id": run_id,
                "step_id": step_id,
                "parent_id": parent_id,
                "timestamp_ns": ts,
                "kind": kind,
                "payload": _NO_PAYLOAD if payload is None else payload,
                "prev_hash": prev,
                "hash": stored,
            }
            last_run_id = run_id
            yield start + offset, LineResult(event, stored, [])
        else:
            offset, other, stored, problems, parsed = cast(_PackedOther, item)  # (5 items)
            if other is not None:
                last_run_id = other["run_id"]
            yield start + offset, LineResult(other, stored, [Problem(*p) for p in problems], parsed)
        last_hash = stored


# --- the main side ---------------------------------------------------------------


def can_split(path: str | os.PathLike[str], max_line_bytes: int, dialect: str = "auto") -> bool:
    """True when ``path`` is a RACT log (not a journal, not stdin or gzip) large enough to be split.

    Never with the native core: its chain mode (``chain_mode.py``), with C's
    helper thread, verifies one file in one process several times as fast
    as Python workers prove ranges (``bench/bench.py``, docs/performance.md).
    Several files still go to several processes. The core is RACT_CORE's as
    it is now, as ``ChainReader`` takes it (a bad value: ``UsageError``, exit 2).
    """
    core.use_core(core.core_name())
    if core.prove is core.native_analyze:
        return False
    try:
        if is_stdin(path) or os.path.getsize(path) < PARALLEL_MIN_BYTES or is_compressed(path):
            return False
        return resolve_dialect(dialect, path, max_line_bytes) == "ract"
    except (OSError, ValueError):
        return False


def scan_file(
    path: str | os.PathLike[str],
    state: ChainState,
    pool: Executor | None,
    *,
    jobs: int,
    schema_version: int,
    max_line_bytes: int,
    chunk_bytes: int = CHUNK_BYTES,
    cuts: Sequence[int] | None = None,
    main_every: int = 0,
    progress: Callable[[int], None] | None = None,
    take: bool = True,
) -> None:
    """Verify one file in byte ranges; the verdict lands in ``state`` (finished).

    Ranges go to ``pool``'s workers, except every ``main_every``-th one
    (starting with the first), which this process analyzes itself between
    feeding results -- no pickling for those, and no idle main process.
    ``main_every=1`` (or no pool) analyzes every range here. ``take``: each
    range's leading run of clean events is taken whole (``range_chain``) when
    it links on, else the range is read again here line by line; ``False``
    sends every line's result (the same verdict; tests compare the two).
    """
    ranges = _ranges(path, state, chunk_bytes, cuts)
    if ranges is None:
        return
    if pool is None:
        main_every = 1
    submit = pool.submit if pool is not None else None

    def by_main(i: int) -> bool:
        return main_every > 0 and i % main_every == 0

    pending: dict[int, Future[bytes]] = {}
    queue = deque(i for i in range(len(ranges)) if not by_main(i))  # empty without a pool: main_every is 1
    limit = max(1, jobs) * _IN_FLIGHT_PER_JOB

    def refill() -> None:
        while submit is not None and len(pending) < limit and queue:
            i = queue.popleft()
            pending[i] = submit(
                scan_range_packed, str(path), *ranges[i], schema_version, max_line_bytes, state.max_findings, take
            )

    refill()
    line_no = 0
    feed = state.feed
    import pickle  # (only where a pool runs: not at every start-up)

    for i, (start, end) in enumerate(ranges):
        with gc_paused():
            if by_main(i):
                chunk = scan_range(str(path), start, end, schema_version, max_line_bytes, state.max_findings, take)
            else:
                packed = pending.pop(i).result()
                refill()
                chunk = pickle.loads(packed)
                del packed
            if chunk.run is not None:
                if state.take_run(chunk.run, line_no + 1, start):
                    line_no += chunk.run.lines
                else:  # it does not link on to the lines before it (a break, a duplicate id): line by line here
                    chunk = scan_range(str(path), start, end, schema_version, max_line_bytes, state.max_findings)
            for offset, result in unpack(chunk.start, chunk.lines):
                line_no += 1
                if result is None:
                    state.skip_malformed(line_no)  # the main side keeps max_findings by now (scan_range)
                else:
                    feed(result, line_no, offset)
            state.lines = line_no
            state.saw_record = state.saw_record or chunk.saw_record
        if chunk.read_error is not None:
            state.add(
                error(
                    "IO_ERROR",
                    chunk.read_error,
                    path=state.path,
                    line=line_no + 1,
                    offset=chunk.start + (chunk.error_offset or 0),
                )
            )
            for future in pending.values():
                future.cancel()
            break  # the sequential reader stops at a read error too, then finishes
        if progress is not None:
            progress(chunk.start + chunk.bytes_read)
    state.finish_file()


def _ranges(
    path: str | os.PathLike[str], state: ChainState, chunk_bytes: int, cuts: Sequence[int] | None
) -> list[tuple[int, int | None]] | None:
    """The byte ranges of ``path``; None (with the IO_ERROR in ``state``) when it cannot be read."""
    try:
        open_log(Path(path)).close()  # the same IO verdicts as the sequential reader
    except Exception as exc:
        state.add(error("IO_ERROR", getattr(exc, "message", str(exc)), path=state.path))
        return None
    try:
        return split_ranges(path, chunk_bytes, cuts)
    except OSError as exc:
        state.add(error("IO_ERROR", f"read failed: {exc.strerror or exc}", path=state.path))
        return None


#: a task of a pool over many small files: at most this many files, and about this many bytes (one
#: task per small run cost more in pickling and queueing than it saved: ``--jobs 2`` over 10,000 runs
#: was slower than ``--jobs 1``, for verify and for grep)
TASK_FILES = 64
TASK_BYTES = 8 << 20


def file_tasks(
    indices: Sequence[int],
    sizes: Sequence[int],
    max_files: int,
    max_bytes: int,
    alone: Callable[[int], bool] | None = None,
) -> list[list[int]]:
    """``indices`` (in file order) cut into runs of at most ``max_files`` files and about ``max_bytes``
    (``sizes[i]``: file ``i``'s; a larger file is a task alone, and so is any ``i`` for which ``alone(i)``)."""
    tasks: list[list[int]] = []
    held = 0
    for i in indices:
        lone = alone is not None and alone(i)
        if not tasks or lone or len(tasks[-1]) >= max_files or held + sizes[i] > max_bytes:
            tasks.append([])
            held = sizes[i] if not lone else max_bytes + 1  # (nothing joins a lone file's task)
        else:
            held += sizes[i]
        tasks[-1].append(i)
    return tasks


#: logs holding fewer bytes in all are read one after the other unless ``--jobs`` asks otherwise:
#: starting the pool costs ~50 ms, what 8 MB of small runs take (verify, 200 runs: 0.18 s either way;
#: 10: 0.10 s against 0.15)
POOL_MIN_BYTES = 8 << 20
#: ``jobs`` when the CLI is given no ``--jobs`` (verify, grep): the command picks it (``auto_jobs``)
AUTO_JOBS = 0
#: the most workers ``AUTO_JOBS`` starts (each holds its own interpreter, ~35 MB)
AUTO_MAX_JOBS = 8


def auto_jobs(n_files: int, total_bytes: int) -> int:
    """``AUTO_JOBS``: one job under ``POOL_MIN_BYTES`` in all. One larger log: two when a second core is
    free right now, else one (the native core's helper thread: 1.4-1.9x one thread on a free core, up to
    25 % slower with the other core busy; the Python core's second process: 1.6-2x; docs/verify.md).
    Several: one worker per CPU this process may run on, at most ``AUTO_MAX_JOBS``."""
    if total_bytes < POOL_MIN_BYTES:
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if n_files <= 1:
        return 2 if cpus > 1 and idle_core(cpus) else 1
    return max(1, min(cpus, AUTO_MAX_JOBS))


#: the kernel's load line: its fourth field is "runnable/total" scheduling entities, right now
LOADAVG = "/proc/loadavg"


def runnable_tasks(loadavg: bytes) -> int | None:
    """The tasks runnable now, from ``/proc/loadavg``'s text (``0.52 0.58 0.59 2/467 12345``); None when
    it does not read so."""
    fields = loadavg.split()
    if len(fields) < 4 or fields[3].count(b"/") != 1:
        return None
    running = fields[3].split(b"/")[0]
    return int(running) if running.isdigit() else None


def idle_core(cpus: int) -> bool:
    """Whether a core is free for a second thread: fewer tasks runnable than ``cpus`` (this process is one
    of them). The instant count, not the load average, which trails the machine by a minute. Unknown (no
    ``/proc``): no."""
    try:
        with open(LOADAVG, "rb") as f:
            running = runnable_tasks(f.read(256))
    except OSError:
        return False
    return running is not None and running < cpus


def make_pool(jobs: int) -> ProcessPoolExecutor:
    """A process pool of ``jobs`` workers (fork where available: fast start, shared imports)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    class Pool(ProcessPoolExecutor):
        """Left by an exception (Ctrl-C, an error): stopped at once, its workers' tasks abandoned, not
        awaited (``ProcessPoolExecutor``'s own exit waits for every running task: seconds)."""

        def __exit__(
            self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
        ) -> bool | None:
            if exc_type is None:
                return super().__exit__(exc_type, exc, tb)
            stop_pool(self)
            return None

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    return Pool(max_workers=jobs, mp_context=context, initializer=watch_parent, initargs=(os.getpid(),))


#: how often a worker looks whether the process that started it is still there (seconds)
PARENT_POLL = 0.5


def watch_parent(parent: int) -> None:
    """Worker initializer: end this worker once ``parent`` is gone (killed with SIGKILL, say). A worker
    otherwise waits for its next task forever, an orphan, once its task is done."""
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL)
        os._exit(1)

    threading.Thread(target=watch, name="ract-watch-parent", daemon=True).start()


def stop_pool(pool: Executor) -> None:
    """Stop ``pool`` now: cancel what no worker took, terminate the workers (what they ran is lost)."""
    workers = list((getattr(pool, "_processes", None) or {}).values())  # (3.14 has terminate_workers())
    results = getattr(pool, "_result_queue", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        try:
            process.terminate()
        except (OSError, ValueError):
            pass  # already gone, or closed
    for process in workers:  # reaped: no zombie outlives the pool (SIGTERM ends a worker in milliseconds)
        try:
            process.join(timeout=2)
        except (OSError, ValueError, AssertionError):
            pass
    try:  # a worker killed mid-result: the pool's thread would wait for its rest forever (and exit with it)
        results._writer.close()  # type: ignore[union-attr]
    except (OSError, AttributeError):
        pass


#: tasks in flight per job past the one awaited (``in_order``): memory independent of the number of files
TASKS_AHEAD = 2


def in_order(
    pool: ProcessPoolExecutor, fn: Callable[..., _R], tasks: Sequence[object], *args: object, jobs: int
) -> Iterator[_R | None]:
    """``fn(task, *args)`` of each task, run in ``pool`` and yielded in task order, with at most
    ``TASKS_AHEAD * jobs`` tasks submitted past the one awaited; None for a task whose worker died, and
    for a task that is None (the caller does those itself: standard input, read here only)."""
    futures: dict[int, Future[_R]] = {}
    submitted = 0
    for t in range(len(tasks)):
        submitted = submit_ahead(pool, fn, tasks, args, futures, submitted, t + TASKS_AHEAD * jobs)
        future = futures.pop(t, None)  # (None: never submitted, the pool broke before)
        try:
            result = future.result() if future is not None else None
        except pool_failures():
            result = None
        yield result


def submit_ahead(
    pool: ProcessPoolExecutor,
    fn: Callable[..., _R],
    tasks: Sequence[object],
    args: tuple[object, ...],
    futures: dict[int, Future[_R]],
    submitted: int,
    last: int,
) -> int:
    """Submit ``fn(tasks[k], *args)`` for ``k`` from ``submitted`` up to ``last`` into ``futures``; return how
    many tasks are submitted now. A broken pool (a worker died) takes no more: every later task is submitted
    never, and its caller does it itself."""
    try:
        while submitted < len(tasks) and submitted <= last:
            if tasks[submitted] is not None:  # (None: a task the caller keeps)
                futures[submitted] = pool.submit(fn, tasks[submitted], *args)
            submitted += 1
    except pool_failures():
        return len(tasks)
    return submitted
