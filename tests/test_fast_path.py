"""The fast path (``read/fastpath.py``) gives the reference path's verdict on every line it proves.

It may only change speed, never a verdict: here it is held to the reference
path (``analyze_line(..., fast=False)``) on every fixture line, number and
unicode edge cases, ``json.dumps`` layouts, envelope errors, hypothesis
events of every kind, and lines with any JSON whitespace between tokens,
escaped or raw strings and hidden duplicate keys; its payload checks to the
validators, and its ``\\u`` escapes to ``json.dumps``' own.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import struct
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kind_examples import all_field_invalid_cases, all_valid_cases

from ract_cli.format.canonical import jcs_exact
from ract_cli.format.kinds import VALIDATORS
from ract_cli.format.model import ENVELOPE_ORDER
from ract_cli.read.fastpath import (
    _MAX_REWRITES,
    _floats_agree,
    _jcs_numbers,
    ascii_escaped,
    fast_analyze,
    fast_checks,
)
from ract_cli.read.framing import split_line_ending
from ract_cli.read.line import analyze_line
from ract_cli.testing.synth import FIXTURES, fixture_path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_PATHS = {name: fixture_path(ROOT / "fixtures", name) for name in FIXTURES}


def _lines(path: Path) -> list[bytes]:
    return [split_line_ending(line)[0] for line in path.read_bytes().splitlines(keepends=True)]


def _same_line_verdict(body: bytes, schema_version: int = 9) -> None:
    fast = analyze_line(body, schema_version)
    slow = analyze_line(body, schema_version, fast=False)
    assert (fast.event, fast.stored_hash, fast.parsed) == (slow.event, slow.stored_hash, slow.parsed)
    assert [(p.code, p.message, p.expected, p.actual, p.severity) for p in fast.problems] == [
        (p.code, p.message, p.expected, p.actual, p.severity) for p in slow.problems
    ]
    if fast_analyze(body, schema_version) is not None:
        assert not slow.problems


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fast_path_agrees_on_fixture_lines(name: str) -> None:
    for body in _lines(FIXTURE_PATHS[name]):
        for version in (9, 3):
            _same_line_verdict(body, version)


def _event_line(payload: object, kind: str = "tool.result", envelope: dict | None = None) -> bytes:
    event = {
        "id": "ab" * 16,
        "run_id": "cd" * 16,
        "step_id": None,
        "parent_id": None,
        "timestamp_ns": 1_764_000_000_000_000_000,
        "kind": kind,
        "payload": payload,
        "prev_hash": "0" * 64,
    }
    event.update(envelope or {})
    event["hash"] = hashlib.sha256(jcs_exact({k: v for k, v in event.items() if k != "hash"})).hexdigest()
    return jcs_exact(event)


NUMBER_CASES = [
    {"x": 2.0},
    {"x": -0.0},
    {"x": 1e16},
    {"x": 1e21},
    {"x": 1e-7},
    {"x": 5e-6},
    {"x": 0.000001},
    {"x": 4.5},
    {"x": 2**53},
    {"x": 2**53 + 1},
    {"x": 2**63 - 1},
    {"x": -(2**63)},
    {"x": 9_000_000_000_000_000_001},
    {"x": [1.0, 2.5, {"y": 3.0}]},
    {"x": "text with e+ and e- and .0, inside"},
    {"x": "\ue000\U0001f600"},
    {"\ue000": 1, "\U0001f600": 2},
    {"x": "ünïcödé"},
    {"x": 2.0, "v": "v1.0, beta"},
    {"score": 1.0, "latency_ms": 0.0, "n": [3.0, -7.0]},
    {"x": 4.320853047512507e-05},
    {"x": [5e-05, -0.0001, 9.99e-05, 1.5e-06], "y": "ünï"},
    {"x": [1.2e-7, -3.4567890123456789e-200, 5e-324, 1.7976931348623157e308, 2.5e21]},
    {"x": 1.6816359181213372e-06},
]


@pytest.mark.parametrize("payload", NUMBER_CASES, ids=range(len(NUMBER_CASES)))
def test_fast_path_agrees_on_number_and_unicode_edges(payload: dict) -> None:
    body = _event_line(payload)
    _same_line_verdict(body)
    assert analyze_line(body).problems == []  # each of these is a valid event


def _dumps_layouts(body: bytes, seed: int) -> list[bytes]:
    """The event of ``body`` as ``json.dumps`` writes it: ASCII escapes or raw, default or compact
    separators, keys shuffled at every level (seeded)."""
    rng = random.Random(seed)

    def shuffled(value: object) -> object:
        if isinstance(value, dict):
            keys = list(value)
            rng.shuffle(keys)
            return {k: shuffled(value[k]) for k in keys}
        return [shuffled(v) for v in value] if isinstance(value, list) else value

    event = shuffled(json.loads(body))
    return [
        json.dumps(event, ensure_ascii=ascii_, separators=separators).encode()
        for ascii_ in (True, False)
        for separators in (None, (",", ":"))
    ]


#: an exponent in orjson's text where JCS writes plain digits (1e16 to 1e21; 1e-6 to 1e-5): the reference path
_PLAIN_IN_JCS = re.compile(rb"e(?:\+(?:1[6-9]|20)|-[1-6])(?![0-9])").search


def test_orjson_writes_other_exponents_as_jcs_does() -> None:
    """What the fast path's exponent rule stands on: over doubles of every magnitude (random bit patterns, and
    a dense sweep from 1e-12 to 1e-4 and from 1e15 to 1e22), orjson's text of a double that is neither whole
    nor written with one of those exponents is JCS's, byte for byte."""
    rng = random.Random(14)
    checked = 0
    for i in range(150_000):
        if i % 3 == 0:
            x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(63)))[0]
        else:
            x = rng.random() * 10.0 ** rng.choice([*range(-12, -3), *range(15, 23)])
        if not math.isfinite(x):
            continue
        text = orjson.dumps(x)
        if text.endswith(b".0") or _PLAIN_IN_JCS(text):
            continue
        assert text == jcs_exact(x), (x, text)
        checked += 1
    assert checked > 100_000


