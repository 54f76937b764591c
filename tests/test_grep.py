"""grep, library level: the filter grammar, time parsing, the hold-back rule, the unverified reading mode."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ract_cli.errors import ExitCode, UsageError
from ract_cli.format.canonical import jcs_exact
from ract_cli.grep.search import (
    FileResult,
    GrepFilter,
    GrepOptions,
    Match,
    build_filter,
    format_ns,
    grep_paths,
    parse_time,
    parse_where,
)
from ract_cli.read import core
from ract_cli.read.framing import iter_lines_unverified
from ract_cli.read.reader import ChainReader
from ract_cli.testing.synth import fixture_run_id, write_completed

# --- --where ------------------------------------------------------------------------

EVENT = {
    "kind": "process.reaped",
    "step_id": None,
    "timestamp_ns": 1_764_000_000_000_000_000,
    "payload": {
        "ok": False,
        "n": 5,
        "f": 2.5,
        "s": "dispose_unsuccessful",
        "none": None,
        "one": 1,
        "yes": True,
        "list": [10, "b", {"c": 3}],
        "obj": {"a": [1, 2]},
        "digits": "123",
    },
}

WHERE_CASES = [
    # (expression, expected on EVENT)
    ("payload.ok=false", True),
    ("payload.ok==false", True),
    ("payload.ok=true", False),
    ("payload.ok=0", False),  # a boolean is not a number
    ("payload.one=true", False),
    ("payload.one=1", True),
    ("payload.one=1.0", True),  # 1 and 1.0 are the same JSON number
    ("payload.yes=1", False),
    ("payload.n>4", True),
    ("payload.n>5", False),
    ("payload.n>=5", True),
    ("payload.n<5", False),
    ("payload.n<=5", True),
    ("payload.f<2.6", True),
    ("payload.n>abc", False),  # number vs string: mismatched types never compare
    ("payload.s>abc", True),  # string vs string: code-point order
    ("payload.s<abc", False),
    ("payload.yes>0", False),  # booleans are not ordered
    ("payload.missing>0", False),
    ("payload.missing<0", False),
    ("payload.missing=null", False),  # absent is not null
    ("payload.none=null", True),
    ("payload.none!=null", False),
    ("payload.none?", True),  # present, even though null
    ("payload.missing?", False),
    ("step_id?", True),
    ("step_id=null", True),
    ("payload.s=dispose_unsuccessful", True),  # not JSON: read as a string
    ('payload.s="dispose_unsuccessful"', True),  # JSON string
    ("payload.s!=dispose_unsuccessful", False),
    ("payload.s!=other", True),
    ("payload.missing!=other", True),  # != is the negation of =: an absent path matches
    ("payload.n!=abc", True),  # mismatched types are not equal
    ("payload.digits=123", False),  # 123 is read as the number 123; the value is the string "123"
    ('payload.digits="123"', True),
    ("payload.s~^dispose", True),
    ("payload.s~unsuccess", True),  # search, not full match
    ("payload.s~^unsuccess", False),
    ("payload.n~5", False),  # regex applies to strings only
    ("payload.s!~^dispose", False),
    ("payload.s!~^commit", True),
    ("payload.missing!~x", True),
    ("payload.list.0=10", True),  # arrays are indexed by position
    ("payload.list.1=b", True),
    ("payload.list.2.c=3", True),
    ("payload.list.3?", False),
    ("payload.list.x?", False),
    ('payload.obj={"a":[1,2]}', True),  # deep equality of objects
    ("payload.obj.a=[1,2.0]", True),
    ("payload.obj.a=[1,true]", False),
    ("payload.s.x?", False),  # descending into a string gives nothing
    ("kind=process.reaped", True),
    ("kind~^process\\.", True),
    ("timestamp_ns>=1764000000000000000", True),  # exact integers above 2^53
    ("timestamp_ns>1764000000000000000", False),
    ("payload.s=", None),  # usage error: no value (use "")
]


@pytest.mark.parametrize(("expr", "want"), WHERE_CASES, ids=[c[0] for c in WHERE_CASES])
def test_where_semantics(expr, want):
    if want is None:
        with pytest.raises(UsageError):
            parse_where(expr)
    else:
        assert parse_where(expr).test(EVENT) is want


def test_where_value_empty_string():
    assert parse_where('payload.s=""').test({"payload": {"s": ""}})
    assert not parse_where('payload.s=""').test({"payload": {"s": "x"}})


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("payload.ok", "no operator"),
        ("=1", "missing the dotted path"),
        ("ok=false", "did you mean payload.ok"),
        ("payload..ok=1", "empty segment"),
        ("payload.ok!1", "unknown operator"),
        ("payload.ok?x", "unknown operator"),
        ("payload.x~(", "bad regular expression"),
        ("payload.x<[1]", "compares numbers or strings"),
        ("payload.x>=true", "compares numbers or strings"),
    ],
)
def test_where_errors_say_why(expr, message):
    with pytest.raises(UsageError) as info:
        parse_where(expr)
    assert message in info.value.message and info.value.exit_code == ExitCode.USAGE


def test_where_value_that_is_not_json_stays_text():
    assert parse_where("payload.x=NaN").value == "NaN"  # not JSON (a Python extension)
    assert parse_where("payload.x=[1,").value == "[1,"
    assert parse_where("payload.x= 5").value == 5  # JSON allows surrounding whitespace


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("payload.s = dispose_unsuccessful", True),
        ("payload.s != other ", True),
        ("payload.n >= 5", True),
        ("payload.s ~ ^dispose", True),
        ("payload.s ?", True),
        ("payload.missing? ", False),
        ('payload.s=" dispose_unsuccessful"', False),  # JSON quotes keep spaces
    ],
)
def test_spaces_around_the_operator_are_ignored(expr, want):
    assert parse_where(expr).test(EVENT) is want


# --- time ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "end_of_day", "want"),
    [
        ("0", False, 0),
        ("1764000000123456789", False, 1_764_000_000_123_456_789),
        ("2025-11-24T16:00:00Z", False, 1_764_000_000_000_000_000),
        ("2025-11-24T16:00:00.5Z", False, 1_764_000_000_500_000_000),
        ("2025-11-24T16:00:00.123456789Z", False, 1_764_000_000_123_456_789),
        ("2025-11-24T16:00:00,25", False, 1_764_000_000_250_000_000),
        ("2025-11-24T18:00:00+02:00", False, 1_764_000_000_000_000_000),
        ("2025-11-24T11:30:00-0430", False, 1_764_000_000_000_000_000),
        ("2025-11-24 16:00", False, 1_764_000_000_000_000_000),  # no zone: UTC
        ("2025-11-24", False, 1_763_942_400_000_000_000),
        ("2025-11-24", True, 1_763_942_400_000_000_000 + 86_400 * 10**9 - 1),  # a bare --until date: the whole day
        ("2025-11-24T16:00:00Z", True, 1_764_000_000_000_000_000),  # a full time is exact
    ],
)
def test_parse_time(text, end_of_day, want):
    assert parse_time(text, end_of_day=end_of_day) == want


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yesterday",
        "-5",
        "1.5",
        "2025-13-01",
        "2025-11-24T25:00",
        "9" * 20,
        "1969-12-31T23:59:59Z",
        "2025-11-24T16:00:00+25:00",
        "2025-11-24T16:00:00.1234567891Z",
    ],
)
def test_parse_time_errors(text):
    with pytest.raises(UsageError):
        parse_time(text)


def test_format_ns_round_trips_through_parse_time():
    for ns in (0, 1, 1_764_000_000_123_456_789, 2**63 - 1):
        assert parse_time(format_ns(ns)) == ns


# --- kinds and the prefilter ----------------------------------------------------------


@pytest.mark.parametrize(
    ("kinds", "kind", "want"),
    [
        (["process.reaped"], "process.reaped", True),
        (["process.reaped"], "process.reaped.x", False),
        (["process.*"], "process.reaped", True),
        (["substrate.*"], "substrate.subagent.orphan_reaped", True),  # * crosses dots
        (["*"], "anything", True),
        (["*.refused"], "tool.invocation.refused", True),
        (["tool.[cr]*"], "tool.refused", True),
        (["tool.[cr]*"], "tool.result", True),
        (["tool.[!r]*"], "tool.result", False),
        (["Process.reaped"], "process.reaped", False),  # case-sensitive
        (["a", "process.*"], "process.reaped", True),  # OR
    ],
)
def test_kind_patterns(kinds, kind, want):
    assert build_filter(kinds=kinds).matches({"kind": kind}) is want


@pytest.mark.parametrize(
    ("kinds", "steps", "want"),
    [
        (["process.reaped"], [], (b"process.reaped", b"\\u00")),
        (["process.*"], [], (b"process.", b"\\u00")),
        (["*.invocation.*"], [], (b".invocation.", b"\\u00")),
        (["process.reaped", "tool.*"], [], (b"process.reaped", b"tool.", b"\\u00")),
        (["*"], [], None),  # nothing literal: every line is parsed
        (["process.reaped", "*"], [], None),
        (["tool.[cr]*"], [], None),
        ([], ["ab" * 16], (b"ab" * 16, b"\\u00")),
        ([], [], None),
    ],
)
def test_prefilter_needles(kinds, steps, want):
    assert build_filter(kinds=kinds, steps=steps).prefilter() == want


def test_filter_is_and_across_options():
    flt = build_filter(
        kinds=["tool.*"], where=["payload.ok=false"], synthesized=False, since="2025-11-24", until="2025-11-24"
    )
    ev = {"kind": "tool.result", "timestamp_ns": 1_764_000_000_000_000_000, "payload": {"ok": False}}
    assert flt.matches(ev)
    assert not flt.matches({**ev, "kind": "run.started"})
    assert not flt.matches({**ev, "payload": {"ok": True}})
    assert not flt.matches({**ev, "payload": {"ok": False, "synthesized": True}})
    assert not flt.matches({**ev, "timestamp_ns": 1_764_100_000_000_000_000})
    assert not flt.matches({**ev, "timestamp_ns": "soon"})


def test_hostile_event_shapes_never_raise():
    flt = build_filter(
        kinds=["x.*"],
        runs=["ab" * 16],
        steps=["cd" * 16],
        since="0",
        synthesized=True,
        where=["payload.a.b>1", "payload.a~x", "payload.z?"],
    )
    for ev in (
        {},
        {"kind": 5},
        {"kind": "x.y", "payload": [1, 2]},
        {"kind": "x.y", "payload": "s"},
        {"kind": "x.y", "run_id": ["ab" * 16], "payload": {"a": {"b": {}}}},
    ):
        assert flt.matches(ev) is False


def test_a_directly_built_filter_compiles_its_globs():
    assert GrepFilter(kinds=("process.*",)).matches({"kind": "process.reaped"})


# --- the unverified reading mode shares the verified framing ---------------------------

FRAMING_INPUTS = {
    "crlf": lambda lines: b"".join(line.rstrip(b"\n") + b"\r\n" for line in lines),
    "no final newline": lambda lines: b"".join(lines)[:-1],
    "blank line in the middle": lambda lines: b"".join(lines[:3]) + b"\n" + b"".join(lines[3:]),
    "torn tail": lambda lines: b"".join(lines) + lines[1][:40],
    "array line": lambda lines: b"".join(lines[:2]) + b"[1,2]\n" + b"".join(lines[2:]),
    "over-long line": lambda lines: b"".join(lines[:2]) + b'{"pad":"' + b"x" * 5000 + b'"}\n' + b"".join(lines[2:]),
}


@pytest.fixture(scope="module")
def sample_lines(tmp_path_factory) -> list[bytes]:
    path = tmp_path_factory.mktemp("sample") / fixture_run_id("completed") / "events.jsonl"
    path.parent.mkdir(parents=True)
    write_completed(path, fixture_run_id("completed"), steps=2)
    return path.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize("name", list(FRAMING_INPUTS))
def test_unverified_framing_matches_the_chain_reader(tmp_path, sample_lines, name):
    path = tmp_path / "events.jsonl"
    path.write_bytes(FRAMING_INPUTS[name](sample_lines))
    verified = [(e.line, e.offset, e.raw) for e in ChainReader(path, max_line_bytes=4096)]
    lines = list(iter_lines_unverified(path, max_line_bytes=4096))
    unverified = [(x.line, x.offset, x.raw) for x in lines if x.event is not None]
    assert unverified == verified
    reader = ChainReader(path, max_line_bytes=4096)
    reader.read_all()
    framing_codes = {"MALFORMED_LINE", "LINE_TOO_LONG", "TORN_TAIL"}
    want = sorted((f.code, f.line) for f in reader.findings if f.code in framing_codes)
    assert sorted((x.problem.code, x.line) for x in lines if x.problem is not None) == want


def test_unverified_prefilter_skips_lines_but_keeps_numbers_offsets_and_the_tail(tmp_path, sample_lines):
    path = tmp_path / "events.jsonl"
    data = b"".join(sample_lines) + b'{"kind":"tool.res'  # torn tail without the needle
    path.write_bytes(data)
    got = list(iter_lines_unverified(path, prefilter=(b"step.started",)))
    want_lines = [i for i, raw in enumerate(sample_lines, 1) if b"step.started" in raw]
    assert [x.line for x in got[:-1]] == want_lines
    for x in got[:-1]:
        assert data[x.offset : x.offset + len(x.raw)] == x.raw == sample_lines[x.line - 1]
    assert got[-1].problem.code == "TORN_TAIL" and got[-1].line == len(sample_lines) + 1


# --- the search: hold-back, stop at the break ------------------------------------------


def _forge(path: Path, line: int, change) -> None:
    """Edit one event and recompute its own hash, as a careful forger would."""
    lines = path.read_bytes().splitlines(keepends=True)
    ev = json.loads(lines[line - 1])
    change(ev)
    ev["hash"] = hashlib.sha256(jcs_exact({k: v for k, v in ev.items() if k != "hash"})).hexdigest()
    lines[line - 1] = jcs_exact(ev) + b"\n"
    path.write_bytes(b"".join(lines))


@pytest.fixture
def completed(tmp_path) -> Path:
    path = tmp_path / fixture_run_id("completed") / "events.jsonl"
    path.parent.mkdir(parents=True)
    write_completed(path, fixture_run_id("completed"), steps=3)
    return path


def _run(paths, **kw):
    search = grep_paths([str(p) for p in paths], build_filter(**kw.pop("filter", {})), GrepOptions(**kw))
    items = list(search)
    matches = [i for i in items if isinstance(i, Match)]
    results = [i for i in items if isinstance(i, FileResult)]
    return search, matches, results


def test_held_match_is_dropped_when_the_next_line_breaks_the_chain(completed):
    lines = completed.read_bytes().splitlines(keepends=True)
    k = 10
    _forge(completed, k, lambda ev: ev["payload"].update(forged=True))
    search, matches, (result,) = _run([completed], filter={"kinds": ["*"]})
    assert [m.line for m in matches] == list(range(1, k))
    assert [m.raw for m in matches] == lines[: k - 1]
    # the break shows at k+1, but trust ends at k: nothing confirms the forged line's hash
    assert (result.stopped_at, result.exit_code) == (k, ExitCode.TAMPERED)
    assert search.exit_code == ExitCode.TAMPERED


def test_a_held_match_is_released_once_the_next_event_verifies(completed):
    lines = completed.read_bytes().splitlines(keepends=True)
    _, matches, (result,) = _run([completed], filter={"kinds": ["run.started"]})
    assert [m.line for m in matches] == [1] and matches[0].raw == lines[0]
    assert result.stopped_at is None and result.exit_code == ExitCode.OK


def test_the_last_event_is_released_at_the_end_of_the_file(completed):
    n = len(completed.read_bytes().splitlines())
    _, matches, _ = _run([completed], filter={"kinds": ["run.completed"]})
    assert [m.line for m in matches] == [n]


def test_a_malformed_line_after_a_match_drops_it(completed):
    lines = completed.read_bytes().splitlines(keepends=True)
    lines.insert(5, b"{not json}\n")
    completed.write_bytes(b"".join(lines))
    _, matches, (result,) = _run([completed], filter={"kinds": ["*"]})
    assert [m.line for m in matches] == [1, 2, 3, 4]  # line 5 was held when line 6 turned out malformed
    assert result.stopped_at == 5  # nothing confirms line 5's hash: its successor is no event


def test_a_break_at_the_first_line_prints_nothing(completed):
    _forge(completed, 1, lambda ev: ev.update(prev_hash="1" * 64))
    search, matches, (result,) = _run([completed], filter={"kinds": ["*"]})
    assert matches == [] and result.stopped_at == 1 and search.exit_code == ExitCode.TAMPERED


def test_no_verify_sees_the_forgery_and_says_unverified(completed):
    _forge(completed, 10, lambda ev: ev["payload"].update(forged=True))
    search, matches, (result,) = _run([completed], verify=False, filter={"where": ["payload.forged=true"]})
    assert [m.line for m in matches] == [10]
    assert result.verified is False and search.exit_code == ExitCode.OK


def test_findings_are_capped_but_still_count(tmp_path, sample_lines):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"[1]\n" * 50 + b"".join(sample_lines))
    search, _, (result,) = _run([path], verify=False, max_findings=5, filter={"kinds": ["*"]})
    assert len(result.findings) == 5 and result.suppressed == 45 and search.exit_code == ExitCode.TAMPERED


_kinds_strategy = st.lists(
    st.sampled_from(
        ["*", "tool.*", "process.reaped", "step.*", "*.refused", "run.?*", "predicate.evaluated", "no.such"]
    ),
    max_size=3,
)
_where_strategy = st.lists(
    st.sampled_from(
        [
            "payload.ok=false",
            "payload.ok=true",
            "payload.tool!=bash",
            "payload.reap_latency_ms>1000",
            "payload.reason~^post",
            "payload.step_id?",
            "parent_id!=null",
            "payload.required=true",
        ]
    ),
    max_size=2,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=_kinds_strategy, where=_where_strategy, synthesized=st.sampled_from([None, False]))
def test_no_verify_gives_the_same_matches_on_valid_logs(completed, kinds, where, synthesized):
    flt = {"kinds": kinds, "where": where, "synthesized": synthesized}
    _, verified, _ = _run([completed], filter=flt)
    _, unverified, _ = _run([completed], verify=False, filter=flt)
    assert [(m.line, m.offset, m.raw) for m in unverified] == [(m.line, m.offset, m.raw) for m in verified]


def test_compiled_filter_agrees_with_matches(sample_lines):
    events = [json.loads(raw) for raw in sample_lines] + [{}, {"kind": 3}, {"kind": "tool.called", "payload": []}]
    for kw in (
        {},
        {"kinds": ["tool.called"]},
        {"kinds": ["tool.called", "run.started"]},
        {"kinds": ["tool.*"]},
        {"kinds": ["tool.called"], "where": ["payload.tool=bash"]},
        {"synthesized": False},
    ):
        flt = build_filter(**kw)
        fast = flt.compile()
        assert [fast(ev) for ev in events] == [flt.matches(ev) for ev in events], kw


# --- the block-by-block prefilter framing equals a plain line-by-line model -------------


def _model(data: bytes, needles: tuple[bytes, ...], limit: int) -> list[tuple[int, int, bytes | None]]:
    """Plain Python: split on \\n, keep lines holding a needle and a last line without \\n."""
    out, offset = [], 0
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    for i, raw in enumerate(lines, 1):
        last_unterminated = not raw.endswith(b"\n")
        body = raw[:-1] if raw.endswith(b"\n") else raw
        if body.endswith(b"\r") and raw.endswith(b"\n"):
            body = body[:-1]
        if last_unterminated or any(n in raw for n in needles):
            out.append((i, offset, None if len(body) > limit else raw))
        offset += len(raw)
    return out


def _frame(data: bytes, needles, limit: int, block: int, tmp_path: Path, core_name: str | None = None):
    """The prefilter's lines; ``core_name``: with that core (the native one scans in C), else the default."""
    from ract_cli.read.framing import LineFramer, _frame_prefiltered

    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    saved = os.environ.get("RACT_CORE")
    if core_name is not None:
        os.environ["RACT_CORE"] = core_name
    try:
        with open(path, "rb") as f:
            return list(_frame_prefiltered(LineFramer(f, limit, needles), block_size=block))
    finally:
        if saved is None:
            os.environ.pop("RACT_CORE", None)
        else:
            os.environ["RACT_CORE"] = saved


