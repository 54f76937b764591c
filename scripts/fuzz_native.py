"""Mutation fuzzer for the native core (``ract_cli._core``) with the differential oracle.

Usage::

    python scripts/fuzz_native.py [--seconds 60] [--seed N] [--core PATH/_core.so] [--tests]
    python scripts/fuzz_native.py --init-corpus     # (re)write the seed corpus

``make fuzz-native`` builds the extension with ``-fsanitize=address,undefined`` into a
temporary directory and runs this script against that build (``--core``), so memory
errors and undefined behaviour abort the run instead of passing silently; ``--tests``
first runs ``tests/test_native_core.py``, the native cases of ``tests/test_project_fold.py``
and ``tests/test_json_text.py`` against that build too.

How it works: a parent process starts a child that loops over inputs until the time is
up. Each input is a seed (``tests/data/native-fuzz/corpus/``, every fixture line, the
JCS vectors) under one to four mutations (bit flips, interesting bytes, splices,
truncations, escapes, deep nesting, number spellings, duplicate keys) or a valid event
re-serialized in a random layout. Every input goes through the oracle of
``tests/test_native_core.py`` (``agree``: native vs the pure-Python verdict, and
``canonical`` vs the Python canonical form); batches go through ``check_lines`` vs
``check_line``, and chained logs with faults through chain mode (``check_lines(chain=)`` and
``check_block``) vs line by line, and generated runs through ``project`` folded in C vs folded
in Python (``project.fold``). Before an input runs, the child copies it into a shared memory page, so
when the child dies (a sanitizer abort, a segfault) the parent saves the input that
killed it. Every failure is saved under ``tests/data/native-fuzz/crashes/`` (named by
the SHA-256 of its bytes), and ``tests/test_native_core.py`` replays every file there.

Exit status: 0 when nothing failed, 1 when a reproducer was saved, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import mmap
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FUZZ_DIR = ROOT / "tests" / "data" / "native-fuzz"
CORPUS = FUZZ_DIR / "corpus"
CRASHES = FUZZ_DIR / "crashes"
SHM_SIZE = 1 << 22  # inputs are capped below this
MAX_INPUT = SHM_SIZE - 16
ORACLE_FAILED = 3  # the child's exit status when it saved oracle failures (1 is a Python traceback)
SANITIZER_EXIT = 86


def load_core(path: str | None) -> object:
    """Import ``ract_cli._core`` from ``path`` (a sanitized build) before anything else imports it."""
    if path:
        spec = importlib.util.spec_from_file_location("ract_cli._core", path)
        if spec is None or spec.loader is None:
            raise SystemExit(f"fuzz_native: cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules["ract_cli._core"] = module
        spec.loader.exec_module(module)
    import ract_cli._core as core

    if path and os.path.realpath(core.__file__) != os.path.realpath(path):
        raise SystemExit(f"fuzz_native: loaded {core.__file__}, not {path}")
    return core


def oracle_module() -> object:
    """The differential oracle of tests/test_native_core.py (one oracle, not two)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import test_native_core as oracle

    return oracle


# --- mutations ----------------------------------------------------------------------

INTERESTING = b'"\\{}[],:0-+.eE \t\r\nu/\x00\x1f\x7f\x80\xbf\xc0\xc1\xc2\xdf\xe0\xed\xee\xef\xf0\xf4\xf5\xff'
TOKENS = [
    b"\\u0000",
    b"\\ud800",
    b"\\udc00",
    b"\\ud83d\\ude00",
    b"\\uDBFF\\uDFFF",
    b"\\u00e9",
    b"\\/",
    b"\\\\",
    b'\\"',
    b"\xc0\x80",
    b"\xe0\x80\x80",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xef\xbb\xbf",
    b"\xf0\x9f\x98\x80",
    b"\xee\x80\x80",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1e400",
    b"-0",
    b"-0.0",
    b"5e-324",
    b"1.0",
    b"1E+2",
    b"9223372036854775807",
    b"9223372036854775808",
    b"-9223372036854775808",
    b"-9223372036854775809",
    b"0.30000000000000004",
    b"1e21",
    b"1e-7",
    b"123456789012345678901234567890",
    b"0.1e1",
    b"00",
    b"1.",
    b".1",
    b"true",
    b"false",
    b"null",
    b"[]",
    b"{}",
    b'{"a":1,"a":2}',
    b'"k":1,',
    b",",
    b":",
    b"[" * 600,
    b"]" * 600,
]