def test_jcs_numbers_writes_every_double_as_jcs_does() -> None:
    """What the redump of a payload holding a number form stands on (``_checked``): orjson's text of
    ``_jcs_numbers(x)`` is JCS's for doubles of every magnitude, whole or not, either sign, and the powers of
    ten with their neighbours. (No later check would catch an orjson that wrote a float from 1e-4 to 1e16
    otherwise: this test is the one that would.)"""
    rng = random.Random(25)
    values = [0.0, -0.0, 5e-324, -5e-324, 1.7976931348623157e308]
    for e in range(-30, 30):
        x = 10.0**e
        values += [x, -x, math.nextafter(x, 0.0), math.nextafter(x, math.inf), 2.5 * x, float(int(x) or 1)]
    for i in range(60_000):
        if i % 2:
            values.append(struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0])
        else:
            values.append(float(round(rng.random() * 10.0 ** rng.randint(-8, 22), rng.choice([None, 0, 1, 3]))))
    checked = 0
    for x in values:
        if not math.isfinite(x):
            continue
        assert orjson.dumps(_jcs_numbers(x)) == jcs_exact(x), x
        checked += 1
    assert checked > 50_000


def _sorted_otherwise_in_utf16(value: object) -> bool:
    """Whether an object in ``value`` has keys that sort otherwise by UTF-16 code units (JCS) than by code
    points (orjson's sorted dump)."""
    if isinstance(value, dict):
        keys = list(value)
        utf16 = sorted(keys, key=lambda k: k.encode("utf-16-be", "surrogatepass"))
        return sorted(keys) != utf16 or any(_sorted_otherwise_in_utf16(v) for v in value.values())
    return isinstance(value, list) and any(_sorted_otherwise_in_utf16(v) for v in value)


#: the cases the fast path leaves to the reference path in any layout: integers past 2^53 (and a string that
#: only looks like one), keys JCS sorts otherwise than orjson
SLOW_CASES = [c for c in NUMBER_CASES if re.search(r"\d{16}", json.dumps(c)) or _sorted_otherwise_in_utf16(c)]
assert len(SLOW_CASES) < len(NUMBER_CASES) - 1  # (some cases are fast: the test below checks it)


@settings(max_examples=500, deadline=None)
@given(x=st.floats(allow_nan=False, allow_infinity=False) | st.floats(1e-8, 1e-3) | st.floats(1e15, 1e22))
def test_any_float_takes_the_fast_path_as_jcs_writes_it(x: float) -> None:
    """Every double, of every magnitude (orjson writes ``3e-6`` and ``1e+16`` where JCS writes plain digits,
    ``2.0`` where it writes ``2``): proven, with the reference path's event and hash."""
    body = _event_line({"x": x, "y": [x, {"z": -x}]})
    _same_line_verdict(body)
    if not (x.is_integer() and 9e18 <= abs(x) < 1e21):  # (JCS writes those as integer tokens from 9e18 on:
        assert fast_analyze(body, 9) is not None, body  # the big-integer rule's reference path)


