"""``project``: the run report as a projection over the log (SPEC §7).

The log is the source of truth; a report is a pure function of its events.
``Projector`` (``project.projector``) folds events one at a time into
bounded aggregates (counts, capped lists, per-tool latency samples) and
``Projector.report()`` turns them into a plain JSON-ready dict at any
moment, so ``replay`` can show the projected state at any event.
``project_file`` reads one log through the one ``ChainReader`` and adds what
only the reader knows (``project.trust``): findings, exit code, the chain
head and where trust ends. ``project_paths`` does it for every log under the
given paths. Nothing here prints; the CLI renders (``project.markdown`` is
the documented Markdown form).

Trust (decided here): the projection covers the *verified prefix* only, the
events before the first integrity failure (``LogEvent.trusted``). Events
from the break on are tallied separately under ``untrusted`` (how many, of
which kinds, and what the unverified tail claims about the run's end), never
mixed into the counts. The JSON shape is documented in ``docs/project.md``
and ``docs/schemas/project-report.json``.

This module also re-exports the names it held before the package was split
(``from ract_cli.project.report import Projector`` keeps working).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Sequence

from ract_cli.dialects import ChainReader, discovery_suffixes
from ract_cli.errors import UsageError
from ract_cli.format.json_types import Event, JSONObject, Report
from ract_cli.project.flags import FLAG_CODES
from ract_cli.project.options import DEFAULT_MAX_ITEMS, REPORT_VERSION, STATUSES, ProjectOptions
from ract_cli.project.projector import Projector
from ract_cli.project.result import ProjectResult, ReportSummary, encode_report, summarize
from ract_cli.project.tallies import percentiles
from ract_cli.project.trust import Tail, finish
from ract_cli.read.discovery import discover
from ract_cli.read.event import LogEvent
from ract_cli.read.files import is_stdin, log_size
from ract_cli.read.parallel import (
    AUTO_JOBS,
    TASK_BYTES,
    TASK_FILES,
    auto_jobs,
    can_split,
    file_tasks,
    in_order,
    make_pool,
    pool_failures,
)

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from ract_cli.project.timeline import TimelineCollector

__all__ = [
    "DEFAULT_MAX_ITEMS",
    "FLAG_CODES",
    "REPORT_VERSION",
    "STATUSES",
    "ProjectOptions",
    "ProjectResult",
    "Projector",
    "percentiles",
    "project_events",
    "project_file",
    "project_paths",
]

_DEFAULT_OPTIONS = ProjectOptions()  # frozen: one shared default


def project_events(events: Iterable[Event], *, max_items: int = DEFAULT_MAX_ITEMS) -> Report:
    """Project a sequence of event dicts (no verification): the pure core, for replay and tests."""
    projector = Projector(max_items=max_items)
    for line, event in enumerate(events, start=1):
        projector.feed(event, line)
    return projector.report()


class RunProjection:
    """``project``'s report built on a read another command is already doing (export reads each log once).

    Feed it every event the reader yields (trusted or not), then call
    ``report(reader)`` once the reader is done: the same report ``project_file``
    returns for those bytes.
    """

    def __init__(self, dialect: str, max_items: int = _DEFAULT_OPTIONS.max_items) -> None:
        self.dialect = dialect  # the reader's (resolved): a journal's projection is its JournalState
        self.max_items = max_items
        self.projector = Projector(max_items=max_items)
        self.tail = Tail()

    def feed(self, ev: LogEvent) -> None:
        if self.dialect == "raxol":
            return
        if ev.trusted:
            self.projector.feed(ev.event, ev.line, ev.offset)
        else:
            self.tail.feed(ev.event, ev.line)

    def report(self, reader: ChainReader, shown: str) -> Report:
        if self.dialect == "raxol":  # a Raxol agent journal (SPEC §8): its own report, docs/raxol.md
            from ract_cli.project.journal import journal_report  # (imported for a journal only: start-up)

            return journal_report(reader, shown, max_items=self.max_items)
        return finish(self.projector.report(), reader, self.tail, shown, self.projector)


def project_file(
    path: str | os.PathLike[str],
    options: ProjectOptions = _DEFAULT_OPTIONS,
    *,
    display_path: str | None = None,
    progress: Callable[[int], None] | None = None,
    timeline: TimelineCollector | None = None,
    fold: bool = True,
) -> Report:
    """Read one log through the chain reader and project it; the report dict of docs/project.md.

    ``progress`` is called with the byte offset reached, every few MB
    (``ChainReader.progress``); ``timeline``, when given, is fed the same
    events (``project.timeline``). With the native core the events are folded
    in C as they are verified (``project.fold``) unless ``fold`` is False (the
    same report: tests hold the two to it). ``options.jobs`` > 1: C checks a
    large block in two threads (``ChainReader(threads=2)``, as ``verify``),
    the events still taken and folded in order; with the Python core a large
    log is folded here while up to ``jobs - 1`` worker processes prove its
    lines (``project.fold_on_trust``: the same report).
    """
    shown = display_path if display_path is not None else str(path)
    jobs = auto_jobs(1, log_size(path)) if options.jobs == AUTO_JOBS else options.jobs
    reader = _reader(path, options, shown, jobs, progress)
    if fold and timeline is None and reader.dialect != "raxol" and reader.can_fold():
        from ract_cli.project.fold import project_folded  # (the native core's, imported only then)

        answer: Projector | str | None = None
        if jobs > 1 and can_split(path, options.max_line_bytes, reader.dialect):  # the Python core's large log
            from ract_cli.project.fold_on_trust import project_on_trust

            answer = project_on_trust(reader, options.max_items, jobs)
            if isinstance(answer, Projector):
                return finish(answer.report(), reader, Tail(), shown, answer)
            reader = _reader(path, options, shown, jobs, progress)  # read again: by the fold alone, or event by event
        if answer is None:  # (else the fold gave up on proven lines: it gives up here too)
            projector = project_folded(reader, options.max_items)
            if projector is not None:
                return finish(projector.report(), reader, Tail(), shown, projector)
            reader = _reader(path, options, shown, jobs, progress)  # the fold gave up: again, event by event
    projection = RunProjection(reader.dialect, options.max_items)
    if reader.dialect == "raxol":
        reader.read_all()  # a journal's projection is its JournalState
    elif timeline is None:
        feed = projection.feed
        for ev in reader:
            feed(ev)
    else:
        flags = projection.projector.flags
        for ev in reader:
            projection.feed(ev)
            if ev.trusted:
                timeline.feed(ev.event, ev.line, flags)
            else:
                timeline.feed_unverified()
    return projection.report(reader, shown)


def _reader(
    path: str | os.PathLike[str],
    options: ProjectOptions,
    shown: str,
    jobs: int,
    progress: Callable[[int], None] | None,
) -> ChainReader:
    reader = ChainReader(
        path,
        schema_version=options.schema_version,
        require_closed=options.require_closed,
        max_line_bytes=options.max_line_bytes,
        max_findings=options.max_items,
        display_path=shown,
        dialect=options.dialect,
        threads=max(1, min(jobs, 2)),  # (project_file alone does not check its options)
    )
    reader.progress = progress
    return reader


def project_paths(
    paths: Sequence[str | os.PathLike[str]],
    options: ProjectOptions = _DEFAULT_OPTIONS,
    *,
    progress: Callable[[int, int], None] | None = None,
    timelines: bool = False,
    as_written: bool = False,
) -> ProjectResult:
    """Project every log under the given files and directories (SPEC §7).

    ``progress(done_bytes, total_bytes)`` is called as logs are read (sizes:
    ``read.files.log_size``). ``timelines=True`` also keeps each run's
    timeline (``result.timelines``, for the HTML page): ``DETAIL_MARKS`` per
    kind of mark for one log, ``FLEET_MARKS`` for the first
    ``FLEET_SECTIONS`` runs of a fleet, none past those. With
    ``options.jobs`` > 1 (``AUTO_JOBS``: picked from the logs found) the logs
    of a fleet are projected by a pool of processes, a bounded window of
    them ahead, and added in order: the same result. ``as_written=True``: the
    reports are kept as the JSON holds them (``ProjectResult``'s), by the
    workers that make them.
    """
    if options.jobs < AUTO_JOBS:
        raise UsageError("--jobs must be at least 1")
    found = discover(paths, suffixes=discovery_suffixes(options.dialect))
    detailed = len(paths) == 1 and not os.path.isdir(paths[0])
    result = ProjectResult(findings=list(found.findings), detailed=detailed, timelines=timelines, as_written=as_written)
    files = [str(p) for p in found.files]
    sized = progress is not None or options.jobs != 1
    sizes = [log_size(p) for p in found.files] if sized else [0] * len(files)
    total, done = sum(sizes), 0
    jobs = auto_jobs(len(files), total) if options.jobs == AUTO_JOBS else options.jobs
    # a fleet's logs are one job each (a pool's worker, or one after the other); a lone log takes the jobs
    one_job = options.replace(jobs=jobs if len(files) == 1 else 1)

    def file_progress(offset: int) -> None:
        if progress is not None:
            progress(min(done + offset, total), total)

    pool = _pool(jobs) if jobs > 1 and len(files) > 1 else None
    with pool if pool is not None else contextlib.nullcontext():
        if pool is None:  # one log after the other, each reporting its progress
            tasks = [[i] for i in range(len(files))]
            projected: Iterable[list[_Encoded] | None] = (None for _ in tasks)
        else:
            # standard input is read here, never by a worker: once read, it could not be read again
            # here after a worker died with it (a false verdict on an empty log)
            tasks = file_tasks(range(len(files)), sizes, TASK_FILES, TASK_BYTES, alone=lambda i: is_stdin(files[i]))
            items = [None if is_stdin(files[task[0]]) else [(i, files[i]) for i in task] for task in tasks]
            projected = in_order(pool, _project_many, items, one_job, detailed, timelines, as_written, jobs=jobs)
        for task, got in zip(tasks, projected, strict=True):
            for k, i in enumerate(task):  # (each spilled as it comes: memory does not grow)
                if got is None:  # read here (no pool, or its worker died)
                    result.add(*_project_one(i, files[i], one_job, detailed, timelines, file_progress))
                else:
                    result.add_encoded(*got[k])
                done += sizes[i]
                file_progress(0)
    return result


#: one projected log: its report, and its timeline (the HTML page's) when one was collected
_Projected = tuple[Report, JSONObject | None]
#: the same as ``ProjectResult.add_encoded`` takes it: what a worker sends back (bytes, not a report's dicts,
#: which this process would unpickle only to encode again: a third of its time over a fleet)
_Encoded = tuple[ReportSummary, bytes, JSONObject | None]


def _encoded(projected: _Projected, as_written: bool) -> _Encoded:
    report, timeline = projected
    return summarize(report), encode_report(report, as_written=as_written), timeline


def _project_one(
    i: int,
    path: str,
    options: ProjectOptions,
    detailed: bool,
    timelines: bool,
    progress: Callable[[int], None] | None = None,
) -> _Projected:
    """The ``i``-th log found, projected (``project_file``), with its timeline when ``timelines``."""
    timeline = _timelines(detailed)(i) if timelines else None  # (the HTML page's only: imported for it)
    report = project_file(path, options, progress=progress, timeline=timeline)
    return report, timeline.to_dict() if timeline is not None else None


def _project_many(
    items: list[tuple[int, str]], options: ProjectOptions, detailed: bool, timelines: bool, as_written: bool
) -> list[_Encoded]:
    """Worker entry point: a few logs of a fleet, each projected whole in the worker, its report encoded."""
    return [_encoded(_project_one(i, path, options, detailed, timelines), as_written) for i, path in items]


def _pool(jobs: int) -> ProcessPoolExecutor | None:
    try:
        return make_pool(jobs)
    except pool_failures():
        return None  # cannot start processes here: one log after the other


def _timelines(detailed: bool) -> Callable[[int], TimelineCollector | None]:
    """The timeline to collect for the i-th log: ``DETAIL_MARKS`` marks of each kind for one log,
    ``FLEET_MARKS`` for each of a fleet's first ``FLEET_SECTIONS``, none past those."""
    from ract_cli.project.timeline import DETAIL_MARKS, FLEET_MARKS, FLEET_SECTIONS, TimelineCollector

    cap = DETAIL_MARKS if detailed else FLEET_MARKS
    return lambda i: TimelineCollector(cap) if i < FLEET_SECTIONS else None
