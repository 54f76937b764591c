"""Fuzzing the reader and every command's input path (issue 9).

Property-based (hypothesis) over ``analyze_line``, ``ChainReader``,
``verify_file`` and every ``ract trace`` command in-process
(``ract_cli.cli.app.main``): random bytes, mutated valid logs (byte
insert/delete/replace, line duplicate/swap/drop/truncate), huge numbers,
deep nesting, long lines, random unicode. The properties:

* nothing raises (an uncaught exception or a traceback fails the test);
* nothing hangs (every call runs under a SIGALRM guard / subprocess timeout);
* nothing lies: a mutated log that verifies clean (exit 0) has exactly the
  parsed values of a prefix of the original (only whole trailing lines may
  go missing undetected: that is what ``--expect-head`` is for);
* repair never launders: it refuses and leaves the bytes alone, or its
  result verifies;
* memory stays bounded on a 100 MB line (subprocess, peak RSS via wait4).

``make test`` runs a derandomized bounded profile; ``make fuzz``
(``RACT_LONG=1 HYPOTHESIS_PROFILE=fuzz``) runs many more random examples, and
``scripts/fuzz.py`` runs for a set duration.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hardening_support import (
    LONG,
    NOT_THE_INPUTS_VERDICT,
    RACT,
    ROOT,
    assert_no_traceback,
    chain_events,
    command_argv,
    hang_guard,
    log_events,
    read_only_commands,
    run_inprocess,
    strict_values,
    verdict_commands,
    verify_lie,
    write_small_log,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ract_cli.findings import FINDING_CODES
from ract_cli.read.json_rules import MAX_NESTING
from ract_cli.read.line import analyze_line
from ract_cli.read.reader import ChainReader
from ract_cli.testing.synth import fixture_path
from ract_cli.verify.verifier import VerifyOptions, verify_file

FUZZ = os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" or LONG
SCALE = int(os.environ.get("RACT_FUZZ_SCALE", "1"))


def examples(ci: int, fuzz: int) -> int:
    return (fuzz if FUZZ else ci) * SCALE


def fuzz_settings(ci: int, fuzz: int, **kw) -> settings:
    return settings(
        max_examples=examples(ci, fuzz),
        deadline=None,
        derandomize=not FUZZ,
        database=None,
        print_blob=True,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
            HealthCheck.large_base_example,
        ],
        **kw,
    )


# --- inputs -------------------------------------------------------------------

WORK = Path(tempfile.mkdtemp(prefix="ract-fuzz-"))
atexit.register(shutil.rmtree, WORK, True)
SMALL = write_small_log(WORK / "small.jsonl")
COMPLETED = fixture_path(ROOT / "fixtures", "completed").read_bytes()
BASES = {"small": SMALL, "completed-head": b"".join(COMPLETED.splitlines(keepends=True)[:12])}
ALLOWED_EXITS = {0, 1, 3, 4, 5, 7}  # never 2 (usage) for a valid command line, never a crash


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


@st.composite
def mutated_log(draw) -> tuple[str, bytes]:
    name = draw(st.sampled_from(sorted(BASES)))
    data = bytearray(BASES[name])
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["insert", "delete", "replace", "dup", "swap", "drop", "truncate", "splice"]))
        if not data:
            break
        if op in ("insert", "delete", "replace", "truncate"):
            i = draw(st.integers(0, len(data) - 1))
            if op == "insert":
                data[i:i] = draw(
                    st.binary(min_size=1, max_size=4)
                    | st.sampled_from([b"\n", b"\r", b" ", b"\\", b'"', b"0", b"\xff", b"\xc3", b",", b"}", b"\x00"])
                )
            elif op == "delete":
                del data[i : i + draw(st.integers(1, 3))]
            elif op == "replace":
                data[i] = draw(st.integers(0, 255))
            else:
                del data[i:]
        else:
            lines = _lines(bytes(data))
            i = draw(st.integers(0, len(lines) - 1))
            j = draw(st.integers(0, len(lines) - 1))
            if op == "dup":
                lines.insert(j, lines[i])
            elif op == "swap":
                lines[i], lines[j] = lines[j], lines[i]
            elif op == "drop":
                del lines[i]
            else:  # splice a line of the other base log in
                other = _lines(BASES["completed-head" if name == "small" else "small"])
                lines.insert(j, other[min(i, len(other) - 1)])
            data = bytearray(b"".join(lines))
    return name, bytes(data)


def _no_lie(name: str, mutated: bytes) -> None:
    """Exit 0 is only allowed for the parsed values of a prefix of a log the writer wrote."""
    lie = verify_lie(mutated, [BASES[name], *(BASES[n] for n in sorted(set(BASES) - {name}))])
    assert lie is None, lie


# --- analyze_line -------------------------------------------------------------


@fuzz_settings(ci=300, fuzz=20_000)
@given(st.binary(max_size=600))
def test_analyze_line_random_bytes(body: bytes) -> None:
    result = analyze_line(body)
    assert all(p.code in FINDING_CODES for p in result.problems)
    assert result.event is None or result.problems or type(result.event) is dict


@fuzz_settings(ci=200, fuzz=20_000)
@given(st.sampled_from(_lines(SMALL)), st.integers(0, 2000), st.binary(min_size=1, max_size=8))
def test_analyze_line_mutated(line: bytes, where: int, insert: bytes) -> None:
    body = line.rstrip(b"\n")
    i = where % (len(body) + 1)
    for mutated in (
        body[:i] + insert + body[i:],
        body[:i] + body[i + 1 :],
        body[:i] + insert + body[i + len(insert) :],
    ):
        result = analyze_line(mutated)
        assert all(p.code in FINDING_CODES for p in result.problems)
        if mutated != body and result.event is not None and not result.problems and b"\n" not in mutated:
            # clean means the same values in another spelling
            assert strict_values(mutated + b"\n") == strict_values(line)


JSON_LEAF = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@fuzz_settings(ci=150, fuzz=3_000)
@given(
    st.dictionaries(
        st.sampled_from(
            ["id", "run_id", "step_id", "parent_id", "timestamp_ns", "kind", "payload", "prev_hash", "hash", "extra"]
        ),
        JSON_VALUE,
        max_size=10,
    )
)
def test_analyze_line_random_envelopes(obj: dict) -> None:
    import json

    body = json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass")
    result = analyze_line(body)
    assert all(p.code in FINDING_CODES for p in result.problems)
    assert result.event is None or not any(p.code == "ENVELOPE_ERROR" for p in result.problems)


# --- whole logs -------------------------------------------------------------------


@fuzz_settings(ci=120, fuzz=5_000)
@given(mutated_log())
def test_mutated_logs_reader_and_verify(case: tuple[str, bytes]) -> None:
    name, data = case
    path = WORK / "mutated.jsonl"
    path.write_bytes(data)
    with hang_guard(10, data[:200]):
        reader = ChainReader(path)
        events = list(reader)
        report = verify_file(path, VerifyOptions())
    assert reader.exit_code == report.exit_code  # one reader, one verdict
    assert all(f.code in FINDING_CODES for f in reader.findings)
    assert all(ev.raw == data[ev.offset : ev.offset + len(ev.raw)] for ev in events)  # offsets point at the bytes
    if report.exit_code == 0:
        _no_lie(name, data)


def _every_read_only_command(path: Path, data: bytes) -> dict[str, int]:
    """Run each read-only command on ``path``: no traceback, an allowed exit code; the codes by command."""
    codes = {}
    for command in read_only_commands():
        with hang_guard(20, (command, data[:200])):
            code, _out, err = run_inprocess(command_argv(command, path))
        assert_no_traceback(err, command)
        assert code in ALLOWED_EXITS, (command, code, err[-800:])
        codes[command] = code
    return codes


@fuzz_settings(ci=10, fuzz=200)
@given(mutated_log())
def test_mutated_logs_every_command(case: tuple[str, bytes]) -> None:
    """Every read-only command in-process: no exception, an allowed exit code, no lie from verify."""
    name, data = case
    path = WORK / "cmd" / "events.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    codes = _every_read_only_command(path, data)
    for argv in _option_variants(path):  # other input paths of the same commands
        with hang_guard(20, (argv, data[:200])):
            code, _out, err = run_inprocess(argv)
        assert_no_traceback(err, argv)
        # --until N names an event: a log with fewer events makes it a bad argument (2)
        assert code in ALLOWED_EXITS | ({2} if "--until" in argv else set()), (argv, code, err[-800:])
    assert path.read_bytes() == data  # read-only commands changed nothing
    if codes.get("verify") == 0:
        _no_lie(name, data)
    # One reader, one verdict: project and replay exit exactly as verify does;
    # grep too, except that on a clean log it says whether anything matched (0 / 7).
    verdict = codes["verify"]
    for command in ("project", "replay"):
        if command in codes:
            assert codes[command] == verdict, (command, codes)
    if "grep" in codes:
        assert codes["grep"] == verdict if verdict else codes["grep"] in (0, 7), codes


JOURNALS = {
    p.name: b"".join(p.read_bytes().splitlines(keepends=True)[:12])
    for p in sorted((ROOT / "fixtures" / "journals").glob("*.jsonl"))
}


@st.composite
def mutated_journal(draw) -> tuple[str, bytes]:
    name = draw(st.sampled_from(sorted(JOURNALS)))
    data = bytearray(JOURNALS[name])
    for _ in range(draw(st.integers(1, 3))):
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["insert", "delete", "replace", "dup", "drop"]))
        if op == "insert":
            data[i:i] = draw(
                st.binary(min_size=1, max_size=4)
                | st.sampled_from([b"\n", b'"type":', b'"evidence":"accepted",', b'"hash":', b"\xff", b"[" * 300])
            )
        elif op == "delete":
            del data[i : i + draw(st.integers(1, 3))]
        elif op == "replace":
            data[i] = draw(st.integers(0, 255))
        else:
            lines = _lines(bytes(data))
            j = draw(st.integers(0, len(lines) - 1))
            if op == "dup":
                lines.insert(j, lines[j])
            else:
                del lines[j]
            data = bytearray(b"".join(lines))
    return name, bytes(data)


@pytest.mark.skipif(not JOURNALS, reason="no Raxol journal fixtures yet")
@fuzz_settings(ci=10, fuzz=150)
@given(mutated_journal())
def test_mutated_journals_every_command(case: tuple[str, bytes]) -> None:
    """Raxol journals (SPEC §8), mutated, through every command: no exception, an allowed exit code."""
    _name, data = case
    path = WORK / "journal" / "journal.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    codes = _every_read_only_command(path, data)
    assert path.read_bytes() == data
    if codes.get("verify") == 0:  # repair refuses every journal (SPEC §8), the others agree with verify
        assert all(c != 1 for k, c in codes.items() if k != "repair" and k not in NOT_THE_INPUTS_VERDICT), codes
    if "repair" in codes:
        assert codes["repair"] in (1, 5), codes


def _option_variants(path: Path) -> list[list[str]]:
    commands = set(read_only_commands())
    p = str(path)
    variants = [
        ["trace", "verify", "--jobs", "2", "--format", "json", p],
        ["trace", "verify", "--require-closed", "--max-findings", "1", "--format", "github", p],
    ]
    if "grep" in commands:
        variants += [
            ["trace", "grep", "--no-verify", "--kind", "tool.*", p],
            ["trace", "grep", "--where", "payload.ok=false", "--count", p],
            ["trace", "grep", "--no-verify", "--where", "payload.tool~^py", p],
        ]
    if "project" in commands:
        variants += [["trace", "project", "--format", "markdown", p]]
    if "replay" in commands:
        variants += [["trace", "replay", "--until", "3", p], ["trace", "replay", "--format", "jsonl", p]]
    return variants


@fuzz_settings(ci=25, fuzz=600)
@given(mutated_log())
def test_repair_never_launders(case: tuple[str, bytes]) -> None:
    """repair on a mutated copy: refuses with the bytes untouched, or leaves a log that verifies."""
    if "repair" not in read_only_commands():
        pytest.skip("no repair command yet")
    _name, data = case
    d = Path(tempfile.mkdtemp(dir=WORK))
    path = d / "events.jsonl"
    path.write_bytes(data)
    with hang_guard(20, data[:200]):
        code, _out, err = run_inprocess(["trace", "repair", "--no-backup", str(path)])
    assert_no_traceback(err, "repair")
    assert code in ALLOWED_EXITS, (code, err[-800:])
    if code == 0:
        report = verify_file(path)
        assert report.exit_code == 0, (report.findings, err)
        # original complete lines are kept byte for byte
        kept = [ln for ln in _lines(data) if ln.endswith(b"\n")]
        assert path.read_bytes().startswith(b"".join(kept)) or verify_file_bytes_equal(path, data)
    else:
        assert path.read_bytes() == data, "repair refused but changed the file"
    shutil.rmtree(d, ignore_errors=True)


def verify_file_bytes_equal(path: Path, data: bytes) -> bool:
    return path.read_bytes() == data


@fuzz_settings(ci=60, fuzz=1_000)
@given(st.binary(max_size=3000))
def test_random_bytes_file(data: bytes) -> None:
    path = WORK / "random.jsonl"
    path.write_bytes(data)
    with hang_guard(10, data[:100]):
        report = verify_file(path)
        code, _out, err = run_inprocess(["trace", "verify", str(path)])
    assert code == report.exit_code
    assert_no_traceback(err)
    if report.exit_code == 0:
        assert data == b"" or strict_values(data)  # only an empty file or a real log can pass


@fuzz_settings(ci=15, fuzz=150)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=6), st.text(max_size=20))
def test_random_unicode_written_then_read_by_every_command(texts: list[str], key: str) -> None:
    """Any unicode (lone surrogates included) through the writer: the log verifies, every command reads it."""
    d = Path(tempfile.mkdtemp(dir=WORK))
    path = d / "events.jsonl"
    write_small_log(path, extra={"texts": texts, key or "k": texts[0]})
    assert verify_file(path).exit_code == 0
    for command in verdict_commands():
        with hang_guard(20, command):
            code, _out, err = run_inprocess(command_argv(command, path))
        assert_no_traceback(err, command)
        assert code in (0, 4 if command == "repair" else 0), (command, code, err[-500:])
    shutil.rmtree(d, ignore_errors=True)


# --- huge numbers, deep nesting, long lines -----------------------------------------

HUGE = [
    b"1e400",
    b"-1e400",
    b"1e-400",
    b"123456789012345678901234567890",
    b"9223372036854775808",
    b"-9223372036854775809",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"0." + b"1" * 5000,
    b"1" * 5000,
    b"1E+2",
    b"-0",
    b"-0.0",
    b"1.0e1",
]


@pytest.mark.parametrize("number", HUGE, ids=lambda n: n[:24].decode())
def test_huge_numbers_in_payload_and_timestamp(number: bytes, tmp_path: Path) -> None:
    lines = _lines(SMALL)
    in_payload = lines[2].replace(b'"tiny":1e-7', b'"tiny":' + number)
    in_ts = lines[2].replace(b'"timestamp_ns":1764000002000000000', b'"timestamp_ns":' + number)
    for mutated in (in_payload, in_ts):
        assert mutated != lines[2]
        path = tmp_path / "events.jsonl"
        path.write_bytes(b"".join([*lines[:2], mutated, *lines[3:]]))
        for command in read_only_commands():
            with hang_guard(20, (command, number[:20])):
                code, _out, err = run_inprocess(command_argv(command, path))
            assert_no_traceback(err, command)
            # the stored hash no longer matches (or the value is refused): tampering, in every command
            assert code == 1, (command, number[:30], code, err[-500:])


@pytest.mark.parametrize("depth", [255, 256, 300, 509, 510, 600, 900, 960, 1023, 1024, 5000, 100_000])
@pytest.mark.parametrize("shape", ["array", "object"])
def test_deep_nesting_hashed_events(depth: int, shape: str, tmp_path: Path) -> None:
    """A correctly chained event nested ``depth`` levels: every command answers, none crashes.

    Regression: 256..1023 levels crashed ``analyze_line`` (orjson reads 1024
    levels but writes only 255). Up to ``MAX_NESTING`` levels the event
    verifies; deeper it is MALFORMED_LINE (exit 1) in every command, never a
    traceback -- and never a verdict that depends on how deep the caller's
    Python stack happens to be (it once did, around 950 levels).
    """
    nested = ("[" * depth + "]" * depth) if shape == "array" else ('{"a":' * depth + "1" + "}" * depth)
    path = tmp_path / "events.jsonl"
    if depth <= 1024:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(20_000)
        try:
            import json

            events = log_events(SMALL)
            events[2]["payload"]["arguments"]["deep"] = json.loads(nested)
            data = chain_events(events)
        finally:
            sys.setrecursionlimit(old)
    else:  # too deep for any JSON reader here: splice the raw text in (hash left stale)
        data = SMALL.replace(b'"argv":', b'"deep":' + nested.encode() + b',"argv":', 1)
    path.write_bytes(data)
    for command in verdict_commands():
        with hang_guard(30, (command, depth)):
            code, _out, err = run_inprocess(command_argv(command, path))
        assert_no_traceback(err, command)
        # the payload sits two levels down (the event, its payload, then arguments)
        want = 0 if depth + 3 <= MAX_NESTING else 1
        assert code == want, (command, depth, code, err[-500:])
    assert verify_file(path).exit_code == (0 if depth + 3 <= MAX_NESTING else 1)


@pytest.mark.parametrize(
    "text",
    [b"[" * 100_000, b'{"a":' * 100_000, b"[" * 100_000 + b"]" * 100_000, b'"' + b"\\" * 100_001, b"\xf0\x9f" * 50_000],
)
def test_deep_or_hostile_single_lines(text: bytes, tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    lines = _lines(SMALL)
    path.write_bytes(lines[0] + text + b"\n" + b"".join(lines[1:]))
    for command in read_only_commands():
        with hang_guard(30, command):
            code, _out, err = run_inprocess(command_argv(command, path))
        assert_no_traceback(err, command)
        assert code == 1, (command, code, err[-500:])


@pytest.mark.parametrize("limit", [1, 64, 430])  # every line of SMALL is longer than 430 bytes
def test_max_line_bytes_small_every_command(limit: int, tmp_path: Path) -> None:
    """A line longer than --max-line-bytes is LINE_TOO_LONG (exit 1) in every command."""
    path = tmp_path / "events.jsonl"
    path.write_bytes(SMALL)
    for command in verdict_commands():
        with hang_guard(20, command):
            code, _out, err = run_inprocess(command_argv(command, path, "--max-line-bytes", str(limit)))
        assert_no_traceback(err, command)
        assert code == 1, (command, limit, code, err[-500:])
    reader = ChainReader(path, max_line_bytes=limit)
    list(reader)
    assert {f.code for f in reader.findings if f.severity == "error"} == {"LINE_TOO_LONG"}


def test_line_exactly_at_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(SMALL)
    longest = max(len(ln) - 1 for ln in _lines(SMALL))
    assert verify_file(path, VerifyOptions(max_line_bytes=longest)).exit_code == 0
    assert verify_file(path, VerifyOptions(max_line_bytes=longest - 1)).exit_code == 1


_LAUNCHER = """
import json, os, subprocess, sys
with open(sys.argv[1], "wb") as err:
    child = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=err)
    _, status, usage = os.wait4(child.pid, 0)