@pytest.mark.parametrize(
    "payload",
    [
        {"model": "claude-3-5-sonnet", "file": "image-2.png"},
        {"note": "v1.0, beta", "code": "[1.0]", "exp": "x e+16 y e-6"},
        {"model": "claude-3-5-sonnet", "score": 1.0, "price": 3e-06},
        {"e-5": 2.0, "[1.0]": {"1.0}": 1e16}},
    ],
    ids=range(4),
)
def test_number_forms_in_strings_are_text(payload: dict) -> None:
    """A string that holds what an exponent or an integral float looks like (a model's name, a version) is
    text: the line is proven, whether or not it holds such floats too."""
    body = _event_line(payload)
    _same_line_verdict(body)
    assert fast_analyze(body, 9) is not None, body


@pytest.mark.parametrize("payload", [{"score": 1.0, "price": 3e-06}, {"note": "v1.0, beta"}], ids=["floats", "text"])
@pytest.mark.parametrize(
    "envelope",
    [
        {"timestamp_ns": 5.0},
        {"timestamp_ns": 1.764e18},
        {"step_id": 2.0},
        {"parent_id": 0.0},
        {"prev_hash": 1e16},
        {"run_id": -0.0},
    ],
    ids=range(6),
)
def test_a_float_in_the_envelope_leaves_the_fast_path(payload: dict, envelope: dict) -> None:
    """A payload holding a number form JCS writes otherwise (or a string that looks like one) is dumped
    again with the payload's floats as JCS writes them; an envelope field holding a float, in whatever form,
    still fails the envelope's checks: the reference path words the finding."""
    event = {**orjson.loads(_event_line(payload)), **envelope}
    event["payload"] = payload
    event["hash"] = hashlib.sha256(jcs_exact({k: v for k, v in event.items() if k != "hash"})).hexdigest()
    body = orjson.dumps(event, option=orjson.OPT_SORT_KEYS)  # (orjson spells them 5.0, 1.764e+18, 1e+16, -0.0)
    assert repr(next(iter(envelope.values()))).encode() in body
    assert fast_analyze(body, 9) is None
    assert analyze_line(body, fast=False).problems
    _same_line_verdict(body)


@pytest.mark.parametrize(
    ("payload", "fast"),
    [
        ({"text": "\u26a0\ufe0f failed \U0001f680", "\uff0c": "\U0001f600"}, True),  # text, and one such key
        ({"\ue000": 1, "\U0001f600": 2}, False),  # JCS: U+1F600 (D83D DE00) first; code points: U+E000 first
        ({"a\ue000": 1, "a\U0001f600": 2, "b": 3}, False),
        ({"x": [{"\uffff": 1, "\U00010000": 2}]}, False),
        ({"\ue000": 1, "\U0001f600": {"\ue001": 2}, "z\U0001f600": 3}, False),
    ],
    ids=range(5),
)
def test_only_keys_that_sort_otherwise_leave_the_fast_path(payload: dict, fast: bool) -> None:
    """U+E000..U+FFFF and astral characters in one line cost nothing unless two keys of one object hold
    them: then JCS's order (UTF-16 code units) is not the sorted dump's (code points), and the reference
    path writes the canonical form."""
    body = _event_line(payload)
    _same_line_verdict(body)
    assert analyze_line(body, fast=False).problems == []
    assert (fast_analyze(body, 9) is not None) is fast


def test_a_hash_over_keys_in_code_point_order_is_a_mismatch() -> None:
    """A writer that sorted such keys by code points (orjson's order, not JCS's) hashed other bytes: the
    reference path's HASH_MISMATCH, never the fast path's proof (which hashes orjson's sorted dump)."""
    event = orjson.loads(_event_line({"\ue000": 1, "\U0001f600": 2}))
    del event["hash"]
    event["hash"] = hashlib.sha256(orjson.dumps(event, option=orjson.OPT_SORT_KEYS)).hexdigest()
    body = orjson.dumps(event, option=orjson.OPT_SORT_KEYS)
    assert fast_analyze(body, 9) is None
    assert [p.code for p in analyze_line(body, fast=False).problems] == ["HASH_MISMATCH"]
    _same_line_verdict(body)


