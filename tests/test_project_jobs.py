"""``project --jobs N``: a fleet's logs projected by a pool of processes give the report one process gives.

Real files (the committed fixtures, the fleet of ``fleet_support``, and 150 copies of one run, so the
pool gets several tasks), real worker processes, real subprocesses of the CLI; every output form
(JSON, Markdown, HTML with its timelines) compared byte for byte with ``--jobs 1``. And the pool's
ordered window (``read.parallel.in_order``) when a worker dies: what it held is handed back to be done
by the caller.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fleet_support import write_fleet
from hardening_support import ROOT

from ract_cli.errors import UsageError
from ract_cli.project.options import ProjectOptions
from ract_cli.project.report import project_file, project_paths
from ract_cli.read.parallel import AUTO_JOBS, file_tasks, in_order, make_pool
from ract_cli.testing.synth import fixture_path, write_benchmark_log

FIXTURES = ROOT / "fixtures"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet")
    write_fleet(root / "generated")
    for run in sorted((FIXTURES / "runs").iterdir()):
        shutil.copytree(run, root / "fixtures" / run.name)
    one = fixture_path(FIXTURES, "completed").read_bytes()
    for i in range(150):
        (root / "copies" / f"{i:03d}").mkdir(parents=True)
        (root / "copies" / f"{i:03d}" / "events.jsonl").write_bytes(one)
    return root


def _ract(*argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "ract_cli", *argv], capture_output=True, timeout=300)


@pytest.mark.parametrize("fmt", ["json", "markdown", "html"])
def test_a_fleet_on_two_workers_is_the_report_of_one(fleet: Path, fmt: str) -> None:
    journal = str(sorted((FIXTURES / "journals").glob("*.jsonl"))[0])
    runs = [
        ("trace", "project", "--format", fmt, *jobs, str(fleet), journal) for jobs in (["-j", "1"], ["-j", "2"], [])
    ]
    one, two, default = (_ract(*argv) for argv in runs)
    assert one.returncode == 1 and b"FAIL (TAMPERED)" in one.stderr  # (the fleet holds a tampered log)
    assert (two.returncode, two.stdout, two.stderr) == (one.returncode, one.stdout, one.stderr)
    assert (default.returncode, default.stdout, default.stderr) == (one.returncode, one.stdout, one.stderr)


@pytest.mark.parametrize("jobs", [2, 3, AUTO_JOBS])
def test_the_library_gives_the_same_result_and_timelines(fleet: Path, jobs: int) -> None:
    paths = [str(fleet), str(fleet / "missing")]
    one = project_paths(paths, ProjectOptions(jobs=1), timelines=True)
    many = project_paths(paths, ProjectOptions(jobs=jobs), timelines=True)
    assert one.timelines is not None and many.timelines is not None
    assert many.to_dict() == one.to_dict() and list(many.timelines) == list(one.timelines)
    assert len(one.runs) > 150 and any(one.timelines)  # (the first runs' timelines were collected)


def _square_or_die(task: int) -> int:
    if task == 3:
        os._exit(1)  # a worker killed mid-task (the OOM killer, a segfault)
    return task * task


def test_a_dead_worker_s_tasks_come_back_to_the_caller() -> None:
    with make_pool(2) as pool:
        results = list(in_order(pool, _square_or_die, list(range(8)), jobs=2))
    # the dead worker's task is handed back, and so is every task the broken pool held or never took (those
    # already done may come back done); nothing is lost, nothing raises
    assert len(results) == 8 and results[3] is None
    assert all(r is None or r == t * t for t, r in enumerate(results))


def test_tasks_that_are_none_are_handed_back_unsubmitted() -> None:
    # a None task would raise TypeError in the worker (None * None), and that is no pool failure: it is
    # never submitted, and comes back as None for the caller to do
    with make_pool(2) as pool:
        results = list(in_order(pool, _square_or_die, [0, None, 2, None, 4], jobs=2))
    assert results == [0, None, 4, None, 16]


def test_a_file_marked_alone_is_a_task_by_itself() -> None:
    sizes = [1] * 7
    assert file_tasks(range(7), sizes, 64, 100, alone=lambda i: i in (0, 3)) == [[0], [1, 2], [3], [4, 5, 6]]
    assert file_tasks(range(4), sizes, 2, 100) == [[0, 1], [2, 3]]
    assert file_tasks(range(4), [5, 200, 5, 5], 64, 100) == [[0], [1], [2, 3]]


def test_a_lone_log_projects_the_same_with_any_jobs(tmp_path: Path) -> None:
    """One log over 64 KiB (C's helper thread starts for such a block): jobs 1, 2, 8 and AUTO_JOBS give one
    report; fewer than AUTO_JOBS is a usage error, as verify's (it reached C as a thread count)."""
    log = tmp_path / "events.jsonl"
    write_benchmark_log(log, events=600, seed=2)
    assert log.stat().st_size > 64 << 10
    reports = [project_paths([str(log)], ProjectOptions(jobs=jobs)).runs[0] for jobs in (1, 2, 8, AUTO_JOBS)]
    assert all(r == reports[0] for r in reports) and reports[0]["events"] > 500
    assert project_file(log, ProjectOptions(jobs=-1)) == reports[0]  # (the library's own call: one thread)
    with pytest.raises(UsageError, match="--jobs"):
        project_paths([str(log)], ProjectOptions(jobs=-1))
