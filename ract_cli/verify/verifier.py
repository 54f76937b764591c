"""``verify``: read each log through the chain reader and report (SPEC §2-3)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import nullcontext

from ract_cli.dialects import ChainReader, discovery_suffixes
from ract_cli.errors import ExitCode, UsageError, lowest_nonzero
from ract_cli.findings import Finding, error
from ract_cli.format.json_types import Report
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.format.model import HEX64
from ract_cli.read.chain import ChainState
from ract_cli.read.discovery import discover
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES
from ract_cli.read.files import is_stdin, log_size
from ract_cli.read.parallel import (
    AUTO_JOBS,
    TASK_BYTES,
    TASK_FILES,
    TASKS_AHEAD,
    auto_jobs,
    can_split,
    file_tasks,
    make_pool,
    pool_failures,
    scan_file,
    submit_ahead,
)
from ract_cli.records import FrozenRecord, Record

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

    from ract_cli.proofs.checkpoint import CheckpointReport


class VerifyOptions(FrozenRecord):
    __slots__ = (
        "schema_version",
        "require_closed",
        "expect_head",
        "max_findings",
        "max_line_bytes",
        "jobs",
        "dialect",
        "checkpoints",
        "vkeys",
    )
    schema_version: int
    require_closed: bool
    expect_head: str | None
    max_findings: int | None
    max_line_bytes: int
    jobs: int
    dialect: str  # "auto" | "ract" | "raxol" (SPEC §8), as ChainReader takes it
    checkpoints: tuple[str, ...]  # SPEC §14: signed checkpoint files the single log must hold
    vkeys: tuple[str, ...]  # their verifier keys (with no checkpoint: the log's sealing sidecar)

    def __init__(
        self,
        schema_version: int = LATEST_SCHEMA_VERSION,
        require_closed: bool = False,
        expect_head: str | None = None,
        max_findings: int | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        jobs: int = 1,
        dialect: str = "auto",
        checkpoints: tuple[str, ...] = (),
        vkeys: tuple[str, ...] = (),
    ) -> None:
        values = (schema_version, require_closed, expect_head, max_findings, max_line_bytes, jobs, dialect)
        self._freeze(*values, checkpoints, vkeys)


class FileReport(Record):
    """The verdict on one file; ``to_dict`` is the documented JSON shape."""

    __slots__ = (
        "path",
        "exit_code",
        "events",
        "head",
        "first_ts",
        "last_ts",
        "findings",
        "suppressed",
        "checkpoints",
        "checkpoint_summary",
    )
    path: str
    exit_code: ExitCode
    events: int
    head: str | None
    first_ts: int | None
    last_ts: int | None
    findings: list[Finding]
    suppressed: int  # findings past --max-findings, counted not kept
    checkpoints: Report | None  # with --checkpoint/--vkey: what they cover (CheckpointReport.to_dict)
    checkpoint_summary: str | None  # one line for the verdict: "checkpoint holds: covers N of M events"

    def __init__(
        self,
        path: str,
        exit_code: ExitCode,
        events: int,
        head: str | None,
        first_ts: int | None,
        last_ts: int | None,
        findings: list[Finding],
        suppressed: int = 0,
        checkpoints: Report | None = None,
        checkpoint_summary: str | None = None,
    ) -> None:
        self.path = path
        self.exit_code = exit_code
        self.events = events
        self.head = head
        self.first_ts = first_ts
        self.last_ts = last_ts
        self.findings = findings
        self.suppressed = suppressed
        self.checkpoints = checkpoints
        self.checkpoint_summary = checkpoint_summary

    @property
    def ok(self) -> bool:
        return self.exit_code == ExitCode.OK

    def to_dict(self) -> Report:
        return {
            "path": self.path,
            "ok": self.ok,
            "exit_code": int(self.exit_code),
            "events": self.events,
            "head": self.head,
            "first_ts": self.first_ts,
            "last_ts": self.last_ts,
            "findings": [f.to_dict() for f in self.findings],
            "suppressed_findings": self.suppressed,
            **({"checkpoints": self.checkpoints} if self.checkpoints is not None else {}),
        }


class VerifyReport(Record):
    __slots__ = ("files", "findings")
    files: list[FileReport]
    findings: list[Finding]  # path-level (IO) findings with no file report

    def __init__(self, files: list[FileReport] | None = None, findings: list[Finding] | None = None) -> None:
        self.files = [] if files is None else files
        self.findings = [] if findings is None else findings

    @property
    def exit_code(self) -> ExitCode:
        return lowest_nonzero([*(f.exit_code for f in self.files), *(f.exit_code for f in self.findings)])

    def to_dict(self) -> Report:
        files = [f.to_dict() for f in self.files]
        for finding in self.findings:  # a path that gave no file still appears, as a failed entry
            files.append(
                {
                    "path": finding.path,
                    "ok": False,
                    "exit_code": int(finding.exit_code),
                    "events": 0,
                    "head": None,
                    "first_ts": None,
                    "last_ts": None,
                    "findings": [finding.to_dict()],
                    "suppressed_findings": 0,
                }
            )
        return {"exit_code": int(self.exit_code), "files": files}


def check_options(options: VerifyOptions, n_files: int | None = None) -> None:
    if options.expect_head is not None and not HEX64.fullmatch(options.expect_head):
        raise UsageError("--expect-head must be 64 lowercase hex characters")
    if options.expect_head is not None and n_files is not None and n_files > 1:
        raise UsageError("--expect-head applies to a single log; give exactly one file")
    if (options.checkpoints or options.vkeys) and n_files is not None and n_files > 1:
        raise UsageError("--checkpoint/--vkey apply to a single log; give exactly one file")
    if options.checkpoints and not options.vkeys:
        raise UsageError("--checkpoint needs the --vkey of its signer")
    if options.jobs < AUTO_JOBS:
        raise UsageError("--jobs must be at least 1")
    if options.max_findings is not None and options.max_findings < 1:
        raise UsageError("--max-findings must be at least 1")


def verify_file(
    path: str | os.PathLike[str],
    options: VerifyOptions = VerifyOptions(),
    *,
    progress: Callable[[int], None] | None = None,
    pool: Executor | None = None,
) -> FileReport:
    """Verify one log through the one chain reader.

    With ``options.jobs > 1`` a RACT log of at least ``parallel.PARALLEL_MIN_BYTES``
    is verified in byte ranges by worker processes (``pool``, or a pool made
    here); the verdict is the sequential reader's, byte for byte.
    ``progress`` is called with the byte offset reached, every few MB.
    ``AUTO_JOBS`` is ``auto_jobs`` of this one log.
    """
    if options.jobs == AUTO_JOBS:
        options = options.replace(jobs=auto_jobs(1, log_size(path)))
    state: ChainState | None = None
    if options.jobs > 1 and can_split(path, options.max_line_bytes, options.dialect):
        state = ChainState(str(path), require_closed=options.require_closed, max_findings=options.max_findings)
        # Own pool: jobs - 1 workers, and this process analyzes every jobs-th range itself
        # besides taking every result (N jobs = N busy processes: a range's run of clean
        # events comes back whole, cheap to take). A shared pool (several files) already
        # has N workers: this process only takes their results.
        own_pool = pool is None
        try:
            pool = pool if pool is not None else make_pool(options.jobs - 1)
            with pool if own_pool else nullcontext():  # (make_pool's: left by Ctrl-C, stopped at once)
                scan_file(
                    path,
                    state,
                    pool,
                    jobs=options.jobs,
                    schema_version=options.schema_version,
                    max_line_bytes=options.max_line_bytes,
                    main_every=options.jobs if own_pool else 0,
                    progress=progress,
                )
        except pool_failures():
            state = None  # no worker processes here (or one died): the sequential reader decides alone
    if state is None:
        reader = ChainReader(
            path,
            schema_version=options.schema_version,
            require_closed=options.require_closed,
            max_line_bytes=options.max_line_bytes,
            max_findings=options.max_findings,
            dialect=options.dialect,
            threads=min(options.jobs, 2) if pool is None else 1,  # (a pool of several files: one thread each)
        )
        reader.progress = progress
        reader.read_all()
        state = reader.state
    if state.not_a_log:  # NOT_A_LOG (exit 5) is the whole verdict: no head, no events to check
        pass
    elif options.expect_head is not None and state.head != options.expect_head:
        state.add(
            error(
                "HEAD_MISMATCH",
                "chain head differs from --expect-head",
                path=str(path),
                expected=options.expect_head,
                actual=state.head,
            )
        )
    checks = (options.checkpoints or options.vkeys) and not state.not_a_log
    covered = _check_checkpoints(path, state, options) if checks else _check_seals(path, state)
    return FileReport(
        str(path),
        state.exit_code,
        state.events,
        state.head,
        state.first_ts,
        state.last_ts,
        state.findings,
        state.suppressed,
        covered.to_dict() if covered is not None else None,
        covered.summary() if covered is not None else None,
    )


def _check_checkpoints(path: str | os.PathLike[str], state: ChainState, options: VerifyOptions) -> CheckpointReport:
    """SPEC §14 on the log just verified; its findings join the chain's (CHECKPOINT_*: exit 1).

    The Merkle tree takes a second read through the same reader (a checkpoint
    is checked only where one is given); the chain's verdict is the first's.
    """
    # imported here, not at the top: only verify --checkpoint pays the proofs package's start-up (~25 ms)
    from ract_cli.proofs.checkpoint import check_checkpoints
    from ract_cli.proofs.sidecar import find_sidecar, sidecar_path

    sources = list(options.checkpoints)
    if not sources:
        sidecar = find_sidecar(path)
        if sidecar is None:
            raise UsageError(f"--vkey without --checkpoint checks the sealing sidecar {sidecar_path(path)}: none")
        sources = [str(sidecar)]
    report = check_checkpoints(
        path,
        sources,
        list(options.vkeys),
        display_path=str(path),
        schema_version=options.schema_version,
        max_line_bytes=options.max_line_bytes,
        dialect=options.dialect,
    )
    for finding in report.findings:
        state.add(finding)
    return report


#: ``proofs.sidecar.SIDECAR_SUFFIX`` (importing the proofs package costs a verify ~25 ms; a test holds them equal)
SEAL_SUFFIX = ".checkpoints"


def _check_seals(path: str | os.PathLike[str], state: ChainState) -> CheckpointReport | None:
    """No ``--checkpoint`` or ``--vkey``: the sealing sidecar beside the log, when there is one, is still read.

    SPEC §14: a sealed log truncated later is caught without a head kept
    elsewhere. With no key only the seals' sizes are checked, against the
    events just counted (``proofs.checkpoint.check_seal_sizes``: no second
    read); a forged sidecar can thus fail a log, never pass one. One ``stat``
    for a log without a sidecar.
    """
    sidecar = os.fspath(path) + SEAL_SUFFIX
    if state.not_a_log or is_stdin(path) or not os.path.isfile(sidecar):
        return None
    from ract_cli.proofs.checkpoint import check_seal_sizes  # (a sealed log's only: the proofs' start-up)

    report = check_seal_sizes(sidecar, state.events, state.exit_code, display_path=str(path))
    for finding in report.findings:
        state.add(finding)
    return report


def _verify_many(paths: list[str], options: VerifyOptions) -> list[FileReport]:
    """Worker entry point: a few small files, each read sequentially in the worker."""
    return [verify_file(path, options) for path in paths]


def _tasks(indices: list[int], sizes: list[int]) -> list[list[int]]:
    """``indices`` (in file order) cut into runs of at most ``TASK_FILES`` files and about ``TASK_BYTES``."""
    return file_tasks(indices, sizes, TASK_FILES, TASK_BYTES)


def verify_paths(
    paths: Sequence[str | os.PathLike[str]],
    options: VerifyOptions = VerifyOptions(),
    *,
    progress: Callable[[int, int], None] | None = None,
) -> VerifyReport:
    """Verify every log under the given files and directories (SPEC §3: one report, one exit code).

    ``progress(done_bytes, total_bytes)`` is called as files (and ranges of
    large files) are verified. With ``options.jobs > 1`` files are verified
    in parallel by a process pool, and each large file in byte ranges;
    ``AUTO_JOBS`` picks the number (``auto_jobs``).
    """
    found = discover(paths, suffixes=discovery_suffixes(options.dialect))
    check_options(options, len(found.files) + len(found.findings))
    report = VerifyReport(findings=list(found.findings))
    sizes = [log_size(p) for p in found.files]
    total = sum(sizes)
    done = 0

    def file_progress(offset: int) -> None:
        if progress is not None:
            progress(min(done + offset, total), total)

    if options.jobs == AUTO_JOBS:
        options = options.replace(jobs=auto_jobs(len(found.files), total))
    if options.jobs <= 1 or len(found.files) <= 1:  # one file: split in verify_file if large enough
        for path, size in zip(found.files, sizes, strict=True):
            report.files.append(verify_file(path, options, progress=file_progress))
            done += size
            file_progress(0)
        return report

    splittable = [can_split(p, options.max_line_bytes, options.dialect) for p in found.files]
    one_job = options.replace(jobs=1)
    try:
        pool = make_pool(options.jobs)
    except pool_failures():
        pool = None  # cannot start processes here: verify one file after the other
    with pool if pool is not None else nullcontext():
        # the small files go to the pool in tasks of several, a bounded window of them ahead of the
        # file verified here; a large file is split in ranges here (verify_file, with the pool)
        # (standard input is read here, never by a worker: it could not be read again after one died)
        pooled = [i for i, path in enumerate(found.files) if not splittable[i] and not is_stdin(path)]
        tasks = _tasks(pooled, sizes) if pool is not None else []
        task_of = {i: t for t, task in enumerate(tasks) for i in task}
        file_lists = [[str(found.files[j]) for j in task] for task in tasks]
        ahead = TASKS_AHEAD * options.jobs
        futures: dict[int, Future[list[FileReport]]] = {}
        done_reports: dict[int, FileReport | None] = {}
        submitted = 0

        def report_of(i: int) -> FileReport | None:
            """The pool's report of file ``i`` (None: its worker died), submitting tasks ahead as it goes."""
            nonlocal submitted
            assert pool is not None
            t = task_of[i]
            submitted = submit_ahead(pool, _verify_many, file_lists, (one_job,), futures, submitted, t + ahead)
            if i not in done_reports:
                future = futures.pop(t, None)  # (None: never submitted, the pool broke before)
                reports: list[FileReport | None] = [None] * len(tasks[t])  # verified here, unless the pool did
                try:
                    if future is not None:
                        reports = list(future.result())
                except pool_failures():
                    pass  # a worker died: verify these here
                done_reports.update(zip(tasks[t], reports, strict=True))
            return done_reports.pop(i)

        for i, (path, size) in enumerate(zip(found.files, sizes, strict=True)):
            file_report = report_of(i) if i in task_of else None
            if file_report is None:
                file_report = verify_file(
                    path, options if i not in task_of else one_job, progress=file_progress, pool=pool
                )
            file_report.path = str(path)
            report.files.append(file_report)
            done += size
            file_progress(0)
    return report