print(json.dumps([os.waitstatus_to_exitcode(status), usage.ru_maxrss]))
"""


def _run_measured(argv: list[str], timeout: float = 120) -> tuple[int, int, bytes, float]:
    """Run ``ract`` as a subprocess; return (exit code, peak RSS in KiB, stderr, seconds).

    The peak comes from ``wait4`` in a small fresh launcher process: a child's
    ``ru_maxrss`` also counts the memory of the process that forked it, so
    measuring from inside a large pytest process would report pytest's size.
    """
    import json

    started = time.monotonic()
    with tempfile.NamedTemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, err.name, RACT, *argv],
            stdout=subprocess.PIPE,
            env={**os.environ, "COLUMNS": "120"},
            start_new_session=True,
        )
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise AssertionError(f"hang: {argv} ran longer than {timeout}s") from None
        code, rss_kib = json.loads(out)
        return code, rss_kib, Path(err.name).read_bytes(), time.monotonic() - started


@pytest.fixture(scope="module")
def hundred_mb_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A valid event, one 100 MB line (a JSON string), a valid event."""
    path = tmp_path_factory.mktemp("big") / "events.jsonl"
    lines = _lines(SMALL)
    with open(path, "wb") as f:
        f.write(lines[0])
        f.write(b'{"payload":"')
        chunk = b"A" * (1 << 20)
        for _ in range(100):
            f.write(chunk)
        f.write(b'"}\n')
        f.writelines(lines[1:])
    return path


