"""Parallel verification gives the sequential reader's verdict, byte for byte.

``parallel.scan_file`` cuts a log into byte ranges analysed by worker
processes and feeds the results through ``ChainState.feed`` in order. Here
every fixture and many mutated logs are verified both ways, with cuts at
every line boundary, and next to a torn tail, a CRLF line and a bad line;
and over many files, the pool's tasks, its window and the default number of
jobs. (The fast path is held to the reference path in ``test_fast_path.py``.)
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from hardening_support import chain_events, process_alive
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ract_cli.read import parallel
from ract_cli.read.chain import ChainState
from ract_cli.read.fastpath import fast_analyze
from ract_cli.read.reader import ChainReader
from ract_cli.testing.synth import FIXTURES, fixture_path, write_benchmark_log, write_completed
from ract_cli.verify.verifier import VerifyOptions, verify_file, verify_paths

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_PATHS = {name: fixture_path(ROOT / "fixtures", name) for name in FIXTURES}


@pytest.fixture(scope="module")
def pool() -> Iterator:
    with parallel.make_pool(2) as p:
        yield p


def verdict_of(state: ChainState) -> tuple:
    return (
        int(state.exit_code),
        state.events,
        state.head,
        state.first_ts,
        state.last_ts,
        state.suppressed,
        [f.to_dict() for f in state.findings],
    )


def sequential(path: Path, **kw) -> tuple:
    reader = ChainReader(path, **kw)
    reader.read_all()
    return verdict_of(reader.state)


def chunked(
    path: Path,
    pool,
    cuts,
    *,
    schema_version: int = 9,
    require_closed: bool = False,
    max_line_bytes: int = 64 << 20,
    max_findings: int | None = None,
) -> tuple:
    verdicts = []
    # workers only, and this process reading every other range; each range's leading run taken whole (the
    # main process reading the range again line by line when it does not link on), and every line fed
    for main_every, take in ((0, True), (2, True), (2, False)):
        state = ChainState(str(path), require_closed=require_closed, max_findings=max_findings)
        parallel.scan_file(
            path,
            state,
            pool,
            jobs=2,
            schema_version=schema_version,
            max_line_bytes=max_line_bytes,
            cuts=cuts,
            main_every=main_every,
            take=take,
        )
        verdicts.append(verdict_of(state))
    assert verdicts[0] == verdicts[1] == verdicts[2]
    return verdicts[0]


def line_starts(path: Path) -> list[int]:
    data = path.read_bytes()
    return [i + 1 for i, b in enumerate(data) if b == 0x0A]


def assert_same(path: Path, pool, cuts, **kw) -> tuple:
    expected = sequential(path, **kw)
    assert chunked(path, pool, cuts, **kw) == expected, f"cuts={cuts}"
    return expected


# --- splitting --------------------------------------------------------------------


def test_ranges_cover_the_file_and_start_on_line_starts(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    write_completed(path, "ab" * 16, steps=3)
    data = path.read_bytes()
    for chunk in (1, 7, 100, 999, len(data) - 1, len(data), len(data) * 2):
        ranges = parallel.split_ranges(path, chunk)
        assert ranges[0][0] == 0 and ranges[-1][1] is None
        for (start, end), (next_start, _) in itertools.pairwise(ranges):
            assert end == next_start and data[start - 1 : start] in (b"", b"\n") and data[end - 1 : end] == b"\n"
        pieces = [data[s:e] for s, e in ranges]
        assert b"".join(pieces) == data


def test_a_cut_inside_the_last_line_without_newline_is_not_a_range(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":2')
    assert parallel.split_ranges(path, cuts=[9, 10, 11]) == [(0, None)]
    assert parallel.split_ranges(path, cuts=[3]) == [(0, 8), (8, None)]


# --- fixtures and mutations: parallel == sequential ---------------------------------


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_every_fixture_cut_at_every_line(name: str, pool) -> None:
    path = FIXTURE_PATHS[name]
    starts = line_starts(path)
    assert_same(path, pool, starts)  # one range per line
    for k in (1, 2, 5):
        assert_same(path, pool, starts[::k][:40])
    assert_same(path, pool, [1, 2, 3])  # cuts inside the first line


def _five_event_log(tmp_path: Path, logs) -> Path:
    return logs.five()


MUTATIONS = {
    "torn tail": lambda lines: [*lines, lines[2][:57]],
    "torn tail after crlf": lambda lines: [*(line[:-1] + b"\r\n" for line in lines), b'{"hash":"ab'],
    "crlf everywhere": lambda lines: [line[:-1] + b"\r\n" for line in lines],
    "crlf on one line": lambda lines: [*lines[:2], lines[2][:-1] + b"\r\n", *lines[3:]],
    "bad line in the middle": lambda lines: [*lines[:2], b"not json\n", *lines[3:]],
    "blank line": lambda lines: [*lines[:2], b"\n", *lines[2:]],
    "line deleted": lambda lines: lines[:2] + lines[3:],
    "line duplicated": lambda lines: [*lines[:3], lines[2], *lines[3:]],
    "first line deleted": lambda lines: lines[1:],
    "value edited": lambda lines: [*lines[:2], lines[2].replace(b'"ok":true', b'"ok":false'), *lines[3:]],
    "no final newline": lambda lines: [*lines[:-1], lines[-1][:-1]],
    "lone carriage return": lambda lines: [*lines[:2], lines[2][:-1] + b"\r", *lines[3:]],
    "array line": lambda lines: [*lines[:1], b"[1,2]\n", *lines[1:]],
    "empty": lambda lines: [],
    "only newline": lambda lines: [b"\n"],
    "duplicate key": lambda lines: [*lines[:2], lines[2].replace(b'{"hash"', b'{"kind":"x","hash"', 1), *lines[3:]],
    "foreign format line": lambda lines: (
        [
            *lines[:2],
            orjson.dumps(orjson.loads(lines[2]), option=orjson.OPT_INDENT_2).replace(b"\n", b" ") + b"\n",
            *lines[3:],
        ]
    ),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_mutated_logs_cut_everywhere(mutation: str, logs, pool) -> None:
    path = logs.five()
    lines = logs.lines(path)
    path.write_bytes(b"".join(MUTATIONS[mutation](lines)))
    size = path.stat().st_size
    every_line = line_starts(path)
    assert_same(path, pool, every_line)
    assert_same(path, pool, every_line[-1:])  # a cut just before the last (torn / CRLF / bad) line
    assert_same(path, pool, [max(1, size - 3)])  # a cut inside the last line
    assert_same(path, pool, [])
    # and with the options that change verdicts
    assert_same(path, pool, every_line, require_closed=True, max_findings=1)
    assert_same(path, pool, every_line, schema_version=3, max_line_bytes=200)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), data=st.data())
def test_random_mutations_and_cuts(seed: int, data, tmp_path_factory, pool) -> None:
    rng = random.Random(seed)
    src = FIXTURE_PATHS[rng.choice(sorted(FIXTURES))]
    raw = bytearray(src.read_bytes())
    for _ in range(rng.randint(0, 3)):
        op = rng.choice(["flip", "delete", "insert_nl", "crlf", "truncate", "dup"])
        if not raw:
            break
        i = rng.randrange(len(raw))
        if op == "flip":
            raw[i] ^= 1 << rng.randrange(8)
        elif op == "delete":
            del raw[i : i + rng.randint(1, 40)]
        elif op == "insert_nl":
            raw[i:i] = b"\n"
        elif op == "crlf":
            j = raw.find(b"\n", i)
            if j != -1:
                raw[j:j] = b"\r"
        elif op == "truncate":
            del raw[i:]
        elif op == "dup":
            j = raw.find(b"\n", i)
            k = raw.find(b"\n", j + 1) if j != -1 else -1
            if k != -1:
                raw[k + 1 : k + 1] = raw[j + 1 : k + 1]
    path = tmp_path_factory.mktemp("mut") / "events.jsonl"
    path.write_bytes(bytes(raw))
    size = max(len(raw), 1)
    cuts = data.draw(st.lists(st.integers(0, size), max_size=8))
    assert_same(path, pool, cuts)


# --- a range's run taken whole (``range_chain``) where it meets the lines before it ----------------


RUN_EDGES = {
    # each valid line by line; what goes wrong (or right) spans line k - 1 and line k
    "id of an earlier range again": lambda ev, k: [*ev[:k], {**ev[k], "id": ev[3]["id"]}, *ev[k + 1 :]],
    "id of the line just before": lambda ev, k: [*ev[:k], {**ev[k], "id": ev[k - 1]["id"]}, *ev[k + 1 :]],
    "another run from here on": lambda ev, k: [*ev[:k], *({**e, "run_id": "c" * 32} for e in ev[k:])],
    "clock back at the cut": lambda ev, k: [
        *ev[:k],
        {**ev[k], "timestamp_ns": ev[k - 1]["timestamp_ns"] - 1},
        *ev[k + 1 :],
    ],
    "clock back a line later": lambda ev, k: [
        *ev[: k + 1],
        {**ev[k + 1], "timestamp_ns": ev[k]["timestamp_ns"] - 1},
        *ev[k + 2 :],
    ],
    "nothing wrong (opens closed in a later range)": lambda ev, k: ev,
}


@pytest.mark.parametrize("edge", sorted(RUN_EDGES))
def test_a_run_that_does_not_link_on_is_read_again_line_by_line(edge: str, tmp_path: Path, pool) -> None:
    source = tmp_path / "source.jsonl"
    write_benchmark_log(source, events=400)
    events = [orjson.loads(line) for line in source.read_bytes().splitlines()]
    k = 250
    path = tmp_path / "events.jsonl"
    path.write_bytes(chain_events(RUN_EDGES[edge](events, k)))
    starts = line_starts(path)
    near = starts[k - 3 : k + 3]  # a range starting at each line about k
    for cut in near:
        assert_same(path, pool, [starts[100], cut])
    assert_same(path, pool, starts[::37])


def test_a_chain_break_at_a_cut(tmp_path: Path, pool) -> None:
    source = tmp_path / "source.jsonl"
    write_benchmark_log(source, events=300)
    events = [orjson.loads(line) for line in source.read_bytes().splitlines()]
    path = tmp_path / "events.jsonl"
    path.write_bytes(chain_events(events, break_at=200))
    starts = line_starts(path)
    for cut in starts[197:203]:
        assert_same(path, pool, [starts[50], cut])


def test_a_line_of_too_many_values_is_not_taken_in_a_range(tmp_path: Path, pool) -> None:
    """A valid event of more than ``MAX_LINE_NODES`` values (here 600,000 in 1.2 MB) is MALFORMED_LINE line by
    line; a worker's run must not take it (nor parse it: the bound of memory)."""
    predicate = {"predicate_id": "t", "kind": "test", "required": True, "ok": True, "duration_ns": 1}
    scenario = [*_START, ("p", "predicate.evaluated", None, {**predicate, "x": [0] * 600_000}), *_END]
    path = tmp_path / "events.jsonl"
    path.write_bytes(chain_events(_handles_log(scenario)))
    verdict = assert_same(path, pool, [])
    assert [(f["code"], f["line"]) for f in verdict[-1] if f["severity"] == "error"] == [("MALFORMED_LINE", 3)]


