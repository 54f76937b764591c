"""The one streaming chain reader (SPEC §2.1-2.5, §3).

Bad input is planted as line 3 of an otherwise valid five-line log written
by ``EventWriter``; every case must give exactly one finding, with its code,
line, byte offset (computed from the file) and severity, and never an
exception. Then: the tail rules, single-field mutations of a fixture line,
re-anchoring, schema versions, the warnings, ``EventReader.load``, bounded
memory and I/O failures.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ract_cli.errors import ChainBrokenError, ExitCode, LogIOError
from ract_cli.findings import FINDING_CODES
from ract_cli.format.canonical import jcs_exact
from ract_cli.format.model import GENESIS_HASH
from ract_cli.read.framing import Block, LineFramer, frame_blocks, lines_of
from ract_cli.read.line import analyze_line
from ract_cli.read.reader import ChainReader, EventReader
from ract_cli.testing.synth import fixture_path, fixture_run_id, write_benchmark_log
from ract_cli.verify.verifier import VerifyOptions, verify_file

DROP = object()  # marks a key to delete in ``_edit``


def _edit(event: dict, **changes: object) -> bytes:
    """The event with some keys changed (hash NOT recomputed), as canonical bytes."""
    out = dict(event)
    for key, value in changes.items():
        if value is DROP:
            del out[key]
        else:
            out[key] = value
    return jcs_exact(out)


def _payload(event: dict, **changes: object) -> bytes:
    return _edit(event, payload={**event["payload"], **changes})


def _sub(line: bytes, old: bytes, new: bytes) -> bytes:
    assert old in line, (old, line)
    return line.replace(old, new, 1)


# --- bad input as line 3 -------------------------------------------------------

LineCase = tuple[str, Callable[[bytes, dict], bytes], str]

MALFORMED: list[LineCase] = [
    ("blank-line", lambda line, ev: b"", "MALFORMED_LINE"),
    ("whitespace-only", lambda line, ev: b"  \t ", "MALFORMED_LINE"),
    ("bom", lambda line, ev: b"\xef\xbb\xbf" + line, "MALFORMED_LINE"),
    ("invalid-utf8", lambda line, ev: _sub(line, b"tests-pass", b"tests-\xffpass"), "MALFORMED_LINE"),
    ("overlong-utf8", lambda line, ev: _sub(line, b"tests-pass", b"tests-\xc0\xafpass"), "MALFORMED_LINE"),
    ("truncated-utf8-sequence", lambda line, ev: _sub(line, b"tests-pass", b"tests-\xe6\x97pass"), "MALFORMED_LINE"),
    ("utf8-encoded-surrogate", lambda line, ev: _sub(line, b"tests-pass", b"tests-\xed\xa0\x80pass"), "MALFORMED_LINE"),
    ("lone-high-surrogate-escape", lambda line, ev: _sub(line, b"tests-pass", b"tests-\\ud800pass"), "MALFORMED_LINE"),
    ("lone-low-surrogate-escape", lambda line, ev: _sub(line, b"tests-pass", b"tests-\\udc00pass"), "MALFORMED_LINE"),
    ("reversed-surrogate-pair", lambda line, ev: _sub(line, b"tests-pass", b"\\udc00\\ud800"), "MALFORMED_LINE"),
    ("lone-surrogate-in-key", lambda line, ev: _sub(line, b'"reason"', b'"\\ud800"'), "MALFORMED_LINE"),
    ("nan", lambda line, ev: _sub(line, b":1234567", b":NaN"), "MALFORMED_LINE"),
    ("infinity", lambda line, ev: _sub(line, b":1234567", b":Infinity"), "MALFORMED_LINE"),
    ("negative-infinity", lambda line, ev: _sub(line, b":1234567", b":-Infinity"), "MALFORMED_LINE"),
    ("number-overflows-to-infinity", lambda line, ev: _sub(line, b":1234567", b":1e400"), "MALFORMED_LINE"),
    ("single-quotes", lambda line, ev: _sub(line, b'"tests-pass"', b"'tests-pass'"), "MALFORMED_LINE"),
    ("trailing-comma", lambda line, ev: line[:-1] + b",}", "MALFORMED_LINE"),
    ("array", lambda line, ev: b"[" + line + b"]", "MALFORMED_LINE"),
    ("empty-array", lambda line, ev: b"[]", "MALFORMED_LINE"),
    ("bare-number", lambda line, ev: b"42", "MALFORMED_LINE"),
    ("bare-string", lambda line, ev: b'"run.started"', "MALFORMED_LINE"),
    ("bare-null", lambda line, ev: b"null", "MALFORMED_LINE"),
    ("bare-true", lambda line, ev: b"true", "MALFORMED_LINE"),
    ("two-objects-on-one-line", lambda line, ev: line + line, "MALFORMED_LINE"),
    ("trailing-garbage", lambda line, ev: line + b" x", "MALFORMED_LINE"),
    ("truncated-object-not-last", lambda line, ev: line[:60], "MALFORMED_LINE"),
    ("nul-byte", lambda line, ev: line + b"\x00", "MALFORMED_LINE"),
    ("raw-control-char-in-string", lambda line, ev: _sub(line, b"tests-pass", b"tests\x01pass"), "MALFORMED_LINE"),
    # duplicate keys, at any depth, in any spelling
    ("duplicate-key-top-level", lambda line, ev: line[:-1] + b',"kind":"predicate.evaluated"}', "DUPLICATE_KEY"),
    ("duplicate-key-top-level-other-value", lambda line, ev: line[:-1] + b',"kind":"run.started"}', "DUPLICATE_KEY"),
    ("duplicate-hash-key", lambda line, ev: line[:-1] + b',"hash":"' + b"0" * 64 + b'"}', "DUPLICATE_KEY"),
    ("duplicate-key-payload", lambda line, ev: _sub(line, b'"ok":true', b'"ok":true,"ok":false'), "DUPLICATE_KEY"),
    (
        "duplicate-key-nested",
        lambda line, ev: _sub(line, b'"reason":"ok"', b'"reason":"ok","x":[{"a":1,"a":1}]'),
        "DUPLICATE_KEY",
    ),
    (
        "duplicate-key-escaped-spelling",
        lambda line, ev: _sub(line, b'"ok":true', b'"ok":true,"\\u006fk":true'),
        "DUPLICATE_KEY",
    ),
    # integers outside the signed 64-bit range
    ("int-above-int64-top-level", lambda line, ev: _edit(ev, timestamp_ns=2**63), "MALFORMED_LINE"),
    ("int-above-uint64-top-level", lambda line, ev: _edit(ev, timestamp_ns=2**64), "MALFORMED_LINE"),
    ("int-below-int64-top-level", lambda line, ev: _edit(ev, timestamp_ns=-(2**63) - 1), "MALFORMED_LINE"),
    ("int-above-int64-payload", lambda line, ev: _payload(ev, duration_ns=2**63), "MALFORMED_LINE"),
    ("int-uint64-max-payload", lambda line, ev: _payload(ev, duration_ns=2**64 - 1), "MALFORMED_LINE"),
    ("int-huge-payload", lambda line, ev: _payload(ev, duration_ns=10**30), "MALFORMED_LINE"),
    ("int-below-int64-payload", lambda line, ev: _payload(ev, duration_ns=-(2**63) - 1), "MALFORMED_LINE"),
    ("int-below-int64-nested", lambda line, ev: _payload(ev, x={"y": [1, {"z": -(2**64)}]}), "MALFORMED_LINE"),
    ("int-above-int64-in-array", lambda line, ev: _payload(ev, x=[9_999_999_999_999_999_999]), "MALFORMED_LINE"),
]

# Wrong envelope types: every one of the nine keys, several ways each.
_WRONG: dict[str, list[object]] = {
    "id": [123, None, "E" * 32, "a" * 31, "a" * 33, "g" * 32, ["e" * 32], True],
    "run_id": [123, None, "A" * 32, "a" * 31, {"id": "a" * 32}],
    "step_id": [123, "XYZ", "", True, "5E7E9F00AA11BB22CC33DD44EE55FF66"],
    "parent_id": [123, "abc", {}, False, "0" * 64],
    "timestamp_ns": ["1764000000000000000", 1.5, -1, True, None, [1], 2**63 - 2**63 - 5],
    "kind": [5, None, ["predicate.evaluated"], True, {"name": "x"}],
    "payload": [[], "x", None, 5, True],
    "prev_hash": [5, None, "A" * 64, "a" * 63, "a" * 65, "z" * 64],
    "hash": [5, None, "A" * 64, "a" * 63, "a" * 65, "z" * 64],
}
ENVELOPE: list[LineCase] = [
    (f"{key}={value!r}"[:60], (lambda k, v: lambda line, ev: _edit(ev, **{k: v}))(key, value), "ENVELOPE_ERROR")
    for key, values in _WRONG.items()
    for value in values
]
ENVELOPE += [
    (f"missing-{key}", (lambda k: lambda line, ev: _edit(ev, **{k: DROP}))(key), "ENVELOPE_ERROR")
    for key in ("id", "run_id", "step_id", "parent_id", "timestamp_ns", "kind", "payload", "prev_hash", "hash")
]
ENVELOPE += [
    ("extra-key", lambda line, ev: _edit(ev, extra=1), "ENVELOPE_ERROR"),
    ("extra-key-signature", lambda line, ev: _edit(ev, signature="deadbeef"), "ENVELOPE_ERROR"),
    ("empty-object", lambda line, ev: b"{}", "ENVELOPE_ERROR"),
    (
        "timestamp-with-exponent",
        lambda line, ev: _sub(line, b'"timestamp_ns":1764000000002000000', b'"timestamp_ns":1.764000000002e18'),
        "ENVELOPE_ERROR",
    ),
    (
        "timestamp-with-fraction",
        lambda line, ev: _sub(line, b'"timestamp_ns":1764000000002000000', b'"timestamp_ns":1764000000002000000.0'),
        "ENVELOPE_ERROR",
    ),
]

BAD_LINES = MALFORMED + ENVELOPE


@pytest.mark.parametrize(("make", "code"), [(m, c) for _, m, c in BAD_LINES], ids=[n for n, _, _ in BAD_LINES])
def test_bad_line_3_is_one_finding(logs, make: Callable[[bytes, dict], bytes], code: str) -> None:
    path = logs.five()
    lines = logs.lines(path)
    original = lines[2][:-1]
    bad = make(original, json.loads(original))
    assert b"\n" not in bad
    lines[2] = bad + b"\n"
    path.write_bytes(b"".join(lines))

    verdict = logs.read(path)  # must not raise

    expected_offset = len(lines[0]) + len(lines[1])
    assert logs.offset(path, 3) == expected_offset
    assert [(f.code, f.line, f.offset, f.severity) for f in verdict.findings] == [(code, 3, expected_offset, "error")]
    assert verdict.exit_code == ExitCode.TAMPERED
    assert [ev.line for ev in verdict.events] == [1, 2, 4, 5]
    assert [ev.offset for ev in verdict.events] == [logs.offset(path, n) for n in (1, 2, 4, 5)]
    # line 2's hash is confirmed by no successor (line 3 is no event): trust ends at line 2
    assert [ev.trusted for ev in verdict.events] == [True, False, False, False]


def test_the_unplanted_five_line_log_is_clean(logs) -> None:
    path = logs.five()
    verdict = logs.read(path)
    assert verdict.findings == []
    assert verdict.exit_code == 0
    assert [ev.line for ev in verdict.events] == [1, 2, 3, 4, 5]
    assert [ev.offset for ev in verdict.events] == [logs.offset(path, n) for n in range(1, 6)]
    assert all(ev.raw == line for ev, line in zip(verdict.events, logs.lines(path), strict=True))
    assert all(ev.trusted for ev in verdict.events)


@pytest.mark.parametrize(
    "value", [2**63 - 1, -(2**63), 9_000_000_000_000_000_000, 0], ids=["int64-max", "int64-min", "9e18", "zero"]
)
def test_integers_at_the_64_bit_edges_are_accepted(logs, value: int) -> None:
    events = list(logs.FIVE_EVENTS)
    kind, payload, step = events[2]
    events[2] = (kind, {**payload, "x": value}, step)
    path = logs.write(events)
    assert logs.read(path).findings == []
    assert logs.events(path)[2]["payload"]["x"] == value


def test_timestamp_at_its_maximum_is_accepted(logs) -> None:
    path = logs.path()
    with logs.writer(path) as w:
        w.append("run.started", {}, timestamp_ns=2**63 - 1)
        w.append("run.completed", {}, timestamp_ns=2**63 - 1)
    assert logs.read(path).findings == []


# --- the tail (SPEC §2.1) ------------------------------------------------------


def test_torn_tail(logs) -> None:
    path = logs.five()
    data = path.read_bytes()
    last_start = logs.offset(path, 5)
    path.write_bytes(data[: last_start + 57])  # killed mid-write: half a line, no newline
    verdict = logs.read(path)
    assert verdict.errors == [("TORN_TAIL", 5)]
    torn = next(f for f in verdict.findings if f.code == "TORN_TAIL")
    assert (torn.offset, torn.severity) == (last_start, "error")
    assert ("OPEN_RUN", 1) in verdict.warnings  # the run's close was the torn line
    assert verdict.exit_code == ExitCode.INCOMPLETE
    assert len(verdict.events) == 4


def test_torn_tail_cut_inside_a_multibyte_character(logs) -> None:
    path = logs.write([("run.started", {"note": "日本語"}, None)])
    data = path.read_bytes()
    cut = data.index("本".encode()) + 1
    path.write_bytes(data + data[:cut])  # second line: cut mid-character
    verdict = logs.read(path)
    assert verdict.errors == [("TORN_TAIL", 2)]
    assert verdict.exit_code == ExitCode.INCOMPLETE


def test_malformed_last_line_with_newline_is_not_torn(logs) -> None:
    path = logs.five()
    data = path.read_bytes()
    last_start = logs.offset(path, 5)
    path.write_bytes(data[: last_start + 57] + b"\n")
    verdict = logs.read(path)
    assert verdict.errors == [("MALFORMED_LINE", 5)]
    assert verdict.exit_code == ExitCode.TAMPERED


def test_unparsable_line_before_the_last_is_not_torn(logs) -> None:
    path = logs.five()
    lines = logs.lines(path)
    lines[3] = lines[3][:57]  # no newline, but not the last line: it runs into line 5
    path.write_bytes(b"".join(lines))
    verdict = logs.read(path)
    assert verdict.errors == [("MALFORMED_LINE", 4)]


def test_missing_final_newline_is_a_warning(logs) -> None:
    path = logs.five()
    path.write_bytes(path.read_bytes()[:-1])
    verdict = logs.read(path)
    assert verdict.errors == []
    assert verdict.warnings == [("MISSING_FINAL_NEWLINE", 5)]
    assert verdict.exit_code == 0
    assert len(verdict.events) == 5


def test_only_a_torn_line(logs) -> None:
    path = logs.path()
    path.write_bytes(b'{"hash":"ab')
    verdict = logs.read(path)
    assert verdict.errors == [("TORN_TAIL", 1)]
    assert verdict.exit_code == ExitCode.INCOMPLETE


def test_crlf_line_endings_are_accepted(logs) -> None:
    path = logs.five()
    lines = logs.lines(path)
    path.write_bytes(b"".join(line[:-1] + b"\r\n" for line in lines))
    verdict = logs.read(path)
    assert verdict.findings == []
    assert [ev.offset for ev in verdict.events] == [sum(len(x) + 1 for x in lines[:i]) for i in range(5)]
    assert verdict.events[0].raw.endswith(b"\r\n")


def test_mixed_line_endings_and_crlf_without_final_newline(logs) -> None:
    path = logs.five()
    lines = logs.lines(path)
    lines[1] = lines[1][:-1] + b"\r\n"
    lines[4] = lines[4][:-1] + b"\r"  # CR kept, LF lost: still a complete event
    path.write_bytes(b"".join(lines))
    verdict = logs.read(path)
    assert verdict.errors == []
    assert verdict.warnings == [("MISSING_FINAL_NEWLINE", 5)]


def test_lone_cr_is_not_a_line_end(logs) -> None:
    path = logs.five()
    lines = logs.lines(path)
    path.write_bytes(lines[0][:-1] + b"\r" + b"".join(lines[1:]))  # lines 1 and 2 joined by a bare CR
    verdict = logs.read(path)
    assert verdict.errors == [("MALFORMED_LINE", 1)]


# --- single-field mutations of a fixture line --------------------------------

COMPLETED = "completed"


@pytest.fixture
def completed_copy(tmp_path: Path, repo_root: Path) -> Path:
    src = fixture_path(repo_root / "fixtures", COMPLETED)
    dst = tmp_path / fixture_run_id(COMPLETED) / "events.jsonl"
    dst.parent.mkdir(parents=True)
    shutil.copyfile(src, dst)
    return dst


def _line_index(lines: list[bytes], kind: str) -> int:
    """0-based index of the first line of ``kind``."""
    return next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == kind)


TARGET_KIND = "state.budget_capped"  # a plain event (no open/close) with enums, counts and an invariant

# (name, mutate(event, earlier_event) -> event, error codes with the hash KEPT, with it RECOMPUTED, warnings)
# Codes are (code, line delta): 0 = the mutated line, 1 = the line after it.
Mutation = tuple[str, Callable[[dict, dict], dict], set, set]
H = "HASH_MISMATCH"
BREAK_NEXT = ("CHAIN_BREAK", 1)


def _set(key: str, value: object) -> Callable[[dict, dict], dict]:
    return lambda ev, earlier: {**ev, key: value}


def _pl(key: str, value: object) -> Callable[[dict, dict], dict]:
    def mutate(ev: dict, earlier: dict) -> dict:
        payload = dict(ev["payload"])
        if value is DROP:
            del payload[key]
        else:
            payload[key] = value
        return {**ev, "payload": payload}

    return mutate


def _flip_hex(text: str) -> str:
    return ("1" if text[0] == "0" else "0") + text[1:]


ENVELOPE_MUTATIONS: list[Mutation] = [
    ("id-other", lambda ev, e: {**ev, "id": _flip_hex(ev["id"])}, {(H, 0)}, {BREAK_NEXT}),
    (
        "id-duplicate",
        lambda ev, e: {**ev, "id": e["id"]},
        {(H, 0), ("DUPLICATE_ID", 0)},
        {("DUPLICATE_ID", 0), BREAK_NEXT},
    ),
    ("id-not-hex", _set("id", "x" * 32), {("ENVELOPE_ERROR", 0)}, {("ENVELOPE_ERROR", 0), BREAK_NEXT}),
    (
        "run_id-foreign",
        lambda ev, e: {**ev, "run_id": _flip_hex(ev["run_id"])},
        {(H, 0), ("FOREIGN_RUN_ID", 0)},
        {("FOREIGN_RUN_ID", 0), BREAK_NEXT},
    ),
    ("run_id-int", _set("run_id", 7), {("ENVELOPE_ERROR", 0)}, {("ENVELOPE_ERROR", 0), BREAK_NEXT}),
    ("step_id-other", lambda ev, e: {**ev, "step_id": _flip_hex(ev["step_id"])}, {(H, 0)}, {BREAK_NEXT}),
    ("step_id-null", _set("step_id", None), {(H, 0)}, {BREAK_NEXT}),
    (
        "step_id-uppercase",
        lambda ev, e: {**ev, "step_id": ev["step_id"].upper()},
        {("ENVELOPE_ERROR", 0)},
        {("ENVELOPE_ERROR", 0), BREAK_NEXT},
    ),
    ("parent_id-set", lambda ev, e: {**ev, "parent_id": e["id"]}, {(H, 0)}, {BREAK_NEXT}),
    ("parent_id-int", _set("parent_id", 0), {("ENVELOPE_ERROR", 0)}, {("ENVELOPE_ERROR", 0), BREAK_NEXT}),
    ("timestamp-plus-1", lambda ev, e: {**ev, "timestamp_ns": ev["timestamp_ns"] + 1}, {(H, 0)}, {BREAK_NEXT}),
    ("timestamp-negative", _set("timestamp_ns", -1), {("ENVELOPE_ERROR", 0)}, {("ENVELOPE_ERROR", 0), BREAK_NEXT}),
    (
        "timestamp-string",
        lambda ev, e: {**ev, "timestamp_ns": str(ev["timestamp_ns"])},
        {("ENVELOPE_ERROR", 0)},
        {("ENVELOPE_ERROR", 0), BREAK_NEXT},
    ),
    ("kind-other-valid", _set("kind", "laziness.skipped"), {(H, 0)}, {BREAK_NEXT}),
    (
        "kind-unknown",
        _set("kind", "state.budget_uncapped"),
        {(H, 0), ("UNKNOWN_KIND", 0)},
        {("UNKNOWN_KIND", 0), BREAK_NEXT},
    ),
    ("kind-schema-conflict", _set("kind", "process.reaped"), {(H, 0)}, {BREAK_NEXT}),
    ("kind-null", _set("kind", None), {("ENVELOPE_ERROR", 0)}, {("ENVELOPE_ERROR", 0), BREAK_NEXT}),
    ("payload-array", _set("payload", []), {("ENVELOPE_ERROR", 0)}, {("ENVELOPE_ERROR", 0), BREAK_NEXT}),
    ("payload-empty", _set("payload", {}), {(H, 0)}, {BREAK_NEXT}),
    (
        "prev_hash-other",
        lambda ev, e: {**ev, "prev_hash": _flip_hex(ev["prev_hash"])},
        {(H, 0), ("CHAIN_BREAK", 0)},
        {("CHAIN_BREAK", 0), BREAK_NEXT},
    ),
    (
        "prev_hash-genesis",
        _set("prev_hash", GENESIS_HASH),
        {(H, 0), ("CHAIN_BREAK", 0)},
        {("CHAIN_BREAK", 0), BREAK_NEXT},
    ),
    ("prev_hash-short", _set("prev_hash", "ab"), {("ENVELOPE_ERROR", 0)}, {("ENVELOPE_ERROR", 0), BREAK_NEXT}),
    ("extra-key", _set("signature", "ok"), {("ENVELOPE_ERROR", 0)}, {("ENVELOPE_ERROR", 0), BREAK_NEXT}),
    (
        "missing-parent_id",
        lambda ev, e: {k: v for k, v in ev.items() if k != "parent_id"},
        {("ENVELOPE_ERROR", 0)},
        {("ENVELOPE_ERROR", 0), BREAK_NEXT},
    ),
]

# state.budget_capped payload in the fixture: function=plan, cap_tokens=600, requested_tokens=872,
# seated_tokens=599, dropped_entry_count=14, strategy=truncate_tail, requested_hash=<64 hex>.
P = "PAYLOAD_INVALID"
PAYLOAD_MUTATIONS: list[tuple[str, str, object, set]] = [
    # (field, new value, extra codes beyond the hash/chain ones)
    ("function", "edit", set()),
    ("function", "review", {(P, 0)}),
    ("function", 3, {(P, 0)}),
    ("cap_tokens", 601, set()),
    ("cap_tokens", 598, {(P, 0)}),  # seated_tokens (599) <= cap_tokens no longer holds
    ("cap_tokens", "600", {(P, 0)}),
    ("cap_tokens", -1, {(P, 0)}),
    ("requested_tokens", 873, set()),
    ("requested_tokens", True, {(P, 0)}),
    ("requested_tokens", 872.5, {(P, 0)}),
    ("seated_tokens", 598, set()),
    ("seated_tokens", 601, {(P, 0)}),
    ("seated_tokens", None, {(P, 0)}),
    ("dropped_entry_count", 15, set()),
    ("dropped_entry_count", -3, {(P, 0)}),
    ("dropped_entry_count", [14], {(P, 0)}),
    ("strategy", "summarize", {(P, 0)}),
    ("strategy", "TRUNCATE_TAIL", {(P, 0)}),
    ("requested_hash", "0" * 64, set()),
    ("requested_hash", 0, {(P, 0)}),
    ("function", DROP, set()),  # absent is fine (SPEC §2.6); removing it is still a change
    ("undocumented", "extra", set()),  # undocumented keys are allowed; adding one is a change
]


def _mutation_cases() -> list:
    cases = []
    for name, mutate, kept, recomputed in ENVELOPE_MUTATIONS:
        cases.append(pytest.param(mutate, False, kept, id=f"{name}-hash-kept"))
        cases.append(pytest.param(mutate, True, recomputed, id=f"{name}-hash-recomputed"))
    for fld, value, extra in PAYLOAD_MUTATIONS:
        mutate = _pl(fld, value)
        label = f"payload.{fld}={'absent' if value is DROP else repr(value)}"
        cases.append(pytest.param(mutate, False, {(H, 0)} | extra, id=f"{label}-hash-kept"))
        cases.append(pytest.param(mutate, True, {BREAK_NEXT} | extra, id=f"{label}-hash-recomputed"))
    # the hash itself: changing it is a mismatch here, and the next line no longer links
    cases.append(
        pytest.param(lambda ev, e: {**ev, "hash": _flip_hex(ev["hash"])}, False, {(H, 0), BREAK_NEXT}, id="hash-other")
    )
    cases.append(pytest.param(_set("hash", "A" * 64), False, {("ENVELOPE_ERROR", 0)}, id="hash-uppercase"))
    cases.append(pytest.param(_set("hash", None), False, {("ENVELOPE_ERROR", 0)}, id="hash-null"))
    return cases


@pytest.mark.parametrize(("mutate", "recompute", "expected"), _mutation_cases())
def test_single_field_mutation_of_a_fixture_line(
    logs, completed_copy: Path, mutate, recompute: bool, expected: set
) -> None:
    lines = logs.lines(completed_copy)
    k = _line_index(lines, TARGET_KIND)
    event = json.loads(lines[k])
    mutated = mutate(event, json.loads(lines[k - 3]))
    assert mutated != event
    if recompute:
        mutated = logs.rehash(mutated)
    lines[k] = logs.line_of(mutated)
    completed_copy.write_bytes(b"".join(lines))

    verdict = logs.read(completed_copy)

    line_no = k + 1
    assert set(verdict.errors) == {(code, line_no + delta) for code, delta in expected}
    assert len(verdict.errors) == len(expected)
    assert verdict.warnings == []
    for f in verdict.findings:
        assert f.offset == logs.offset(completed_copy, f.line)
    integrity = {code for code, _ in expected} & {c for c, (x, _) in FINDING_CODES.items() if x == ExitCode.TAMPERED}
    assert verdict.exit_code == (ExitCode.TAMPERED if integrity else ExitCode.SCHEMA)


def test_number_spelling_is_not_a_mutation(logs, completed_copy: Path) -> None:
    """The hash covers values, not bytes: 599 and 599.0 (and 5.99e2) are the same JSON number."""
    lines = logs.lines(completed_copy)
    k = _line_index(lines, TARGET_KIND)
    lines[k] = lines[k].replace(b'"seated_tokens":599', b'"seated_tokens":5.99e2', 1)
    lines[k + 1] = lines[k + 1].replace(b'{"hash"', b'{ "hash"', 1)  # foreign spacing too
    completed_copy.write_bytes(b"".join(lines))
    assert logs.read(completed_copy).findings == []


def test_clock_regression_from_a_mutated_timestamp(logs, completed_copy: Path) -> None:
    lines = logs.lines(completed_copy)
    k = _line_index(lines, TARGET_KIND)
    event = json.loads(lines[k])
    lines[k] = logs.line_of(logs.rehash({**event, "timestamp_ns": 0}))
    completed_copy.write_bytes(b"".join(lines))
    verdict = logs.read(completed_copy)
    assert verdict.errors == [("CHAIN_BREAK", k + 2)]
    assert verdict.warnings == [("CLOCK_REGRESSION", k + 1)]


def test_first_line_prev_hash_is_missing_genesis(logs, completed_copy: Path) -> None:
    lines = logs.lines(completed_copy)
    first = json.loads(lines[0])
    lines[0] = logs.line_of({**first, "prev_hash": "f" * 64})
    completed_copy.write_bytes(b"".join(lines))
    verdict = logs.read(completed_copy)
    assert sorted(verdict.errors) == [("HASH_MISMATCH", 1), ("MISSING_GENESIS", 1)]
    lines[0] = logs.line_of(logs.rehash({**first, "prev_hash": "f" * 64}))
    completed_copy.write_bytes(b"".join(lines))
    verdict = logs.read(completed_copy)
    assert verdict.errors == [("MISSING_GENESIS", 1), ("CHAIN_BREAK", 2)]
    missing = verdict.findings[0]
    assert (missing.expected, missing.actual) == (GENESIS_HASH, "f" * 64)


def test_every_field_of_every_fixture_line_is_covered_by_the_hash(repo_root: Path) -> None:
    """Any top-level payload or envelope value change of any fixture line is a HASH_MISMATCH."""
    for name in ("completed", "aborted"):
        for line in fixture_path(repo_root / "fixtures", name).read_bytes().splitlines():
            event = json.loads(line)
            assert analyze_line(line).problems == []
            variants = [
                {**event, "payload": {**event["payload"], key: _other_value(value)}}
                for key, value in event["payload"].items()
            ]
            variants += [
                {**event, key: _other_value(event[key])}
                for key in ("id", "run_id", "step_id", "parent_id", "timestamp_ns", "kind", "prev_hash")
            ]
            for variant in variants:
                codes = [p.code for p in analyze_line(jcs_exact(variant)).problems]
                assert "HASH_MISMATCH" in codes, (variant["kind"], codes)


def _other_value(value: object) -> object:
    if value is None:
        return "d" * 32
    if type(value) is bool:
        return not value
    if type(value) is int:
        return value + 1
    if type(value) is float:
        return value * 2 + 1
    if type(value) is str:
        if len(value) in (32, 64) and all(c in "0123456789abcdef" for c in value):
            return _flip_hex(value)
        return value + "x" if "." not in value else value + ".x"
    if type(value) is list:
        return [*value, 1]
    return {**value, "zz": 1}


def test_tail_mutation_with_recomputed_hash_needs_expect_head(logs, completed_copy: Path) -> None:
    """SPEC §10: a rewritten last event is consistent; only a head recorded elsewhere catches it."""
    head_before = json.loads(logs.lines(completed_copy)[-1])["hash"]
    lines = logs.lines(completed_copy)
    last = json.loads(lines[-1])
    lines[-1] = logs.line_of(logs.rehash({**last, "payload": {**last["payload"], "final_decision": "reject"}}))
    completed_copy.write_bytes(b"".join(lines))
    assert logs.read(completed_copy).findings == []
    report = verify_file(completed_copy, VerifyOptions(expect_head=head_before))
    assert [f.code for f in report.findings] == ["HEAD_MISMATCH"]
    assert report.exit_code == ExitCode.TAMPERED


# --- re-anchoring ------------------------------------------------------------------


def test_two_independent_edits_give_two_findings(logs, completed_copy: Path) -> None:
    lines = logs.lines(completed_copy)
    for k in (9, 99):  # each edited in place, hash left as it was
        event = json.loads(lines[k])
        lines[k] = logs.line_of({**event, "payload": {**event["payload"], "edited": True}})
    completed_copy.write_bytes(b"".join(lines))
    verdict = logs.read(completed_copy)
    assert verdict.errors == [("HASH_MISMATCH", 10), ("HASH_MISMATCH", 100)]


def test_two_deleted_lines_give_two_chain_breaks(logs, completed_copy: Path) -> None:
    lines = logs.lines(completed_copy)
    kept = [line for i, line in enumerate(lines) if i not in (20, 70)]
    completed_copy.write_bytes(b"".join(kept))
    verdict = logs.read(completed_copy)
    # line 21 (0-based 20) gone: old line 22 is now line 21; old line 72 is now line 70
    assert verdict.errors == [("CHAIN_BREAK", 21), ("CHAIN_BREAK", 70)]
    first = verdict.findings[0]
    assert first.expected == json.loads(lines[19])["hash"]
    assert first.actual == json.loads(lines[21])["prev_hash"]


def test_inserted_forged_line_breaks_once_and_reanchors(logs, completed_copy: Path) -> None:
    lines = logs.lines(completed_copy)
    forged = logs.rehash({**json.loads(lines[30]), "id": "f" * 32, "prev_hash": "e" * 64})
    lines.insert(31, logs.line_of(forged))
    completed_copy.write_bytes(b"".join(lines))
    verdict = logs.read(completed_copy)
    # the forgery does not link to line 31, and line 33 does not link to the forgery
    assert verdict.errors == [("CHAIN_BREAK", 32), ("CHAIN_BREAK", 33)]


def test_max_findings_caps_kept_findings_but_not_the_verdict(logs, completed_copy: Path) -> None:
    lines = logs.lines(completed_copy)
    for k in range(5, 60, 5):
        lines[k] = logs.line_of({**json.loads(lines[k]), "timestamp_ns": 1})
    lines.append(b"[]\n")
    completed_copy.write_bytes(b"".join(lines))
    reader = ChainReader(completed_copy, max_findings=3)
    reader.read_all()
    assert len(reader.findings) == 3
    assert reader.state.suppressed > 0
    assert reader.exit_code == ExitCode.TAMPERED


def test_malformed_line_leaves_the_next_linkage_unjudged(logs) -> None:
    """After a line with no usable hash, the next event's prev_hash cannot be judged (its break is that line's)."""
    path = logs.five()
    lines = logs.lines(path)
    lines[2] = b"garbage\n"
    lines[3] = logs.line_of(logs.rehash({**json.loads(lines[3]), "prev_hash": "c" * 64}))
    lines[4] = logs.line_of(logs.rehash({**json.loads(lines[4]), "prev_hash": json.loads(lines[3])["hash"]}))
    path.write_bytes(b"".join(lines))
    verdict = logs.read(path)
    assert verdict.errors == [("MALFORMED_LINE", 3)]


# --- schema versions -----------------------------------------------------------------


def test_v9_kind_under_schema_version_8_is_unknown_kind(logs) -> None:
    path = logs.write(
        [
            ("run.started", {}, None),
            ("substrate.subagent.orphan_reaped", {"count": 1, "pids": [4242]}, None),
            ("subagent.disposed", {"kind": "subprocess", "ok": True}, None),  # version 8: fine under 8
            ("run.completed", {}, None),
        ]
    )
    assert logs.read(path).findings == []
    verdict = logs.read(path, schema_version=8)
    assert verdict.errors == [("UNKNOWN_KIND", 2)]
    assert "added in schema version 9" in verdict.findings[0].message
    assert verdict.exit_code == ExitCode.SCHEMA
    assert len(verdict.events) == 4  # a schema problem does not stop the events
    assert all(ev.trusted for ev in verdict.events)
    verdict = logs.read(path, schema_version=7)
    assert verdict.errors == [("UNKNOWN_KIND", 2), ("UNKNOWN_KIND", 3)]


def test_unknown_schema_version_is_refused() -> None:
    with pytest.raises(ValueError):
        ChainReader("whatever.jsonl", schema_version=10)


def test_payload_invalid_is_exit_3(logs) -> None:
    path = logs.write(
        [("run.started", {}, None), ("probe.evaluated", {"score": 1.5}, None), ("run.completed", {}, None)],
        strict=False,
    )
    verdict = logs.read(path)
    assert verdict.errors == [("PAYLOAD_INVALID", 2)]
    assert verdict.exit_code == ExitCode.SCHEMA


def test_integral_float_counts_as_integer_in_payload_int_fields(logs) -> None:
    path = logs.write([("run.started", {}, None), ("run.completed", {"duration_ns": 3.0, "event_count": 2.0}, None)])
    assert b'"event_count":2' in path.read_bytes()  # and JCS writes it as 2
    assert logs.read(path).findings == []
    lines = logs.lines(path)
    lines[1] = lines[1].replace(b'"event_count":2', b'"event_count":2.0', 1)
    path.write_bytes(b"".join(lines))
    assert logs.read(path).findings == []  # same value, same hash, still an integer


# --- the warnings --------------------------------------------------------------------


def test_clock_regression_is_a_warning(logs) -> None:
    path = logs.path()
    with logs.writer(path) as w:
        for ts in (100, 200, 150, 300):
            w.append("laziness.skipped" if ts != 100 else "run.started", {}, timestamp_ns=ts)
        w.append("run.completed", {}, timestamp_ns=400)
    verdict = logs.read(path)
    assert verdict.errors == []
    assert verdict.warnings == [("CLOCK_REGRESSION", 3)]
    f = verdict.findings[0]
    assert (f.expected, f.actual) == (">= 200", "150")
    assert verdict.exit_code == 0


def test_run_dir_mismatch(logs) -> None:
    path = logs.write(path=logs.path(run_id="not-the-run-id"))
    verdict = logs.read(path)
    assert verdict.warnings == [("RUN_DIR_MISMATCH", None)]
    assert verdict.exit_code == 0
    other = logs.write(path=logs.path(run_id="x", name="log.jsonl"))  # only events.jsonl names its run
    assert logs.read(other).findings == []


def test_open_run_and_open_handles(logs) -> None:
    path = logs.write(
        [
            ("run.started", {}, None),
            ("step.started", {}, "a" * 32),
            ("tool.called", {"tool": "pytest"}, "a" * 32),
            ("prompt.sent", {"provider": "anthropic"}, "a" * 32),
            ("handshake.requested", {"milestone_id": "m-1", "status": "pending"}, "a" * 32),
            ("tool.called", {"tool": "bash"}, "a" * 32),
            ("tool.result", {"tool": "bash", "ok": True}, "a" * 32),
        ]
    )
    verdict = logs.read(path)
    assert verdict.errors == []
    assert verdict.warnings == [
        ("OPEN_HANDLE", 2),
        ("OPEN_HANDLE", 3),
        ("OPEN_HANDLE", 4),
        ("OPEN_HANDLE", 5),
        ("OPEN_RUN", 1),
    ]
    assert [f.offset for f in verdict.findings] == [logs.offset(path, n) for n in (2, 3, 4, 5, 1)]
    assert verdict.exit_code == 0
    strict = logs.read(path, require_closed=True)
    assert strict.errors == [("OPEN_RUN", 1)]
    assert strict.exit_code == ExitCode.INCOMPLETE


def test_closed_run_with_open_step_warns_open_handle_only(logs) -> None:
    path = logs.write([("run.started", {}, None), ("step.started", {}, "a" * 32), ("run.completed", {}, None)])
    verdict = logs.read(path, require_closed=True)
    assert verdict.findings and verdict.warnings == [("OPEN_HANDLE", 2)]
    assert verdict.exit_code == 0


def test_repaired_log_is_reported(logs) -> None:
    path = logs.path()
    with logs.writer(path) as w:
        run = w.append("run.started", {})
        step = w.append("step.started", {}, step_id="a" * 32)
        w.append(
            "step.rolled_back",
            {"synthesized": True, "reason": "interrupted", "source_event_id": step["id"]},
            step_id="a" * 32,
            parent_id=step["id"],
        )
        w.append(
            "run.aborted",
            {"synthesized": True, "reason": "interrupted", "source_event_id": run["id"]},
            parent_id=run["id"],
        )
    verdict = logs.read(path)
    assert verdict.errors == []
    assert verdict.warnings == [("REPAIRED", None)]
    assert "2 synthesized close(s)" in verdict.findings[0].message
    assert verdict.exit_code == 0


def test_empty_log(logs) -> None:
    path = logs.path()
    path.write_bytes(b"")
    verdict = logs.read(path)
    assert verdict.warnings == [("EMPTY_LOG", None)]
    assert verdict.exit_code == 0
    strict = logs.read(path, require_closed=True)
    assert strict.errors == [("EMPTY_LOG", None)]
    assert strict.exit_code == ExitCode.INCOMPLETE


def test_foreign_run_id_and_duplicate_id(logs) -> None:
    path = logs.five()
    lines = logs.lines(path)
    e2, e3 = json.loads(lines[1]), json.loads(lines[2])
    lines[2] = logs.line_of(logs.rehash({**e3, "run_id": "b" * 32, "id": e2["id"]}))
    path.write_bytes(b"".join(lines))
    verdict = logs.read(path)
    assert verdict.errors == [("FOREIGN_RUN_ID", 3), ("DUPLICATE_ID", 3), ("CHAIN_BREAK", 4)]
    foreign = verdict.findings[0]
    assert (foreign.expected, foreign.actual, foreign.event_id) == (e2["run_id"], "b" * 32, e2["id"])


# --- EventReader.load ---------------------------------------------------------------


def test_load_returns_the_events(logs) -> None:
    path = logs.five()
    assert EventReader.load(path) == logs.events(path)


def test_load_raises_chain_broken_with_location(logs) -> None:
    path = logs.five()
    lines = logs.lines(path)
    e4 = json.loads(lines[3])
    lines[3] = logs.line_of({**e4, "payload": {**e4["payload"], "outcome": "COMMITTED", "reason": "forged"}})
    path.write_bytes(b"".join(lines))
    with pytest.raises(ChainBrokenError) as info:
        EventReader.load(path)
    err = info.value
    assert (err.code, err.line, err.offset) == ("HASH_MISMATCH", 4, logs.offset(path, 4))
    assert err.actual == e4["hash"]
    assert err.expected == logs.rehash(json.loads(lines[3]))["hash"]
    assert err.exit_code == ExitCode.TAMPERED


def test_load_raises_on_chain_break_with_expected_and_actual(logs) -> None:
    path = logs.five()
    lines = logs.lines(path)
    del lines[1]
    path.write_bytes(b"".join(lines))
    with pytest.raises(ChainBrokenError) as info:
        EventReader.load(path)
    err = info.value
    assert (err.code, err.line, err.offset) == ("CHAIN_BREAK", 2, logs.offset(path, 2))
    assert err.expected == json.loads(lines[0])["hash"]
    assert err.actual == json.loads(lines[1])["prev_hash"]


def test_load_raises_on_a_malformed_line(logs) -> None:
    path = logs.five()
    lines = logs.lines(path)
    lines[1] = b"NaN\n"
    path.write_bytes(b"".join(lines))
    with pytest.raises(ChainBrokenError) as info:
        EventReader.load(path)
    assert (info.value.code, info.value.line) == ("MALFORMED_LINE", 2)


def test_load_tolerates_schema_problems_and_torn_tail(logs) -> None:
    path = logs.write([("run.started", {}, None), ("probe.evaluated", {"score": 7}, None)], strict=False)
    path.write_bytes(path.read_bytes() + b'{"hash":')
    events = EventReader.load(path)
    assert [e["kind"] for e in events] == ["run.started", "probe.evaluated"]


def test_load_missing_file_raises_log_io_error(tmp_path: Path) -> None:
    with pytest.raises(LogIOError) as info:
        EventReader.load(tmp_path / "nope" / "events.jsonl")
    assert info.value.exit_code == ExitCode.IO


# --- bounded memory ------------------------------------------------------------------


def test_line_too_long_is_skipped_in_bounded_memory(logs) -> None:
    path = logs.five()
    lines = logs.lines(path)
    huge = b'{"payload":"' + b"x" * (5 * 1024 * 1024) + b'"}\n'
    lines.insert(2, huge)
    path.write_bytes(b"".join(lines))

    tracemalloc.start()
    try:
        reader = ChainReader(path, max_line_bytes=1024)
        events = list(reader)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 3 * 1024 * 1024, f"peak {peak} bytes: the reader held the long line"
    codes = [(f.code, f.line, f.offset) for f in reader.findings]
    assert codes == [("LINE_TOO_LONG", 3, logs.offset(path, 3))]
    assert [ev.line for ev in events] == [1, 2, 4, 5, 6]
    assert [ev.offset for ev in events] == [logs.offset(path, n) for n in (1, 2, 4, 5, 6)]
    assert reader.exit_code == ExitCode.TAMPERED


def test_line_exactly_at_the_limit_is_read(logs) -> None:
    path = logs.five()
    longest = max(len(line) - 1 for line in logs.lines(path))
    assert logs.read(path, max_line_bytes=longest).findings == []
    verdict = logs.read(path, max_line_bytes=longest - 1)
    assert [c for c, _ in verdict.errors] and {c for c, _ in verdict.errors} <= {"LINE_TOO_LONG"}


def test_line_too_long_as_last_line_without_newline(logs) -> None:
    path = logs.five()
    path.write_bytes(path.read_bytes() + b"{" + b" " * 5000)
    verdict = logs.read(path, max_line_bytes=1024)
    assert verdict.errors == [("LINE_TOO_LONG", 6)]


# --- I/O ---------------------------------------------------------------------------------


def _io(path: Path) -> None:
    reader = ChainReader(path)
    assert list(reader) == []
    assert [(f.code, f.severity) for f in reader.findings] == [("IO_ERROR", "error")]
    assert reader.exit_code == ExitCode.IO == 5


def test_missing_file(tmp_path: Path) -> None:
    _io(tmp_path / "missing" / "events.jsonl")


def test_directory(tmp_path: Path) -> None:
    _io(tmp_path)


def test_fifo_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "events.jsonl"
    os.mkfifo(fifo)
    done = threading.Event()
    error: list[BaseException] = []

    def run() -> None:
        try:
            _io(fifo)
        except BaseException as exc:
            error.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    if not done.wait(10):
        # unblock the reader (open a writer end) so the thread can finish, then fail
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail("reading a FIFO blocked")
    if error:
        raise error[0]


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="running as root: chmod 000 does not stop root from reading, so the file is readable",
)
def test_unreadable_file(logs) -> None:
    path = logs.five()
    path.chmod(0)
    try:
        _io(path)
    finally:
        path.chmod(0o644)


def test_io_error_mid_read_is_a_finding(logs, monkeypatch: pytest.MonkeyPatch) -> None:
    path = logs.five()
    import ract_cli.read.reader as reader_module

    real_open = reader_module.open_log

    class Failing:
        def __init__(self, f) -> None:
            self.f, self.n = f, 0

        def readline(self, size: int = -1) -> bytes:
            self.n += 1
            if self.n == 3:
                raise OSError(5, "Input/output error")
            return self.f.readline(size)

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            self.f.close()

    monkeypatch.setattr(reader_module, "open_log", lambda p: Failing(real_open(p)))
    reader = ChainReader(path, dialect="ract")  # (auto would read this small file whole while detecting it)
    events = list(reader)
    assert len(events) == 2
    assert [(f.code, f.line) for f in reader.findings if f.severity == "error"] == [("IO_ERROR", 3)]
    assert reader.exit_code == ExitCode.IO


@pytest.mark.parametrize(
    ("last", "codes"),
    [
        (b"[1,2]", [("TORN_TAIL", "error")]),
        (b'{"a":1,"a":2}', [("TORN_TAIL", "error")]),
        (b'{"a":1}', [("ENVELOPE_ERROR", "error")] * 2 + [("MISSING_FINAL_NEWLINE", "warning")]),  # missing, extra
    ],
    ids=["array", "duplicate-key", "bad-envelope"],
)
def test_last_line_without_newline_that_is_not_an_event(logs, last: bytes, codes: list) -> None:
    path = logs.five()
    path.write_bytes(path.read_bytes() + last)
    verdict = logs.read(path)
    assert [(f.code, f.severity) for f in verdict.findings if f.line == 6] == codes


@pytest.mark.parametrize(("make", "code"), [(m, c) for _, m, c in BAD_LINES], ids=[n for n, _, _ in BAD_LINES])
def test_bad_line_same_verdict_on_both_analysis_paths(logs, make, code: str) -> None:
    path = logs.five()
    original = logs.lines(path)[2][:-1]
    bad = make(original, json.loads(original))
    fast, reference = analyze_line(bad), analyze_line(bad, fast=False)
    assert [p.code for p in fast.problems] == [p.code for p in reference.problems] == [code]
    assert fast.event is reference.event is None


# --- the block framing (native chain mode, the prefilter) frames as LineFramer does ---------------

_PIECE = st.sampled_from([b"{", b"}", b"a", b"xyz" * 5, b"\r", b"\n", b"\r\n", b" ", b"k" * 40])


def _blocks_as_lines(data: bytes, limit: int, block: int) -> tuple[list[tuple[int, int, bytes | None]], int, int]:
    """frame_blocks' output, each Block expanded to its lines, and the framer's end and lines."""
    framer = LineFramer(io.BytesIO(data), limit)
    out: list[tuple[int, int, bytes | None]] = []
    for frame in frame_blocks(framer, block):
        if isinstance(frame, Block):
            assert frame.data[frame.hi :].find(b"\n") < 0 and frame.data[frame.hi - 1 : frame.hi] == b"\n"
            out += lines_of(frame.data, frame.lo, frame.hi, frame.line_no, frame.base, limit)
        else:
            out.append(frame)
    return out, framer.end, framer.lines


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(_PIECE, max_size=40), limit=st.integers(1, 120), block=st.integers(1, 70))
def test_block_framing_equals_line_framing(pieces: list[bytes], limit: int, block: int) -> None:
    """Lines within a read, across two reads, across many; over-long lines (skipped, never held); CRLF;
    a last line without its newline: the same lines, numbers, offsets, end and count as LineFramer."""
    data = b"".join(pieces)
    framer = LineFramer(io.BytesIO(data), limit)
    expected = list(framer)
    assert _blocks_as_lines(data, limit, block) == (expected, framer.end, framer.lines)


@pytest.mark.parametrize("block", [1, 2, 5, 64, 1 << 20])
def test_block_framing_when_the_consumer_counts(block: int) -> None:
    """A consumer that says how many lines a block held (as the reader does, from C's count) gets the
    line numbers the framer's own count gives."""
    data = b"".join(b"line %d\n" % i for i in range(50)) + b"tail"
    counted, plain = [], []
    for frame in frame_blocks(LineFramer(io.BytesIO(data), 100), block):
        if isinstance(frame, Block):
            frame.lines = frame.data.count(b"\n", frame.lo, frame.hi)
            counted.append((frame.line_no, frame.base + frame.lo))
        else:
            counted.append(frame[:2])
    for frame in frame_blocks(LineFramer(io.BytesIO(data), 100), block):
        plain.append((frame.line_no, frame.base + frame.lo) if isinstance(frame, Block) else frame[:2])
    assert counted == plain and plain[-1] == (51, len(data) - 4)


@pytest.mark.parametrize("extra", [-200, -1, 0, 1, 200])
def test_a_run_read_whole_while_detected_gives_the_verdict_of_opening_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: int
) -> None:
    """A file smaller than the dialect's whole read is read from its bytes, without a second open; at
    and past that size it is opened again: the same findings either way."""
    from ract_cli.read import dialect as dialect_module

    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=2_500)
    data = path.read_bytes()
    size = dialect_module._WHOLE_BYTES + extra
    assert len(data) > size
    path.write_bytes(data[:size])  # cut inside a line: a torn tail, either way
    opened = ChainReader(path, dialect="ract")
    expected = ([ev.line for ev in opened], [f.to_dict() for f in opened.findings])
    import ract_cli.read.reader as reader_module

    calls: list[object] = []
    real_open = reader_module.open_log
    monkeypatch.setattr(reader_module, "open_log", lambda p: calls.append(p) or real_open(p))
    detected = ChainReader(path)
    assert ([ev.line for ev in detected], [f.to_dict() for f in detected.findings]) == expected
    assert len(calls) == (0 if size < dialect_module._WHOLE_BYTES else 1)