@pytest.mark.parametrize("payload", NUMBER_CASES, ids=range(len(NUMBER_CASES)))
def test_fast_path_agrees_on_json_dumps_layouts(payload: dict) -> None:
    """``json.dumps``' layouts (``\\u`` escapes included) agree with the reference path, and are proven
    as cheaply as our own when the values are (a ", " in a string does not stop it)."""
    for i, body in enumerate(_dumps_layouts(_event_line({**payload, "note": "a, b: c"}), seed=len(str(payload)))):
        _same_line_verdict(body)
        assert analyze_line(body, fast=False).problems == []
        if payload not in SLOW_CASES:
            assert fast_analyze(body, 9) is not None, (i, body)


@pytest.mark.parametrize(
    "text",
    [
        b"9223372036854775808",
        b"18446744073709551615",
        b"18446744073709551616",
        b"-9223372036854775809",
        b"1.0",
        b"1e400",
        b"NaN",
    ],
)
def test_fast_path_agrees_on_out_of_range_number_tokens(text: bytes) -> None:
    body = _event_line({"x": 1}).replace(b'"x":1', b'"x":' + text)
    _same_line_verdict(body)
    _same_line_verdict(_event_line({}).replace(b'"timestamp_ns":1764000000000000000', b'"timestamp_ns":' + text))


@pytest.mark.parametrize(
    ("value", "written"), [("a/b", rb'"a\/b"'), ("\u00e9", rb'"\u00E9"'), ("\u00e9", rb'"\u00e9"')]
)
@pytest.mark.parametrize("big", [b"184467440737095516160", b"1844674407370955161600"])
def test_a_number_token_as_long_as_orjsons_never_passes(value: str, written: bytes, big: bytes) -> None:
    """An integer past 2^64 (``184467440737095516160``), which orjson reads as a float and writes in as many
    bytes (``1.844674407370955e+20``), in an ASCII line escaped another writer's way, hashed as the float: the
    texts the proof compares are as long as each other but differ, so it fails (SPEC §2.1: the reference
    path's finding)."""
    event = orjson.loads(_event_line({}))
    event["payload"] = {"s": value, "x": float(big)}
    event["hash"] = hashlib.sha256(jcs_exact({k: v for k, v in event.items() if k != "hash"})).hexdigest()
    body = orjson.dumps(event, option=orjson.OPT_SORT_KEYS)
    body = body.replace(orjson.dumps(float(big)), big).replace(orjson.dumps(value), written)
    assert body.isascii() and body.count(written) == 1 and body.count(big) == 1
    assert len(orjson.dumps(float(big))) == len(big)
    assert fast_analyze(body, 9) is None
    assert analyze_line(body, fast=False).problems
    _same_line_verdict(body)


ENVELOPE_CASES = [
    {"id": "AB" * 16},
    {"id": 5},
    {"run_id": None},
    {"step_id": "xyz"},
    {"parent_id": "ab" * 15},
    {"prev_hash": "0" * 63},
    {"timestamp_ns": -1},
    {"timestamp_ns": 1.5},
    {"timestamp_ns": True},
    {"kind": 7},
    {"kind": "no.such.kind"},
    {"payload": []},
    {"extra": 1},
]


@pytest.mark.parametrize("change", ENVELOPE_CASES, ids=range(len(ENVELOPE_CASES)))
def test_fast_path_agrees_on_envelope_errors(change: dict) -> None:
    body = _event_line({"tool": "bash", "ok": True}, envelope=change)
    _same_line_verdict(body)
    assert analyze_line(body).problems


def test_fast_payload_checks_equal_the_validators() -> None:
    cases = list(all_valid_cases()) + list(all_field_invalid_cases())
    assert cases
    for _, kind, payload in cases:
        assert fast_checks()[kind](payload) == (VALIDATORS[kind](payload) == []), (kind, payload)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)


_OTHER_VALUES = ["0", "null", "[]", '" "']