def test_100mb_line_memory_bounded(hundred_mb_log: Path) -> None:
    """Default 64 MiB limit: LINE_TOO_LONG, peak RSS well under the file size + limit."""
    code, rss_kib, err, seconds = _run_measured(["trace", "verify", str(hundred_mb_log)])
    print(f"100 MB line, default limit: exit {code}, peak RSS {rss_kib // 1024} MiB, {seconds:.1f}s")
    assert_no_traceback(err)
    assert code == 1 and b"LINE_TOO_LONG" in err
    assert rss_kib < (64 + 160) * 1024  # the 64 MiB read buffer + interpreter, never the whole 100 MB twice


def test_100mb_line_small_limit_memory_small(hundred_mb_log: Path) -> None:
    code, rss_kib, err, seconds = _run_measured(["trace", "verify", "--max-line-bytes", "1048576", str(hundred_mb_log)])
    print(f"100 MB line, 1 MiB limit: exit {code}, peak RSS {rss_kib // 1024} MiB, {seconds:.1f}s")
    assert_no_traceback(err)
    assert code == 1 and b"LINE_TOO_LONG" in err
    assert rss_kib < 80 * 1024  # measured ~40 MiB: the interpreter, never the line


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="100 MB line through every command: set RACT_LONG=1 (make fuzz)")
def test_100mb_line_every_command(hundred_mb_log: Path) -> None:
    for command in read_only_commands():
        for limit in ("1048576", str(64 * 1024 * 1024)):
            code, rss_kib, err, seconds = _run_measured(
                command_argv(command, hundred_mb_log, "--max-line-bytes", limit)
            )
            print(f"{command} limit {limit}: exit {code}, peak RSS {rss_kib // 1024} MiB, {seconds:.1f}s")
            assert_no_traceback(err, command)
            assert code == 1, (command, code, err[-500:])
            assert rss_kib < (int(limit) // 1024) * 2 + 200 * 1024


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="a valid 100 MB event read whole: set RACT_LONG=1 (make fuzz)")
def test_100mb_valid_event_under_a_raised_limit(tmp_path: Path) -> None:
    events = log_events(SMALL)
    events[2]["payload"]["arguments"]["blob"] = "B" * (100 << 20)
    path = tmp_path / "events.jsonl"
    path.write_bytes(chain_events(events))
    code, rss_kib, err, seconds = _run_measured(["trace", "verify", "--max-line-bytes", str(200 << 20), str(path)])
    print(f"valid 100 MB event: exit {code}, peak RSS {rss_kib // 1024} MiB, {seconds:.1f}s")
    assert_no_traceback(err)
    assert code == 0
    assert rss_kib < 1200 * 1024