def _handles_log(scenario: list[tuple[str, str, str | None, dict]]) -> list[dict]:
    """A run of one step whose events are ``(name, kind, parent name, payload)``; ids from the names."""
    ids = {name: f"{i + 1:032x}" for i, (name, *_) in enumerate(scenario)}
    step = "5" * 32
    return [
        {
            "id": ids[name],
            "run_id": "a" * 32,
            "step_id": None if kind.startswith("run.") else step,
            "parent_id": ids.get(parent) if parent is not None else None,
            "timestamp_ns": 1_764_000_000_000_000_000 + i,
            "kind": kind,
            "payload": payload,
            "prev_hash": "",
            "hash": "",
        }
        for i, (name, kind, parent, payload) in enumerate(scenario)
    ]


_START = [("run", "run.started", None, {}), ("step", "step.started", None, {})]
_END = [("commit", "step.committed", None, {}), ("end", "run.completed", None, {})]
#: closes a worker must not pair with an open on its parent_id alone; the event ids left open
HANDLE_SCENARIOS = {
    # c1 closes a1 by its queue; then c2's parent (a1) is closed, so c2 closes a2 by its own queue
    "a close paired by its queue comes first": (
        [
            ("a1", "tool.called", None, {"tool": "x"}),
            ("a2", "tool.called", None, {"tool": "y"}),
            ("c1", "tool.result", None, {"tool": "x"}),
            ("c2", "tool.result", "a1", {"tool": "y"}),
        ],
        [],
    ),
    # a synthesized close closes the open it names (rule 1), not its parent
    "a synthesized close": (
        [
            ("a1", "tool.called", None, {"tool": "x"}),
            ("b1", "tool.called", None, {"tool": "z"}),
            ("c", "tool.result", "a1", {"tool": "z", "synthesized": True, "source_event_id": f"{4:032x}"}),
        ],
        ["a1"],
    ),
    # a parent of another kind: the close goes to its queue
    "a parent of another kind": (
        [
            ("p", "prompt.sent", None, {"provider": "x"}),
            ("a1", "tool.called", None, {"tool": "x"}),
            ("c", "tool.result", "p", {"tool": "x"}),
        ],
        ["p"],
    ),
}


