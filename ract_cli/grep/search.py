"""``grep``: filter events across logs, verifying the chain while searching (SPEC §6).

Two layers, both data-only (no printing):

* The filter (``ract_cli.grep.filters``): ``build_filter`` turns the
  command-line values into a ``GrepFilter`` whose ``matches(event)`` is a pure
  function of one event (``--where`` in ``grep.where``, times in
  ``grep.times``). Every malformed value raises ``UsageError`` (exit 2).
* The search (here): ``grep_paths`` returns a ``GrepSearch``; iterating it
  streams ``Match`` objects as soon as they are trustworthy, and one
  ``FileResult`` per file (or per path that gave no file) after its last
  match. Afterwards ``exit_code`` is the command's exit code.
  ``GrepOptions(jobs=N)`` greps files in N worker processes; what comes out,
  and in which order, is the same for every N (``grep.file_search.grep_file``
  is the one per-file search both use, and says how a file is read).
  ``grep_paths(..., progress=f)`` calls ``f(done_bytes, total_bytes)`` as the
  files are read (``read.files.log_size`` of each; a file grepped by a worker
  counts when its result is taken).

The names of the filter and result modules are re-exported here, where they
were defined before the package was split.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from ract_cli.dialects import discovery_suffixes
from ract_cli.errors import ExitCode, lowest_nonzero
from ract_cli.grep.file_search import grep_file, grep_files_packed
from ract_cli.grep.filters import GrepFilter, build_filter
from ract_cli.grep.filters import unknown_kind_patterns as unknown_kind_patterns
from ract_cli.grep.results import DEFAULT_MAX_FINDINGS as DEFAULT_MAX_FINDINGS
from ract_cli.grep.results import FileResult, GrepOptions, Match
from ract_cli.grep.times import format_ns, parse_time
from ract_cli.grep.where import Condition, parse_where
from ract_cli.grep.where import json_equal as json_equal
from ract_cli.read import parallel
from ract_cli.read.discovery import discover
from ract_cli.read.files import is_stdin, log_size

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

#: bytes of log files being grepped by workers at once (their matches wait here, in file order)
IN_FLIGHT_BYTES = 64 << 20
#: a worker's task: files, and about bytes (``parallel.file_tasks``; names of their own here, for tests)
TASK_FILES = parallel.TASK_FILES
TASK_BYTES = parallel.TASK_BYTES

#: ``grep_paths``'s default options (frozen: one instance serves every call)
_DEFAULT_OPTIONS = GrepOptions()

_PerFile = Generator[tuple[FileResult, Iterable[Match]], None, None]

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor


class GrepSearch:
    """A lazy search over files: iterate for ``Match`` and ``FileResult`` items, in file order.

    ``progress(done_bytes, total_bytes)``, when given, is called as the files are read (every few MB).
    """

    def __init__(
        self,
        paths: Sequence[str | os.PathLike[str]],
        flt: GrepFilter,
        options: GrepOptions,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.filter = flt
        self.options = options
        found = discover(paths, suffixes=discovery_suffixes(options.dialect))
        self.files = [str(p) for p in found.files]
        # each file's size (a stat), read once: for progress, the default number of jobs and the workers
        sized = progress is not None or options.jobs != 1
        self._sizes = [log_size(p) for p in self.files] if sized else []
        self._total = sum(self._sizes)
        if options.jobs == parallel.AUTO_JOBS:  # (no --jobs: parallel.auto_jobs picks by files and bytes)
            self.options = options.replace(jobs=parallel.auto_jobs(len(self.files), self._total))
        self._progress = progress
        self._done = 0  # bytes of the files already handed out whole
        self._path_findings = list(found.findings)
        self.total_matches = 0
        self.files_with_matches = 0
        self._codes: set[int] = set()
        self._iterator: Generator[Match | FileResult, None, None] | None = None
        self._per_file: _PerFile | None = None
        self.done = False

    @property
    def several(self) -> bool:
        """More than one file is searched (counts then carry their path)."""
        return len(self.files) > 1

    @property
    def exit_code(self) -> ExitCode:
        """SPEC §3 over every file's findings; else 0 with a match, 7 without."""
        worst = lowest_nonzero(self._codes)
        if worst:
            return worst
        return ExitCode.OK if self.total_matches else ExitCode.NO_MATCH

    def __iter__(self) -> Iterator[Match | FileResult]:
        self._iterator = self._iterate()
        return self._iterator

    def _iterate(self) -> Generator[Match | FileResult, None, None]:
        for finding in self._path_findings:
            result = FileResult(
                finding.path or "",
                exit_code=finding.exit_code,
                findings=[finding],
                verified=self.options.verify,
                is_file=False,
            )
            self._codes.add(int(result.exit_code))
            yield result
        parallel_files = self.options.jobs > 1 and len(self.files) > 1
        self._per_file = per_file = self._per_file_parallel() if parallel_files else self._per_file_here()
        for i, (result, matches) in enumerate(per_file):
            for match in matches:
                result.matches += 1
                self.total_matches += 1
                yield match
            if result.matches:
                self.files_with_matches += 1
            self._codes.add(int(result.exit_code))
            if self._progress is not None:
                self._done += self._sizes[i]
                self._say(0)
            yield result
        self.done = True

    def _say(self, offset: int) -> None:
        """Progress: ``offset`` bytes into the file after the ``_done`` bytes of those before it."""
        if self._progress is not None:
            self._progress(min(self._done + offset, self._total), self._total)

    def close(self) -> None:
        """Stop early (a closed pipe, an interrupt): cancel what workers have not started."""
        for generator in (self._iterator, self._per_file):
            if generator is not None:
                generator.close()

    def _one_here(self, path: str) -> tuple[FileResult, Iterable[Match]]:
        """One file searched in this process: its result (filled in as its matches are consumed)."""
        result = FileResult(path, verified=self.options.verify)
        progress = self._say if self._progress is not None else None
        return result, grep_file(path, self.filter, self.options, result, progress)

    def _per_file_here(self) -> _PerFile:
        for path in self.files:  # a generator, as close() expects
            yield self._one_here(path)

    def _per_file_parallel(self) -> _PerFile:
        """``--jobs N``: files go to N worker processes, results come back in file order (see ``_Workers``).

        A worker greps a whole file and sends back its matches as (line,
        offset, raw bytes) and its ``FileResult``; this process rebuilds each
        ``Match`` (parsing the raw line again: cheaper than pickling the
        event).
        """
        import pickle  # (with a pool only: not at every start-up)

        import orjson  # (likewise: a search the native core answers in this process never imports it, ~14 ms)

        workers = _Workers(self.files, self._sizes, self.filter, self.options)
        try:
            workers.refill()
            for i, path in enumerate(self.files):
                packed = workers.take(i)
                if packed is None:  # a large file, or the pool is gone
                    yield self._one_here(path)
                    continue
                found, result = pickle.loads(packed)
                yield result, (Match(path, line, offset, raw, orjson.loads(raw)) for line, offset, raw in found)
        except BaseException:  # (closed early: a closed pipe, Ctrl-C) the workers are stopped, not awaited
            workers.shutdown(now=True)
            raise
        workers.shutdown()