# --- targeted lies ------------------------------------------------------------------


def test_truncation_at_a_line_boundary_is_caught_by_expect_head(tmp_path: Path) -> None:
    """SPEC §10: a log cut after any event still verifies on its own; --expect-head catches it."""
    head = log_events(SMALL)[-1]["hash"]
    lines = _lines(SMALL)
    path = tmp_path / "events.jsonl"
    for n in range(1, len(lines) + 1):
        path.write_bytes(b"".join(lines[:n]))
        assert verify_file(path).exit_code == 0
        expected = 0 if n == len(lines) else 1
        assert verify_file(path, VerifyOptions(expect_head=head)).exit_code == expected, n
        code, _out, _err = run_inprocess(["trace", "verify", "--expect-head", head, str(path)])
        assert code == expected


@pytest.mark.parametrize(
    "spelling",
    [
        b'"\\u006bind":"run.started"',  # the same key spelled with an escape
        b'"kind":"run.started"',
        b'"k\\u0069nd":"x"',
    ],
)
def test_duplicate_keys_in_any_spelling(spelling: bytes, tmp_path: Path) -> None:
    """A repeated key, however it is spelled, is DUPLICATE_KEY: two JSON readers could disagree on it."""
    line = _lines(SMALL)[0]
    forged = line.replace(b'"kind":"run.started"', b'"kind":"run.started",' + spelling, 1)
    assert forged != line
    result = analyze_line(forged.rstrip(b"\n"))
    assert [p.code for p in result.problems] == ["DUPLICATE_KEY"], result.problems
    nested = line.replace(b'"intent_id":', b'"intent_id":"x","\\u0069ntent_id":', 1)
    assert [p.code for p in analyze_line(nested.rstrip(b"\n")).problems] == ["DUPLICATE_KEY"]