def mutate(data: bytes, rng: random.Random, seeds: list[bytes]) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(11)
        pos = rng.randrange(len(buf) + 1) if buf else 0
        if op == 0 and buf:  # bit flip
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1 and buf:  # interesting byte
            buf[rng.randrange(len(buf))] = rng.choice(INTERESTING)
        elif op == 2:  # insert a token
            buf[pos:pos] = rng.choice(TOKENS)
        elif op == 3 and buf:  # delete a range
            end = min(len(buf), pos + rng.randint(1, 16))
            del buf[pos:end]
        elif op == 4 and buf:  # duplicate a range (duplicate keys, repeated members)
            start = rng.randrange(len(buf))
            chunk = buf[start : start + rng.randint(1, 64)]
            buf[pos:pos] = chunk
        elif op == 5 and seeds:  # splice from another seed
            other = rng.choice(seeds)
            if other:
                start = rng.randrange(len(other))
                buf[pos:pos] = other[start : start + rng.randint(1, 128)]
        elif op == 6 and buf:  # truncate
            del buf[rng.randrange(len(buf)) :]
        elif op == 7:  # deep nesting around a position
            depth = rng.choice([254, 255, 509, 510, 511, 512, 513, 1100])
            opener = rng.choice([b"[", b'{"a":'])
            closer = b"]" if opener == b"[" else b"}"
            buf[pos:pos] = opener * depth + b"0" + closer * depth
        elif op == 8 and buf:  # replace a digit run with an interesting number
            i = rng.randrange(len(buf))
            while i < len(buf) and not chr(buf[i]).isdigit():
                i += 1
            j = i
            while j < len(buf) and (chr(buf[j]).isdigit() or buf[j] in b".eE+-"):
                j += 1
            buf[i:j] = rng.choice(TOKENS[16:37])
        elif op == 9:  # whitespace
            buf[pos:pos] = bytes(rng.choice(b" \t\r\n") for _ in range(rng.randint(1, 4)))
        elif op == 10 and buf:  # swap case of a hex digit (hash/id checks)
            i = rng.randrange(len(buf))
            if chr(buf[i]).isalpha():
                buf[i] ^= 0x20
    return bytes(buf[:MAX_INPUT])


# --- the child: the loop --------------------------------------------------------------


class Shared:
    """The input under test, in a file both processes map (length, then bytes)."""

    def __init__(self, path: str, create: bool) -> None:
        if create:
            with open(path, "wb") as f:
                f.truncate(SHM_SIZE)
        self._file = open(path, "r+b")
        self.map = mmap.mmap(self._file.fileno(), SHM_SIZE)

    def put(self, data: bytes) -> None:
        self.map[8 : 8 + len(data)] = data
        self.map[0:8] = struct.pack("<Q", len(data))

    def get(self) -> bytes | None:
        (n,) = struct.unpack("<Q", self.map[0:8])
        return bytes(self.map[8 : 8 + n]) if 0 < n <= MAX_INPUT else None

    def clear(self) -> None:
        self.map[0:8] = b"\0" * 8


def save(data: bytes, why: str, crashes: Path) -> Path:
    crashes.mkdir(parents=True, exist_ok=True)
    path = crashes / f"{why}-{hashlib.sha256(data).hexdigest()[:16]}.bin"
    path.write_bytes(data)
    return path


