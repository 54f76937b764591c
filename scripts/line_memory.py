"""Peak RSS of ``ract trace verify`` on one huge line, under both cores (issue 15, item 8).

Writes a small log per case (a ``run.started`` event carrying the huge value in an
undocumented payload key, then ``run.completed``), runs ``python -m ract_cli trace verify``
in a fresh subprocess started by a small launcher, and reads the child's peak RSS from
``getrusage(RUSAGE_CHILDREN)`` in that launcher (a child forked by a big process would
count its parent's pages).

    python scripts/line_memory.py                    # every case, both cores, 60 MB
    python scripts/line_memory.py --mb 20 --cases ascii,utf8 --cores native
    python scripts/line_memory.py --keep DIR         # keep the logs in DIR

Cases (``--mb`` sets the size of the value):

* ``baseline``: a tiny valid log (the interpreter and the imports alone);
* ``ascii``: a valid event whose payload holds one ASCII string;
* ``utf8``: the same with non-ASCII characters (2-, 3- and 4-byte UTF-8), written raw;
* ``astral1``: ASCII and one 4-byte character (a Python str of 4 bytes per character);
* ``escapes``: the same, canonical, with many escapes (``\\n``, ``\\"``, ``\\\\``, ``\\u0001``);
* ``escape1``: ASCII and one escape (decoded, the string is as long as the line);
* ``uescape``: ``json.dumps`` defaults (``\\uXXXX`` for every non-ASCII character, ``", "``):
  valid, but not in canonical layout, so the exact path runs;
* ``strings``: an array of 60-character strings (fewer values than MAX_LINE_NODES);
* ``many_strings``, ``many_keys``, ``many_objects``, ``many_floats``: as many values as
  MAX_LINE_NODES lets through (strings in an array, members of one object, small objects, floats
  that are not small integers), each as long as ``--mb`` allows;
* ``tampered``: ``ascii`` with one byte of the string changed (HASH_MISMATCH); ``tampered_keys``:
  ``many_keys`` with one value changed;
* ``nested``: a line of ``[0],`` arrays (more values than MAX_LINE_NODES: MALFORMED_LINE);
* ``malformed``: ``ascii`` without the closing quote of the string (MALFORMED_LINE);
* ``under`` / ``over``: a valid ASCII line one byte under / over ``--max-line-bytes``
  (``over`` is LINE_TOO_LONG).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ract_cli.format.canonical import jcs_exact
from ract_cli.format.model import GENESIS_HASH
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES
from ract_cli.read.json_rules import MAX_LINE_NODES

RUN_ID = "a" * 32
STARTED = {"intent_id": "d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6", "predicate_count": 1, "coverage_gate": 0.85}
COMPLETED = {"final_decision": "accept", "duration_ns": 9, "event_count": 2}

LAUNCHER = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE); "
    "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
    "round(time.perf_counter() - t, 2), done.stderr.decode(errors='replace').strip().splitlines()[-1:] )"
)


def _envelope(n: int, kind: str, payload: dict[str, object], prev: str) -> dict[str, object]:
    return {
        "id": f"{n:032x}",
        "run_id": RUN_ID,
        "step_id": None,
        "parent_id": None,
        "timestamp_ns": 1_700_000_000_000_000_000 + n,
        "kind": kind,
        "payload": payload,
        "prev_hash": prev,
    }


def log_bytes(blob: object, layout: str = "canonical") -> bytes:
    """A valid two-event log whose first event carries ``blob`` (``layout``: "canonical" or "dumps")."""
    lines, prev = [], GENESIS_HASH
    for n, (kind, payload) in enumerate([("run.started", {**STARTED, "blob": blob}), ("run.completed", COMPLETED)]):
        event = _envelope(n + 1, kind, payload, prev)
        canonical = jcs_exact(event)
        event["hash"] = prev = hashlib.sha256(canonical).hexdigest()
        del canonical
        lines.append(jcs_exact(event) if layout == "canonical" or n else json.dumps(event).encode())
    return b"\n".join(lines) + b"\n"


def _fit(unit: str, size: int, dumps: bool = False) -> str:
    """``unit`` repeated so that its JSON text (canonical, or ``json.dumps``') is about ``size`` bytes."""
    per = len(json.dumps(unit).encode()) - 2 if dumps else len(jcs_exact(unit)) - 2
    return unit * max(1, size // per)


def case_bytes(name: str, size: int, limit: int) -> bytes:
    """The log of one case; ``size``: bytes of the huge value, ``limit``: --max-line-bytes."""
    if name == "baseline":
        return log_bytes("x")
    if name == "ascii":
        return log_bytes("x" * size)
    if name == "utf8":
        return log_bytes(_fit("aé中😀", size))
    if name == "astral1":  # one 4-byte character: Python holds the whole string at 4 bytes per character
        return log_bytes("x" * (size - 4) + "😀")
    if name == "escapes":
        return log_bytes(_fit('ab\n"\\\x01', size))
    if name == "escape1":  # one escape: the decoded string is as long as the line
        return log_bytes("\n" + "x" * (size - 2))
    if name == "uescape":
        return log_bytes(_fit("aé中😀", size, dumps=True), layout="dumps")
    if name == "strings":  # many short values (under MAX_LINE_NODES): one Python object each
        return log_bytes(["s" * 60] * (size // 63))
    # as many values as the bound lets through (less a margin for the envelope), each as long as fits
    if name == "many_strings":
        count = MAX_LINE_NODES - 100
        return log_bytes(["s" * max(1, size // count - 3)] * count)
    if name == "many_keys":  # one object: a key and a value per member
        count = MAX_LINE_NODES // 2 - 100
        width = max(8, size // count - 6)
        return log_bytes({f"{i:0{width}d}": i for i in range(count)})
    if name == "many_objects":  # small objects of two members: five counted per object
        count = MAX_LINE_NODES // 5 - 100
        return log_bytes([{"name": "x" * max(1, size // count - 30), "n": i} for i in range(count)])
    if name == "many_floats":  # numbers that are not small integers
        return log_bytes([i * 1.000000001e100 for i in range(1, MAX_LINE_NODES - 100)])
    if name == "tampered_keys":  # many_keys with one digit of a value changed (HASH_MISMATCH)
        data = bytearray(case_bytes("many_keys", size, limit))
        at = data.index(b'":7,') + 2
        data[at] = ord("8")
        return bytes(data)
    if name == "tampered":
        data = bytearray(log_bytes("x" * size))
        data[1000] = ord("y")
        return bytes(data)
    if name == "nested":
        body = b'{"blob":[' + b"[0]," * (size // 4) + b"[0]]}"
        return body + b"\n" + log_bytes("ok")
    if name == "malformed":
        data = log_bytes("x" * size)
        cut = data.index(b'x"')
        return data[: cut + 1] + data[cut + 2 :]
    if name in ("under", "over"):
        probe = log_bytes("")
        first = len(probe.split(b"\n", 1)[0])
        want = limit - 1 if name == "under" else limit + 1
        data = log_bytes("x" * (want - first))
        assert len(data.split(b"\n", 1)[0]) == want, (name, want)
        return data
    raise SystemExit(f"unknown case {name!r}")


CASES = (
    "baseline",
    "ascii",
    "utf8",
    "astral1",
    "escapes",
    "escape1",
    "uescape",
    "strings",
    "many_strings",
    "many_keys",
    "many_objects",
    "many_floats",
    "tampered",
    "tampered_keys",
    "nested",
    "malformed",
    "under",
    "over",
)


def measure(path: Path, core: str, extra: list[str], python: str = sys.executable) -> tuple[int, int, float, str]:
    """(exit code, peak RSS KiB, seconds, last stderr line) of ``ract trace verify`` on ``path``."""
    argv = [python, "-c", LAUNCHER, python, "-m", "ract_cli", "trace", "verify", *extra, str(path)]
    out = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "RACT_CORE": core}, check=True)
    code, kib, seconds, last = out.stdout.split(maxsplit=3)
    return int(code), int(kib), float(seconds), last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=60.0, help="size of the huge value in MB (10^6 bytes)")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--cores", default="native,python")
    parser.add_argument("--max-line-bytes", type=int, default=DEFAULT_MAX_LINE_BYTES)
    parser.add_argument("--keep", type=Path, help="write the logs here and keep them")
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    extra = [] if args.max_line_bytes == DEFAULT_MAX_LINE_BYTES else ["--max-line-bytes", str(args.max_line_bytes)]
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        print(f"{'case':<10} {'line MB':>8} {'core':<7} {'exit':>4} {'peak MiB':>9} {'seconds':>8}  last stderr line")
        for name in args.cases.split(","):
            path = root / name / RUN_ID / "events.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            data = case_bytes(name, size, args.max_line_bytes)
            path.write_bytes(data)
            line_mb = len(data.split(b"\n", 1)[0]) / 1e6
            del data
            for core in args.cores.split(","):
                code, kib, seconds, last = measure(path, core, extra)
                print(f"{name:<10} {line_mb:>8.1f} {core:<7} {code:>4} {kib / 1024:>9.1f} {seconds:>8.2f}  {last[:90]}")
                sys.stdout.flush()
            if args.keep is None:
                path.unlink()


if __name__ == "__main__":
    main()