def test_equivalent_spellings_verify_and_are_the_same_values(tmp_path: Path) -> None:
    """The converse: escapes, whitespace, CRLF and key order change bytes, not values: exit 0."""
    import json

    out = []
    for line in _lines(SMALL):
        event = json.loads(line)
        out.append(
            json.dumps(
                dict(reversed(list(event.items()))), ensure_ascii=True, indent=None, separators=(" , ", " : ")
            ).encode()
            + b" \r\n"
        )
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(out))
    assert verify_file(path).exit_code == 0
    assert [ev.event for ev in ChainReader(path)] == log_events(SMALL)


def test_every_command_is_covered_by_the_hardening_tests() -> None:
    """A new ``ract trace`` command must be taught to the hardening tests (hardening_support._READ_ONLY_ARGS)."""
    from hardening_support import NOT_ON_LOGS, trace_commands

    unknown = set(trace_commands()) - NOT_ON_LOGS - set(read_only_commands())
    assert unknown == set(), f"commands the hardening tests do not know how to run read-only: {unknown}"
    assert {"verify", "grep", "project", "replay", "repair"} <= set(trace_commands())


@pytest.mark.parametrize("command", ["verify", "replay"] + (["grep", "project", "repair"] if LONG else []))
def test_one_finding_per_byte_keeps_memory_flat(command: str, tmp_path: Path) -> None:
    """A small log of one event then blank lines is one MALFORMED_LINE per byte: memory must not grow with it.

    Regression: ``verify`` kept every finding (300 bytes each: 1 MB of newlines
    held ~300 MiB and printed 80 MB) and replay's snapshot pre-pass did too.
    Now the CLI keeps 1000 per file (``--max-findings``, the rest counted) and
    the pre-pass keeps none.
    """
    lines = 1_000_000 if LONG else 300_000
    path = tmp_path / "events.jsonl"
    path.write_bytes(_lines(SMALL)[0] + b"\n" * lines)  # one record first: a log (blank lines alone: NOT_A_LOG)
    argv = ["trace", command, *(["--check"] if command == "repair" else []), str(path)]
    code, rss_kib, err, seconds = _run_measured(argv, timeout=300)
    print(
        f"{command} on {lines} blank lines: exit {code}, peak RSS {rss_kib // 1024} MiB, {seconds:.1f}s, "
        f"{len(err)} bytes on stderr"
    )
    assert_no_traceback(err, command)
    assert code == 1
    assert rss_kib < 80 * 1024
    assert len(err) < 1 << 20  # a bounded report, not one line per byte