@pytest.mark.parametrize("scenario", sorted(HANDLE_SCENARIOS))
def test_a_worker_pairs_only_what_the_tracker_would_pair_by_parent(scenario: str, tmp_path: Path, pool) -> None:
    """``range_chain`` drops an open and the close that names it, when the tracker would pair them there."""
    body, left_open = HANDLE_SCENARIOS[scenario]
    events = _handles_log([*_START, *body, *_END])
    path = tmp_path / "events.jsonl"
    path.write_bytes(chain_events(events))
    expected = assert_same(path, pool, [])  # one range: the whole run taken in a worker
    names = {e["id"]: name for e, (name, *_) in zip(events, [*_START, *body, *_END], strict=True)}
    opened = [names[f["event_id"]] for f in expected[-1] if f["code"] == "OPEN_HANDLE"]
    assert opened == left_open
    assert_same(path, pool, line_starts(path))


def test_a_large_log_through_verify_file_with_jobs(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=3000)
    raw = bytearray(path.read_bytes())
    # plant a break near the middle so the verdict has findings to compare
    mid = raw.index(b"\n", len(raw) // 2) + 1
    raw[mid + 40 : mid + 41] = b"0" if raw[mid + 40 : mid + 41] != b"0" else b"1"
    path.write_bytes(bytes(raw))
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 200_000)  # this log is split, the fixtures go whole
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 64 << 10)
    assert path.stat().st_size > 200_000 > max(p.stat().st_size for p in FIXTURE_PATHS.values())
    seq = verify_file(path, VerifyOptions(jobs=1)).to_dict()
    par = verify_file(path, VerifyOptions(jobs=2)).to_dict()
    assert par == seq and seq["exit_code"] == 1
    # several files (whole-file tasks in the pool, plus the split one) keep their order
    other = FIXTURE_PATHS["interrupted"]
    many = verify_paths([path, other, FIXTURE_PATHS["completed"]], VerifyOptions(jobs=2)).to_dict()
    assert many == verify_paths([path, other, FIXTURE_PATHS["completed"]], VerifyOptions(jobs=1)).to_dict()
    assert [f["exit_code"] for f in many["files"]] == [1, 4, 0] and many["exit_code"] == 1


