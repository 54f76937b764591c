"""SPEC §2.1-§2.3, the wire format: framing, the envelope, canonical serialization.

Black-box: logs are built with the two independent oracles (``builders`` on
``tests/independent_jcs.py``; ``scratch``, on ``jcs_from_scratch.py``) and run
through the CLI in-process, some as a subprocess. The first tests check the
oracles themselves against RFC 8785's vectors (``tests/data/jcs``) and the
``rfc8785`` package.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import struct

import pytest
import rfc8785
from independent_jcs import T0, ZERO, chain, jcs, line, rhash

from . import scratch_builders as scratch
from .builders import (
    JCS_CORPUS,
    RUN,
    closed_run,
    codes,
    ev,
    good_lines,
    logpath,
    ract,
    sub,
    verify_json,
    write,
)

# --- the oracles agree with RFC 8785 --------------------------------------------------------------


def test_own_jcs_matches_shared_corpus():
    corpora = JCS_CORPUS  # the copy in tests/data/jcs: never skipped for want of a corpus
    n = 0
    for inp in sorted((corpora / "input").glob("*.json")):
        out = corpora / "output" / inp.name
        if not out.exists():
            continue
        value = json.loads(inp.read_bytes())
        assert jcs(value).encode() == out.read_bytes().rstrip(b"\n") or jcs(value).encode() == out.read_bytes()
        n += 1
    assert n > 0


def test_own_encoder_agrees_with_rfc8785():
    for v in [{"b": 1, "a": [1.5, "é", None]}, {"\u20ac": 1, "\U0001f600": 2, "\ufb33": 3}, [1e21, 1e-7, 4.5]]:
        assert jcs(v) == rfc8785.dumps(v).decode()


def test_own_encoder_is_jcs():
    rfc8785 = pytest.importorskip("rfc8785")
    vectors = sorted((JCS_CORPUS / "input").glob("*.json"))
    assert vectors, "tests/data/jcs lost its vectors"
    for inp in vectors:
        want = (JCS_CORPUS / "output" / inp.name).read_bytes()
        assert scratch.jcs(json.loads(inp.read_bytes())).encode() in (want, want.rstrip(b"\n")), inp.name
    rnd = random.Random(85)
    specials = [1e21, 1e-7, 1e16, 4.5, -0.0, 2.0, 1e20, 5e-324, 1.7976931348623157e308, 1e-6, 0.1, 9007199254740993.0]
    for x in specials + [struct.unpack("d", rnd.randbytes(8))[0] for _ in range(20000)]:
        if math.isfinite(x):
            assert scratch.es_number(x) == rfc8785.dumps(x).decode(), x


# --- §2.1 framing ---------------------------------------------------------------------------------


def test_clean_log_verifies(tmp_path, capsys):
    p = write(logpath(tmp_path), closed_run())
    rc, rep = verify_json(capsys, p)
    assert rc == 0 and rep["exit_code"] == 0
    assert rep["files"][0]["head"] == rhash(json.loads(p.read_bytes().splitlines()[-1]))


def _bad_variants():
    good = good_lines()
    ev2 = json.loads(good[1])
    dup_nested = good[1].replace(b'"payload":{', b'"payload":{"x":1,"x":2,', 1)
    return {
        "blank line": good[0] + b"\n" + b"".join(good[1:]),
        "bom first line": b"\xef\xbb\xbf" + b"".join(good),
        "array": good[0] + b"[1,2]\n" + b"".join(good[1:]),
        "bare value": good[0] + b"42\n" + b"".join(good[1:]),
        "bare string": good[0] + b'"x"\n' + b"".join(good[1:]),
        "invalid utf8": good[0]
        + good[1].replace(b'"payload":{', b'"payload":{"s":"\xff\xfe",', 1)
        + b"".join(good[2:]),
        "lone surrogate": good[0]
        + good[1].replace(b'"payload":{', b'"payload":{"s":"\\ud800",', 1)
        + b"".join(good[2:]),
        "NaN": good[0] + good[1].replace(b'"payload":{', b'"payload":{"s":NaN,', 1) + b"".join(good[2:]),
        "Infinity": good[0] + good[1].replace(b'"payload":{', b'"payload":{"s":-Infinity,', 1) + b"".join(good[2:]),
        "int above int64": good[0]
        + good[1].replace(b'"payload":{', b'"payload":{"s":9223372036854775808,', 1)
        + b"".join(good[2:]),
        "int below int64": good[0]
        + good[1].replace(b'"payload":{', b'"payload":{"s":-9223372036854775809,', 1)
        + b"".join(good[2:]),
        "duplicate key top": good[0] + good[1].replace(b'{"hash"', b'{"kind":"x","hash"', 1) + b"".join(good[2:]),
        "duplicate key nested": good[0] + dup_nested + b"".join(good[2:]),
        "non-parsing followed by newline": good[0] + good[1][:40] + b"\n" + b"".join(good[2:]),
        "non-parsing last line with newline": b"".join(good) + b'{"id":\n',
        "two objects on one line": good[0] + good[1].rstrip(b"\n") + good[2] + b"".join(good[3:]),
    }, ev2


@pytest.mark.parametrize("name", sorted(_bad_variants()[0]))
def test_malformed_lines_exit_1(tmp_path, capsys, name):
    raw = _bad_variants()[0][name]
    p = write(logpath(tmp_path), None, raw=raw)
    rc, rep = verify_json(capsys, p)
    assert rc == 1, (name, codes(rep))


def test_int64_bounds_are_inclusive(tmp_path, capsys):
    e = chain([ev("run.started", {"big": 2**63 - 1, "small": -(2**63)})])
    p = write(logpath(tmp_path), e)
    rc, rep = verify_json(capsys, p)
    assert rc == 0, codes(rep)


@pytest.mark.parametrize(
    "name,raw_insert",
    [
        ("duplicate key spelled with an escape", b'"a":1,"\\u0061":2,'),
        ("float overflowing to infinity", b'"a":1e400,'),
        ("utf-8 encoded surrogate", b'"a":"\xed\xa0\x80",'),
        ("overlong utf-8", b'"a":"\xc0\xaf",'),
        ("reversed surrogate pair", b'"a":"\\udc00\\ud800",'),
    ],
)
def test_more_malformed(tmp_path, capsys, name, raw_insert):
    good = good_lines()
    raw = good[0] + good[1].replace(b'"payload":{', b'"payload":{' + raw_insert, 1) + b"".join(good[2:])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1, codes(rep)


@pytest.mark.parametrize(
    "insert",
    [b'"\\ud800":1,', b'"a":"\\x",', b'"a":"\x01",', b'"a":"\t",', b'"a":01,', b'"a":+1,', b"'a':1,"],
    ids=["lone-surrogate-key", "bad-escape", "raw-control", "raw-tab", "leading-zero", "plus-sign", "single-quote"],
)
def test_json_syntax_errors_are_malformed(tmp_path, capsys, insert):
    g = good_lines()
    raw = g[0] + g[1].replace(b'"payload":{', b'"payload":{' + insert, 1) + b"".join(g[2:])
    rc, _rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1


@pytest.mark.parametrize("value", ["\x7f", "\x00", "\u00ad\u200b\ufeff", "\U0010ffff"])
def test_unusual_but_valid_strings_verify(tmp_path, capsys, value):
    evs = chain([ev("run.started", {"s": value, value: 1}), ev("run.completed", {})])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 0, codes(rep)


def test_crlf_accepted(tmp_path, capsys):
    raw = b"".join(ln.replace(b"\n", b"\r\n") for ln in good_lines())
    p = write(logpath(tmp_path), None, raw=raw)
    rc, rep = verify_json(capsys, p)
    assert rc == 0, codes(rep)


def test_line_separators_inside_strings_are_not_line_breaks(tmp_path, capsys):
    s = "a\u2028b\u2029c\x85d\x1ce\x1df\x1eg"
    evs = chain([ev("run.started", {"s": s}), ev("tool.called", {"tool": s}), ev("run.completed", {})])
    p = write(logpath(tmp_path), evs)
    raw = p.read_bytes()
    assert "\u2028".encode() in raw and raw.count(b"\n") == 3
    assert ract(capsys, "verify", "-q", p)[0] == 0
    r = sub("grep", "--kind", "*", p)
    assert r.returncode == 0 and r.stdout == raw
    rc, out, _ = ract(capsys, "replay", "--format", "jsonl", "--workspace", tmp_path, p)
    assert rc == 0 and out.encode("utf-8", "surrogatepass") == raw


def test_two_objects_split_by_bare_cr_are_one_malformed_line(tmp_path, capsys):
    g = good_lines()
    raw = g[0] + g[1].rstrip(b"\n") + b"\r" + g[2] + g[3]
    rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1 and rep["files"][0]["findings"][0]["line"] == 2


def test_empty_file_is_not_tampered_crash(tmp_path, capsys):
    p = write(logpath(tmp_path), None, raw=b"")
    rc, _out, _err = ract(capsys, "verify", p)
    assert rc in (0, 1, 4, 5)


# --- §2.1 framing: exact line, offset and code of every malformed line ----------------------------


def _in_payload(ln: bytes, insert: bytes) -> bytes:
    return ln.replace(b'"payload":{', b'"payload":{' + insert, 1)


# name -> (lines -> list of physical lines, 1-based line of the only error, allowed codes)
MALFORMED = {
    "blank line": (lambda L: [*L[:2], b"\n", *L[2:]], 3, {"MALFORMED_LINE"}),
    "CRLF blank line": (lambda L: [*L[:2], b"\r\n", *L[2:]], 3, {"MALFORMED_LINE"}),
    "whitespace-only line": (lambda L: [*L[:2], b" \t \n", *L[2:]], 3, {"MALFORMED_LINE"}),
    "BOM before line 3": (lambda L: [*L[:2], b"\xef\xbb\xbf" + L[2], *L[3:]], 3, {"MALFORMED_LINE"}),
    "NUL byte line": (lambda L: [*L[:2], b"\x00\n", *L[2:]], 3, {"MALFORMED_LINE"}),
    "null line": (lambda L: [*L[:2], b"null\n", *L[2:]], 3, {"MALFORMED_LINE"}),
    "array line": (lambda L: [*L[:2], b"[]\n", *L[2:]], 3, {"MALFORMED_LINE"}),
    "empty object line": (lambda L: [*L[:2], b"{}\n", *L[2:]], 3, {"ENVELOPE_ERROR", "MALFORMED_LINE"}),
    "trailing garbage": (lambda L: [*L[:2], L[2][:-1] + b" x\n", *L[3:]], 3, {"MALFORMED_LINE"}),
    "trailing comma": (lambda L: [*L[:2], L[2][:-2] + b",}\n", *L[3:]], 3, {"MALFORMED_LINE"}),
    "form feed as whitespace": (lambda L: [*L[:2], b"{\x0c" + L[2][1:], *L[3:]], 3, {"MALFORMED_LINE"}),
    "vertical tab as whitespace": (lambda L: [*L[:2], b"{\x0b" + L[2][1:], *L[3:]], 3, {"MALFORMED_LINE"}),
    "no-break space as whitespace": (lambda L: [*L[:2], b"{\xc2\xa0" + L[2][1:], *L[3:]], 3, {"MALFORMED_LINE"}),
    "duplicate key three deep": (
        lambda L: [*L[:2], _in_payload(L[2], b'"a":{"b":{"c":1,"c":1}},'), *L[3:]],
        3,
        {"DUPLICATE_KEY", "MALFORMED_LINE"},
    ),
    "duplicate key inside an array": (
        lambda L: [*L[:2], _in_payload(L[2], b'"l":[{"a":1},{"a":1,"a":1}],'), *L[3:]],
        3,
        {"DUPLICATE_KEY", "MALFORMED_LINE"},
    ),
    "duplicate empty key": (
        lambda L: [*L[:2], _in_payload(L[2], b'"":1,"":2,'), *L[3:]],
        3,
        {"DUPLICATE_KEY", "MALFORMED_LINE"},
    ),
    "duplicate key via escaped slash": (
        lambda L: [*L[:2], _in_payload(L[2], b'"a/b":1,"a\\/b":1,'), *L[3:]],
        3,
        {"DUPLICATE_KEY", "MALFORMED_LINE"},
    ),
    "duplicate envelope key": (
        lambda L: [*L[:2], L[2].replace(b'"kind":', b'"kind":"x","kind":', 1), *L[3:]],
        3,
        {"DUPLICATE_KEY", "MALFORMED_LINE"},
    ),
    "2^64 nested in arrays": (
        lambda L: [*L[:2], _in_payload(L[2], b'"a":[[18446744073709551616]],'), *L[3:]],
        3,
        {"MALFORMED_LINE"},
    ),
    "-2^63-1 in an object": (
        lambda L: [*L[:2], _in_payload(L[2], b'"a":{"b":-9223372036854775809},'), *L[3:]],
        3,
        {"MALFORMED_LINE"},
    ),
    "lone low surrogate": (lambda L: [*L[:2], _in_payload(L[2], b'"a":"\\udc00",'), *L[3:]], 3, {"MALFORMED_LINE"}),
    "high surrogate then a letter": (
        lambda L: [*L[:2], _in_payload(L[2], b'"a":"\\ud83dx",'), *L[3:]],
        3,
        {"MALFORMED_LINE"},
    ),
    "lone surrogate in a key": (lambda L: [*L[:2], _in_payload(L[2], b'"\\udbff":1,'), *L[3:]], 3, {"MALFORMED_LINE"}),
    "invalid UTF-8 in a key": (lambda L: [*L[:2], _in_payload(L[2], b'"\xff":1,'), *L[3:]], 3, {"MALFORMED_LINE"}),
    "UTF-8 above U+10FFFF": (
        lambda L: [*L[:2], _in_payload(L[2], b'"a":"\xf4\x90\x80\x80",'), *L[3:]],
        3,
        {"MALFORMED_LINE"},
    ),
    "truncated UTF-8 mid line": (
        lambda L: [*L[:2], _in_payload(L[2], b'"a":"\xe2\x82",'), *L[3:]],
        3,
        {"MALFORMED_LINE"},
    ),
    "NaN": (lambda L: [*L[:2], _in_payload(L[2], b'"a":NaN,'), *L[3:]], 3, {"MALFORMED_LINE"}),
    "Infinity": (lambda L: [*L[:2], _in_payload(L[2], b'"a":Infinity,'), *L[3:]], 3, {"MALFORMED_LINE"}),
    "unparsable line ending in newline, last": (lambda L: [*L, L[0][:50] + b"\n"], 5, {"MALFORMED_LINE"}),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_line_is_one_finding_at_its_line_and_offset(tmp_path, capsys, name):
    build, bad_line, allowed = MALFORMED[name]
    _, L = scratch.base()
    lines = build(L)
    rc, rep = scratch.verify_json(capsys, scratch.write(scratch.logpath(tmp_path), raw=b"".join(lines)))
    assert rc == 1, rep
    errs = scratch.errors(rep)
    # exactly one error: the damaged line; the line after it is not a second break
    assert [(ln, off) for _, ln, off in errs] == [(bad_line, scratch.offsets(lines)[bad_line - 1])], errs
    assert errs[0][0] in allowed, errs
    bad = next(f for f in rep["files"][0]["findings"] if f["severity"] == "error")
    assert bad["event_id"] is None or re.fullmatch(r"[0-9a-f]{32}", bad["event_id"])


ACCEPTED = {
    "CRLF on every line": lambda L: [ln[:-1] + b"\r\n" for ln in L],
    "CRLF on every other line": lambda L: [ln[:-1] + (b"\r\n" if i % 2 else b"\n") for i, ln in enumerate(L)],
    "two CRs before the newline": lambda L: [ln[:-1] + b"\r\r\n" for ln in L],
    "leading blanks and tabs": lambda L: [b" \t" + ln for ln in L],
    "trailing blanks before the newline": lambda L: [ln[:-1] + b" \t \n" for ln in L],
    "NFC and NFD keys are two keys": None,
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_json_whitespace_and_line_endings_are_accepted(tmp_path, capsys, name):
    if ACCEPTED[name] is None:
        evs = scratch.chain([scratch.ev("run.started", {"\u00e9": 1, "e\u0301": 2}), scratch.ev("run.completed", {})])
        lines = [scratch.line(e) for e in evs]
    else:
        evs, L = scratch.base()
        lines = ACCEPTED[name](L)
    rc, rep = scratch.verify_json(capsys, scratch.write(scratch.logpath(tmp_path), raw=b"".join(lines)))
    assert rc == 0 and scratch.errors(rep) == [], rep
    assert rep["files"][0]["events"] == len(evs) and rep["files"][0]["head"] == evs[-1]["hash"]


# --- §2.1 the last line ---------------------------------------------------------------------------


def test_missing_final_newline_is_warning(tmp_path, capsys):
    raw = b"".join(good_lines()).rstrip(b"\n")
    p = write(logpath(tmp_path), None, raw=raw)
    rc, rep = verify_json(capsys, p)
    assert rc == 0
    assert "MISSING_FINAL_NEWLINE" in codes(rep)


def test_torn_tail_exit_4(tmp_path, capsys):
    good = good_lines()
    raw = b"".join(good) + good[0][:50]
    p = write(logpath(tmp_path), None, raw=raw)
    rc, rep = verify_json(capsys, p)
    assert rc == 4, codes(rep)


def test_torn_tail_subprocess(tmp_path):
    good = good_lines()
    p = write(logpath(tmp_path), None, raw=b"".join(good) + good[0][:50])
    r = sub("verify", "-q", p)
    assert r.returncode == 4


def test_last_line_without_newline_judged_as_event(tmp_path, capsys):
    evs = closed_run()
    evs[-1]["payload"]["final_decision"] = "edited"  # hash no longer matches
    raw = b"".join(line(e) for e in evs).rstrip(b"\n")
    rc, _rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1


def test_trailing_blank_line_is_malformed(tmp_path, capsys):
    raw = b"".join(good_lines()) + b"\n"
    rc, _rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1


def _tail_cases():
    _evs, L = scratch.base()
    body = b"".join(L)
    crlf = b"".join(ln[:-1] + b"\r\n" for ln in L)
    last_utf8 = L[-1].replace(b'"done"', '"d\u00e9\u00e9"'.encode())
    cut_mid_char = last_utf8[: last_utf8.index(b"\xc3\xa9") + 1]
    return {
        # name: (raw, exit, code expected on the last line, its line, offset)
        "missing final newline": (body[:-1], 0, "MISSING_FINAL_NEWLINE", 4, len(body) - len(L[-1])),
        "missing final newline after CRLF lines (ends in CR)": (
            crlf[:-1],
            0,
            "MISSING_FINAL_NEWLINE",
            4,
            len(crlf) - len(L[-1]) - 1,
        ),
        "torn: half a line": (body + L[0][:60], 4, "TORN_TAIL", 5, len(body)),
        "torn: one brace": (body + b"{", 4, "TORN_TAIL", 5, len(body)),
        "torn: only blanks": (body + b"  ", 4, "TORN_TAIL", 5, len(body)),
        "torn: a lone CR": (body + b"\r", 4, "TORN_TAIL", 5, len(body)),
        "torn: cut inside a UTF-8 character": (
            b"".join(L[:-1]) + cut_mid_char,
            4,
            "TORN_TAIL",
            4,
            len(body) - len(L[-1]),
        ),
        "torn: the only line": (L[0][:30], 4, "TORN_TAIL", 1, 0),
        "unparsable last line WITH newline is malformed": (body + L[0][:60] + b"\n", 1, "MALFORMED_LINE", 5, len(body)),
        "complete object without newline whose hash is wrong": (
            b"".join(L[:-1]) + L[-1].replace(b'"done"', b'"dune"')[:-1],
            1,
            "HASH_MISMATCH",
            4,
            len(body) - len(L[-1]),
        ),
    }


@pytest.mark.parametrize("name", sorted(_tail_cases()))
def test_last_line_rules(tmp_path, capsys, name):
    raw, want_rc, code, ln, off = _tail_cases()[name]
    rc, rep = scratch.verify_json(capsys, scratch.write(scratch.logpath(tmp_path), raw=raw))
    assert rc == want_rc, rep
    hits = [f for f in rep["files"][0]["findings"] if f["code"] == code]
    assert [(f["line"], f["offset"]) for f in hits] == [(ln, off)], rep
    # nothing else is an error
    assert [e for e in scratch.errors(rep) if e[0] != code] == []


def test_torn_tail_does_not_hide_an_earlier_break_or_schema_error(tmp_path, capsys):
    _evs, L = scratch.base()
    tampered = [L[0], L[1].replace(b'"aaaa', b'"baaa', 1), *L[2:]]
    rc, rep = scratch.verify_json(
        capsys, scratch.write(scratch.logpath(tmp_path, "t"), raw=b"".join(tampered) + b'{"id')
    )
    assert rc == 1 and [c for c, _, _ in scratch.errors(rep)] == ["HASH_MISMATCH", "TORN_TAIL"]
    schema = scratch.chain(
        [scratch.ev("run.started", {}), scratch.ev("no.such.kind", {}), scratch.ev("run.completed", {})]
    )
    rc, rep = scratch.verify_json(
        capsys, scratch.write(scratch.logpath(tmp_path, "s"), raw=b"".join(scratch.line(e) for e in schema) + b'{"id')
    )
    assert rc == 3 and [c for c, _, _ in scratch.errors(rep)] == ["UNKNOWN_KIND", "TORN_TAIL"]
    rc, rep = scratch.verify_json(
        capsys,
        scratch.write(
            scratch.logpath(tmp_path, "o"),
            raw=scratch.line(scratch.chain([scratch.ev("run.started", {})])[0]) + b'{"id',
        ),
        "--require-closed",
    )
    assert rc == 4 and sorted(c for c, _, _ in scratch.errors(rep)) == ["OPEN_RUN", "TORN_TAIL"]


# --- §2.2 envelope --------------------------------------------------------------------------------


def _mutated(mut):
    evs = closed_run()
    e = evs[1]
    mut(e)
    chain(evs)  # rehash so only the envelope is wrong
    return evs


ENVELOPE_BAD = {
    "missing key": lambda e: e.pop("parent_id"),
    "extra key": lambda e: e.__setitem__("extra", 1),
    "id uppercase": lambda e: e.__setitem__("id", "AB" * 16),
    "id short": lambda e: e.__setitem__("id", "ab" * 15),
    "id int": lambda e: e.__setitem__("id", 5),
    "step_id bad": lambda e: e.__setitem__("step_id", "zz" * 16),
    "parent_id 64 hex": lambda e: e.__setitem__("parent_id", "ab" * 32),
    "timestamp negative": lambda e: e.__setitem__("timestamp_ns", -1),
    "timestamp 2^63": lambda e: e.__setitem__("timestamp_ns", 2**63),
    "timestamp float": lambda e: e.__setitem__("timestamp_ns", 1.5),
    "timestamp string": lambda e: e.__setitem__("timestamp_ns", "1"),
    "timestamp bool": lambda e: e.__setitem__("timestamp_ns", True),
    "kind int": lambda e: e.__setitem__("kind", 3),
    "payload list": lambda e: e.__setitem__("payload", []),
    "payload null": lambda e: e.__setitem__("payload", None),
    "foreign run_id": lambda e: e.__setitem__("run_id", "cd" * 16),
    "run_id uppercase": lambda e: e.__setitem__("run_id", RUN.upper()),
    "step_id 64 hex": lambda e: e.__setitem__("step_id", "ab" * 32),
    "kind null": lambda e: e.__setitem__("kind", None),
    "payload string": lambda e: e.__setitem__("payload", "{}"),
}


@pytest.mark.parametrize("name", sorted(ENVELOPE_BAD))
def test_envelope_errors_exit_1(tmp_path, capsys, name):
    evs = _mutated(ENVELOPE_BAD[name])
    p = write(logpath(tmp_path), evs)
    rc, rep = verify_json(capsys, p)
    assert rc == 1, (name, codes(rep))


def test_timestamp_bounds_ok(tmp_path, capsys):
    evs = closed_run()
    evs[0]["timestamp_ns"] = 0
    evs[-1]["timestamp_ns"] = 2**63 - 1
    chain(evs)
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 0, codes(rep)


def test_timestamp_exponent_form_rejected(tmp_path, capsys):
    evs = closed_run()
    good = [line(e) for e in evs]
    # 1.764e18 written with an exponent: the value is integral but the token is not an integer
    e = evs[1]
    text = jcs(e).replace(f'"timestamp_ns":{e["timestamp_ns"]}', '"timestamp_ns":1e18')
    body = json.loads(text)
    body["timestamp_ns"] = 1e18
    raw = good[0] + text.encode() + b"\n" + b"".join(good[2:])
    rc, _rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1


@pytest.mark.parametrize("token", ["1764000000000000000.0", "1.764e18", "1764000000000000000e0"])
def test_timestamp_with_fraction_or_exponent_is_envelope_error(tmp_path, capsys, token):
    evs = closed_run()
    text = jcs(evs[1]).replace(f'"timestamp_ns":{evs[1]["timestamp_ns"]}', f'"timestamp_ns":{token}')
    good = [line(e) for e in evs]
    raw = good[0] + text.encode() + b"\n" + b"".join(good[2:])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1, codes(rep)


def test_null_step_and_parent_ok(tmp_path, capsys):
    evs = chain([ev("run.started", {}), ev("run.completed", {})])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 0, codes(rep)


def test_duplicate_id_exit_1(tmp_path, capsys):
    evs = closed_run()
    evs[2]["id"] = evs[1]["id"]
    chain(evs)
    rc, _rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 1


def test_hash_fields_must_be_lowercase_hex(tmp_path, capsys):
    evs = closed_run()
    good = [line(e) for e in evs]
    upper_hash = good[1].replace(evs[1]["hash"].encode(), evs[1]["hash"].upper().encode())
    raw = good[0] + upper_hash + b"".join(good[2:])
    rc, _rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1
    e = dict(evs[1])
    e["prev_hash"] = e["prev_hash"].upper()
    e["hash"] = rhash(e)
    raw = good[0] + line(e) + b"".join(good[2:])
    rc, _rep = verify_json(capsys, write(tmp_path / "b" / RUN / "events.jsonl", None, raw=raw))
    assert rc == 1


# --- §2.3 canonical serialization: another writer's spelling still verifies -----------------------


def test_foreign_formatting_verifies(tmp_path, capsys):
    payload = {
        "b": 1.0,
        "a": -0.0,
        "big": 1e21,
        "small": 1e-7,
        "e16": 1e16,
        "half": 4.5,
        "text": 'caf\u00e9 \u2028 \U0001f600 "q" \\ \x01',
        "\U0001f600": "astral key",
        "\ufb01": "bmp key above surrogates",
        "nested": {"z": [1, 2.0, {"y": None}], "a": True},
        "huge_int": 2**62 + 1,
    }
    evs = chain([ev("run.started", payload), ev("run.completed", {})])
    # write with Python json: spaces, \u escapes, insertion order, 1.0 / -0.0 / 1e+21 forms
    raw = b""
    for e in evs:
        ordered = dict(reversed(list(e.items())))
        raw += json.dumps(ordered, ensure_ascii=True, indent=None, separators=(", ", ": ")).encode() + b"\n"
    assert b"1.0" in raw and b"-0.0" in raw and b"1e+21" in raw and b"\\ud83d" in raw
    rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 0, codes(rep)
    assert rep["files"][0]["head"] == evs[-1]["hash"]


def test_hash_over_non_jcs_form_is_mismatch(tmp_path, capsys):
    evs = closed_run()
    e = evs[1]
    body = {k: v for k, v in e.items() if k != "hash"}
    e["hash"] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()  # spaces: not JCS
    rc, _rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 1


def test_utf16_key_order_matters(tmp_path, capsys):
    # code-point order puts U+FB01 before U+1F600; UTF-16 order puts the astral key first
    payload = {"\U0001f600": 1, "\ufb01": 2}
    evs = [ev("run.started", payload)]
    evs[0]["timestamp_ns"] = T0
    evs[0]["prev_hash"] = ZERO
    body = {k: v for k, v in evs[0].items() if k != "hash"}
    wrong = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert wrong != jcs(body)
    evs[0]["hash"] = hashlib.sha256(wrong.encode()).hexdigest()
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 1
    evs[0]["hash"] = rhash(evs[0])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 0, codes(rep)


@pytest.mark.parametrize(
    "token,value",
    [
        ("-0", 0),
        ("1E2", 100.0),
        ("1.5e-7", 1.5e-7),
        ("5e-324", 5e-324),
        ("0.1", 0.1),
        (str(2**60), 2**60),
        ("100.000", 100),
    ],
)
def test_number_spellings_hash_by_value(tmp_path, capsys, token, value):
    evs = chain([ev("run.started", {"v": value}), ev("run.completed", {})])
    text = jcs(evs[0]).replace(f'"v":{jcs(value)}', f'"v":{token}')
    raw = text.encode() + b"\n" + line(evs[1])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 0, codes(rep)


def test_string_escape_spellings_hash_by_value(tmp_path, capsys):
    evs = chain([ev("run.started", {"v": "a/b\u00e9\x1f\t"}), ev("run.completed", {})])
    text = jcs(evs[0]).replace("a/b", "a\\/b").replace("\u00e9", "\\u00E9").replace("\\t", "\\u0009")
    assert text != jcs(evs[0])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=text.encode() + b"\n" + line(evs[1])))
    assert rc == 0, codes(rep)


def test_canonical_library_matches_corpus_and_rfc8785():
    import random

    from ract_cli.format.canonical import canonical_bytes

    corpora = JCS_CORPUS
    assert sorted((corpora / "input").glob("*.json")), "tests/data/jcs lost its vectors"
    for inp in sorted((corpora / "input").glob("*.json")):
        out = corpora / "output" / inp.name
        if out.exists():
            assert (
                canonical_bytes(json.loads(inp.read_bytes())) == out.read_bytes().rstrip(b"\n")
                or canonical_bytes(json.loads(inp.read_bytes())) == out.read_bytes()
            ), inp.name
    rnd = random.Random(8785)

    def value(depth=0):
        r = rnd.random()
        if depth > 3 or r < 0.3:
            return rnd.choice(
                [
                    rnd.randint(-(2**53), 2**53),
                    rnd.uniform(-1e30, 1e30),
                    rnd.random() * 10 ** rnd.randint(-30, 30),
                    "".join(
                        chr(
                            rnd.choice([rnd.randint(0, 0x7F), rnd.randint(0x80, 0xD7FF), rnd.randint(0xE000, 0x10FFFF)])
                        )
                        for _ in range(rnd.randint(0, 6))
                    ),
                    True,
                    None,
                ]
            )
        if r < 0.6:
            return [value(depth + 1) for _ in range(rnd.randint(0, 4))]
        return {
            "".join(
                chr(rnd.choice([rnd.randint(0x20, 0x7F), rnd.randint(0xE000, 0xFFFF), rnd.randint(0x10000, 0x10FFFF)]))
                for _ in range(rnd.randint(0, 3))
            ): value(depth + 1)
            for _ in range(rnd.randint(0, 4))
        }

    for _ in range(500):
        v = value()
        assert canonical_bytes(v) == rfc8785.dumps(v), v
        assert canonical_bytes(v) == jcs(v).encode()
    assert canonical_bytes({"t": T0}) == b'{"t":%d}' % T0
    assert canonical_bytes({"t": 2**63 - 1}) == b'{"t":9223372036854775807}'


# --- §2.3 canonical hashing: a randomized property against the scratch JCS ------------------------


_CHARS = [
    "a",
    "Z",
    "\u00e9",
    "\u2028",
    "\ufb01",
    "\ue000",
    "\uffff",
    "\U0001f600",
    "\U0010ffff",
    "\x00",
    "\x1f",
    "\x7f",
    '"',
    "\\",
    "/",
    "\b",
    "\f",
    "\n",
    "\r",
    "\t",
    "\u0080",
    "\u00ad",
    "\ufeff",
    " ",
]


def _random_value(rnd, depth=0):
    c = rnd.random()
    if depth > 3 or c < 0.3:
        c2 = rnd.random()
        if c2 < 0.25:
            return rnd.randint(-(2**63), 2**63 - 1)
        if c2 < 0.4:
            return rnd.randint(-(2**53), 2**53)
        if c2 < 0.75:
            while True:
                x = struct.unpack("d", rnd.randbytes(8))[0]
                if math.isfinite(x):
                    return x
        return rnd.choice([0.0, -0.0, 1e21, 1e-7, 1e16, 4.5, 2.0, 1e20, 9007199254740993.0, 5e-324, 0.1, 1e-6, 123.456])
    if c < 0.5:
        return "".join(rnd.choice(_CHARS) for _ in range(rnd.randint(0, 5)))
    if c < 0.55:
        return rnd.choice([True, False, None])
    if c < 0.75:
        return [_random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    return {
        "".join(rnd.choice(_CHARS) for _ in range(rnd.randint(0, 3))): _random_value(rnd, depth + 1)
        for _ in range(rnd.randint(0, 4))
    }


def _shuffled(rnd, v):
    if isinstance(v, dict):
        items = list(v.items())
        rnd.shuffle(items)
        return {k: _shuffled(rnd, x) for k, x in items}
    if isinstance(v, list):
        return [_shuffled(rnd, x) for x in v]
    return v


@pytest.mark.parametrize("seed", [1, 2])
def test_random_payloads_hash_by_value_in_any_spelling(tmp_path, capsys, seed):
    rnd = random.Random(seed)
    evs = [
        scratch.ev("run.started", {"r": _random_value(rnd), **{f"k{i}": _random_value(rnd) for i in range(3)}})
        for _ in range(600)
    ]
    evs.append(scratch.ev("run.completed", {}))
    scratch.chain(evs)
    canon = scratch.write(scratch.logpath(tmp_path, "canon"), evs)
    rc, rep = scratch.verify_json(capsys, canon)
    assert (rc, scratch.errors(rep)) == (0, []), scratch.errors(rep)[:3]
    assert rep["files"][0]["head"] == evs[-1]["hash"] and rep["files"][0]["events"] == len(evs)
    # another writer: insertion order shuffled, spaces, \u escapes on some lines, Python float forms (1e+20, -0.0, 2.0)
    raw = b"".join(
        json.dumps(_shuffled(rnd, e), ensure_ascii=rnd.random() < 0.5, separators=(", ", ": ")).encode("utf-8") + b"\n"
        for e in evs
    )
    rc, rep = scratch.verify_json(capsys, scratch.write(scratch.logpath(tmp_path, "foreign"), raw=raw))
    assert (rc, scratch.errors(rep)) == (0, []), scratch.errors(rep)[:3]
    assert rep["files"][0]["head"] == evs[-1]["hash"]


def test_integral_float_above_int64_hashes_as_jcs_digits_but_needs_a_float_spelling_on_the_line(tmp_path, capsys):
    """SPEC §2.3: 1e20 canonicalizes to 100000000000000000000; SPEC §2.1: that token on a line is an
    integer outside 64 bits. So the hash input holds the digits, the line must spell a float."""
    evs = scratch.chain([scratch.ev("run.started", {"v": 1e20}), scratch.ev("run.completed", {})])
    assert '"v":100000000000000000000' in scratch.jcs(evs[0])
    for spelling, want in [(b"1e20", 0), (b"1E+20", 0), (b"100000000000000000000.0", 0), (b"100000000000000000000", 1)]:
        raw = scratch.line(evs[0]).replace(b'"v":1e+20', b'"v":' + spelling) + scratch.line(evs[1])
        assert b'"v":' + spelling in raw
        rc, rep = scratch.verify_json(capsys, scratch.write(scratch.logpath(tmp_path, spelling.decode()), raw=raw))
        assert rc == want, (spelling, rep)
        if want:
            assert scratch.errors(rep)[0][:2] == ("MALFORMED_LINE", 1)
