"""Benchmark rows for start-up (issue 14): a call on a 10-event log against ``python -c "import orjson"``.

Target: ``ract --version`` and ``ract trace verify -q`` on a 10-event log
within 3x the wall time of the interpreter starting and importing orjson
(``ratio = orjson_seconds / ract_seconds``, target 1/3). The other rows are for
the record: a verify that prints its verdict, a project and a grep into a
pipe, which run before typer too (``cli/launch.py``). Best of 15 each, one
after the other in this run; the log is the benchmark log's first 10 lines.
"""

from __future__ import annotations

import sys
from pathlib import Path

TARGET = round(1 / 3, 3)
REPEAT = 15


def rows(ctx) -> list[dict]:
    small = ctx.log_path.with_name("startup-10.jsonl")
    with open(ctx.log_path, "rb") as f:
        small.write_bytes(b"".join(f.readline() for _ in range(10)))
    floor = ctx.time_cmd([sys.executable, "-c", "import orjson"], repeat=REPEAT)
    log = str(small)
    cases = [
        ("ract --version", ["--version"], TARGET),
        ("ract trace verify -q (10 events)", ["trace", "verify", "-q", log], TARGET),
        ("  ract trace verify (10 events, verdict into a pipe)", ["trace", "verify", log], None),
        ("  ract trace project (10 events, JSON into a pipe)", ["trace", "project", log], None),
        (
            "  ract trace grep --kind run.started (10 events, into a pipe)",
            ["trace", "grep", "--kind", "run.started", log],
            None,
        ),
    ]
    out = [ctx.row('start-up floor: python -c "import orjson"', 10, floor)]
    for name, argv, target in cases:
        seconds = ctx.time_cmd([*ctx.ract, *argv], repeat=REPEAT)
        out.append(ctx.row(name, 10, seconds, ratio=floor / seconds, ratio_of="import orjson", target=target))
    return out


if __name__ == "__main__":  # (python bench/rows_startup.py: these rows alone)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench

    ctx = bench.BenchContext(
        log_path=bench.cached_log(bench.BENCH_EVENTS, f"bench-{bench.BENCH_EVENTS // 1000}k"), events=0
    )
    bench.print_table(rows(ctx))