def test_many_small_files_go_to_the_pool_in_tasks_a_window_at_a_time(tmp_path: Path, monkeypatch) -> None:
    """``--jobs`` over many runs: files in tasks of several, never more than a window of tasks waiting for
    the main process, and the report of one job, file for file (tampered and torn runs among them)."""
    from ract_cli.verify import verifier

    for i in range(23):
        path = tmp_path / f"run{i:02d}" / "events.jsonl"
        path.parent.mkdir()
        path.write_bytes(FIXTURE_PATHS[("completed", "tampered", "interrupted")[i % 3]].read_bytes())

    class Counting:
        """The real pool, counting tasks submitted and not yet taken back."""

        def __init__(self, jobs: int) -> None:
            self.pool, self.waiting, self.most, self.sizes = parallel.make_pool(jobs), 0, 0, []

        def __enter__(self) -> Counting:
            return self

        def __exit__(self, *exc: object) -> None:
            self.pool.shutdown()

        def submit(self, fn, paths, options):  # type: ignore[no-untyped-def]
            self.sizes.append(len(paths))
            self.waiting += 1
            self.most = max(self.most, self.waiting)
            future = self.pool.submit(fn, paths, options)
            real_result = future.result

            def result() -> object:
                self.waiting -= 1
                return real_result()

            future.result = result  # type: ignore[method-assign]
            return future

    pools: list[Counting] = []
    monkeypatch.setattr(verifier, "make_pool", lambda jobs: pools.append(Counting(jobs)) or pools[-1])
    monkeypatch.setattr(verifier, "TASK_FILES", 3)
    many = verify_paths([tmp_path], VerifyOptions(jobs=2))
    one = verify_paths([tmp_path], VerifyOptions(jobs=1))
    assert many.to_dict() == one.to_dict() and many.exit_code == 1 and len(many.files) == 23
    (pool,) = pools
    assert pool.sizes == [3] * 7 + [2]  # 23 files in tasks of 3
    assert pool.most <= verifier.TASKS_AHEAD * 2 + 1 < len(pool.sizes)  # a window, not every task at once
    assert verifier._tasks([0, 1, 2], [verifier.TASK_BYTES, 1, 1]) == [[0], [1, 2]]  # and about TASK_BYTES


