"""Bounded time and memory on pathological lines (issue 15, items 8, 9 and 10).

* Item 8: a line of more than ``MAX_LINE_NODES`` values is MALFORMED_LINE
  before any parse, by both cores: a 24 MB line of ``[0],`` peaked at
  1.3 GiB; now well under 200 MB. Values in strings are not counted.
* Item 9: past ``--max-findings`` a line that framing alone shows is not an
  object (blank, text, an array, a BOM...) costs a framing check: no parse
  attempt, no finding text. The verdict is the one of a full read: same exit
  code, same kept findings, same count of suppressed ones, same trust.
* Item 10: ``verify -j N`` on a file with no newline is linear: the range
  splitter scans the file once, not from every cut to the end.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ract_cli.dialects import ChainReader
from ract_cli.read import parallel, reader
from ract_cli.read.json_rules import MAX_LINE_NODES, too_many_nodes
from ract_cli.read.reader import not_an_object
from ract_cli.verify.verifier import VerifyOptions, verify_file

BAD_LINES = [b"\n", b"  \r\n", b"garbage\n", b"[1,2]\n", b"\xef\xbb\xbf{}\n", b'"x"\n', b"\t\n", b"null\n"]


@pytest.mark.parametrize("raw", BAD_LINES)
def test_not_an_object_is_exact(raw: bytes) -> None:
    assert not_an_object(raw)
    result = reader.line_result(raw, 9, 1 << 20)
    assert [p.code for p in result.problems] == ["MALFORMED_LINE"] and result.stored_hash is None


@pytest.mark.parametrize("raw", [b"{}\n", b' {"a":1}\n', b'\r\n{"kind":1}\n'[2:], b"\t{\n"])
def test_an_object_is_not_skipped(raw: bytes) -> None:
    assert not not_an_object(raw)


def _planted(logs, bad: list[bytes]) -> Path:  # type: ignore[no-untyped-def]
    """The five-event log with ``bad`` lines planted after lines 1, 3 and 4 (and a bad one first)."""
    path = logs.five()
    lines = path.read_bytes().splitlines(keepends=True)
    out = [b"garbage first\n", lines[0], *bad, lines[1], lines[2], *bad, lines[3], *bad, lines[4]]
    path.write_bytes(b"".join(out))
    return path


@pytest.mark.parametrize("cap", [1, 2, 5, 17, 1000])
def test_skipped_lines_give_the_full_verdict(logs, cap: int) -> None:  # type: ignore[no-untyped-def]
    path = _planted(logs, BAD_LINES * 3)
    full = ChainReader(path)
    full_events = [(e.line, e.trusted) for e in full]
    capped = ChainReader(path, max_findings=cap)
    capped_events = [(e.line, e.trusted) for e in capped]
    assert capped_events == full_events
    assert [f.to_dict() for f in capped.findings] == [f.to_dict() for f in full.findings[:cap]]
    assert capped.state.suppressed == len(full.findings) - min(cap, len(full.findings))
    assert capped.exit_code == full.exit_code == 1
    assert capped.broken_at == full.broken_at
    assert capped.state.head == full.state.head and capped.state.events == full.state.events


def _count_line_results(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """From now on count the reader's calls of ``line_result`` (a parse attempt each); the count is ``[0]``."""
    calls = [0]
    real = reader.line_result

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(reader, "line_result", counting)
    return calls