_CORES = ["python", "native"] if core.NATIVE is not None else ["python"]


_line = st.lists(st.sampled_from([b"a", b"b", b"ab", b"x", b"\r", b" ", b"kind", b"\\u"]), max_size=8).map(b"".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(_line, max_size=12),
    tail=_line,
    needles=st.lists(st.sampled_from([b"a", b"ab", b"kind", b"\\u", b"b\r"]), min_size=1, max_size=3, unique=True),
    block=st.integers(1, 40),
)
def test_block_prefilter_equals_the_line_model(tmp_path, lines, tail, needles, block):
    data = b"".join(line + b"\n" for line in lines) + tail
    expected = _model(data, tuple(needles), 10_000)
    for name in _CORES:  # the native core's scan in C, and the Python one
        assert _frame(data, tuple(needles), 10_000, block, tmp_path, name) == expected, name


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(st.sampled_from([b"\\", b"u", b"00", b"x" * 300, b"\\u00", b"\n"]), max_size=60),
    needle=st.sampled_from([b"\\u00", b"\\u", b"\\", b"\\\\", b"u00", b"x\\"]),
    cut=st.tuples(st.integers(0, 20_000), st.integers(0, 20_000)),
)
def test_the_prefilters_find_is_bytes_find(pieces: list[bytes], needle: bytes, cut: tuple[int, int]) -> None:
    """``framing._find`` (backslash to backslash, then ``bytes.find`` where they crowd) finds what
    ``bytes.find`` finds, from any start to any end, in sparse and in dense backslashes."""
    from ract_cli.read.framing import _find

    data = b"".join(pieces)
    pos, end = min(cut), max(cut)
    assert _find(data, needle, pos, end) == data.find(needle, pos, end)
    assert _find(data, needle, 0, len(data)) == data.find(needle)