#: JSON's two-character escapes
_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _any_escapes(text: str, rng: random.Random) -> str:
    """``text`` as a JSON string as some writer might escape it: each character raw where JSON allows it, or
    ``\\u``-escaped in hex of either case (a surrogate pair past U+FFFF), ``/`` maybe as ``\\/``."""

    def u(code: int) -> str:
        return "\\u" + "".join(rng.choice((c.lower(), c.upper())) for c in f"{code:04x}")

    out = []
    for c in text:
        code = ord(c)
        forms = [u(code)] if code < 0x10000 else [u(0xD800 + ((code - 0x10000) >> 10)) + u(0xDC00 + (code & 0x3FF))]
        if c in _SHORT:
            forms.append(_SHORT[c])
        elif code >= 0x20:
            forms.append(c)
        if c == "/":
            forms.append("\\/")
        out.append(forms[-1] if len(forms) > 1 and rng.random() < 0.75 else rng.choice(forms))  # (mostly raw)
    return '"' + "".join(out) + '"'


def _blank_layout(value: object, rng: random.Random, style: str, duplicate: bool) -> str:
    """``value`` as JSON with random JSON whitespace (space, tab, a lone CR) between any two tokens, strings
    as ``json.dumps`` writes them (``style`` "ascii": ``\\u``-escaped; "raw") or escaped any way ("any":
    ``_any_escapes``); with ``duplicate``, each object's first key written twice, first with another value
    (a parser that keeps the last value reads the values the hash covers: only the duplicate is wrong)."""

    def blank() -> str:
        return rng.choice(["", "", "", " ", "  ", "\t", "\r", " \t "])

    def string(text: str) -> str:
        return _any_escapes(text, rng) if style == "any" else json.dumps(text, ensure_ascii=style == "ascii")

    def write(v: object) -> str:
        if isinstance(v, dict):
            members = [f"{blank()}{string(k)}{blank()}:{blank()}{write(x)}{blank()}" for k, x in v.items()]
            if duplicate and v:
                key = string(next(iter(v)))
                other = rng.choice(_OTHER_VALUES)
                members.insert(0, f"{blank()}{key}{blank()}:{blank()}{other}{blank()}")
            return "{" + ",".join(members) + "}" if members else "{" + blank() + "}"
        if isinstance(v, list):
            return "[" + ",".join(blank() + write(x) + blank() for x in v) + "]" if v else "[" + blank() + "]"
        if isinstance(v, float) and style == "any":
            return _any_spelling(v, rng)
        return string(v) if isinstance(v, str) else json.dumps(v)

    return write(value)


def _any_spelling(x: float, rng: random.Random) -> str:
    """A JSON spelling of the double ``x`` as some writer might write it, each reading back as ``x``: repr,
    Java's (``5.0E-4``), 17 significant digits, an exponent of ``+``, a trailing zero."""
    r = json.dumps(x)
    mantissa, _, exponent = f"{x:.16e}".partition("e")
    mantissa = mantissa.rstrip("0")
    java = f"{mantissa}0E{int(exponent)}" if mantissa.endswith(".") else f"{mantissa}E{int(exponent)}"
    forms = [r, r.upper(), java, f"{x:.17g}", f"{mantissa}e+{int(exponent)}" if int(exponent) >= 0 else java]
    if "." in r and "e" not in r:
        forms.append(r + "0")
    return rng.choice(forms)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    payload=st.dictionaries(st.text(max_size=6), json_values, max_size=4), seed=st.integers(0, 2**32), data=st.data()
)
def test_fast_path_agrees_on_any_blanks_and_escapes(payload: dict, seed: int, data) -> None:
    """Any JSON whitespace between tokens, strings escaped any way or not: the fast path proves the line exactly
    when the reference path finds nothing, and a duplicate key hidden among blanks or escapes never passes
    (the proof deletes every blank, inside strings too, and rewrites escapes: ``_written_as_orjson_would``)."""
    rng = random.Random(seed)
    event = orjson.loads(_event_line({**payload, "note": 'a , b :  c / \\ " \u00e9'}))
    style = data.draw(st.sampled_from(["ascii", "raw", "any"]))
    duplicate = data.draw(st.booleans())
    body = _blank_layout(event, rng, style, duplicate).encode()
    _same_line_verdict(body)
    slow = analyze_line(body, fast=False)
    if duplicate:
        assert fast_analyze(body, 9) is None and slow.problems
    # (in JCS's text: a float from 1e16 on is an integer token there, from 9e18 on the big-integer rule's;
    # past _MAX_REWRITES escapes the reference path is the cheaper)
    elif (
        body.count(b"\\") <= _MAX_REWRITES
        and not slow.problems
        and not re.search(r"\d{16}", jcs_exact(payload).decode())
        and not _sorted_otherwise_in_utf16(payload)
    ):
        assert fast_analyze(body, 9) is not None, body  # every valid layout takes the fast path (SPEC §11)