class _Workers:
    """The worker processes of one ``--jobs N`` search, and the files handed to them.

    Small files go out in tasks of several (``parallel.file_tasks``: up to
    ``TASK_FILES`` files, about ``TASK_BYTES``), each file packed alone and
    taken back in file order. Memory stays bounded whatever N is: a file's
    matches are at most its size, the tasks in flight are at most ``2 * jobs``
    and hold at most ``IN_FLIGHT_BYTES`` together (always at least one), and
    a file of ``PARALLEL_MIN_BYTES`` or more is never handed out: it is
    grepped in this process, streaming, in its turn.
    """

    def __init__(self, paths: list[str], sizes: list[int], flt: GrepFilter, options: GrepOptions) -> None:
        self.paths = paths
        self.filter = flt
        self.options = options
        self.one_job = options.replace(jobs=1)  # a worker greps its file alone: no helper thread
        self.sizes = sizes  # (``read.files.log_size`` of each path)
        # (standard input is grepped here, never by a worker: it could not be read again after one died)
        small = [i for i in range(len(paths)) if self.sizes[i] < parallel.PARALLEL_MIN_BYTES and not is_stdin(paths[i])]
        self.tasks = parallel.file_tasks(small, self.sizes, TASK_FILES, TASK_BYTES)
        self.task_of = {i: t for t, task in enumerate(self.tasks) for i in task}
        self.task_bytes = [sum(sizes[i] for i in task) for task in self.tasks]
        self.next_task = 0  # the first task not handed out yet
        self.pending: dict[int, Future[list[bytes]]] = {}  # task -> its packed files
        self.taken: dict[int, bytes] = {}  # file -> packed, back from a task and not yet taken
        self.limit = 2 * options.jobs
        self.in_flight = 0  # bytes of the files in ``pending`` and ``taken``
        self.pool: ProcessPoolExecutor | None
        try:
            self.pool = parallel.make_pool(options.jobs)
        except parallel.pool_failures():
            self.pool = None

    def give_up(self) -> None:
        """A worker died (OOM killer...): what is not back yet is grepped here, with the same output."""
        if self.pool is not None:
            # wait: the broken pool's threads end before anything else forks (a fork while
            # they hold a lock can deadlock the child)
            self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool = None
        self.pending.clear()
        self.in_flight = sum(self.sizes[i] for i in self.taken)

    def refill(self) -> None:
        """Hand out the next tasks while the limits allow."""
        while (
            self.pool is not None
            and self.next_task < len(self.tasks)
            and len(self.pending) < self.limit
            and (not self.pending or self.in_flight + self.task_bytes[self.next_task] <= IN_FLIGHT_BYTES)
        ):
            t = self.next_task
            self.next_task += 1
            try:
                paths = [self.paths[i] for i in self.tasks[t]]
                self.pending[t] = self.pool.submit(grep_files_packed, paths, self.filter, self.one_job)
                self.in_flight += self.task_bytes[t]
            except parallel.pool_failures():
                self.give_up()

    def take(self, i: int) -> bytes | None:
        """File ``i``'s packed matches and result from its worker; None: grep it here."""
        if i not in self.taken:
            t = self.task_of.get(i, -1)
            future = self.pending.pop(t, None)
            if future is None:  # a large file, a task not handed out (the pool is gone), or no task
                return None
            try:
                self.taken.update(zip(self.tasks[t], future.result(), strict=True))
            except parallel.pool_failures():
                self.give_up()
                return None
        self.in_flight -= self.sizes[i]
        self.refill()
        return self.taken.pop(i)

    def shutdown(self, now: bool = False) -> None:
        if self.pool is not None and now:
            parallel.stop_pool(self.pool)
        elif self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


def grep_paths(
    paths: Sequence[str | os.PathLike[str]],
    flt: GrepFilter,
    options: GrepOptions = _DEFAULT_OPTIONS,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> GrepSearch:
    """Search every log under the given files and directories (lazy: iterate the result).

    ``progress(done_bytes, total_bytes)`` is called as the files are read, every few MB.
    """
    return GrepSearch(paths, flt, options, progress)