class _HostileRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr bomb")


PY_LEAF = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.binary(max_size=8)
    | st.builds(_HostileRepr)
    | st.sampled_from([float("nan"), 2**100, -(2**64), "\ud800", {1, 2}])
)
PY_VALUE = st.recursive(
    PY_LEAF,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5) | st.integers() | st.none(), inner, max_size=3)
    ),
    max_leaves=15,
)


@fuzz_settings(ci=60, fuzz=3_000)
@given(PY_VALUE)
def test_writer_never_crashes_and_what_it_writes_verifies(value: object) -> None:
    """SPEC §9: anything the encoder cannot take becomes its repr text, never a crash; the log verifies."""
    from ract_cli.writer.event_writer import EventWriter, FsyncPolicy

    d = Path(tempfile.mkdtemp(dir=WORK))
    path = d / "events.jsonl"
    with EventWriter(path, fsync=FsyncPolicy.NEVER, strict=False) as w:
        w.append("run.started", {"intent_id": "1" * 32, "extra": value})
        w.append("tool.called", {"tool": "t", "arguments": {"v": value}})
        w.append("note.free-form", value)  # a non-dict payload, an unknown kind (strict=False)
    report = verify_file(path)
    assert report.events == 3
    assert {f.code for f in report.findings if f.severity == "error"} <= {"UNKNOWN_KIND"}, report.findings
    shutil.rmtree(d, ignore_errors=True)