def seed_inputs(oracle: object) -> list[bytes]:
    seeds = [p.read_bytes() for p in sorted(CORPUS.glob("*")) if p.is_file() and p.name != "README.md"]
    seeds += oracle.fixture_lines()  # type: ignore[attr-defined]
    seeds += [p.read_bytes() for p in sorted((ROOT / "tests" / "data" / "jcs" / "input").iterdir())]
    seeds += list(oracle.BASE)  # type: ignore[attr-defined]
    return [s for s in seeds if len(s) <= MAX_INPUT]


def relaid(oracle: object, rng: random.Random) -> bytes:
    """A valid event (a documented example plus random extras) in a random layout."""
    _, kind, payload = rng.choice(oracle._VALID_CASES)  # type: ignore[attr-defined]
    extra_value = rng.choice(
        [None, True, 0, -1, 2**63 - 1, -(2**63), 1.5, -0.0, 1e16, 5e-324, 0.1, "é\ue000\U0001f600", [1, {"a": []}], {}]
    )
    payload = {**payload, rng.choice(["x", "\ue000", "\U0001f600", "a/b", "\u00e9"]): extra_value}
    event = oracle.hashed_event(kind, payload, rng)  # type: ignore[attr-defined]
    return oracle.lay_out(event, rng.choice(oracle.LAYOUTS), rng)  # type: ignore[attr-defined]


def payload_case(oracle: object, rng: random.Random) -> bytes:
    """A payload case of the differential tests (valid, field-invalid, invariant-breaking), hashed, in a random layout."""
    _, kind, payload = rng.choice(oracle.PAYLOAD_CASES)  # type: ignore[attr-defined]
    if rng.random() < 0.3:
        payload = {**payload, "undocumented": rng.choice([1, "x", None, [1.5], {"k": -0.0}])}
    event = oracle.hashed_event(kind, payload, rng)  # type: ignore[attr-defined]
    return oracle.lay_out(event, rng.choice(oracle.LAYOUTS), rng)  # type: ignore[attr-defined]


def chain_case(oracle: object, rng: random.Random, seeds: list[bytes]) -> list[bytes]:
    """A chained log with faults, some lines replaced by mutants: for chain mode (Verifier.check_lines(chain=))."""
    n = rng.randint(1, 120)
    faults = {rng.randrange(n): rng.choice(oracle.FAULTS) for _ in range(rng.randint(0, 3))}  # type: ignore[attr-defined]
    lines = oracle.make_chain(n, rng, faults)  # type: ignore[attr-defined]
    for _ in range(rng.randint(0, 2)):
        i = rng.randrange(n)
        lines[i] = mutate(lines[i], rng, seeds).replace(b"\n", b" ")
    return lines


def fold_case(rng: random.Random, seeds: list[bytes], work: Path) -> Path:
    """A generated run for ``project`` (``test_project_fold``'s generator: every kind, keys and numbers at
    their edges) in a random layout, a few lines mutated: its path."""
    import test_project_fold as fold_tests

    written = work / "written" / "events.jsonl"
    written.unlink(missing_ok=True)
    with fold_tests._writer(written) as w:
        for kind, payload, step_id, parent in fold_tests._events(rng, rng.randint(0, 150)):
            w.append(kind, payload, step_id=step_id, parent_id=parent)
    lines = written.read_bytes().splitlines(keepends=True)
    layout = rng.choice(fold_tests.LAYOUTS)
    lines = [fold_tests.relayout(line, layout, rng) for line in lines]
    for _ in range(rng.choice((0, 0, 1, 2))):
        i = rng.randrange(len(lines))
        lines[i] = mutate(lines[i], rng, seeds).replace(b"\n", b" ") + b"\n"
    path = work / "log" / "events.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))
    return path