def _writers_layout(event: dict, writer: str) -> bytes:
    """``event`` as another language's JSON library writes it by default (the schema's key order, compact)."""
    text = json.dumps(event, separators=(",", ":"), ensure_ascii=writer in ("php", "dotnet"))
    if writer == "php":  # json_encode: ``\\/``, non-ASCII as lower-case ``\\u``
        return text.replace("/", "\\/").encode()
    if writer == "dotnet":  # System.Text.Json: upper-case hex, and HTML-sensitive characters escaped
        text = re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m[1].upper(), text)
        for c in "<>&'+`":
            text = text.replace(c, f"\\u{ord(c):04X}")
        return text.encode()
    assert writer == "go"  # encoding/json: raw UTF-8, but <, >, & and U+2028/9 as lower-case ``\\u``
    for c in "<>&\u2028\u2029":
        text = text.replace(c, f"\\u{ord(c):04x}")
    return text.encode()


WRITERS_PAYLOADS = [
    {"path": "/repo/src/a.py", "url": "https://example.com/x?a=1&b=<2>"},
    {"text": "café 中文 😀 \u2028 it's 1+1", "cmd": 'echo "a\\b" > /tmp/x'},
    {"ctl": "\x00\x1f\x7f tab\tnl\n", "keys": {"/": 1, "é": [2, "/"], "<": {"\\": "&"}}},
]


@pytest.mark.parametrize("writer", ["php", "dotnet", "go"])
@pytest.mark.parametrize("payload", WRITERS_PAYLOADS, ids=range(len(WRITERS_PAYLOADS)))
def test_other_writers_escapes_take_the_fast_path(writer: str, payload: dict) -> None:
    """PHP's, .NET's and Go's default escapes are proven as cheaply as ``json.dumps``' (SPEC §11: every valid
    layout takes the fast path), with the reference path's verdict."""
    event = orjson.loads(_event_line(payload))
    body = _writers_layout({k: event[k] for k in ENVELOPE_ORDER}, writer)
    assert b"\\u" in body or b"\\/" in body
    _same_line_verdict(body)
    assert analyze_line(body, fast=False).problems == []
    assert fast_analyze(body, 9) is not None, body


@pytest.mark.parametrize(
    ("written", "value"),
    [
        (rb'"\\/\u00e9"', "\\/é"),  # an escaped backslash, then a raw slash: no ``\/`` escape there
        (rb'"\\u0041\/"', "\\u0041/"),  # an escaped backslash, then the text u0041
        (rb'"\\\/"', "\\/"),
        (rb'"\u005C\u0022\u000A\u001F"', '\\"\n\x1f'),
        (rb'"\uD83D\uDE00\ud83d\ude00"', "😀😀"),
        (rb'"\u00E9\u00e9\u002F\u0020"', "éé/ "),
        (rb'"\\/\/"', "\\//"),  # each \/ written "/" (its backslash deleted), the escaped backslash kept
        (rb'"\\\\\/\\\\"', "\\\\/\\\\"),
        (rb'"\/\u00E9\u4E2D"', "/é中"),  # an ASCII line: compared without regard to the case of letters
        (rb'"\u00C9\u00e9 AB"', "Éé AB"),  # upper-case letters in the value too
    ],
)
def test_escape_rewriting_keeps_each_value(written: bytes, value: str) -> None:
    """The rewritten escapes read back as the line's own values (an escape is matched from its backslash,
    never from the second backslash of ``\\\\``), and the line takes the fast path."""
    assert json.loads(written) == value
    as_written = b'"x":' + jcs_exact(value)
    body = _event_line({"x": value}).replace(as_written, b'"x":' + written)
    assert body.count(written) == 1 and analyze_line(body, fast=False).problems == []
    _same_line_verdict(body)
    assert fast_analyze(body, 9) is not None, body


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (0.0005, b"5.0E-4"),  # Java's Double.toString
        (1e21, b"1.0E21"),
        (1e21, b"1E+21"),
        (4.3e-05, b"4.3E-05"),  # .NET
        (1e-07, b"1e-07"),  # Go
        (1.5, b"1.50"),
        (5.0, b"0.5e1"),
        (-0.0, b"-0.0E0"),
        (0.1, b"0.10000000000000001"),
        ([0.25, 2.0], b"[2.5e-1,2E0]"),
    ],
)
def test_floats_spelled_another_way_take_the_fast_path(value: object, written: bytes) -> None:
    """A float token another writer spells otherwise than orjson reads back, with Python's ``float`` (the
    reference path's parse), as orjson's value: the line is proven, with the reference path's verdict."""
    body = _event_line({"x": value}).replace(b'"x":' + jcs_exact(value), b'"x":' + written)
    assert body.count(written) == 1 and analyze_line(body, fast=False).problems == []
    _same_line_verdict(body)
    assert fast_analyze(body, 9) is not None, body


