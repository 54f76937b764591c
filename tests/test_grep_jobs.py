"""``ract trace grep --jobs N``: files grepped in worker processes give exactly what one process gives.

Every output mode, verified and not, over a tree holding good logs, a
tampered one, a torn one, a missing path and a log large enough to be grepped
by the main process: stdout bytes, stderr text and exit code must not depend
on N.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import time
from pathlib import Path

import pytest
from hardening_support import process_alive

import ract_cli.read.parallel
from ract_cli.cli.app import main
from ract_cli.grep.search import GrepOptions, build_filter, grep_paths
from ract_cli.read.files import log_size
from ract_cli.testing.synth import write_benchmark_log, write_completed, write_fixtures

JOURNALS = Path(__file__).resolve().parent.parent / "fixtures" / "journals"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Fixture runs (one tampered, one torn) plus 12 more completed runs with their own seeds."""
    root = tmp_path_factory.mktemp("grep-jobs")
    write_fixtures(root)
    rng = random.Random(7)
    for i in range(12):
        run_id = f"{rng.getrandbits(128):032x}"
        write_completed(root / "runs" / run_id / "events.jsonl", run_id, seed=100 + i, steps=2 + i % 4)
    return root


def run(capfdbinary, *args: str) -> tuple[int, bytes, str]:
    code = main(["trace", "grep", *args])
    out, err = capfdbinary.readouterr()
    return code, out, err.decode()


MODES = [
    ("jsonl", ["--kind", "process.*"]),
    ("with filename", ["-H", "--kind", "tool.*"]),
    ("json", ["--format", "json", "--kind", "run.*"]),
    ("table", ["--format", "table", "--kind", "step.*"]),
    ("count", ["-c", "--kind", "*"]),
    ("files", ["-l", "--where", "payload.ok=false"]),
    ("no match", ["--kind", "run.started", "--where", "payload.intent_id=nothing"]),
    ("no verify", ["--no-verify", "--kind", "process.reaped"]),
    ("every event", ["--kind", "*"]),
]


@pytest.mark.parametrize("jobs", ["2", "3"])
@pytest.mark.parametrize("name,args", MODES, ids=[m[0] for m in MODES])
def test_output_does_not_depend_on_jobs(capfdbinary, monkeypatch, tree, name, args, jobs) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    paths = [str(tree), str(tree / "missing")]
    one = run(capfdbinary, *args, *paths)
    many = run(capfdbinary, "--jobs", jobs, *args, *paths)
    assert many == one
    # the lowest of: tampered fixture 1 (seen only when verifying), torn tail 4, missing path 5
    assert one[0] == (4 if "--no-verify" in args else 1)
    if name not in ("no match", "files"):
        assert one[1], "the mode must print something for the comparison to mean anything"


def test_large_files_are_grepped_here_in_their_turn(capfdbinary, monkeypatch, tree) -> None:
    """Files at or above PARALLEL_MIN_BYTES stay in the main process; order and bytes are unchanged."""
    monkeypatch.setattr(ract_cli.read.parallel, "PARALLEL_MIN_BYTES", 40_000)  # a few of the runs count as large
    sizes = sorted(p.stat().st_size for p in tree.rglob("events.jsonl"))
    assert sizes[0] < 40_000 <= sizes[-1]
    one = run(capfdbinary, "-H", "--kind", "*", str(tree))
    many = run(capfdbinary, "-j", "2", "-H", "--kind", "*", str(tree))
    assert many == one and one[1].count(b"\n") > 500


def test_one_large_log_without_jobs_takes_the_helper_thread(capfdbinary, monkeypatch, tmp_path) -> None:
    """No ``--jobs``, one log of ``POOL_MIN_BYTES`` or more, the native core and a free core: the log is
    grepped with C's helper thread (``threads=2``), and prints what one thread prints."""
    from ract_cli.grep import file_search

    if ract_cli.read.parallel.core.NATIVE is None:
        pytest.skip("the native core is not built here")
    log = tmp_path / "events.jsonl"
    write_benchmark_log(log, events=3000)
    one = run(capfdbinary, "--jobs", "1", "--kind", "tool.*", str(log))
    seen: list[int] = []
    real = file_search.ChainReader

    def recording(*args, threads: int = 1, **kwargs):  # the reader, as grep_file makes it
        seen.append(threads)
        return real(*args, threads=threads, **kwargs)

    monkeypatch.setenv("RACT_CORE", "native")
    monkeypatch.setattr(file_search, "ChainReader", recording)
    monkeypatch.setattr(ract_cli.read.parallel, "POOL_MIN_BYTES", log.stat().st_size)
    monkeypatch.setattr(ract_cli.read.parallel, "idle_core", lambda n: True)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert run(capfdbinary, "--kind", "tool.*", str(log)) == one and one[0] == 0 and one[1]
    assert seen == [2]


def test_journals_with_jobs(capfdbinary, tmp_path) -> None:
    shutil.copytree(JOURNALS, tmp_path / "journals")
    args = ["--dialect", "raxol", "-H", "--kind", "turn_*", str(tmp_path / "journals")]
    assert run(capfdbinary, "-j", "2", *args) == run(capfdbinary, *args)