class _CountedFinds(bytes):
    """Bytes that count the calls of their ``find``."""

    finds = 0

    def find(self, *args: object) -> int:  # type: ignore[override]
        type(self).finds += 1
        return super().find(*args)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", [b"\\x" * 100_000, b"\\" * 200_000, (b"x" * 300 + b"\\") * 700])
def test_the_prefilters_find_steps_in_python_are_bounded(text: bytes) -> None:
    """Backslashes side by side (a hostile or heavily escaped log): ``_find`` takes at most one step in Python
    per ``BACKSLASH_GAP`` bytes, then leaves the rest to ``bytes.find``, whatever the bytes."""
    from ract_cli.read.framing import BACKSLASH_CREDIT, BACKSLASH_GAP, _find

    data = _CountedFinds(text)
    _CountedFinds.finds = 0
    assert _find(data, b"\\u00", 0, len(data)) == -1
    assert _CountedFinds.finds <= 2 + (len(data) + BACKSLASH_CREDIT) // BACKSLASH_GAP


@pytest.mark.parametrize("core_name", _CORES)
@pytest.mark.parametrize("block", [1, 3, 16, 1 << 20])
def test_block_prefilter_cuts_over_long_lines_and_keeps_counting(tmp_path, block, core_name):
    data = b"short kind\n" + b"k" * 50 + b"kind\n" + b"x" * 200 + b"\n" + b"kind ok\n" + b"y" * 30
    got = _frame(data, (b"kind",), 20, block, tmp_path, core_name)
    # line 2 holds the needle and is too long; line 3 is too long without it (reported once seen as too long
    # while incomplete, or skipped whole); line 4 is found at its right offset; line 5 is a last line too long.
    assert got[0] == (1, 0, b"short kind\n")
    assert (2, 11, None) in got
    assert (4, 11 + 55 + 201, b"kind ok\n") in got
    assert got[-1] == (5, 11 + 55 + 201 + 8, None)
    assert all(item[0] != 1 or item[2] is not None for item in got)


