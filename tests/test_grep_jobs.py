"""``ract trace grep --jobs N``: files grepped in worker processes give exactly what one process gives.

Every output mode, verified and not, over a tree holding good logs, a
tampered one, a torn one, a missing path and a log large enough to be grepped
by the main process: stdout bytes, stderr text and exit code must not depend
on N.
"""

from __future__ import annotations

import multiprocessing
import random
import shutil
from pathlib import Path

import pytest

import ract_cli.read.parallel
from ract_cli.cli.app import main
from ract_cli.grep.search import GrepOptions, build_filter, grep_paths
from ract_cli.testing.synth import write_completed, write_fixtures

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
    search = grep_paths([tree], build_filter(kinds=["*"]), GrepOptions(jobs=2))
    it = iter(search)
    assert next(it) is not None
    assert multiprocessing.active_children(), "the workers should be running"
    search.close()
    assert multiprocessing.active_children() == []
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