def test_the_default_jobs_start_a_pool_only_for_enough_bytes_one_worker_per_cpu(tmp_path: Path, monkeypatch) -> None:
    """The default (``AUTO_JOBS``) is one job for one log or under ``POOL_MIN_BYTES`` in all (starting
    workers costs more than they save), else one per usable CPU; ``--jobs N`` is N workers, as asked."""
    from ract_cli.verify import verifier

    for i in range(4):
        path = tmp_path / f"run{i}" / "events.jsonl"
        path.parent.mkdir()
        path.write_bytes(FIXTURE_PATHS["completed"].read_bytes())
    started: list[int] = []
    real_make_pool = verifier.make_pool
    monkeypatch.setattr(verifier, "make_pool", lambda jobs: started.append(jobs) or real_make_pool(jobs))
    expected = verify_paths([tmp_path], VerifyOptions(jobs=1)).to_dict()
    assert verify_paths([tmp_path], VerifyOptions(jobs=parallel.AUTO_JOBS)).to_dict() == expected and started == []
    assert verify_paths([tmp_path], VerifyOptions(jobs=2)).to_dict() == expected and started == [2]
    started.clear()
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    assert verify_paths([tmp_path], VerifyOptions(jobs=parallel.AUTO_JOBS)).to_dict() == expected
    cpus = min(len(os.sched_getaffinity(0)), parallel.AUTO_MAX_JOBS)
    assert started == ([cpus] if cpus > 1 else [])
    assert parallel.auto_jobs(2, parallel.POOL_MIN_BYTES - 1) == 1
    assert parallel.auto_jobs(10_000, 1 << 30) == cpus


@pytest.mark.parametrize(
    ("core", "idle", "cpus", "expected"),
    [
        ("native", True, 2, 2),  # C's helper thread on the free core
        ("native", False, 2, 1),  # the other core is busy: two threads would be slower than one
        ("native", True, 1, 1),  # one CPU to run on
        ("python", True, 2, 2),  # the Python core's second process (``range_chain``)
        ("python", False, 2, 1),
        ("python", True, 1, 1),
    ],
)
def test_the_default_jobs_of_one_large_log(monkeypatch, core: str, idle: bool, cpus: int, expected: int) -> None:
    """One log of ``POOL_MIN_BYTES`` or more: two jobs when a core is free (C's helper thread, or a second
    process for the Python core)."""
    if core == "native" and parallel.core.NATIVE is None:
        pytest.skip("the native core is not built here")
    monkeypatch.setenv("RACT_CORE", core)
    monkeypatch.setattr(parallel, "idle_core", lambda n: idle and n > 1)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)))
    assert parallel.auto_jobs(1, parallel.POOL_MIN_BYTES) == expected
    assert parallel.auto_jobs(1, parallel.POOL_MIN_BYTES - 1) == 1  # small: never a second thread


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"0.52 0.58 0.59 2/467 12345\n", 2),
        (b"3.00 2.10 1.00 17/2048 1\n", 17),
        (b"0.00 0.00 0.00 1/1 1", 1),
        (b"", None),
        (b"0.52 0.58 0.59", None),
        (b"0.52 0.58 0.59 2-467 1", None),
        (b"0.52 0.58 0.59 x/467 1", None),
        (b"0.52 0.58 0.59 2/4/67 1", None),
        (b"0.52 0.58 0.59 -2/467 1", None),
    ],
)
def test_runnable_tasks_reads_the_kernels_load_line(text: bytes, expected: int | None) -> None:
    assert parallel.runnable_tasks(text) == expected


