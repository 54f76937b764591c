"""Benchmark rows for ``ract trace grep`` (issue 6), measured against jq in the same run.

Reference: ``jq -c 'select(.kind=="process.reaped")' LOG``. Targets: verified
grep at least 2x faster than jq; ``--no-verify`` at least 10x faster. Every
command runs as a subprocess with stdout discarded, so interpreter start-up
and imports are part of ract's time, as they are part of jq's.

Two "bound" rows say how fast any grep could possibly be here: ract's
start-up alone (the same command on a tiny fixture), and start-up plus the
floor loop (parse, sorted dump and sha256 of every line, no check). A target
ratio above a bound's ratio cannot be met by tuning this code.

Before timing, one run of each checks that they agree on the number of
matching events (a fast wrong answer is not a result).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

KIND = "process.reaped"


def _count(argv: list[str]) -> int:
    proc = subprocess.run(argv, capture_output=True, check=False)
    if proc.returncode not in (0,):
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr[-500:]!r}")
    return proc.stdout.count(b"\n")


def _library_no_verify_seconds(path: Path) -> float:
    """In-process: the --no-verify scan alone, without interpreter start-up (for the record)."""
    root = Path(__file__).resolve().parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from ract_cli.grep.search import GrepOptions, build_filter, grep_paths

    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _item in grep_paths([path], build_filter(kinds=[KIND]), GrepOptions(verify=False)):
            pass
        best = min(best, time.perf_counter() - start)
    return best


def rows(ctx) -> list[dict]:
    log = str(ctx.log_path)
    jq = shutil.which("jq")
    if jq is None:
        return [ctx.row("jq (reference) -- not installed: grep rows skipped", ctx.events, float("inf"))]
    jq_argv = [jq, "-c", f'select(.kind=="{KIND}")', log]
    verified_argv = [*ctx.ract, "trace", "grep", "--kind", KIND, log]
    fast_argv = [*ctx.ract, "trace", "grep", "--no-verify", "--kind", KIND, log]

    want = _count(jq_argv)
    for argv in (verified_argv, fast_argv):
        got = _count(argv)
        if got != want:
            raise RuntimeError(f"{' '.join(argv[-4:])}: {got} matches, jq found {want}")

    jq_s = ctx.time_cmd(jq_argv)
    verified_s = ctx.time_cmd(verified_argv)
    fast_s = ctx.time_cmd(fast_argv)
    scan_s = _library_no_verify_seconds(ctx.log_path)
    tiny = (
        Path(__file__).resolve().parent.parent
        / "fixtures"
        / "runs"
        / "120d7eae7ee0c9c181816e553722e2fe"
        / "events.jsonl"
    )
    startup_s = ctx.time_cmd([*ctx.ract, "trace", "grep", "--no-verify", "--kind", KIND, str(tiny)])
    rows = [
        ctx.row(f"jq -c 'select(.kind==\"{KIND}\")' (reference)", ctx.events, jq_s),
        ctx.row(
            f"ract trace grep --kind {KIND} (verified)",
            ctx.events,
            verified_s,
            ratio=jq_s / verified_s,
            ratio_of="jq",
            target=2.0,
        ),
        ctx.row(
            f"ract trace grep --no-verify --kind {KIND}",
            ctx.events,
            fast_s,
            ratio=jq_s / fast_s,
            ratio_of="jq",
            target=10.0,
        ),
        ctx.row(
            "  grep --no-verify scan, in-process (no interpreter start-up)",
            ctx.events,
            scan_s,
            ratio=jq_s / scan_s,
            ratio_of="jq",
        ),
        ctx.row(
            "  verify --jobs 1 of the same log (context)",
            ctx.events,
            ctx.verify_seconds,
            ratio=jq_s / ctx.verify_seconds if ctx.verify_seconds else None,
            ratio_of="jq",
        ),
        # Lower bounds: no grep can be faster than these, so a target above their ratio is out of reach.
        ctx.row(
            "  bound: ract start-up alone (same grep, 156-event fixture)",
            156,
            startup_s,
            ratio=jq_s / startup_s,
            ratio_of="jq",
        ),
    ]
    # An audit across a tree: --jobs greps whole files in worker processes (docs/grep.md).
    root, many_events = ctx.many_logs()
    files = sum(1 for _ in root.rglob("events.jsonl"))
    tree_s = {
        jobs: ctx.time_cmd([*ctx.ract, "trace", "grep", "--jobs", str(jobs), "--kind", KIND, str(root)])
        for jobs in (1, 2)
    }
    rows.append(ctx.row(f"  tree of {files} logs, verified grep --jobs 1", many_events, tree_s[1]))
    rows.append(
        ctx.row(
            f"  tree of {files} logs, verified grep --jobs 2",
            many_events,
            tree_s[2],
            ratio=tree_s[1] / tree_s[2],
            ratio_of="--jobs 1",
        )
    )
    if ctx.floor_seconds:
        bound_s = ctx.floor_seconds + startup_s
        rows.append(
            ctx.row(
                "  bound: start-up + floor loop (parse, dump, sha256; no check)",
                ctx.events,
                bound_s,
                ratio=jq_s / bound_s,
                ratio_of="jq",
            )
        )
    return rows
