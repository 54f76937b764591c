"""Canonical serialization (SPEC §2.3): RFC 8785 (JCS) with exact integers.

Three witnesses must agree: ``jcs_exact`` (the definition), ``canonical_bytes``
(orjson plus the fast-path proof, falling back to the definition) and the
reference ``rfc8785`` package, on every value that package accepts. Beyond
its domain (integers past 2^53) the exact extension is pinned by hand.
"""

from __future__ import annotations

import json
import math
import struct
import sys
from pathlib import Path

import orjson
import pytest
import rfc8785
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from ract_cli.format.canonical import CanonicalizationError, canonical_bytes, format_number, jcs_exact, orjson_is_jcs

JCS_DIR = Path(__file__).parent / "data" / "jcs"
VECTORS = sorted(p.name for p in (JCS_DIR / "input").glob("*.json"))


# --- the RFC 8785 vectors ---------------------------------------------------


def test_vectors_are_present() -> None:
    assert len(VECTORS) >= 6, "tests/data/jcs/input lost its vectors"
    assert (JCS_DIR / "LICENSE").is_file()
    assert sorted(p.name for p in (JCS_DIR / "output").glob("*.json")) == VECTORS


@pytest.mark.parametrize("name", VECTORS)
def test_jcs_vector(name: str) -> None:
    value = json.loads((JCS_DIR / "input" / name).read_bytes())
    expected = (JCS_DIR / "output" / name).read_bytes()
    assert jcs_exact(value) == expected
    assert canonical_bytes(value) == expected
    assert rfc8785.dumps(value) == expected  # the reference agrees with its own vectors


@pytest.mark.parametrize("name", ["structures.json", "weird.json"])
def test_orjson_alone_is_not_jcs_on_these_vectors(name: str) -> None:
    """SPEC §2.3's measured fact: sorted orjson output differs here, so the fast path must refuse."""
    value = json.loads((JCS_DIR / "input" / name).read_bytes())
    dumped = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    expected = (JCS_DIR / "output" / name).read_bytes()
    assert dumped != expected
    assert not orjson_is_jcs(dumped)


# --- property: agreement with the reference package -------------------------

SAFE_INT = 2**53 - 1  # rfc8785 accepts |n| <= 2^53 - 1 and refuses beyond

# Every float: finite doubles drawn from the whole range, subnormals included,
# plus doubles built from random bit patterns so the exponent range is covered
# uniformly rather than clustered near 1.
_bit_floats = st.integers(min_value=0, max_value=2**64 - 1).map(lambda n: struct.unpack("<d", struct.pack("<Q", n))[0])
floats = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True),
    _bit_floats.filter(math.isfinite),
    st.sampled_from(
        [
            0.0,
            -0.0,
            5e-324,
            -5e-324,
            2.2250738585072014e-308,
            1.7976931348623157e308,
            1e21,
            1e-7,
            1e-6,
            1e16,
            2.0,
            0.1,
            1e20,
            9007199254740992.0,
            123456789012345680000.0,
        ]
    ),
)
ints = st.one_of(
    st.integers(min_value=-SAFE_INT, max_value=SAFE_INT),
    st.sampled_from([0, -1, SAFE_INT, -SAFE_INT, 2**31, -(2**31), 10**15]),
)
_chars = st.characters(codec="utf-8")  # every code point except lone surrogates
keys = st.one_of(
    st.text(_chars, max_size=6),
    # astral-plane and BMP-private-use keys, where UTF-16 order differs from code-point order
    st.text(
        st.one_of(
            st.characters(min_codepoint=0xE000, max_codepoint=0xF8FF),
            st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
            st.characters(min_codepoint=0xF900, max_codepoint=0xFFFF),
            st.sampled_from("aZ0é"),
        ),
        min_size=1,
        max_size=4,
    ),
)
strings = st.one_of(
    st.text(_chars),
    st.text(st.characters(max_codepoint=0x20), max_size=8),  # control characters
    st.text(st.sampled_from('"\\/\b\f\n\r\t\x00\x1f\x7f\u2028\u2029\ufeff\U0001f600\ue000'), max_size=8),
)
scalars = st.one_of(st.none(), st.booleans(), ints, floats, strings)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=5), st.dictionaries(keys, children, max_size=6)),
    max_leaves=40,
)