def test_idle_core_counts_the_runnable_tasks(tmp_path: Path, monkeypatch) -> None:
    """A free core is fewer runnable tasks than CPUs (this process counts); no readable count: not free."""
    line = tmp_path / "loadavg"
    monkeypatch.setattr(parallel, "LOADAVG", str(line))
    line.write_bytes(b"0.10 0.20 0.30 1/300 4242\n")
    assert parallel.idle_core(2) and not parallel.idle_core(1)
    line.write_bytes(b"1.90 1.80 1.70 2/300 4242\n")
    assert not parallel.idle_core(2) and parallel.idle_core(4)
    line.write_bytes(b"garbage\n")
    assert not parallel.idle_core(64)
    line.unlink()
    assert not parallel.idle_core(64)


def test_one_large_log_by_default_is_read_in_two_threads_with_the_same_verdict(tmp_path: Path, monkeypatch) -> None:
    """``verify_file`` and ``verify_paths`` without ``--jobs``: a large log on a free core is read with C's
    helper thread (``ChainReader(threads=2)``), and the report is the one-job report, byte for byte."""
    from ract_cli.verify import verifier

    if parallel.core.NATIVE is None:
        pytest.skip("the native core is not built here")
    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=3000)
    expected = verify_file(path, VerifyOptions(jobs=1)).to_dict()
    seen: list[int] = []

    class Recording(ChainReader):
        def __init__(self, *args, threads: int = 1, **kwargs) -> None:
            super().__init__(*args, threads=threads, **kwargs)
            seen.append(threads)

    monkeypatch.setenv("RACT_CORE", "native")
    monkeypatch.setattr(verifier, "ChainReader", Recording)
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", path.stat().st_size)
    monkeypatch.setattr(parallel, "idle_core", lambda n: True)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert verify_file(path, VerifyOptions(jobs=parallel.AUTO_JOBS)).to_dict() == expected
    assert verify_paths([path], VerifyOptions(jobs=parallel.AUTO_JOBS)).to_dict()["files"] == [expected]
    monkeypatch.setattr(parallel, "idle_core", lambda n: False)
    assert verify_file(path, VerifyOptions(jobs=parallel.AUTO_JOBS)).to_dict() == expected
    assert seen == [2, 2, 1]


def test_one_large_log_by_default_goes_to_two_processes_under_the_python_core(tmp_path: Path, monkeypatch) -> None:
    """``RACT_CORE=python`` without ``--jobs``: a large log on a free core is split between this process and
    one worker (``range_chain``), and the report is the one-job report, byte for byte."""
    from ract_cli.verify import verifier

    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=3000)
    monkeypatch.setenv("RACT_CORE", "python")
    expected = verify_file(path, VerifyOptions(jobs=1)).to_dict()
    started: list[int] = []
    real_make_pool = verifier.make_pool
    monkeypatch.setattr(verifier, "make_pool", lambda jobs: started.append(jobs) or real_make_pool(jobs))
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", path.stat().st_size)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", path.stat().st_size)
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 64 << 10)
    monkeypatch.setattr(parallel, "idle_core", lambda n: True)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert verify_file(path, VerifyOptions(jobs=parallel.AUTO_JOBS)).to_dict() == expected
    assert started == [1]  # one worker besides this process


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"], ids=["LF", "CRLF"])
def test_a_worker_takes_a_ranges_leading_run_whatever_the_line_ending(tmp_path: Path, ending: bytes) -> None:
    """SPEC §11: CRLF takes the fast path; a Python worker's range of CRLF lines went back line by line."""
    from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
    from ract_cli.read.chain_mode import BATCH_LINE_BYTES
    from ract_cli.read.range_chain import take_run

    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=500)
    lines = path.read_bytes().splitlines()
    data = b"".join(line + ending for line in lines)
    run = take_run(data, LATEST_SCHEMA_VERSION, BATCH_LINE_BYTES - 1)
    assert run is not None and (run.lines, run.size) == (len(lines), len(data))


