"""Bit-flip sweep over small logs, the way journald tests its verifier (issue 9).

For a small valid log, flip every bit of every byte in turn and verify the
result with the library (``ract_cli.verify.verify_file``, in-process). A flip
may only verify clean (exit 0) when an independent strict JSON reading proves
every parsed value of the log identical to the original (e.g. ``1e-7`` ->
``1E-7``, ``\\u001f`` -> ``\\u001F``, ``\\r`` -> ``\\t`` before a newline).
Anything else that exits 0 is a lie, and is reported.

    python scripts/sweep.py            # every flip of every base log
    python scripts/sweep.py --sample 1500 --seed 7

``tests/test_bitflip.py`` runs a seeded sample of the same sweep in
``make test``; ``make sweep`` runs it all.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from hardening_support import Unparseable, strict_values, write_small_log

from ract_cli.testing.synth import fixture_path
from ract_cli.verify.verifier import VerifyOptions, verify_file


@dataclass
class SweepResult:
    name: str
    size: int
    flips: int = 0
    by_exit: Counter = field(default_factory=Counter)
    exempt: list[tuple[int, int, str]] = field(default_factory=list)  # (offset, bit, what changed)
    lies: list[tuple[int, int, str]] = field(default_factory=list)  # exit 0 although a value changed
    crashes: list[tuple[int, int, str]] = field(default_factory=list)

    def summary(self) -> str:
        codes = ", ".join(f"exit {k}: {v}" for k, v in sorted(self.by_exit.items()))
        return (
            f"{self.name}: {self.size} bytes, {self.flips} flips; {codes}; "
            f"exempt (exit 0, values proven identical): {len(self.exempt)}; "
            f"lies: {len(self.lies)}; crashes: {len(self.crashes)}"
        )


def base_logs(workdir: Path) -> dict[str, bytes]:
    """The logs swept: a compact 8-event log and a foreign-format excerpt (spaces, escapes, CRLF)."""
    small = write_small_log(workdir / "small.jsonl")
    foreign_lines = fixture_path(ROOT / "fixtures", "foreign-format").read_bytes().split(b"\n")
    foreign = b"\n".join(foreign_lines[:5]) + b"\n"
    return {"compact-8-events": small, "foreign-format-5-events": foreign}


def flip(data: bytes, offset: int, bit: int) -> bytes:
    mutated = bytearray(data)
    mutated[offset] ^= 1 << bit
    return bytes(mutated)


def check_flip(original_values: tuple, mutated: bytes, path: Path) -> tuple[int, str | None]:
    """Verify one mutated log. Returns (exit code, None) or (0, why it is exempt / a lie)."""
    path.write_bytes(mutated)
    code = int(verify_file(path, VerifyOptions()).exit_code)
    if code != 0:
        return code, None
    try:
        values = strict_values(mutated)
    except Unparseable as exc:
        return 0, f"LIE: verify passed a log that is not strict JSON ({exc})"
    if values != original_values:
        return 0, "LIE: verify passed a log whose parsed values differ"
    return 0, "identical values"


def sweep(name: str, data: bytes, workdir: Path, flips: list[tuple[int, int]] | None = None) -> SweepResult:
    """Flip each (offset, bit) of ``flips`` (default: all) in ``data`` and judge the verdicts."""
    original_values = strict_values(data)
    path = workdir / f"{name}.flipped.jsonl"
    path.write_bytes(data)
    assert verify_file(path).exit_code == 0, f"base log {name} must verify clean"
    result = SweepResult(name, len(data))
    todo = flips if flips is not None else [(o, b) for o in range(len(data)) for b in range(8)]
    for offset, bit in todo:
        mutated = flip(data, offset, bit)
        result.flips += 1
        try:
            code, note = check_flip(original_values, mutated, path)
        except Exception as exc:
            result.crashes.append((offset, bit, f"{type(exc).__name__}: {exc}"))
            continue
        result.by_exit[code] += 1
        if note is not None:
            what = f"{data[offset : offset + 1]!r}->{mutated[offset : offset + 1]!r} {note}"
            (result.lies if note.startswith("LIE") else result.exempt).append((offset, bit, what))
    return result


def sample_flips(size: int, count: int, rng: random.Random) -> list[tuple[int, int]]:
    population = size * 8
    picks = rng.sample(range(population), min(count, population))
    return [(p // 8, p % 8) for p in sorted(picks)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=0, help="flips per base log (0: every bit of every byte)")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    print(f"sweep seed={seed} sample={args.sample or 'all'}", flush=True)
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for name, data in base_logs(workdir).items():
            started = time.monotonic()
            flips = sample_flips(len(data), args.sample, rng) if args.sample else None
            result = sweep(name, data, workdir, flips)
            print(f"{result.summary()}  [{time.monotonic() - started:.1f}s]", flush=True)
            for offset, bit, what in result.exempt[:20]:
                print(f"  exempt: offset {offset} bit {bit}: {what}")
            for offset, bit, what in result.lies + result.crashes:
                print(f"  FAIL: offset {offset} bit {bit}: {what}")
                failed = True
    print("sweep:", "FAILED" if failed else "OK")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