def test_a_bad_line_past_the_cap_is_not_parsed(logs, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    path = _planted(logs, [b"\n"] * 10_000 + [b"text\n"] * 10_000)
    calls = _count_line_results(monkeypatch)
    r = ChainReader(path, max_findings=10)
    r.read_all()
    assert r.exit_code == 1 and r.state.suppressed == 60_001 - 10
    assert calls[0] < 10 + 5 + 10  # the kept findings' lines, the events, a few before the cap


def test_a_million_blank_lines_take_about_a_framing_check(logs, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Past the cap a blank line is counted after a framing check: no parse attempt, no finding (it was
    both, ~6 s for this log on a quiet machine, ~1 s after). Counted, not timed: the machine's speed is
    not the test's to judge."""
    path = logs.five()
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"\n" * 1_000_000 + b"".join(lines[1:]))
    calls = _count_line_results(monkeypatch)
    r = ChainReader(path, max_findings=1000)
    r.read_all()
    assert r.exit_code == 1 and r.state.suppressed == 999_000
    assert calls[0] < 1000 + 5 + 10  # the kept findings' lines, the events, a few before the cap


# --- item 10: the range splitter on a file without newlines -------------------------------------


def test_split_ranges_on_a_file_without_newline_reads_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "one-line"
    size = 64 << 20
    with open(path, "wb") as f:
        f.truncate(size)  # zeros, no newline
    reads = 0
    real_open = open

    class Counting:
        def __init__(self, f):  # type: ignore[no-untyped-def]
            self.f = f

        def __enter__(self):  # type: ignore[no-untyped-def]
            return self

        def __exit__(self, *exc):  # type: ignore[no-untyped-def]
            self.f.close()

        def seek(self, *a):  # type: ignore[no-untyped-def]
            return self.f.seek(*a)

        def read(self, n=-1):  # type: ignore[no-untyped-def]
            nonlocal reads
            data = self.f.read(n)
            reads += len(data)
            return data

        def readinto(self, b):  # type: ignore[no-untyped-def]
            nonlocal reads
            n = self.f.readinto(b)
            reads += n or 0
            return n

    monkeypatch.setattr(parallel, "open", lambda p, mode="rb": Counting(real_open(p, mode)), raising=False)
    assert parallel.split_ranges(path, chunk_bytes=1 << 20) == [(0, None)]
    assert reads <= size + (1 << 20), reads  # once through, not once per cut (64 cuts: 2 GiB)


def test_split_ranges_unchanged_on_ordinary_files(tmp_path: Path) -> None:
    path = tmp_path / "lines"
    data = b"".join(b"x" * (i % 97) + b"\n" for i in range(20_000)) + b"tail without newline" + b"y" * 300_000
    path.write_bytes(data)
    for chunk in (1, 7, 100, 4096, 65_536, 1 << 20):
        ranges = parallel.split_ranges(path, chunk_bytes=chunk)
        starts = [s for s, _ in ranges]
        assert starts[0] == 0 and starts == sorted(set(starts))
        for s in starts[1:]:
            assert data[s - 1 : s] == b"\n" and s < len(data)
        expected = [0]
        for cut in range(chunk, len(data), chunk):
            if cut <= expected[-1]:
                continue
            nl = data.find(b"\n", cut - 1)
            if nl != -1 and nl + 1 > expected[-1] and nl + 1 < len(data):
                expected.append(nl + 1)
        assert starts == expected, chunk


def test_verify_jobs_on_a_file_without_newline_is_linear(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    size = 40 << 20
    with open(path, "wb") as f:
        f.write(b"x" * size)
    os.sync()
    started = time.perf_counter()
    report = verify_file(path, VerifyOptions(jobs=2, max_line_bytes=64 << 20))
    seconds = time.perf_counter() - started
    assert report.exit_code == 5 and [f.code for f in report.findings] == ["NOT_A_LOG"]
    assert seconds < 20, seconds


# --- item 8: bounded memory on a line of many small values ------------------------------------

RSS_LAUNCHER = (
    "import resource, subprocess, sys; "
    "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE); "
    "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.stderr[-300:])"
)


def _peak(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, int]:
    """Exit code and peak RSS (KiB) of one fresh process (measured from a fresh launcher, not pytest)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", RSS_LAUNCHER, sys.executable, "-m", "ract_cli", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    ).stdout.split(maxsplit=2)
    return int(out[0]), int(out[1])


def _event_log(logs, blob: object) -> Path:  # type: ignore[no-untyped-def]
    """A valid two-event log whose first event carries ``blob`` in an undocumented payload key."""
    started = {"intent_id": "d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6", "predicate_count": 1, "coverage_gate": 0.85}
    return logs.write(
        [
            ("run.started", {**started, "blob": blob}, None),
            ("run.completed", {"final_decision": "accept", "duration_ns": 9, "event_count": 2}, None),
        ]
    )


def test_too_many_nodes_counts_values_outside_strings() -> None:
    n = MAX_LINE_NODES
    assert not too_many_nodes(b"[" + b"0," * (n // 2) + b"0]")
    assert too_many_nodes(b"[" + b"[0]," * n + b"[0]]")
    assert too_many_nodes(b'{"a":[' + b"{}," * n + b"{}]}")
    members = n // 2 + 1  # a key and a value each: more than the bound
    assert too_many_nodes(b"{" + b",".join(b'"%d":0' % i for i in range(members)) + b"}")
    assert not too_many_nodes(b"{" + b",".join(b'"%d":0' % i for i in range(members - 2)) + b"}")
    commas_in_a_string = b'{"a":"' + b",[{" * n + b'"}'
    assert not too_many_nodes(commas_in_a_string)
    escaped = b'{"a":"\\"' + b",\\\\" * n + b'"}'  # escaped quote and backslashes: still inside the string
    assert not too_many_nodes(escaped)


@pytest.mark.parametrize("core", ["python", "native"])
def test_a_line_of_too_many_values_is_malformed_with_both_cores(logs, core: str) -> None:  # type: ignore[no-untyped-def]
    from ract_cli.read import core as cores

    if core == "native" and cores.NATIVE is None:
        pytest.skip("native core not built")
    path = _event_log(logs, [[0]] * (MAX_LINE_NODES + 1))
    try:
        cores.use_core(core)
        os.environ["RACT_CORE"] = core
        r = ChainReader(path)
        r.read_all()
    finally:
        os.environ.pop("RACT_CORE", None)
        cores.use_core(cores.core_name())
    assert [(f.code, f.line) for f in r.findings if f.severity == "error"] == [("MALFORMED_LINE", 1)]
    assert f"more than {MAX_LINE_NODES:,} values and keys" in r.findings[0].message
    assert r.exit_code == 1


def test_values_under_the_bound_and_commas_in_strings_still_verify(logs) -> None:  # type: ignore[no-untyped-def]
    path = _event_log(logs, {"many": [0] * (MAX_LINE_NODES - 100), "csv": ",[{" * (2 * MAX_LINE_NODES)})
    r = ChainReader(path)
    r.read_all()
    assert r.exit_code == 0, r.findings
    assert r.state.events == 2


def test_a_24_mb_line_of_nested_arrays_stays_under_200_mb(logs) -> None:  # type: ignore[no-untyped-def]
    path = _event_log(logs, [[0]] * 6_000_000)  # 24 MB: peaked at 0.9-1.3 GiB
    assert path.stat().st_size > 24_000_000
    for core in ("native", "python"):
        code, kib = _peak(["trace", "verify", str(path)], {"RACT_CORE": core})
        assert code == 1
        assert kib < 200 * 1024, (core, kib)
    code, kib = _peak(["trace", "grep", "--no-verify", "--kind", "run.*", str(path)])
    assert kib < 200 * 1024, ("grep --no-verify", kib)


@pytest.mark.parametrize("cap", [1, 3, 1000, None])
def test_parallel_ranges_skip_as_the_sequential_reader_does(logs, cap: int | None) -> None:  # type: ignore[no-untyped-def]
    from ract_cli.read.chain import ChainState

    path = _planted(logs, BAD_LINES * 40)
    seq = ChainReader(path, max_findings=cap)
    seq.read_all()
    size = path.stat().st_size
    for chunk in (64, 500, 4096, size):
        state = ChainState(str(path), max_findings=cap)
        parallel.scan_file(path, state, None, jobs=2, schema_version=9, max_line_bytes=1 << 20, chunk_bytes=chunk)
        assert [f.to_dict() for f in state.findings] == [f.to_dict() for f in seq.findings], chunk
        assert (state.suppressed, state.exit_code, state.first_integrity_failure, state.head, state.events) == (
            seq.state.suppressed,
            seq.exit_code,
            seq.broken_at,
            seq.state.head,
            seq.state.events,
        ), chunk


# --- item 8: bounded memory on one huge string -----------------------------------------------------

import hashlib  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402

from json_support import same  # noqa: E402

from ract_cli.format import canonical  # noqa: E402
from ract_cli.read import fastpath, json_rules, long_line  # noqa: E402
from ract_cli.read import line as line_mod  # noqa: E402
from ract_cli.read.event import BIG_LINE_BYTES, DEFAULT_MAX_LINE_BYTES, line_body  # noqa: E402
from ract_cli.read.framing import split_line_ending  # noqa: E402
from ract_cli.read.line import analyze_line  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LONG = os.environ.get("RACT_LONG") == "1"
CORES = ["native", "python"]


def _cores_built(core: str) -> None:
    from ract_cli.read import core as cores

    if core == "native" and cores.NATIVE is None:
        pytest.skip("native core not built")


def _string_log(logs, size: int, text: str = "x") -> Path:  # type: ignore[no-untyped-def]
    """A valid log whose first event carries one string of about ``size`` bytes (``text`` repeated)."""
    return _event_log(logs, text * (size // len(text.encode())))


def test_line_result_hands_a_long_line_on_as_a_view() -> None:
    """``line_result`` gives a line longer than BIG_LINE_BYTES to the checks without copying it."""
    from ract_cli.read import core as cores
    from ract_cli.read import verdict

    seen: list[type] = []
    real = cores.prove
    cores.prove = lambda body, version: seen.append(type(body)) or real(body, version)  # type: ignore[func-returns-value]
    try:
        verdict.line_result(b'{"a":"' + b"x" * (BIG_LINE_BYTES + 1) + b'"}\n', 9, 1 << 30)
    finally:
        cores.prove = real
    assert seen and all(t is memoryview for t in seen)


@pytest.mark.parametrize("core", CORES)
def test_a_20_mb_string_event_verifies_in_bounded_memory(logs, core: str) -> None:  # type: ignore[no-untyped-def]
    """Peak RSS of ``ract trace verify`` on a valid event holding one 20 MB string, over a tiny log's.

    Before: ~4x the line (native: the reader's copy of the line, the whole canonical buffer, the
    string) and ~6x (Python: copies, orjson's sorted dump, slices for the hash). Now: the line
    itself, read (the framing's read holds it twice for a moment), and the event's string -- plus
    one copy of the line while ``read/verdict.py`` still slices it (``raw[:-1]``), which the
    bound allows until it hands long lines over as views.
    """
    _cores_built(core)
    size = 20_000_000
    small = _string_log(logs, 10)
    base_code, base = _peak(["trace", "verify", str(small)], {"RACT_CORE": core})
    small.unlink()
    big = _string_log(logs, size)
    code, kib = _peak(["trace", "verify", str(big)], {"RACT_CORE": core})
    assert base_code == code == 0
    # measured (seventeenth session, six runs): native 2.14-2.15 x the string, Python 2.39-2.40 x (the
    # line, its string, and the pieces the long-line path hashes): the Python core's bound sat 0.1 MB above
    # its peak, which the allocator's arenas move by as much
    bound = 2.4 if core == "native" else 2.5
    assert (kib - base) / 1024 < bound * size / 2**20, (core, base // 1024, kib // 1024)


#: the cases of scripts/line_memory.py held to the 200 MB of issue 15, item 8 (60 MB values, and
#: one line a byte under the default --max-line-bytes); with the pure-Python core the cases whose
#: objects outgrow the line (a str of 4 bytes per character, half a million values) are held to
#: it at 30 MB (docs/security.md, "Memory on one huge line")
BOUNDED_CASES = ["ascii", "utf8", "escapes", "escape1", "uescape", "tampered", "malformed", "nested", "under", "over"]
OBJECT_CASES = ["astral1", "many_strings", "many_keys", "many_objects", "many_floats", "tampered_keys"]


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="60 MB lines through the real CLI: set RACT_LONG=1")
@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("case", BOUNDED_CASES + OBJECT_CASES)
def test_huge_lines_peak_under_200_mb(tmp_path: Path, core: str, case: str) -> None:
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    import line_memory

    _cores_built(core)
    size = 30_000_000 if core == "python" and case in OBJECT_CASES else 60_000_000
    path = tmp_path / case / line_memory.RUN_ID / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(line_memory.case_bytes(case, size, DEFAULT_MAX_LINE_BYTES))
    code, kib, _, last = line_memory.measure(path, core, [])
    assert code == (1 if case in ("tampered", "tampered_keys", "malformed", "nested", "over") else 0), last
    assert kib < 200 * 1024, (case, core, kib // 1024)


@pytest.mark.parametrize("case", ["astral1", "utf8"])
def test_native_verify_builds_nothing_of_a_long_line(tmp_path: Path, case: str) -> None:
    """With the native core a long line costs the line as read, not its objects (8 MB: in every run; a
    line of many small values costs C's nodes besides, 24 bytes each: the RACT_LONG rows above)."""
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    import line_memory

    _cores_built("native")
    small = tmp_path / "small" / line_memory.RUN_ID / "events.jsonl"
    small.parent.mkdir(parents=True)
    small.write_bytes(line_memory.case_bytes("baseline", 0, DEFAULT_MAX_LINE_BYTES))
    _, base, _, _ = line_memory.measure(small, "native", [])
    size = 8_000_000
    path = tmp_path / case / line_memory.RUN_ID / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(line_memory.case_bytes(case, size, DEFAULT_MAX_LINE_BYTES))
    code, kib, _, last = line_memory.measure(path, "native", [])
    assert code == 0, last
    # the line read (held twice for a moment by the framing); its str would be a 32 MB (astral1) or
    # 2 bytes per character (utf8) more
    assert (kib - base) / 1024 < 2.6 * size / 2**20, (case, base // 1024, kib // 1024)


# --- item 8: the long-line paths give the short-line verdicts -------------------------------------


def _corpus() -> list[bytes]:
    """Lines of every kind of trouble: fixture events, foreign layouts, the JSON corpus inside an
    event, duplicate keys, big integers, long strings with escapes, flipped bits."""
    rng = random.Random(8)
    lines = [
        line
        for path in sorted((ROOT / "fixtures" / "runs").glob("*/events.jsonl"))[:4]
        for line in path.read_bytes().split(b"\n")
        if line
    ][:300]
    units = ["a", "é", "中", "😀", "\n", '"', "\\", "\x01", "/", "\ue000"]
    for body in lines[:40]:
        event = json.loads(body)
        event["payload"]["blob"] = "".join(rng.choice(units) for _ in range(rng.randint(0, 40)))
        event = {k: v for k, v in event.items() if k != "hash"}
        event["hash"] = hashlib.sha256(canonical.jcs_exact(event)).hexdigest()
        keys = list(event)
        rng.shuffle(keys)
        lines.append(canonical.jcs_exact(event))
        lines.append(json.dumps({k: event[k] for k in keys}).encode())
        lines.append(json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode())
    base = lines[0]
    for path in sorted((ROOT / "tests" / "data" / "json-parsing" / "test_parsing").iterdir()):
        for part in path.read_bytes().split(b"\n"):
            lines.append(part)
            lines.append(base.replace(b'"payload":{', b'"payload":{"x":' + part + b",", 1))
    for extra in (
        b'"a":1,"a":2',
        b'"a":{"b":1,"b":2},"c":[{"d":1,"\\u0064":2}]',
        b'"big":9223372036854775808',
        b'"big":-9223372036854775809',
        b'"big":[1,2,18446744073709551616]',
        b'"ok":9223372036854775807,"neg":-9223372036854775808',
        b'"f":1.0,"e":1e400',
        b'"s":"\\ud800"',
        b'"s":"\\u0000\\u001f\\/"',
        b'"' + b"k" * 5000 + b'":1,"' + b"k" * 5000 + b'":2',
    ):
        lines.append(base.replace(b'"payload":{', b'"payload":{' + extra + b",", 1))
    for body in list(lines[:200]):
        for _ in range(3):
            flipped = bytearray(body)
            flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
            lines.append(bytes(flipped))
    return lines


def _verdict(body: bytes | memoryview) -> tuple[object, ...]:
    r = analyze_line(body, fast=False)
    return r.event, r.stored_hash, [(p.code, p.message, p.expected, p.actual, p.severity) for p in r.problems], r.parsed


def test_the_long_line_path_gives_the_same_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    """With every threshold at its smallest, every line takes the long-line path (``long_line.parse_big``: no
    dump, the exactness scan, every string cut and decoded apart, pieces of one byte or a few), as
    bytes and as a view: each verdict must be the short-line path's, finding for finding."""
    corpus = _corpus()
    expected = [_verdict(body) for body in corpus]
    for big_string, piece in ((0, 1), (3, 7)):
        monkeypatch.setattr(line_mod, "BIG_LINE_BYTES", -1)
        monkeypatch.setattr(fastpath, "BIG_LINE_BYTES", -1)
        monkeypatch.setattr(long_line, "_BIG_STRING", big_string)
        monkeypatch.setattr(json_rules, "_PIECE_BYTES", piece)
        for body, want in zip(corpus, expected, strict=True):
            for given in (body, memoryview(body)):
                got = _verdict(given)
                assert got[1:] == want[1:], (body[:200], got[1:], want[1:])
                assert same(got[0], want[0]), body[:200]
        monkeypatch.undo()


def test_line_body_views_only_long_lines() -> None:
    for raw in (b"", b"\n", b"\r\n", b"{}", b"{}\n", b"{}\r\n", b"{}\r", b"\r\r\n"):
        assert line_body(raw) == split_line_ending(raw)
    long = b"{" + b" " * BIG_LINE_BYTES + b"}\r\n"
    body, has_newline = line_body(long)
    assert type(body) is memoryview and has_newline and body == long[:-2] and body.obj is long


def test_streamed_canonical_hash_is_the_exact_hash() -> None:
    rng = random.Random(5)
    for text in ("x", 'ab\n"\\\x01', "aé中😀", "\ue000\U0001f600", "y" * 50 + "\n"):
        value = {"s": text * (2_500_000 // len(text)), "k" + text * 2000: [1, 2.5, None, text * 5000], "z": text}
        assert canonical.jcs_sha256(value) == hashlib.sha256(canonical.jcs_exact(value)).hexdigest()
        assert canonical.jcs_exact(value) == canonical.canonical_bytes(value) or not canonical.orjson_is_jcs(
            canonical.canonical_bytes(value)
        )
    surrogate = {"s": "x" * 3_000_000 + "\ud800"}
    with pytest.raises(canonical.CanonicalizationError) as streamed:
        canonical.jcs_sha256(surrogate)
    with pytest.raises(canonical.CanonicalizationError) as whole:
        canonical.jcs_exact(surrogate)
    assert str(streamed.value) == str(whole.value)
    assert rng  # (seeded for future cases)


@pytest.mark.parametrize("core", CORES)
#: ASCII values only: CPython's UTF-8 decoder reserves (and tracemalloc counts) several times a non-ASCII
#: string's size, pages it never touches (RSS: measured by scripts/line_memory.py, case utf8)
@pytest.mark.parametrize("text", ["x", 'ab\n"\\\x01', "\n" + "y" * 99])
def test_a_long_line_costs_its_values_and_no_copy(core: str, text: str) -> None:
    """In process, Python's allocations while one 8 MB line is judged from a view: its string (what the
    event holds) and bounded pieces -- no second copy of the line, no canonical form, no dump. (orjson's
    own pool, which tracemalloc counts at many times the document, is not reached: the string is cut
    out before orjson parses the rest.)"""
    import tracemalloc

    from ract_cli.read import core as cores

    _cores_built(core)
    size = 8 << 20
    event = {
        "id": "1" * 32,
        "run_id": "2" * 32,
        "step_id": None,
        "parent_id": None,
        "timestamp_ns": 5,
        "kind": "run.started",
        "payload": {
            "intent_id": "d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6",
            "predicate_count": 1,
            "blob": text * (size // len(text)),
        },
        "prev_hash": "0" * 64,
    }
    event["hash"] = canonical.jcs_sha256(event)
    good = canonical.jcs_exact(event)
    tampered = good.replace(b'"timestamp_ns":5', b'"timestamp_ns":6')
    value_bytes = len(event["payload"]["blob"])
    try:
        cores.use_core(core)
        for body, codes in ((good, []), (tampered, ["HASH_MISMATCH"])):
            tracemalloc.start()
            result = analyze_line(memoryview(body))
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            assert [p.code for p in result.problems] == codes
            # (a decoder may reserve the size of the string's text for its value: untouched pages, no copy)
            assert peak < max(value_bytes, len(body)) + (4 << 20), (core, text, codes, peak >> 20, len(body) >> 20)
            del result
    finally:
        cores.use_core(cores.core_name())