def test_library_matches_are_the_same_objects(tree) -> None:
    """The rebuilt Match (parsed again from its raw line) equals the one grepped in-process."""
    flt = build_filter(kinds=["*"])

    def items(jobs: int) -> list[tuple]:
        out = []
        for item in grep_paths([tree], flt, GrepOptions(jobs=jobs)):
            if hasattr(item, "raw"):
                out.append((item.path, item.line, item.offset, item.raw, item.event))
            else:
                out.append(
                    (
                        item.path,
                        item.matches,
                        int(item.exit_code),
                        item.stopped_at,
                        [f.to_dict() for f in item.findings],
                    )
                )
        return out

    assert items(2) == items(1)


def test_stopping_early_ends_the_workers(tree) -> None:
    before = multiprocessing.active_children()  # (pools of other tests may still be winding down)
    search = grep_paths([tree], build_filter(kinds=["*"]), GrepOptions(jobs=2))
    it = iter(search)
    assert next(it) is not None
    workers = [p.pid for p in multiprocessing.active_children() if p not in before and p.pid is not None]
    assert workers, "the workers should be running"
    search.close()
    # terminated at once; on a loaded machine a worker may take a moment to be gone (once failed by 0 s)
    deadline = time.monotonic() + 10
    while any(process_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(process_alive(pid) for pid in workers)
    with pytest.raises(StopIteration):
        next(it)


@pytest.mark.parametrize("bad", ["0", "65", "x"])
def test_jobs_out_of_range_is_a_usage_error(capfdbinary, tree, bad) -> None:
    code, out, err = run(capfdbinary, "--jobs", bad, "--kind", "*", str(tree))
    assert code == 2 and out == b"" and "--jobs" in err


@pytest.mark.parametrize("budget", [1, 100_000])
def test_a_small_in_flight_budget_changes_nothing(capfdbinary, monkeypatch, tree, budget) -> None:
    """IN_FLIGHT_BYTES bounds what waits in memory: one file at a time at the least, same output."""
    import ract_cli.grep.search

    monkeypatch.setattr(ract_cli.grep.search, "IN_FLIGHT_BYTES", budget)
    one = run(capfdbinary, "-H", "--kind", "*", str(tree))
    many = run(capfdbinary, "-j", "3", "-H", "--kind", "*", str(tree))
    assert many == one and one[1].count(b"\n") > 500


@pytest.mark.parametrize("task_files,budget", [(1, 64 << 20), (3, 64 << 20), (3, 1), (64, 1)])
def test_files_in_tasks_of_several_change_nothing(capfdbinary, monkeypatch, tree, task_files, budget) -> None:
    """Small files go to the workers in tasks (``TASK_FILES`` each, at most ``IN_FLIGHT_BYTES`` waiting)
    and come back in file order: the same bytes for any task size and budget."""
    import ract_cli.grep.search

    monkeypatch.setattr(ract_cli.grep.search, "TASK_FILES", task_files)
    monkeypatch.setattr(ract_cli.grep.search, "IN_FLIGHT_BYTES", budget)
    paths = [str(p) for p in sorted(tree.rglob("events.jsonl"))]
    workers = ract_cli.grep.search._Workers(paths, [log_size(p) for p in paths], build_filter(), GrepOptions(jobs=2))
    try:
        sizes = [len(task) for task in workers.tasks]
        assert sizes and all(n == task_files for n in sizes[:-1]) and 0 < sizes[-1] <= task_files
    finally:
        workers.shutdown()
    for args in (["-H", "--kind", "*"], ["-c", "--kind", "process.*"], ["--no-verify", "--kind", "tool.*"]):
        one = run(capfdbinary, *args, str(tree), str(tree / "missing"))
        assert run(capfdbinary, "-j", "2", *args, str(tree), str(tree / "missing")) == one and one[1]


#: the task whose worker kills itself (set by the test before the pool forks its workers)
_DIES_ON: list[str] | None = None


def _grep_or_die(paths, flt, options):  # type: ignore[no-untyped-def]
    """``grep_files_packed``, but the worker given ``_DIES_ON`` is killed, as the OOM killer would."""
    import os
    import signal

    import ract_cli.grep.file_search

    if paths == _DIES_ON:
        os.kill(os.getpid(), signal.SIGKILL)
    return ract_cli.grep.file_search.grep_files_packed(paths, flt, options)


def test_a_worker_that_dies_leaves_its_files_to_the_main_process(capfdbinary, monkeypatch, tree) -> None:
    """A worker killed mid-search: the files not back yet are grepped here, the same bytes come out."""
    import ract_cli.grep.search

    files = [str(p) for p in sorted(tree.rglob("events.jsonl"))]
    one = run(capfdbinary, "-H", "--kind", "*", *files)
    monkeypatch.setattr(ract_cli.grep.search, "TASK_FILES", 2)
    monkeypatch.setattr(ract_cli.grep.search, "grep_files_packed", _grep_or_die)
    monkeypatch.setitem(globals(), "_DIES_ON", files[4:6])  # the third task
    assert run(capfdbinary, "-j", "2", "-H", "--kind", "*", *files) == one
