"""Extra ``verify`` rows for ``make bench`` (see bench/README.md for the interface).

- the CLI end to end (a subprocess: interpreter start, imports, report) with 1 and 2 jobs;
- many small files with 1 and 2 jobs (parallel across files, no file split);
- the reference per-line path alone (``analyze_line(fast=False)``): what the fast path saves.
"""

from __future__ import annotations

from ract_cli.read.framing import split_line_ending
from ract_cli.read.line import analyze_line
from ract_cli.verify.verifier import VerifyOptions, verify_paths

MANY_FILES = 24
EVENTS_PER_FILE = 2_000


def rows(ctx) -> list[dict]:
    log = str(ctx.log_path)
    n = ctx.events
    out = []
    for jobs in (1, 2):
        seconds = ctx.time_cmd([*ctx.ract, "trace", "verify", "-q", "--jobs", str(jobs), log])
        out.append(
            ctx.row(
                f"CLI subprocess: ract trace verify -q --jobs {jobs}",
                n,
                seconds,
                ratio=ctx.verify_seconds / seconds,
                ratio_of="verify -j1 lib",
            )
        )

    root, many_events = ctx.many_logs(MANY_FILES, EVENTS_PER_FILE)
    one = ctx.time(lambda: verify_paths([root], VerifyOptions(jobs=1)))
    two = ctx.time(lambda: verify_paths([root], VerifyOptions(jobs=2)))
    out.append(ctx.row(f"{MANY_FILES} files x {EVENTS_PER_FILE} events, --jobs 1", many_events, one))
    out.append(
        ctx.row(
            f"{MANY_FILES} files x {EVENTS_PER_FILE} events, --jobs 2",
            many_events,
            two,
            ratio=one / two,
            ratio_of="same, --jobs 1",
        )
    )

    with open(log, "rb") as f:
        bodies = [split_line_ending(line)[0] for _, line in zip(range(20_000), f, strict=False)]
    fast = ctx.time(lambda: [analyze_line(b) for b in bodies])
    slow = ctx.time(lambda: [analyze_line(b, fast=False) for b in bodies], repeat=1)
    out.append(
        ctx.row("analyze_line, fast path (20k lines)", len(bodies), fast, ratio=slow / fast, ratio_of="reference path")
    )
    out.append(ctx.row("analyze_line, reference path only (20k lines)", len(bodies), slow))
    return out
