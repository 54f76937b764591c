"""``make bench``: how fast ``ract trace verify`` is, measured side by side in one run.

Usage::

    python bench/bench.py            # ~100k-event log: verify (1 and 2 jobs), floor, naive, row modules
    python bench/bench.py --big      # also peak RSS of `ract trace verify` on a ~1 GB log
    RACT_BENCH_BIG=1 make bench      # same as --big

The logs are generated once with ``ract_cli.synth.write_benchmark_log`` and
cached under ``bench/out/`` (gitignored). Nothing here is a test: numbers are
printed, never asserted. See ``bench/README.md`` for the row-module interface
(``bench/rows_*.py``) and ``docs/performance.md`` for recorded results.
"""

from __future__ import annotations

import argparse
import compileall
import gc
import hashlib
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "bench"
OUT = BENCH_DIR / "out"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from floors import floor_loop

from ract_cli.format.canonical import jcs_exact
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION, VALIDATORS, kinds_for_version
from ract_cli.read.handles import HandleTracker
from ract_cli.testing.synth import write_benchmark_log
from ract_cli.verify.verifier import VerifyOptions, verify_paths

BENCH_EVENTS = 100_000
BIG_EVENTS = 2_000_000  # ~1 GB with the synth generator (~516 bytes per event)
RSS_TARGET_MB = 120.0
#: issue 14's targets for the native core (in process here; rows_layouts.py holds every layout and core to them)
TARGETS = {"jobs1_vs_floor": 2.0, "jobs2_vs_floor": 3.0, "jobs1_vs_naive": 20.0}


# --- the context every row module receives ----------------------------------


def ract_command() -> list[str]:
    """How a user runs ract: the ``ract`` script next to this interpreter (what ``pip install`` puts there),
    else ``python -m ract_cli`` (which also imports runpy)."""
    script = Path(sys.executable).with_name("ract")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ract_cli"]


@dataclass
class BenchContext:
    """Handed to every ``bench/rows_*.py`` module's ``rows(ctx)``.

    ``log_path``: the ~100k-event log; ``events``: its event count;
    ``verify_seconds``: best wall time of a 1-job ``verify`` of it, measured
    in this run. ``time(fn)`` / ``time_cmd(argv)`` return best wall seconds.
    ``ract`` is the argv prefix that runs this checkout's ``ract``.
    """

    log_path: Path
    events: int
    verify_seconds: float = 0.0
    floor_seconds: float = 0.0  # best wall time of the floor loop over the same log, this run
    ract: list[str] = field(default_factory=ract_command)

    @staticmethod
    def naive(path: Path) -> int:
        """The naive verifier of the main table, for row modules that measure it on other logs."""
        return naive_verify(path)

    @staticmethod
    def verify(path: Path, jobs: int) -> int:
        """The library verify of the main table (its event count; a log that fails is an error, not a time)."""
        return verify_library(path, jobs)

    @staticmethod
    def row(*args: Any, **kwargs: Any) -> dict:
        """A result row in the shape every row module returns (see ``row`` below)."""
        return row(*args, **kwargs)

    def many_logs(self, files: int = 24, events_per_file: int = 2_000) -> tuple[Path, int]:
        """A directory of ``files`` valid run logs (generated once, cached); returns it and the event count."""
        root = OUT / f"many-{files}x{events_per_file}"
        total = 0
        for i in range(files):
            path = root / f"{i:04d}" / "events.jsonl"
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                tmp.unlink(missing_ok=True)
                write_benchmark_log(tmp, events=events_per_file, seed=100 + i)
                os.replace(tmp, path)
            with open(path, "rb") as f:
                total += sum(1 for _ in f)
        return root, total

    def time(self, fn: Callable[[], Any], repeat: int = 3) -> float:
        """Best wall-clock seconds of ``fn()`` over ``repeat`` runs."""
        best = float("inf")
        for _ in range(max(1, repeat)):
            gc.collect()
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        return best

    def time_cmd(
        self,
        argv: Sequence[str],
        repeat: int = 3,
        stdout: IO[Any] | int | None = None,
        env: dict[str, str] | None = None,
    ) -> float:
        """Best wall-clock seconds of a subprocess (its exit code is not checked).

        ``stdout=None`` discards the output; pass a file object (or
        ``subprocess.PIPE``-like int) to keep it. stderr is discarded.
        """
        best = float("inf")
        for _ in range(max(1, repeat)):
            if hasattr(stdout, "seek") and hasattr(stdout, "truncate"):
                stdout.seek(0)  # type: ignore[union-attr]
                stdout.truncate()  # type: ignore[union-attr]
            start = time.perf_counter()
            subprocess.run(
                list(argv),
                stdout=subprocess.DEVNULL if stdout is None else stdout,
                stderr=subprocess.DEVNULL,
                check=False,
                cwd=ROOT,
                env={**os.environ, **env} if env else None,
            )
            best = min(best, time.perf_counter() - start)
        return best