def _reference(value: object) -> bytes:
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        assume(False)  # outside the reference's domain: covered by the exact-integer tests below
        raise


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
@example({"\ue000": 1, "\U0001f600": 2})
@example({"\uf8ff": [1e16, -0.0, 2.0], "\U00010000": {"\ue000": 5e-324, "a": 1e21}})
@example([1e-7, 1e-6, 1.7976931348623157e308, -5e-324])
@example({"": '\x00\x1f"\\\u007f'})
def test_matches_rfc8785(value: object) -> None:
    expected = _reference(value)
    assert jcs_exact(value) == expected
    assert canonical_bytes(value) == expected


@settings(max_examples=500, deadline=None)
@given(floats)
def test_float_matches_rfc8785(x: float) -> None:
    expected = rfc8785.dumps(x)
    assert format_number(x).encode() == expected
    assert canonical_bytes(x) == expected == jcs_exact(x)
    assert canonical_bytes([x]) == b"[" + expected + b"]"


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, st.integers(-5, 5), max_size=12))
def test_key_order_is_utf16(value: dict) -> None:
    expected = _reference(value)
    assert canonical_bytes(value) == jcs_exact(value) == expected
    ordered = sorted(value, key=lambda k: k.encode("utf-16-be"))
    assert list(json.loads(expected)) == ordered


# --- the exact-integer extension ---------------------------------------------

BIG_INTS = [
    2**53,
    -(2**53),
    2**53 + 1,
    1_800_000_000_000_000_000,  # a timestamp_ns
    1_800_000_000_000_000_000_123,  # past 64 bits
    2**63 - 1,
    -(2**63),
    2**63,
    2**64 - 1,
    2**64,
    -(2**64) - 1,
    10**40 + 7,
]


@pytest.mark.parametrize("n", BIG_INTS, ids=str)
def test_integers_past_2_53_are_exact(n: int) -> None:
    digits = str(n).encode()
    assert jcs_exact(n) == digits
    assert canonical_bytes(n) == digits
    assert canonical_bytes({"timestamp_ns": n, "x": [n]}) == b'{"timestamp_ns":' + digits + b',"x":[' + digits + b"]}"
    with pytest.raises(rfc8785.CanonicalizationError):
        rfc8785.dumps(n)  # the reference refuses; SPEC §2.3 must not


def test_timestamp_envelope_hashes_exact_digits() -> None:
    event = {"timestamp_ns": 1800000000000000000123, "kind": "run.started", "n": 2**63 - 1}
    out = canonical_bytes(event)
    assert out == jcs_exact(event)
    assert b"1800000000000000000123" in out and b"9223372036854775807" in out


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=-(2**80), max_value=2**80))
def test_any_integer_is_its_decimal_digits(n: int) -> None:
    assert canonical_bytes(n) == jcs_exact(n) == str(n).encode()


# --- ECMAScript Number::toString (RFC 8785 §3.2.2.3) -------------------------

NUMBER_TABLE = [
    (0.0, "0"),
    (-0.0, "0"),
    (1.0, "1"),
    (2.0, "2"),
    (-2.0, "-2"),
    (4.5, "4.5"),
    (0.1, "0.1"),
    (0.002, "0.002"),
    (1e-6, "0.000001"),
    (1e-7, "1e-7"),
    (1.5e-7, "1.5e-7"),
    (123e-20, "1.23e-18"),
    (1e16, "10000000000000000"),
    (1e20, "100000000000000000000"),
    (1e21, "1e+21"),
    (1.5e21, "1.5e+21"),
    (1e30, "1e+30"),
    (333333333.33333329, "333333333.3333333"),
    (9007199254740992.0, "9007199254740992"),
    (9007199254740994.0, "9007199254740994"),
    (123456789012345680000.0, "123456789012345680000"),
    (5e-324, "5e-324"),
    (-5e-324, "-5e-324"),
    (2.2250738585072014e-308, "2.2250738585072014e-308"),  # smallest normal
    (2.225073858507201e-308, "2.225073858507201e-308"),  # largest subnormal
    (1.7976931348623157e308, "1.7976931348623157e+308"),  # max double
    (-1.7976931348623157e308, "-1.7976931348623157e+308"),
    (0.000001234, "0.000001234"),
    (0.0000001234, "1.234e-7"),
    (295147905179352830000.0, "295147905179352830000"),  # 2^68
]