def test_a_bad_core_name_is_refused_before_a_log_is_split(tmp_path: Path, monkeypatch) -> None:
    from ract_cli.errors import UsageError

    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=500)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv("RACT_CORE", "bogus")
    # as a process started so finds it: the Python core's proof until a reader refuses the name
    monkeypatch.setattr(parallel.core, "prove", fast_analyze)
    with pytest.raises(UsageError, match="RACT_CORE"):
        verify_file(path, VerifyOptions(jobs=2))


def test_progress_reaches_the_total(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=2000)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 32 << 10)
    for jobs in (1, 2):
        seen: list[tuple[int, int]] = []
        verify_paths([path], VerifyOptions(jobs=jobs), progress=lambda d, t, seen=seen: seen.append((d, t)))
        assert seen and seen[-1] == (path.stat().st_size, path.stat().st_size)
        assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_a_dead_worker_falls_back_to_the_sequential_reader(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=1500)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 64 << 10)
    expected = verify_file(path, VerifyOptions(jobs=1)).to_dict()
    pool = parallel.make_pool(1)
    try:
        pool.submit(int, 0).result()  # the worker is up
        for process in list(pool._processes.values()):  # then killed, as the OOM killer would
            process.kill()
            process.join()
        assert verify_file(path, VerifyOptions(jobs=2), pool=pool).to_dict() == expected
    finally:
        pool.shutdown()


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_a_pool_left_by_an_exception_stops_its_workers_at_once() -> None:
    # Ctrl-C in a fleet: ProcessPoolExecutor's own exit would wait for every running task (here a minute)
    started = time.monotonic()
    before = multiprocessing.active_children()  # (pools of other tests may still be winding down)
    with pytest.raises(KeyboardInterrupt), parallel.make_pool(2) as pool:
        running = [pool.submit(_sleep, 60) for _ in range(4)]
        while not all(f.running() for f in running[:2]):
            time.sleep(0.01)
        workers = [child for child in multiprocessing.active_children() if child not in before]
        raise KeyboardInterrupt
    # (by pid: the pool's own thread may have reaped a worker, which its Process object cannot tell)
    pids = [w.pid for w in workers if w.pid is not None]
    deadline = time.monotonic() + 10
    while any(process_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(pids) == 2 and not any(process_alive(pid) for pid in pids)
    assert time.monotonic() - started < 20


def test_a_pool_left_normally_finishes_its_tasks() -> None:
    with parallel.make_pool(2) as pool:
        futures = [pool.submit(_sleep, 0.2) for _ in range(4)]
    assert [f.result() for f in futures] == [0.2] * 4


_HALF_RESULT = """
import struct, sys, time
from ract_cli.read import parallel

def half_result():
    # in the worker: announce a 1 MiB result, send none of it, and wait to be stopped
    queue = sys._getframe(1).f_locals["result_queue"]
    queue._writer._send(struct.pack("!i", 1 << 20))
    time.sleep(600)

with parallel.make_pool(1) as pool:
    pool.submit(half_result)
    time.sleep(1)  # (the pool's thread has read the header and waits for the rest)
    raise KeyboardInterrupt
"""


def test_a_worker_stopped_mid_result_does_not_hang_the_exit() -> None:
    # the pool's thread, reading a result whose writer was terminated, waited for its rest forever
    # (the main process held the pipe's write end open): the process hung at exit
    import subprocess
    import sys

    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _HALF_RESULT], capture_output=True, timeout=60)
    assert done.returncode != 0 and b"KeyboardInterrupt" in done.stderr
    assert time.monotonic() - started < 30


_ORPHANING = """
import sys, time
from ract_cli.read import parallel
pool = parallel.make_pool(2)
futures = [pool.submit(time.sleep, 0.1) for _ in range(2)]
[f.result() for f in futures]
print(*(p.pid for p in pool._processes.values()), flush=True)
time.sleep(600)
"""


def test_workers_end_when_the_process_that_started_them_is_killed() -> None:
    import signal
    import subprocess
    import sys

    main = subprocess.Popen([sys.executable, "-c", _ORPHANING], stdout=subprocess.PIPE)
    assert main.stdout is not None
    workers = [int(pid) for pid in main.stdout.readline().split()]
    main.send_signal(signal.SIGKILL)  # (no chance to stop its pool)
    main.wait(timeout=10)
    deadline = time.monotonic() + 20
    while any(process_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(workers) == 2 and not any(process_alive(pid) for pid in workers)