def row(
    name: str,
    events: int,
    seconds: float,
    *,
    ratio: float | None = None,
    ratio_of: str | None = None,
    target: float | None = None,
) -> dict:
    """A row in the shape every row module returns."""
    return {
        "name": name,
        "events_per_s": events / seconds if seconds > 0 else float("inf"),
        "seconds": seconds,
        "ratio": ratio,
        "ratio_of": ratio_of,
        "target": target,
        "met": None if target is None or ratio is None else ratio >= target,
    }


# --- logs -------------------------------------------------------------------


def cached_log(events: int, name: str) -> Path:
    """Generate (once) a valid chained log of about ``events`` events under bench/out/."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.jsonl"
    if not path.exists():
        tmp = path.with_suffix(".jsonl.tmp")
        tmp.unlink(missing_ok=True)
        print(f"generating {path.relative_to(ROOT)} ({events} events, once) ...", file=sys.stderr, flush=True)
        write_benchmark_log(tmp, events=events)
        os.replace(tmp, path)
    return path


# --- the reference loops ------------------------------------------------------


_HEX32 = re.compile(r"[0-9a-f]{32}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_ENVELOPE = {"id", "run_id", "step_id", "parent_id", "timestamp_ns", "kind", "payload", "prev_hash", "hash"}


def naive_verify(path: Path) -> int:
    """The naive verifier: the json module, a pure-Python JCS, sha256, and the same checks written plainly."""
    vocabulary = kinds_for_version(LATEST_SCHEMA_VERSION)
    problems = 0
    prev = "0" * 64
    run_id = None
    seen: set[str] = set()
    handles = HandleTracker()
    last_ts = None
    n = 0
    with open(path, "rb") as f:
        for line in f:
            n += 1
            event = json.loads(line)
            if set(event) != _ENVELOPE:
                problems += 1
                continue
            for key in ("id", "run_id"):
                problems += not _HEX32.fullmatch(event[key])
            for key in ("step_id", "parent_id"):
                problems += event[key] is not None and not _HEX32.fullmatch(event[key])
            for key in ("prev_hash", "hash"):
                problems += not _HEX64.fullmatch(event[key])
            ts = event["timestamp_ns"]
            problems += not (type(ts) is int and 0 <= ts < 2**63)
            problems += type(event["payload"]) is not dict
            body = {k: v for k, v in event.items() if k != "hash"}
            problems += hashlib.sha256(jcs_exact(body)).hexdigest() != event["hash"]
            problems += event["prev_hash"] != prev
            prev = event["hash"]
            run_id = run_id or event["run_id"]
            problems += event["run_id"] != run_id
            problems += event["id"] in seen
            seen.add(event["id"])
            if last_ts is not None and ts < last_ts:
                problems += 1
            last_ts = ts
            if event["kind"] in vocabulary:
                problems += len(VALIDATORS[event["kind"]](event["payload"]))
            else:
                problems += 1
            handles.feed(event, n, 0)
    if problems:
        raise SystemExit(f"naive verifier found {problems} problem(s) in the benchmark log: bench is broken")
    return n


def verify_library(path: Path, jobs: int) -> int:
    report = verify_paths([path], VerifyOptions(jobs=jobs))
    if report.exit_code != 0:
        raise SystemExit(f"verify --jobs {jobs} failed on the benchmark log (exit {int(report.exit_code)})")
    return report.files[0].events


def cpu_split(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(main-process CPU seconds, worker-process CPU seconds) of the run with the least total CPU."""
    best = (float("inf"), 0.0)
    for _ in range(max(1, repeat)):
        before, children = time.process_time(), os.times()
        fn()  # pools are shut down (workers joined) before it returns, so their CPU is counted
        after = os.times()
        main = time.process_time() - before
        workers = (after.children_user + after.children_system) - (children.children_user + children.children_system)
        if main + workers < sum(best):
            best = (main, workers)
    return best


# --- peak RSS -------------------------------------------------------------------


