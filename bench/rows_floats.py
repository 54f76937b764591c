"""``make bench`` rows on a log whose floats are spelled as a Python runtime spells them (issue 14).

The benchmark log's floats have at most a few digits. A runtime that writes
``random.random()``, a measured latency or a ratio writes repr's 16-17
significant digits, and ``json.dumps`` writes a whole float as ``2.0`` (JCS:
``2``). This re-draws every payload float of the benchmark log (seeded,
``testing.synth.write_runtime_floats``): most as ``random.random()`` (one of
the kinds' ranges is 0-1), one in five as a whole float (``0.0``, ``1.0``),
one in fifty below 1e-4 (repr: ``4.3e-05``), then hashes and chains the
events again and writes them as ``json.dumps`` does by default, keys
shuffled. Rows: the
floor, and verify in process with each core, ``-j1`` and ``-j2``, against it.
``python bench/rows_floats.py`` runs these rows alone.
"""

from __future__ import annotations

import os
from pathlib import Path

from floors import floor_loop
from rows_layouts import OUT, cores, target, verify_in_process

from ract_cli.testing.synth import write_runtime_floats


def floats_log(source: Path) -> Path:
    """The benchmark log with runtime-spelled floats (written once, cached next to it)."""
    target_path = OUT / f"{source.stem}-floats.jsonl"
    if target_path.exists() and target_path.stat().st_mtime >= source.stat().st_mtime:
        return target_path
    tmp = target_path.with_suffix(".tmp")
    write_runtime_floats(source, tmp)
    os.replace(tmp, target_path)
    return target_path


def rows(ctx) -> list[dict]:  # type: ignore[no-untyped-def]
    path = floats_log(ctx.log_path)
    n = ctx.events
    floor = ctx.time(lambda: floor_loop(path))
    out = [ctx.row("[floats] floor (orjson+sorted dump+sha256)", n, floor)]
    for core in cores():
        for jobs in (1, 2):
            seconds = ctx.time(lambda c=core, j=jobs: verify_in_process(ctx, path, c, j))
            out.append(
                ctx.row(
                    f"[floats] verify (library) -j{jobs} core={core}",
                    n,
                    seconds,
                    ratio=floor / seconds,
                    ratio_of="floor",
                    target=target(core, jobs),
                )
            )
    return out


if __name__ == "__main__":  # (python bench/rows_floats.py: these rows alone)
    import bench

    log = bench.cached_log(bench.BENCH_EVENTS, f"bench-{bench.BENCH_EVENTS // 1000}k")
    bench.print_table(rows(bench.BenchContext(log_path=log, events=sum(1 for _ in open(log, "rb")))))