def test_writer_sanitizes_deep_nesting(tmp_path: Path) -> None:
    from ract_cli.writer.event_writer import EventWriter, FsyncPolicy

    deep: list = []
    for _ in range(5000):
        deep = [deep]
    path = tmp_path / "events.jsonl"
    with EventWriter(path, fsync=FsyncPolicy.NEVER) as w:
        w.append("tool.called", {"tool": "t", "arguments": {"deep": deep}})
    assert verify_file(path).exit_code == 0


_THREADS = None


def _pool():
    global _THREADS
    if _THREADS is None:
        from concurrent.futures import ThreadPoolExecutor

        _THREADS = ThreadPoolExecutor(2)
        atexit.register(_THREADS.shutdown)
    return _THREADS


@fuzz_settings(ci=80, fuzz=5_000)
@given(mutated_log(), st.lists(st.integers(0, 10_000), max_size=6), st.sampled_from([64 << 20, 600, 300]))
def test_parallel_scan_equals_sequential_on_mutated_logs(
    case: tuple[str, bytes], cuts: list[int], max_line_bytes: int
) -> None:
    """``verify --jobs``: byte ranges cut anywhere give the sequential reader's verdict, finding for finding."""
    try:
        from ract_cli.read.parallel import scan_file
    except ImportError:
        pytest.skip("no parallel verifier yet")
    from ract_cli.read.chain import ChainState

    _name, data = case
    path = WORK / "parallel.jsonl"
    path.write_bytes(data)
    reader = ChainReader(path, max_line_bytes=max_line_bytes)
    reader.read_all()
    state = ChainState(str(path))
    with hang_guard(20, data[:200]):
        scan_file(
            path,
            state,
            _pool(),
            jobs=2,
            schema_version=9,
            max_line_bytes=max_line_bytes,
            cuts=[c % (len(data) + 1) for c in cuts],
        )
    ours = [(f.code, f.severity, f.line, f.offset, f.event_id) for f in state.findings]
    theirs = [(f.code, f.severity, f.line, f.offset, f.event_id) for f in reader.findings]
    assert (state.exit_code, state.events, state.head, ours) == (
        reader.exit_code,
        reader.state.events,
        reader.state.head,
        theirs,
    )
