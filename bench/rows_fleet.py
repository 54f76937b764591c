"""Benchmark rows for fleet analytics (issue 16): ``export --format parquet`` and ``sql`` over a tree of runs.

The question: every ``process.reaped`` event of the fleet. The reference is
what auditors did before, ``find DIR -name events.jsonl | xargs -P2 jq -c
'select(.kind=="process.reaped")'`` (unverified); against it:

- ``ract trace sql "SELECT * FROM events WHERE kind='process.reaped'" DIR``
  over the logs (each read and verified now, ``--jobs 1`` and ``--jobs 2``);
- ``ract trace verify -q DIR`` with its default jobs, ``--jobs 1`` and
  ``--jobs 2`` (issue 14's target: at least 2x jq's unverified scan);
- ``ract trace project DIR`` (the fleet's run reports, JSON), ``--jobs 1`` and ``2``;
- ``ract trace export --format parquet`` of the tree (``--jobs 1`` and ``2``),
  which verifies once;
- the same query over that export (what every later question costs).

Ratios are jq's seconds over ract's (above 1: ract is faster). No target:
jq does not verify, so this says what the verification and the tables cost.
Each ract row also names its peak RSS (the largest of its runs, from
``wait4``), which must not grow with the number of runs: DuckDB writes
under a 256 MB limit, ``events`` one batch of rows per COPY.

The tree: 1,000 runs under ``bench/out/fleet-1000/`` (generated once), one
completed run (156 events, 3 reaps) for every two aborted ones (37 events, 1
reap): ~77 events per run, every log valid, so jq and ract must find the same
events, and that is checked before timing (a fast wrong answer is not a
result). ``RACT_BENCH_FLEET_BIG=1`` adds the same rows for 10,000 runs
(~390 MB; generated once, timed once each).

Alone: ``python bench/rows_fleet.py [--big]`` prints just these rows.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
QUERY = "SELECT * FROM events WHERE kind='process.reaped'"
JQ_FILTER = 'select(.kind=="process.reaped")'


def fleet(runs: int) -> tuple[Path, int]:
    """A tree of ``runs`` valid run logs (generated once under bench/out/), and its event count."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from ract_cli.testing.synth import write_aborted, write_completed

    root = OUT / f"fleet-{runs}"
    done = root / ".complete"
    if not done.exists():
        print(f"generating {root.relative_to(ROOT)} ({runs} runs, once) ...", file=sys.stderr, flush=True)
        tmp = OUT / f"fleet-{runs}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        for i in range(runs):
            run_id = hashlib.sha256(f"ract.bench.fleet:{i}".encode()).hexdigest()[:32]
            path = tmp / run_id[:2] / run_id / "events.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            if i % 3 == 0:
                write_completed(path, run_id, seed=1000 + i)
            else:
                write_aborted(path, run_id, seed=1000 + i)
        (tmp / ".complete").write_text(f"{runs}\n")
        shutil.rmtree(root, ignore_errors=True)
        os.replace(tmp, root)
    events = 0
    for path in root.rglob("events.jsonl"):
        with open(path, "rb") as f:
            events += sum(1 for _ in f)
    return root, events


def _lines(argv: list[str], ok: tuple[int, ...] = (0,)) -> int:
    proc = subprocess.run(argv, capture_output=True, check=False, cwd=ROOT)
    if proc.returncode not in ok:
        said = proc.stderr.decode(errors="replace").strip().splitlines() or [""]
        what = " ".join(a for a in argv[3:6] if not a.startswith("-"))  # e.g. "trace export"
        raise RuntimeError(f"ract {what} exited {proc.returncode}: {said[-1].split(chr(92) + 'x0a')[0][:160]}")
    return proc.stdout.count(b"\n")


def _measure(argv: list[str], repeat: int) -> tuple[float, float]:
    """Best wall seconds of ``argv`` over ``repeat`` runs, and its largest peak RSS in MB (output discarded)."""
    best, rss = float("inf"), 0.0
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        _, _, usage = os.wait4(proc.pid, 0)
        best = min(best, time.perf_counter() - start)
        rss = max(rss, usage.ru_maxrss / 1024)  # KiB on Linux
    return best, rss


