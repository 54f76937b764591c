"""Benchmark rows for ``ract trace project`` (issue 7).

Target (issue 14; issue 7 asked 0.6x): projecting the benchmark log runs at >= 0.8x the events/s of a
1-job ``verify`` of the same log measured in the same run
(``ratio = verify_seconds / project_seconds``, i.e. project's events/s over
verify's). Projection reads through the same chain reader, so the ratio is
what the projection costs on top of verification. Before timing, one run
checks that the report covers every event (a fast wrong answer is not a result).
"""

from __future__ import annotations

import sys
from pathlib import Path

TARGET = 0.8


def rows(ctx) -> list[dict]:
    root = Path(__file__).resolve().parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from ract_cli.project.report import project_file

    report = project_file(ctx.log_path)
    if report["events"] != ctx.events or not report["trusted"]:
        raise RuntimeError(f"project covered {report['events']} of {ctx.events} events (trusted={report['trusted']})")
    seconds = ctx.time(lambda: project_file(ctx.log_path))
    verify = ctx.verify_seconds
    cli = ctx.time_cmd([*ctx.ract, "trace", "project", "--format", "json", str(ctx.log_path)])
    return [
        ctx.row(
            "ract trace project (library, 1 log)",
            ctx.events,
            seconds,
            ratio=verify / seconds if verify else None,
            ratio_of="verify",
            target=TARGET,
        ),
        ctx.row(
            "  ract trace project --format json (subprocess, for the record)",
            ctx.events,
            cli,
            ratio=verify / cli if verify else None,
            ratio_of="verify",
        ),
    ]
