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
from ract_cli.read.line import MAX_LINE_NODES, too_many_nodes
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


def test_a_bad_line_past_the_cap_is_not_parsed(logs, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    path = _planted(logs, [b"\n"] * 10_000 + [b"text\n"] * 10_000)
    calls = 0
    real = reader.line_result

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(reader, "line_result", counting)
    r = ChainReader(path, max_findings=10)
    r.read_all()
    assert r.exit_code == 1 and r.state.suppressed == 60_001 - 10
    assert calls < 10 + 5 + 10  # the kept findings' lines, the events, a few before the cap


def test_a_million_blank_lines_take_about_a_framing_check(logs) -> None:  # type: ignore[no-untyped-def]
    path = logs.five()
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"\n" * 1_000_000 + b"".join(lines[1:]))
    started = time.perf_counter()
    r = ChainReader(path, max_findings=1000)
    r.read_all()
    seconds = time.perf_counter() - started
    assert r.exit_code == 1 and r.state.suppressed == 999_000
    assert seconds < 6, seconds  # ~1 s here (was ~6 s: a parse attempt and a finding per line)


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
    commas_in_a_string = b'{"a":"' + b",[{" * n + b'"}'
    assert not too_many_nodes(commas_in_a_string)
    escaped = b'{"a":"\\"' + b",\\\\" * n + b'"}'  # escaped quote and backslashes: still inside the string
    assert not too_many_nodes(escaped)


@pytest.mark.parametrize("core", ["python", "native"])
def test_a_line_of_too_many_values_is_malformed_with_both_cores(logs, core: str) -> None:  # type: ignore[no-untyped-def]
    from ract_cli.read import core as cores
    from ract_cli.read import fastpath

    if core == "native" and cores.NATIVE is None:
        pytest.skip("native core not built")
    path = _event_log(logs, [[0]] * (MAX_LINE_NODES + 1))
    try:
        fastpath.use_core(core)
        os.environ["RACT_CORE"] = core
        r = ChainReader(path)
        r.read_all()
    finally:
        os.environ.pop("RACT_CORE", None)
        fastpath.use_core(cores.core_name())
    assert [(f.code, f.line) for f in r.findings if f.severity == "error"] == [("MALFORMED_LINE", 1)]
    assert "more than 1,000,000 values" in r.findings[0].message
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