def check_fold(path: Path, rng: random.Random) -> bool:
    """``project`` folded in C against folded event by event: AssertionError when the reports differ.
    Returns whether C folded the log through (else it gave up, and both reports are Python's)."""
    import test_project_fold as fold_tests

    from ract_cli.project import fold as fold_module
    from ract_cli.project.options import ProjectOptions
    from ract_cli.project.report import project_file

    fold_module.MAX_GROUPS = rng.choice((1, 3, 4096))
    options = ProjectOptions(max_items=rng.choice((1, 4, 1000)))
    folded, python = project_file(path, options), project_file(path, options, fold=False)
    if folded != python or fold_tests.orjson.dumps(folded) != fold_tests.orjson.dumps(python):
        raise AssertionError(
            f"project folded in C differs ({fold_module.MAX_GROUPS} groups, {options.max_items} items)"
        )
    return bool(fold_tests.folds(path, options.max_items))


def check_find_lines(core: object, oracle: object, data: bytes, rng: random.Random) -> None:
    """``find_lines`` on the input's lines against the oracle's model (needles: pieces of the input)."""
    body = data if data.endswith(b"\n") else data + b"\n"
    pieces = [p for p in body.split(b"\n") if p]
    needles = []
    for _ in range(rng.randint(1, 3)):
        piece = rng.choice(pieces) if pieces else b"{"
        at = rng.randrange(len(piece))
        needles.append(piece[at : at + rng.randint(1, 24)])
    lo = rng.randrange(len(body)) if rng.random() < 0.3 else 0
    lo = body.rfind(b"\n", 0, lo) + 1  # a line start, as a Block's lo is
    expected = oracle.lines_holding(body, lo, len(body), tuple(needles))  # type: ignore[attr-defined]
    got = core.find_lines(body, lo, len(body), tuple(needles))  # type: ignore[attr-defined]
    assert got == expected, f"needles {needles!r}, lo {lo}"