def peak_rss_mb(argv: list[str]) -> tuple[float, float, int]:
    """Run argv; return (peak RSS in MB, wall seconds, exit code) of that process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024.0, seconds, proc.returncode  # ru_maxrss is KiB on Linux


# --- rows from other modules ------------------------------------------------------


def extra_rows(ctx: BenchContext) -> list[tuple[str, list[dict] | str]]:
    """Import every bench/rows_*.py and call its rows(ctx); a failing module is reported, not fatal."""
    results: list[tuple[str, list[dict] | str]] = []
    for path in sorted(BENCH_DIR.glob("rows_*.py")):
        try:
            spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            results.append((path.name, list(module.rows(ctx))))
        except Exception as exc:
            results.append((path.name, f"failed: {type(exc).__name__}: {exc}"))
    return results


# --- printing -----------------------------------------------------------------------


def _fmt(value: object, spec: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return format(value, spec)
    return str(value)


def print_table(rows: list[dict]) -> None:
    header = f"{'name':46} {'events/s':>12} {'seconds':>9} {'ratio':>8}  {'of':14} {'target':>8}  met"
    print(header)
    print("-" * len(header))
    for r in rows:
        met = {True: "yes", False: "NO", None: "-"}.get(r.get("met"), str(r.get("met")))
        target = r.get("target")
        target_text = f">= {target:g}" if isinstance(target, (int, float)) else _fmt(target, "")
        print(
            f"{r.get('name')!s:46} {_fmt(r.get('events_per_s'), ',.0f'):>12} {_fmt(r.get('seconds'), '.3f'):>9} "
            f"{_fmt(r.get('ratio'), '.2f'):>8}  {_fmt(r.get('ratio_of'), ''):14} {target_text:>8}  {met}"
        )


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}, {platform.system()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--big",
        action="store_true",
        default=os.environ.get("RACT_BENCH_BIG") == "1",
        help="also measure peak RSS on a ~1 GB log (generated once, ~2-3 min)",
    )
    parser.add_argument("--events", type=int, default=BENCH_EVENTS, help="size of the benchmark log")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is kept)")
    args = parser.parse_args(argv)

    log = cached_log(args.events, f"bench-{args.events // 1000}k")
    # An installed package has its bytecode; a checkout under PYTHONDONTWRITEBYTECODE=1 (as on
    # this project's machines) would recompile ract_cli from source at every start-up and charge
    # ~25 ms of compiling to each subprocess row. compileall writes the .pyc files regardless.
    compileall.compile_dir(str(ROOT / "ract_cli"), quiet=1)
    print(f"machine: {machine()}")
    print(f"log: {log.relative_to(ROOT)} ({log.stat().st_size / 1e6:.1f} MB)")
    ctx = BenchContext(log_path=log, events=0)
    ctx.events = verify_library(log, 1)  # warm-up, and the event count
    floor_s = ctx.time(lambda: floor_loop(log), args.repeat)
    naive_s = ctx.time(lambda: naive_verify(log), max(1, args.repeat - 1))
    jobs1_s = ctx.time(lambda: verify_library(log, 1), args.repeat)
    jobs2_s = ctx.time(lambda: verify_library(log, 2), args.repeat)
    ctx.verify_seconds = jobs1_s
    ctx.floor_seconds = floor_s
    main_cpu, worker_cpu = cpu_split(lambda: verify_library(log, 2), args.repeat)
    n = ctx.events
    floor_eps = n / floor_s
    rows = [
        row("floor (orjson loads+dumps sorted+sha256)", n, floor_s),
        row("naive verifier (json + pure-Python JCS)", n, naive_s, ratio=floor_s / naive_s, ratio_of="floor"),
        row(
            "ract trace verify --jobs 1",
            n,
            jobs1_s,
            ratio=(n / jobs1_s) / floor_eps,
            ratio_of="floor",
            target=TARGETS["jobs1_vs_floor"],
        ),
        row(
            "ract trace verify --jobs 2",
            n,
            jobs2_s,
            ratio=(n / jobs2_s) / floor_eps,
            ratio_of="floor",
            target=TARGETS["jobs2_vs_floor"],
        ),
        row(
            "ract trace verify --jobs 1 vs naive",
            n,
            jobs1_s,
            ratio=naive_s / jobs1_s,
            ratio_of="naive",
            target=TARGETS["jobs1_vs_naive"],
        ),
    ]
    # The wall time of --jobs 2 depends on what else the 2 cores run; its CPU split does not.
    # Bound on an idle 2-core machine: the busier process, or half the total CPU, whichever is larger
    # (the native core's two threads are both in the main process: then half of its CPU).
    bound = max(main_cpu, worker_cpu, (main_cpu + worker_cpu) / 2) if worker_cpu else main_cpu / 2
    rows.append(
        row(
            f"  --jobs 2 CPU: main {main_cpu:.2f}s (with its threads) + workers {worker_cpu:.2f}s -> idle-2-core bound",
            n,
            bound,
            ratio=(n / bound) / floor_eps,
            ratio_of="floor",
        )
    )
    if args.big:
        big = cached_log(BIG_EVENTS, f"big-{BIG_EVENTS}")
        for jobs in (1, 2):
            rss, seconds, code = peak_rss_mb([*ctx.ract, "trace", "verify", "-q", "--jobs", str(jobs), str(big)])
            r = row(
                f"peak RSS {rss:.0f} MB: verify --jobs {jobs}, {big.stat().st_size / 1e9:.2f} GB (exit {code})",
                BIG_EVENTS,
                seconds,
            )
            r.update(
                {
                    "ratio": rss,
                    "ratio_of": "MB (RSS)",
                    "target": f"<= {RSS_TARGET_MB:g}",
                    "met": rss <= RSS_TARGET_MB and code == 0,
                }
            )
            rows.append(r)
    print()
    print_table(rows)
    for name, result in extra_rows(ctx):
        print()
        print(f"== {name} ==")
        if isinstance(result, str):
            print(result)
        else:
            print_table(result)
    if not args.big:
        print("\n(peak RSS on a ~1 GB log: run `python bench/bench.py --big` or RACT_BENCH_BIG=1 make bench)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