@pytest.mark.parametrize(("x", "text"), NUMBER_TABLE, ids=[t for _, t in NUMBER_TABLE])
def test_format_number_table(x: float, text: str) -> None:
    assert format_number(x) == text
    assert rfc8785.dumps(x) == text.encode()
    assert canonical_bytes(x) == jcs_exact(x) == text.encode()


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf], ids=repr)
def test_non_finite_numbers_have_no_canonical_form(bad: float) -> None:
    with pytest.raises(CanonicalizationError):
        format_number(bad)
    with pytest.raises(CanonicalizationError):
        jcs_exact({"x": bad})
    with pytest.raises(CanonicalizationError):
        canonical_bytes({"x": [bad]})


@pytest.mark.parametrize(
    "bad",
    [{1: "non-str key"}, {"s": "\ud800"}, {"\udc00": 1}, {"b": b"bytes"}, {"set": {1}}, object()],
    ids=["int-key", "lone-surrogate-value", "lone-surrogate-key", "bytes", "set", "object"],
)
def test_non_json_values_raise_canonicalization_error(bad: object) -> None:
    with pytest.raises(CanonicalizationError):
        jcs_exact(bad)
    with pytest.raises(CanonicalizationError):
        canonical_bytes(bad)


@pytest.mark.parametrize("x", [0.0, -0.0, 2.0, 1e16, 1e21, 1e-7, 5e-324, 2**63, -(2**63), 2**64, 7, -1], ids=repr)
def test_bare_top_level_numbers(x: float) -> None:
    """Regression: the fast path missed a bare "0.0" (no delimiter after the token)."""
    assert canonical_bytes(x) == jcs_exact(x)
    if -(2**63) <= x < 2**64:  # orjson refuses wider integers itself
        assert not orjson_is_jcs(orjson.dumps(x))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf], ids=repr)
def test_nan_never_becomes_null(bad: float) -> None:
    """Regression: orjson writes NaN and infinities as null; next to a real null the fast path took it."""
    assert orjson.dumps([None, bad]) == b"[null,null]"
    with pytest.raises(CanonicalizationError):
        canonical_bytes({"step_id": None, "x": bad})
    with pytest.raises(CanonicalizationError):
        canonical_bytes([None, [bad]])
    assert canonical_bytes({"step_id": None, "x": [None, 1.5]}) == b'{"step_id":null,"x":[null,1.5]}'


def test_types_json_does_not_have_are_refused_on_both_paths() -> None:
    import dataclasses
    import datetime
    import enum

    @dataclasses.dataclass
    class Point:
        x: int

    class Text(str):
        pass

    class Color(enum.IntEnum):
        RED = 1

    for value in (datetime.datetime(2025, 1, 1), Point(1), {"k": Text("v")}, {Text("k"): 1}):
        with pytest.raises(CanonicalizationError):
            jcs_exact(value)
        with pytest.raises(CanonicalizationError):
            canonical_bytes(value)
    # the documented exception: enum members (and UUIDs) get orjson's native form on the fast path
    with pytest.raises(CanonicalizationError):
        jcs_exact([Color.RED])
    assert canonical_bytes([Color.RED]) == b"[1]"


def test_string_escapes_are_jcs() -> None:
    text = "".join(chr(c) for c in range(0x20)) + '"\\/\x7f\u2028\ufeff\U0001f600'
    out = canonical_bytes(text)
    assert out == jcs_exact(text) == rfc8785.dumps(text)
    assert out.startswith(b'"\\u0000\\u0001') and b"\\b\\t\\n\\u000b\\f\\r" in out
    assert "/\x7f\u2028\ufeff\U0001f600".encode() in out  # raw UTF-8, never \u-escaped


def test_tuples_serialize_as_arrays() -> None:
    assert canonical_bytes((1, "a", (2.0,))) == jcs_exact((1, "a", (2.0,))) == b'[1,"a",[2]]'


def test_deep_nesting_agrees() -> None:
    value: object = 1.5
    for i in range(150):
        value = [value] if i % 2 else {"k": value}
    assert canonical_bytes(value) == jcs_exact(value)