def _rows_for(ctx, runs: int, repeat: int) -> list[dict]:
    root, events = fleet(runs)
    jq = shutil.which("jq")
    export_dir = OUT / f"fleet-{runs}-export"
    jq_argv = [
        "sh",
        "-c",
        f"find {shlex.quote(str(root))} -name events.jsonl | xargs -P2 {shlex.quote(jq)} -c {shlex.quote(JQ_FILTER)}",
    ]
    sql_logs = {
        jobs: [*ctx.ract, "trace", "sql", "--format", "jsonl", "--jobs", str(jobs), QUERY, str(root)] for jobs in (1, 2)
    }
    export = {
        jobs: [*ctx.ract, "trace", "export", "--format", "parquet", "--overwrite", "-q", "--jobs", str(jobs), "-o"]
        for jobs in (1, 2)
    }
    for argv in export.values():
        argv += [str(export_dir), str(root)]
    sql_export = [*ctx.ract, "trace", "sql", "--format", "jsonl", QUERY, str(export_dir)]

    size_mb = sum(p.stat().st_size for p in root.rglob("events.jsonl")) / 1e6
    want = _lines(jq_argv)
    label = f"fleet of {runs:,} runs ({events:,} events, {size_mb:.0f} MB; {want:,} reaps)"
    jq_s = ctx.time_cmd(jq_argv, repeat=repeat)
    rows = [ctx.row(f"{label}: find | xargs -P2 jq (reference, unverified)", events, jq_s)]
    # Same answer first: one run of each, counting the matching events (a fast wrong answer is not a
    # result). A command that fails is a row saying so, and the other fleet sizes still print.
    try:
        _lines([a for a in export[1] if a != "-q"])
        for argv in (sql_logs[1], sql_export):
            got = _lines(argv)
            if got != want:
                raise RuntimeError(f"{shlex.join(argv[-3:])}: {got} process.reaped rows, jq found {want}")
    except RuntimeError as exc:
        rows.append(ctx.row(f"  FAILED: {exc}", events, float("inf")))
        return rows

    # issue 14: a verified fleet at least 2x faster than jq's unverified scan; --jobs 2 never slower
    # (0: no --jobs, the default, which picks one worker per CPU for a fleet)
    verify = {
        jobs: [*ctx.ract, "trace", "verify", "-q", *(("--jobs", str(jobs)) if jobs else ()), str(root)]
        for jobs in (0, 1, 2)
    }
    verify_s = {jobs: _measure(argv, repeat) for jobs, argv in verify.items()}
    for jobs, (seconds, rss) in verify_s.items():
        rows.append(
            ctx.row(
                f"  ract trace verify -q {f'--jobs {jobs}' if jobs else '(default jobs)'} ({rss:.0f} MB RSS)",
                events,
                seconds,
                ratio=jq_s / seconds,
                ratio_of="jq",
                target=2.0,
            )
        )
    rows.append(
        ctx.row(
            "  verify -q: --jobs 2 vs --jobs 1 (never slower)",
            events,
            verify_s[2][0],
            ratio=verify_s[1][0] / verify_s[2][0],
            ratio_of="--jobs 1",
            target=1.0,
        )
    )
    # the run reports of the whole fleet (JSON into a pipe), one worker and two
    project = {jobs: [*ctx.ract, "trace", "project", "--jobs", str(jobs), str(root)] for jobs in (1, 2)}
    for jobs, (seconds, rss) in {jobs: _measure(argv, repeat) for jobs, argv in project.items()}.items():
        rows.append(
            ctx.row(
                f"  ract trace project --jobs {jobs} (JSON; {rss:.0f} MB RSS)",
                events,
                seconds,
                ratio=jq_s / seconds,
                ratio_of="jq",
            )
        )
    sql_logs_s = {jobs: _measure(argv, repeat) for jobs, argv in sql_logs.items()}
    export_s = {jobs: _measure(argv, repeat) for jobs, argv in export.items()}
    sql_export_s, sql_export_rss = _measure(sql_export, repeat)
    export_mb = sum(p.stat().st_size for p in export_dir.rglob("*.parquet")) / 1e6
    files = sum(1 for _ in (export_dir / "events").rglob("*.parquet"))
    for jobs, (seconds, rss) in sql_logs_s.items():
        rows.append(
            ctx.row(
                f"  ract trace sql over the logs --jobs {jobs} (verified; {rss:.0f} MB RSS)",
                events,
                seconds,
                ratio=jq_s / seconds,
                ratio_of="jq",
            )
        )
    for jobs, (seconds, rss) in export_s.items():
        rows.append(
            ctx.row(
                f"  ract trace export --jobs {jobs} ({export_mb:.1f} MB, {files} events files; {rss:.0f} MB RSS)",
                events,
                seconds,
                ratio=jq_s / seconds,
                ratio_of="jq",
            )
        )
    rows.append(
        ctx.row(
            f"  ract trace sql over the export ({sql_export_rss:.0f} MB RSS)",
            events,
            sql_export_s,
            ratio=jq_s / sql_export_s,
            ratio_of="jq",
        )
    )
    # Export once, then ask ten questions: the cost per question.
    per_question = (min(s for s, _ in export_s.values()) + 10 * sql_export_s) / 10
    rows.append(
        ctx.row(
            "  export once + 10 queries over it, per query",
            events,
            per_question,
            ratio=jq_s / per_question,
            ratio_of="jq",
        )
    )
    return rows


def rows(ctx) -> list[dict]:
    if shutil.which("jq") is None:
        return [ctx.row("fleet: jq (reference) not installed -- fleet rows skipped", 1, float("inf"))]
    out = _rows_for(ctx, 1_000, repeat=3)
    if os.environ.get("RACT_BENCH_FLEET_BIG") == "1":
        out += _rows_for(ctx, 10_000, repeat=1)
    return out


if __name__ == "__main__":
    import argparse

    sys.path.insert(0, str(ROOT / "bench"))
    import bench  # the harness: its context and its table

    parser = argparse.ArgumentParser(description="the fleet rows of make bench, alone")
    parser.add_argument("--big", action="store_true", help="also the 10,000-run rows (RACT_BENCH_FLEET_BIG=1)")
    if parser.parse_args().big:
        os.environ["RACT_BENCH_FLEET_BIG"] = "1"
    import compileall

    compileall.compile_dir(str(ROOT / "ract_cli"), quiet=1)  # as bench.py does: no recompiling in each run
    bench.print_table(rows(bench.BenchContext(log_path=Path(os.devnull), events=0)))