def test_unverified_reads_a_real_log_the_same_in_tiny_blocks(tmp_path, sample_lines):
    data = b"".join(sample_lines)
    for needles in ((b"tool.",), (b"step.started", b"\\u"), (b"run.",)):
        for name in _CORES:
            for block in (7, 1 << 20):
                assert _frame(data, needles, 1 << 20, block, tmp_path, name) == _model(data, needles, 1 << 20)


@pytest.mark.parametrize("escape", [b"\\u002e", b"\\u002E"])
def test_a_kind_spelled_with_escapes_is_found_in_both_modes(completed, escape):
    """Valid JSON may escape any character; the hash covers values, so such a line still verifies."""
    lines = completed.read_bytes().splitlines(keepends=True)
    k = next(i for i, raw in enumerate(lines) if b'"kind":"process.reaped"' in raw)
    lines[k] = lines[k].replace(b'"kind":"process.reaped"', b'"kind":"process' + escape + b'reaped"')
    completed.write_bytes(b"".join(lines))
    want = [i + 1 for i, raw in enumerate(lines) if json.loads(raw)["kind"] == "process.reaped"]
    assert k + 1 in want
    for verify in (True, False):
        search, matches, _ = _run([completed], verify=verify, filter={"kinds": ["process.reaped"]})
        assert [m.line for m in matches] == want and search.exit_code == ExitCode.OK