# --- the fast path -------------------------------------------------------------


def _writer_event() -> dict:
    return {
        "id": "3fa85f6417174562b3fc2c963f66afa6",
        "run_id": "d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6",
        "step_id": "4a1c0f9e6b3d2a5c8f9e1b4d2a7c6f3e",
        "parent_id": None,
        "timestamp_ns": 1_764_000_000_123_456_789,
        "kind": "tool.called",
        "payload": {
            "tool": "bash",
            "arguments": {
                "argv": ["pytest", "-x", "naïve café", "日本語", "emoji 😀"],
                "cwd": "/workspace",
                "limits": {"cpu_s": 30, "mem_mb": 512.5, "ratio": 0.125},
                "flags": [True, False, None],
            },
        },
        "prev_hash": "0" * 64,
    }


def test_fast_path_taken_for_a_typical_writer_event() -> None:
    event = _writer_event()
    dumped = orjson.dumps(event, option=orjson.OPT_SORT_KEYS)
    assert orjson_is_jcs(dumped)
    assert canonical_bytes(event) == dumped == jcs_exact(event)


def test_fast_path_taken_for_every_fixture_line_of_the_completed_run() -> None:
    """The hot path: a realistic log canonicalizes through orjson almost always."""
    from ract_cli.testing.synth import fixture_path

    path = fixture_path(Path(__file__).parent.parent / "fixtures", "completed")
    lines = path.read_bytes().splitlines()
    fast = sum(orjson_is_jcs(line) for line in lines)
    assert fast >= 0.9 * len(lines)
    for line in lines:
        assert canonical_bytes(json.loads(line)) == line


REFUSED = [
    ("integral-float", [2.0], b"[2.0]"),
    ("negative-zero", {"x": -0.0}, b'{"x":-0.0}'),
    ("1e16", [1e16], b"[1e+16]"),
    ("1e21", [1e21], b"[1e+21]"),
    ("1e-6", [1e-6], b"[1e-6]"),
    ("1e-7", [1e-7], b"[1e-7]"),
    ("subnormal", [5e-324], b"[5e-324]"),
    ("max-double", [1.7976931348623157e308], b"[1.7976931348623157e+308]"),
    ("19-digit-int-9e18", [9_223_372_036_854_775_807], b"[9223372036854775807]"),
    ("19-digit-int-neg", {"n": -9_223_372_036_854_775_808}, b'{"n":-9223372036854775808}'),
    ("20-digit-int", [18_446_744_073_709_551_615], b"[18446744073709551615]"),
    ("astral-and-private-use-keys", {"\ue000": 1, "\U0001f600": 2}, None),
    ("astral-and-bmp-high-keys", {"\uffee": 1, "\U00010000": 2}, None),
]


@pytest.mark.parametrize(("value", "orjson_form"), [(v, o) for _, v, o in REFUSED], ids=[n for n, _, _ in REFUSED])
def test_fast_path_refuses(value: object, orjson_form: bytes | None) -> None:
    dumped = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    if orjson_form is not None:
        assert dumped == orjson_form  # the form orjson really writes (why the proof must refuse it)
    assert not orjson_is_jcs(dumped)
    assert canonical_bytes(value) == jcs_exact(value)


@pytest.mark.parametrize(
    "value",
    [{"k": 1_800_000_000_000_000_000}, {"\ue000": 1, "b": 2}, {"\U0001f600": 1, "b": "x"}, [0.5, 1.25, -3]],
    ids=["19-digit-timestamp", "private-use-only", "astral-only", "plain-floats"],
)
def test_fast_path_accepts(value: object) -> None:
    dumped = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    assert orjson_is_jcs(dumped)
    assert canonical_bytes(value) == dumped == jcs_exact(value)


def test_astral_and_private_use_order_differs_between_orjson_and_jcs() -> None:
    value = {"\ue000": 1, "\U0001f600": 2}
    assert orjson.dumps(value, option=orjson.OPT_SORT_KEYS) == '{"\ue000":1,"\U0001f600":2}'.encode()
    assert canonical_bytes(value) == '{"\U0001f600":2,"\ue000":1}'.encode() == rfc8785.dumps(value)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
