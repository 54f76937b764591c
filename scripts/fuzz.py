"""A mutation fuzzer for ract's input path, run for a set duration (issue 9).

Seeded and reproducible: each iteration derives its own seed from the run's
seed, so ``--seed S --only N`` replays iteration N. Inputs are valid logs
(a compact 8-event log with tricky values, fixture excerpts, a Raxol journal
when one exists) mutated by byte insert/delete/replace/flip, line
duplicate/swap/drop/splice, truncation, huge numbers, deep nesting, hostile
unicode. Each input goes through ``analyze_line`` (every line),
``verify_file`` and, every ``--cli-every`` iterations, every ``ract trace``
command in-process. A failure is any uncaught exception, a call slower than
``--hang-seconds``, an exit code outside SPEC §3, or a *lie*: verify passing
(exit 0) bytes whose strictly parsed values are not those of a prefix of the
original log. Failing inputs are saved under ``--crash-dir``.

    python scripts/fuzz.py --seconds 600            # make fuzz
    python scripts/fuzz.py --seconds 30 --seed 1
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from hardening_support import (
    command_argv,
    read_only_commands,
    run_inprocess,
    verify_lie,
    write_small_log,
)

from ract_cli.read.dialect import resolve_dialect
from ract_cli.read.framing import split_line_ending
from ract_cli.read.line import analyze_line
from ract_cli.testing.synth import fixture_path
from ract_cli.verify.verifier import verify_file

SPEC_EXITS = {0, 1, 3, 4, 5, 7}
TOKENS = [
    b"\n",
    b"\r",
    b" ",
    b"\\",
    b'"',
    b"0",
    b"-",
    b"e",
    b"E",
    b".",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b",",
    b"}",
    b"{",
    b"[",
    b"]",
    b":",
    b"\x00",
    b"\\u0000",
    b"\\ud800",
    b"NaN",
    b"Infinity",
    b"1e400",
    b"9223372036854775808",
    b"null",
    b"true",
    b"\xef\xbb\xbf",
    b"\x1b[2J",
    "\u202e".encode(),
    b'"hash"',
    b'"id"',
    b'"kind"',
    b'"payload":{}',
    b"[" * 300,
    b"[" * 2000,
    b'{"a":' * 300,
]


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def bases(workdir: Path) -> dict[str, bytes]:
    out = {"small": write_small_log(workdir / "base-small.jsonl")}
    for name in ("completed", "aborted", "foreign-format", "interrupted"):
        data = fixture_path(ROOT / "fixtures", name).read_bytes()
        out[name] = b"".join(data.splitlines(keepends=True)[:14])
    journals = sorted((ROOT / "fixtures").glob("journals/**/*.jsonl"))
    for j in journals[:3]:
        out[f"journal:{j.name}"] = b"".join(j.read_bytes().splitlines(keepends=True)[:14])
    return out


def mutate(data: bytes, rng: random.Random, others: list[bytes]) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.choice([1, 1, 1, 2, 3, 5, 8])):
        if not buf:
            buf += rng.choice(TOKENS)
            continue
        op = rng.choice(
            [
                "flip",
                "replace",
                "insert",
                "insert_token",
                "delete",
                "dup_line",
                "swap_lines",
                "drop_line",
                "splice_line",
                "truncate",
                "repeat",
            ]
        )
        i = rng.randrange(len(buf))
        if op == "flip":
            buf[i] ^= 1 << rng.randrange(8)
        elif op == "replace":
            buf[i] = rng.randrange(256)
        elif op == "insert":
            buf[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif op == "insert_token":
            buf[i:i] = rng.choice(TOKENS)
        elif op == "delete":
            del buf[i : i + rng.randint(1, 8)]
        elif op == "truncate":
            del buf[i:]
        elif op == "repeat":
            j = min(len(buf), i + rng.randint(1, 40))
            buf[i:i] = buf[i:j] * rng.randint(2, 50)
        else:
            lines = bytes(buf).splitlines(keepends=True)
            a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
            if op == "dup_line":
                lines.insert(b, lines[a])
            elif op == "swap_lines":
                lines[a], lines[b] = lines[b], lines[a]
            elif op == "drop_line":
                del lines[a]
            else:
                donor = rng.choice(others).splitlines(keepends=True)
                lines.insert(b, rng.choice(donor))
            buf = bytearray(b"".join(lines))
    return bytes(buf)


def one(
    path: Path, name: str, originals: list[bytes], mutated: bytes, run_cli: bool, hang: float, stats: Counter
) -> str | None:
    """Run every check on one input; return a failure description or None."""
    path.write_bytes(mutated)
    signal.setitimer(signal.ITIMER_REAL, hang)
    try:
        for raw in mutated.splitlines(keepends=True)[:50]:
            analyze_line(split_line_ending(raw)[0])
        report = verify_file(path)
        code = int(report.exit_code)
        stats[f"verify:{code}"] += 1
        if code not in SPEC_EXITS:
            return f"verify exit {code}"
        # A mutation that leaves only journal-shaped records (a line spliced in from a journal base) is
        # read as a Raxol journal (SPEC §8: detected per file); one without hash/prev_hash proves nothing
        # by design (project: "journal-trust"), so a RACT original is not what it can be held to.
        as_journal = name.startswith("journal:") or resolve_dialect("auto", path) == "raxol"
        if code == 0 and not as_journal:
            lie = verify_lie(mutated, originals)
            if lie:
                return lie
        if run_cli:
            for command in read_only_commands():
                c, _out, err = run_inprocess(command_argv(command, path))
                stats[f"{command}:{c}"] += 1
                if "Traceback" in err:
                    return f"{command}: traceback on stderr\n{err[-3000:]}"
                if c not in SPEC_EXITS:
                    return f"{command}: exit {c}\n{err[-1000:]}"
                if code == 0 and c == 1 and not as_journal:
                    return f"{command}: exit 1 (tampered) on a log verify passed"
    except Hang:
        return f"hang: no answer within {hang}s"
    except Exception:
        return "uncaught exception:\n" + traceback.format_exc()[-4000:]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--only", type=int, default=None, help="replay one iteration of a seeded run")
    parser.add_argument("--cli-every", type=int, default=20)
    parser.add_argument("--hang-seconds", type=float, default=30)
    parser.add_argument("--crash-dir", type=Path, default=Path(tempfile.gettempdir()) / "ract-fuzz-crashes")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    signal.signal(signal.SIGALRM, _alarm)
    stats: Counter = Counter()
    failures = 0
    print(f"fuzz seed={seed} seconds={args.seconds} commands={read_only_commands()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base = bases(work)
        names = sorted(base)
        path = work / "run" / "events.jsonl"
        path.parent.mkdir()
        end = time.monotonic() + args.seconds
        iteration = args.only if args.only is not None else 0
        while True:
            rng = random.Random(f"{seed}:{iteration}")
            name = rng.choice(names)
            mutated = mutate(base[name], rng, [base[n] for n in names])
            originals = [base[name]] + [base[n] for n in names if n != name and not n.startswith("journal:")]
            failure = one(path, name, originals, mutated, iteration % args.cli_every == 0, args.hang_seconds, stats)
            stats["iterations"] += 1
            if failure:
                failures += 1
                args.crash_dir.mkdir(parents=True, exist_ok=True)
                saved = args.crash_dir / f"seed{seed}-it{iteration}.jsonl"
                saved.write_bytes(mutated)
                print(
                    f"FAIL iteration {iteration} (base {name}; replay: --seed {seed} --only {iteration}); "
                    f"input saved to {saved}\n{failure}",
                    flush=True,
                )
            if args.only is not None or time.monotonic() > end:
                break
            iteration += 1
            if iteration % 2000 == 0:
                print(f"  {iteration} iterations, {failures} failures", flush=True)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(stats.items()))
    print(f"fuzz done: seed={seed} {summary}; failures: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
