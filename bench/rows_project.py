"""Benchmark rows for ``ract trace project`` (issue 7; issue 14's target).

Target (issue 14; issue 7 asked 0.6x): projecting the benchmark log runs at >= 0.8x the events/s of a
1-job ``verify`` of the same log (``ratio = verify_seconds / project_seconds``, i.e. project's events/s
over verify's). The two are timed here side by side, alternating, best of each (the machine's speed
moves between the rows of a run). Projection reads through the same chain reader, so the ratio is what
the projection costs on top of verification; with the native core the events are folded in C
(``project.fold``), and a row gives the Python fold (``fold=False``) for the record. Before timing, one
run checks that the report covers every event and equals the Python fold's (a fast wrong answer is not
a result).
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TARGET = 0.8
ROUNDS = 7


def _alternating(fns: dict[str, Callable[[], Any]], rounds: int = ROUNDS) -> dict[str, float]:
    """Best wall-clock seconds of each function, run in turn ``rounds`` times."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            gc.collect()
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def rows(ctx) -> list[dict]:
    root = Path(__file__).resolve().parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from ract_cli.project.options import ProjectOptions
    from ract_cli.project.report import project_file
    from ract_cli.verify import VerifyOptions, verify_paths

    log = ctx.log_path
    report = project_file(log)
    if report["events"] != ctx.events or not report["trusted"]:
        raise RuntimeError(f"project covered {report['events']} of {ctx.events} events (trusted={report['trusted']})")
    if report != project_file(log, fold=False):
        raise RuntimeError("project folded in C differs from the Python fold on the benchmark log")
    best = _alternating(
        {
            "verify": lambda: verify_paths([log], VerifyOptions(jobs=1)),
            "project": lambda: project_file(log),
            "python fold": lambda: project_file(log, fold=False),
            # two jobs: C's helper thread checks chunks ahead for both (verify's and project's default here)
            "verify -j2": lambda: verify_paths([log], VerifyOptions(jobs=2)),
            "project -j2": lambda: project_file(log, ProjectOptions(jobs=2)),
        }
    )
    before = os.environ.get("RACT_CORE")
    os.environ["RACT_CORE"] = "python"  # the Python core's fold (python_chain), against its own verify
    try:
        python_core = _alternating(
            {"verify": lambda: verify_paths([log], VerifyOptions(jobs=1)), "project": lambda: project_file(log)},
            rounds=3,
        )
    finally:
        if before is None:
            os.environ.pop("RACT_CORE")
        else:
            os.environ["RACT_CORE"] = before
    verify_cli = ctx.time_cmd([*ctx.ract, "trace", "verify", "-q", "--jobs", "1", str(log)])
    cli = ctx.time_cmd([*ctx.ract, "trace", "project", "--format", "json", "--jobs", "1", str(log)])
    verify_default = ctx.time_cmd([*ctx.ract, "trace", "verify", "-q", str(log)])
    project_default = ctx.time_cmd([*ctx.ract, "trace", "project", "--format", "json", str(log)])
    # the Python core with two jobs: verify splits the log between two processes, project folds it in one while
    # a worker proves its lines (project.fold_on_trust); first the same report as one job (a fast wrong answer is
    # not a result), then the two commands alternating
    python_env = {**os.environ, "RACT_CORE": "python"}
    project_argv = [*ctx.ract, "trace", "project", "--format", "json", str(log)]
    reports = [
        subprocess.run([*project_argv, "--jobs", jobs], capture_output=True, env=python_env, cwd=root, check=False)
        for jobs in ("1", "2")
    ]
    if reports[0].returncode != 0 or reports[1].stdout != reports[0].stdout:
        raise RuntimeError("RACT_CORE=python project --jobs 2 differs from --jobs 1 on the benchmark log")
    python_j2 = _alternating(
        {
            "verify": lambda: subprocess.run(
                [*ctx.ract, "trace", "verify", "-q", "--jobs", "2", str(log)], env=python_env, cwd=root, check=True
            ),
            "project": lambda: subprocess.run(
                [*project_argv, "--jobs", "2"], stdout=subprocess.DEVNULL, env=python_env, cwd=root, check=True
            ),
        },
        rounds=3,
    )

    def row(name: str, seconds: float, verify_seconds: float, target: float | None = None) -> dict:
        return ctx.row(name, ctx.events, seconds, ratio=verify_seconds / seconds, ratio_of="verify", target=target)

    return [
        row("ract trace project (library, 1 log; verify alternating with it)", best["project"], best["verify"], TARGET),
        row("  the same, folded in Python (fold=False, for the record)", best["python fold"], best["verify"]),
        row(
            "ract trace project, RACT_CORE=python (library; its verify alternating)",
            python_core["project"],
            python_core["verify"],
            TARGET,
        ),
        row("  ract trace project --format json --jobs 1 (subprocess, against verify -q --jobs 1)", cli, verify_cli),
        row(
            "ract trace project --jobs 2 (library; verify --jobs 2 alternating)",
            best["project -j2"],
            best["verify -j2"],
        ),
        row(
            "  ract trace project --format json (subprocess, default jobs, against verify -q)",
            project_default,
            verify_default,
            TARGET,
        ),
        row(
            "  RACT_CORE=python ract trace project --jobs 2 (subprocess, against verify -q --jobs 2, alternating)",
            python_j2["project"],
            python_j2["verify"],
            TARGET,
        ),
    ]


if __name__ == "__main__":  # (python bench/rows_project.py: these rows alone)
    import bench

    log = bench.cached_log(bench.BENCH_EVENTS, f"bench-{bench.BENCH_EVENTS // 1000}k")
    bench.print_table(rows(bench.BenchContext(log_path=log, events=sum(1 for _ in open(log, "rb")))))