@pytest.mark.parametrize("n", [_MAX_REWRITES, _MAX_REWRITES + 1])
def test_past_so_many_rewrites_the_reference_path_decides(n: int) -> None:
    """A line of more escapes or float spellings to rewrite one by one than ``_MAX_REWRITES`` goes to the
    reference path, which is then the cheaper (a line of 100,000 ``\\u003c``: 3 ms, rewritten one by one
    34-59 ms). ``\\/`` and upper-case hex take no rewriting one by one: any number of them is proven."""
    angles = _event_line({"x": "<" * n}).replace(b'"' + b"<" * n + b'"', b'"' + b"\\u003c" * n + b'"')
    halves = _event_line({"x": [0.5] * n}).replace(b",".join([b"0.5"] * n), b",".join([b"5.0E-1"] * n))
    for body in (angles, halves):
        _same_line_verdict(body)
        assert analyze_line(body, fast=False).problems == []
        assert (fast_analyze(body, 9) is None) is (n > _MAX_REWRITES)
    slashes = _event_line({"x": "/é" * n}).replace(b'"' + "/é".encode() * n + b'"', b'"' + b"\\/\\u00E9" * n + b'"')
    assert slashes.isascii()
    _same_line_verdict(slashes)
    assert fast_analyze(slashes, 9) is not None


def test_a_line_of_too_many_values_is_never_proven() -> None:
    """More than ``MAX_LINE_NODES`` values (a valid event otherwise): the reference path's MALFORMED_LINE, also
    when the proof is asked alone (the readers ask ``too_many_nodes`` first)."""
    body = _event_line({"x": [0] * 510_000})
    assert fast_analyze(body, 9) is None
    assert [p.code for p in analyze_line(body, fast=False).problems] == ["MALFORMED_LINE"]


def test_an_integer_orjson_reads_as_a_float_never_passes() -> None:
    """An integer token past 2^64, which orjson reads as a float (SPEC §2.1: malformed): the reference path's
    finding, never the fast path's proof, though both texts read back as the same double."""
    body = _event_line({"x": 1}).replace(b'"x":1', b'"x":18446744073709551616')
    assert fast_analyze(body, 9) is None
    assert analyze_line(body, fast=False).problems
    _same_line_verdict(body)


@pytest.mark.parametrize(
    ("line", "orjsons", "agree"),
    [
        (b'{"x":1.50,"y":[5.0E-4]}', b'{"x":1.5,"y":[0.0005]}', True),
        (b'{"x":0.1}', b'{"x":0.10000000000000002}', False),  # another double
        (b'{"x":-0.0}', b'{"x":0.0}', False),  # equal as floats, not the same value
        (b'{"x":1}', b'{"x":1.0}', False),  # an integer token for a float
        (b'{"x":1E0}', b'{"x":1}', False),
        (b'{"x":"1.50"}', b'{"x":"1.5"}', False),  # inside a string: text only
        (b'{"x":"a\\"1.50"}', b'{"x":"a\\"1.5"}', False),
        (b'{"x":1.0,"x":2.0}', b'{"x":2.0}', False),  # a duplicate key
        (b'{"x":[1.0,2.0]}', b'{"x":[1.0]}', False),
    ],
)
def test_float_tokens_agree_only_as_the_same_value_outside_strings(line: bytes, orjsons: bytes, agree: bool) -> None:
    assert _floats_agree(line, orjsons) is agree