def child(args: argparse.Namespace) -> int:
    core = load_core(args.core)
    oracle = oracle_module()
    shared = Shared(args.shm, create=False)
    rng = random.Random(args.seed)
    seeds = seed_inputs(oracle)
    deadline = time.monotonic() + args.seconds
    crashes = Path(args.crashes)
    execs = failures = 0
    work = Path(tempfile.mkdtemp(prefix="ract-fuzz-fold-"))
    folds = [0, 0]  # generated runs C gave up on, and folded through
    batch: list[bytes] = []
    versions = tuple(range(1, oracle.LATEST_SCHEMA_VERSION + 1))  # type: ignore[attr-defined]
    while time.monotonic() < deadline:
        pick = rng.random()
        complete = pick < 0.3  # a layout a writer may produce: a valid line must take the native path
        if pick < 0.12:
            data = relaid(oracle, rng)
        elif pick < 0.3:
            data = payload_case(oracle, rng)
        else:
            data = mutate(rng.choice(seeds), rng, seeds)
        shared.put(data)
        try:
            oracle.agree(data, complete=complete, versions=(rng.choice(versions),) if rng.random() < 0.1 else (9,))  # type: ignore[attr-defined]
            if core.canonical(data) != oracle.python_canonical(data):  # type: ignore[attr-defined]
                raise AssertionError("canonical() differs from the Python canonical form")
            oracle.check_json_text(core, data)  # type: ignore[attr-defined]
        except (Exception, oracle.pytest.fail.Exception) as exc:  # type: ignore[attr-defined]
            failures += 1
            path = save(data, "diff", crashes)
            print(f"fuzz_native: oracle failure ({type(exc).__name__}: {str(exc)[:300]}) -> {path}", flush=True)
        if rng.random() < 0.2:  # the prefilter's scan (find_lines) over the input, needles cut from it
            try:
                check_find_lines(core, oracle, data, rng)
            except AssertionError as exc:
                failures += 1
                print(f"fuzz_native: find_lines failure ({exc}) -> {save(data, 'scan', crashes)}", flush=True)
        batch.append(data)
        if len(batch) == 97:
            joined_input = b"\n".join(batch)[:MAX_INPUT]
            shared.put(joined_input)  # a crash here: the batch, joined, as its reproducer
            singles = [oracle.VERIFIER.check_line(b) for b in batch]  # type: ignore[attr-defined]
            joined = oracle.VERIFIER.check_lines(batch)  # type: ignore[attr-defined]
            if not all(oracle.same_result(a, b) for a, b in zip(joined, singles, strict=True)):  # type: ignore[attr-defined]
                failures += 1
                print(f"fuzz_native: check_lines differs from check_line -> {save(joined_input, 'batch', crashes)}")
            batch.clear()
        if execs % 499 == 0:
            lines = chain_case(oracle, rng, seeds)
            shared.put(b"\n".join(lines)[:MAX_INPUT])
            try:
                for size in (1, rng.randint(2, 70)):
                    got = oracle.native_chain(lines, size).state()  # type: ignore[attr-defined]
                    if got != oracle.reference_chain(lines).state():  # type: ignore[attr-defined]
                        raise AssertionError(f"chain mode (batches of {size}) differs from line by line")
                flat = b"\n".join(lines).split(b"\n")  # (a mutant may hold a newline: the block frames it)
                for max_line in (1 << 20, rng.randrange(1, 400)):
                    for verifier in (oracle.VERIFIER, oracle.PAIRING_VERIFIER):  # type: ignore[attr-defined]
                        for threads in (1, 2):  # 2: a helper thread shares the chunks
                            got = oracle.block_chain(flat, max_line, verifier, threads).state()  # type: ignore[attr-defined]
                            if got != oracle.reference_chain(flat).state():  # type: ignore[attr-defined]
                                raise AssertionError(
                                    f"check_block (max_line {max_line}, threads {threads}) differs from line by line"
                                )
            except (Exception, oracle.pytest.fail.Exception) as exc:  # type: ignore[attr-defined]
                failures += 1
                path = save(b"\n".join(lines), "chain", crashes)
                print(f"fuzz_native: chain failure ({type(exc).__name__}: {str(exc)[:300]}) -> {path}", flush=True)
        if execs % 499 == 250:  # project: the fold in C (check_block(fold=)) against the fold in Python
            try:
                log = fold_case(rng, seeds, work)
                shared.put(log.read_bytes()[:MAX_INPUT])
                folds[check_fold(log, rng)] += 1
            except (Exception, oracle.pytest.fail.Exception) as exc:  # type: ignore[attr-defined]
                failures += 1
                path = save((work / "log" / "events.jsonl").read_bytes(), "fold", crashes)
                print(f"fuzz_native: fold failure ({type(exc).__name__}: {str(exc)[:300]}) -> {path}", flush=True)
        execs += 1
        if seeds and rng.random() < 0.001 and core.check_line(data) is not None:
            seeds.append(data)  # a mutation that is still a valid event: a good seed
    shared.clear()
    print(
        f"fuzz_native: child done: {execs} inputs, {failures} oracle failures; project: {sum(folds)} runs,"
        f" {folds[1]} folded in C",
        flush=True,
    )
    return ORACLE_FAILED if failures else 0


# --- the parent: restarts, crash capture ----------------------------------------------


def parent(args: argparse.Namespace) -> int:
    deadline = time.monotonic() + args.seconds
    failed = False
    runs = 0
    env = dict(os.environ)
    for name in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):  # a sanitizer report: a status of its own
        env[name] = ":".join(filter(None, [env.get(name, ""), f"exitcode={SANITIZER_EXIT}"]))
    with tempfile.TemporaryDirectory(prefix="ract-fuzz-") as tmp:
        shm_path = os.path.join(tmp, "input")
        shared = Shared(shm_path, create=True)
        while runs == 0 or deadline - time.monotonic() > 1:
            left = max(deadline - time.monotonic(), 1.0)
            argv = [sys.executable, __file__, "--child", "--shm", shm_path, "--seconds", f"{left:.1f}"]
            argv += ["--seed", str(args.seed + runs), "--crashes", args.crashes]
            if args.core:
                argv += ["--core", args.core]
            runs += 1
            status = subprocess.run(argv, check=False, env=env).returncode
            if status == 0:
                continue
            failed = True
            if status == ORACLE_FAILED:
                continue  # the child saved its reproducers
            data = shared.get()
            if data is None:
                print(f"fuzz_native: child failed (status {status}) outside an input", flush=True)
            else:
                path = save(data, "crash", Path(args.crashes))
                print(f"fuzz_native: child died (status {status}); its input is saved to {path}", flush=True)
            shared.clear()
    print(f"fuzz_native: {runs} child run(s); " + (f"FAILURES, see {args.crashes}" if failed else "no failure"))
    return 1 if failed else 0


