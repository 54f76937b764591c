"""The 258-273 MB rows of docs/performance.md: verify and grep on a 500,000-event log in four layouts.

Not part of ``make bench`` (generating the logs takes minutes, and they take about 1 GB of
``bench/out/``): ``python bench/big.py [--repeat N] [--no-python]``. Each row is a
subprocess, best of N, after the file was read once (warm cache); ratios are against the
floor of the same layout (a subprocess of its own) or, for grep, jq. Peak RSS is the
largest of a row's runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's ract_cli (rows_layouts imports it)

from floors import FLOOR_SCRIPT
from rows_layouts import layout_log

from bench import cached_log

RACT = str(Path(sys.executable).with_name("ract"))


def timed(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> tuple[float, int]:
    """(best wall seconds, peak RSS in MB over the runs) of ``cmd``, output discarded."""
    best, rss = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.Popen(
            cmd, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _, _, usage = os.wait4(proc.pid, 0)  # this child's own peak, not the largest child's so far
        best = min(best, time.perf_counter() - start)
        rss = max(rss, usage.ru_maxrss // 1024)
    return best, rss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-python", action="store_true", help="skip the Python core's rows (~6 s a run)")
    args = parser.parse_args()
    ours = cached_log(500_000, "bench-500k")
    jq = shutil.which("jq")
    for path in (ours, *(layout_log(ours, layout) for layout in ("schema", "dumps", "crlf"))):
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL)  # warm the page cache (in a child: this
        # process stays small, and a child's peak RSS counts what it shared with this one before its exec)
        floor, _ = timed([sys.executable, "-c", FLOOR_SCRIPT, str(path)], args.repeat)
        print(f"{path.name}: floor {floor:.3f} s", flush=True)
        cores = [("native", "1"), ("native", "2")] + ([] if args.no_python else [("python", "1")])
        for core, jobs in cores:
            s, rss = timed([RACT, "trace", "verify", "-q", "--jobs", jobs, str(path)], args.repeat, {"RACT_CORE": core})
            print(f"  verify -q {core} -j{jobs}: {s:.3f} s = {floor / s:.2f} x the floor, {rss} MB peak", flush=True)
        if jq is None:
            continue
        reference, _ = timed([jq, "-c", 'select(.kind=="process.reaped")', str(path)], args.repeat)
        print(f"  jq select(process.reaped): {reference:.3f} s", flush=True)
        grep = [RACT, "trace", "grep", "--kind", "process.reaped"]
        for extra in ([], ["--jobs", "2"], ["--no-verify"]):
            s, _ = timed([*grep, *extra, str(path)], args.repeat)
            print(f"  grep {' '.join(extra) or '(verified)'}: {s:.3f} s = {reference / s:.2f} x jq", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