@pytest.mark.parametrize(
    ("key", "first"), [("x", rb'"\u0078"'), ("é", rb'"\u00e9"'), ("é", rb'"\u00E9"'), ("/", rb'"\/"')]
)
def test_a_duplicate_key_escaped_another_way_never_passes(key: str, first: bytes) -> None:
    """``{"\\u0078":1,"x":2}``: orjson keeps the last ``x`` (the value the hash covers), and the proof, whose
    rewritten line holds two, fails: the reference path reports the duplicate."""
    member = orjson.dumps({key: 2})[1:-1]
    body = _event_line({key: 2}).replace(member, first + b":1," + member)
    assert json.loads(body)["payload"] == {key: 2} and body.count(b":1,") == 1
    assert fast_analyze(body, 9) is None
    assert analyze_line(body, fast=False).problems
    _same_line_verdict(body)


def _frames_left() -> int:
    def down(n: int) -> int:
        try:
            return down(n + 1)
        except RecursionError:
            return n

    return down(0)


def test_a_deep_line_checked_from_a_deep_stack_goes_to_the_reference_path() -> None:
    """The fast path's recursive helpers (json.dumps' second chance, the integral floats' copy) raise no
    RecursionError out of it when called with the stack already deep: the line is left to the reference
    path (found by a review: 250 levels from a stack ~740 frames deep)."""
    deep: object = [4.3e-05, 2.0]
    for _ in range(240):
        deep = [deep]
    event = orjson.loads(_event_line({"x": deep}))
    event["payload"]["x"] = deep  # (2.0, not the 2 JCS wrote: the same hash)
    for body in (
        json.dumps(event).encode(),  # json.dumps' layout: its second chance
        orjson.dumps(event, option=orjson.OPT_SORT_KEYS),  # "2.0" in orjson's sorted dump: the integral copy
    ):
        proven = fast_analyze(body, 9)
        assert proven is not None  # (with the stack as it is: proven)
        limit = sys.getrecursionlimit()
        depth = limit - _frames_left()  # (as the interpreter counts the stack here)
        answers = []
        try:
            for headroom in range(10, 400, 10):  # frames left to the call
                sys.setrecursionlimit(depth + headroom)
                answers.append(fast_analyze(body, 9))
        finally:
            sys.setrecursionlimit(limit)
        assert None in answers and all(a is None or a == proven for a in answers)  # (compared with room)


def test_orjson_writes_no_blank_but_space() -> None:
    """The proof deletes orjson's blanks by deleting its spaces: its compact text never holds a raw tab, CR
    or LF (it escapes every control character inside strings, and puts nothing between tokens)."""
    text = "".join(chr(c) for c in range(0x20)) + " \x7f"
    dumped = orjson.dumps({text: [text, {text: text}]})
    assert dumped.translate(None, b" \t\n\r") == dumped.replace(b" ", b"")
    assert not any(blank in dumped for blank in (b"\t", b"\n", b"\r"))


#: the escapes' two paths: backslashreplace (no backslash in the text, nothing past U+FFFF), else the handler
ESCAPE_CASES = [
    "plain",
    "café",
    "\u4e2d\u6587",
    "\x80\xff\u0100",
    "\u2028 \u2029",
    "\x7f\x1f",
    "a\\b é",
    "😀",
    "é 😀",
    '"é"',
]


@pytest.mark.parametrize("text", ESCAPE_CASES)
def test_ascii_escapes_are_json_dumps_escapes(text: str) -> None:
    assert ascii_escaped(orjson.dumps(text)) == json.dumps(text).encode()


@settings(max_examples=500, deadline=None)
@given(value=st.dictionaries(st.text(max_size=8), st.text(max_size=12) | st.lists(st.text(max_size=6)), max_size=4))
def test_ascii_escapes_of_any_text_are_json_dumps_escapes(value: dict) -> None:
    """The proof's ``\\u`` escapes of orjson's text are ``json.dumps``' own, byte for byte, whichever path."""
    assert ascii_escaped(orjson.dumps(value)) == json.dumps(value, separators=(",", ":")).encode()


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(sorted(VALIDATORS)), data=st.data())
def test_fast_payload_checks_property(kind: str, data) -> None:
    from ract_cli.format.kinds import KINDS_BY_NAME

    names = [f.name for f in KINDS_BY_NAME[kind].fields] or ["x"]
    payload = data.draw(st.dictionaries(st.sampled_from(names) | st.text(max_size=5), json_values, max_size=4))
    assert fast_checks()[kind](payload) == (VALIDATORS[kind](payload) == [])
    _same_line_verdict(_event_line(payload, kind=kind))