# --- the seed corpus ------------------------------------------------------------------


def init_corpus() -> int:
    """Write a small deterministic seed corpus: valid events in every layout, and edge cases."""
    os.environ.setdefault("RACT_LONG", "0")
    oracle = oracle_module()
    rng = random.Random(20260101)
    CORPUS.mkdir(parents=True, exist_ok=True)
    for old in CORPUS.glob("seed-*"):
        old.unlink()
    items: list[bytes] = []
    for layout in oracle.LAYOUTS:  # type: ignore[attr-defined]
        for _ in range(3):
            _, kind, payload = rng.choice(oracle._VALID_CASES)  # type: ignore[attr-defined]
            event = oracle.hashed_event(kind, payload, rng)  # type: ignore[attr-defined]
            items.append(oracle.lay_out(event, layout, rng))  # type: ignore[attr-defined]
    items += [relaid(oracle, rng) for _ in range(5)]
    base = oracle.BASE[0]  # type: ignore[attr-defined]
    variants = list(oracle.hostile_variants(base))  # type: ignore[attr-defined]
    items += variants[:: max(1, len(variants) // 30)]
    items += [
        json.dumps({"k": [1e16, -0.0, 2.0, 1e21, 1e-7, 0.1, 5e-324]}).encode(),
        '{"\ue000":1,"\U0001f600":2,"a":3}'.encode(),
        b'{"a":"\\u00e9\\ud83d\\ude00\\u0000\\/"}',
        # 16-17 significant digits (repr's), read in x87 extended precision: fast_double's long path
        b'{"k":[0.8444218515250481,123.45678901234567,0.30000000000000004,1.2345678901234567e-20,4.35000000000000001]}',
    ]
    for i, data in enumerate(items):
        (CORPUS / f"seed-{i:03d}.json").write_bytes(data)
    print(f"fuzz_native: wrote {len(items)} seeds to {CORPUS}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("FUZZ_SECONDS", "60")))
    ap.add_argument("--seed", type=int, default=int(time.time()) & 0xFFFF)
    ap.add_argument("--core", help="path of the ract_cli._core extension to fuzz (default: the importable one)")
    ap.add_argument("--crashes", default=str(CRASHES))
    ap.add_argument("--init-corpus", action="store_true")
    ap.add_argument(
        "--tests",
        action="store_true",
        help="first run tests/test_native_core.py, test_project_fold.py and test_json_text.py against --core",
    )
    ap.add_argument("--run-tests", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--shm", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.init_corpus:
        return init_corpus()
    if args.run_tests:
        load_core(args.core)
        import pytest

        tests = ROOT / "tests"
        # one run: test_native_core.py and test_json_text.py whole (their modules' names say so) and the
        # native cases of the projection's fold in C, its helper thread included, against the Python fold
        files = [str(tests / n) for n in ("test_native_core.py", "test_project_fold.py", "test_json_text.py")]
        return int(pytest.main(["-q", "-p", "no:cacheprovider", "-k", "native or json_text", *files]))
    if args.child:
        return child(args)
    if args.tests:
        print("fuzz_native: tests/test_native_core.py, test_project_fold.py, test_json_text.py against it", flush=True)
        argv = [sys.executable, __file__, "--run-tests"] + (["--core", args.core] if args.core else [])
        if subprocess.run(argv, check=False, cwd=ROOT).returncode != 0:
            print("fuzz_native: the differential tests failed against this core")
            return 1
    print(f"fuzz_native: {args.seconds:.0f} s, seed {args.seed}, core {args.core or '(importable)'}", flush=True)
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
