"""``read.json_text``: the native core's JSON writer and reader give orjson's bytes and values, or stand aside.

``_core.dumps(value, indent, sort_keys)`` must return exactly
``orjson.dumps(value, option=...)`` or None (then orjson writes it); it must
never write what orjson refuses. ``_core.loads(data)`` must return exactly
``orjson.loads(data)`` (type, value, key order, sign of zero) or None. Both
are checked on generated values, every double's spelling, the JSONTestSuite
files and the project report of a real log; ``json_text`` is checked to take
orjson's answer where the native core stands aside, and under the Python core.
"""

from __future__ import annotations

import gc
import math
import random
import struct
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from json_support import same

from ract_cli.project.report import project_file
from ract_cli.read import core, json_text

_core = pytest.importorskip("ract_cli._core", reason="the native core is not built")

ROOT = Path(__file__).resolve().parent.parent
JSON_SUITE = sorted((ROOT / "tests" / "data" / "json-parsing" / "test_parsing").iterdir())
OPTIONS = [(False, False), (True, False), (False, True), (True, True)]


def orjson_bytes(value: object, indent: bool, sort_keys: bool) -> bytes | None:
    """orjson's bytes, or None where it refuses the value."""
    option = (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    try:
        return orjson.dumps(value, option=option)
    except TypeError:
        return None


def assert_writes_as_orjson(value: object, *, plain: bool = True) -> None:
    """Every option: C's bytes are orjson's; ``plain`` (exact types, shallow): C never stands aside when
    orjson writes the value."""
    for indent, sort_keys in OPTIONS:
        ours = _core.dumps(value, indent, sort_keys)
        theirs = orjson_bytes(value, indent, sort_keys)
        if ours is not None:
            assert ours == theirs, (value, indent, sort_keys)
        elif plain:
            assert theirs is None, (value, indent, sort_keys)


_TEXT = st.text(st.characters(codec="utf-8") | st.sampled_from('\x00\x1f\x7f"\\/\u2028\ue000\U0001f600'), max_size=12)
_INTS = st.integers(-(2**63), 2**64 - 1) | st.integers(-(2**70), 2**70) | st.sampled_from([0, -1, 2**63, -(2**63) - 1])
_FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.floats(min_value=1e-12, max_value=1e-3)
_SCALARS = st.none() | st.booleans() | _INTS | _FLOATS | _TEXT
_VALUES = st.recursive(
    _SCALARS,
    lambda kids: (
        st.lists(kids, max_size=4) | st.lists(kids, max_size=3).map(tuple) | st.dictionaries(_TEXT, kids, max_size=4)
    ),
    max_leaves=16,
)


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(value=_VALUES)
def test_dumps_is_orjson_on_generated_values(value: object) -> None:
    assert_writes_as_orjson(value)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(value=_VALUES)
def test_loads_reads_orjson_text_as_orjson(value: object) -> None:
    data = orjson_bytes(value, False, False)
    if data is None:
        return
    for text in (data, orjson.dumps(orjson.loads(data), option=orjson.OPT_INDENT_2)):
        ours, theirs = _core.loads(text), orjson.loads(text)
        if ours is not None:
            assert same(ours, theirs), text
        else:  # only null itself, or where the strict rules refuse: an integer past int64
            assert theirs is None or any(abs(v) >= 2**63 for v in _ints_in(theirs)), text


def _ints_in(value: object) -> list[int]:
    if type(value) is int:
        return [value]
    if isinstance(value, dict):
        return [i for v in value.values() for i in _ints_in(v)]
    if isinstance(value, list):
        return [i for v in value for i in _ints_in(v)]
    return []


def test_every_double_is_written_as_orjson_writes_it() -> None:
    """orjson writes repr's shortest digits, but exponents -5..-9 its own way (``0.00001``, ``1e-7``)."""
    rng = random.Random(14)
    doubles = [0.0, -0.0, 5e-324, -5e-324, 1.7976931348623157e308, math.nan, math.inf, -math.inf]
    doubles += [float(f"{m}e{e}") for e in range(-323, 309) for m in ("1", "1.5", "9.999999999999999", "2.5")]
    doubles += [struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(20000)]
    doubles += [rng.choice((1, -1)) * 10 ** rng.uniform(-11, -3) for _ in range(20000)]
    for x in doubles:
        assert _core.dumps(x) == orjson.dumps(x), repr(x)
    assert _core.dumps(doubles) == orjson.dumps(doubles)


def test_strings_are_escaped_as_orjson_escapes_them() -> None:
    every_byte = "".join(chr(i) for i in range(0x80)) + "\u2028\u2029\ufeff\U0001f600é"
    assert_writes_as_orjson(every_byte)
    assert_writes_as_orjson({every_byte: [every_byte]})
    assert _core.dumps("\ud800") is None and orjson_bytes("\ud800", False, False) is None  # (a lone surrogate)


@pytest.mark.parametrize(
    "value",
    [
        2**64,  # past orjson's 64 bits
        -(2**63) - 1,
        {1: "x"},  # a key that is not a str
        {"a": {2: 3}},
        [object()],
        {"a": [1, {"b": {1.5}}]},  # a set
    ],
    ids=repr,
)
def test_what_orjson_refuses_is_left_to_it(value: object) -> None:
    assert _core.dumps(value) is None and orjson_bytes(value, False, False) is None
    with pytest.raises(TypeError):
        json_text.dumps(value)


class _Str(str):
    pass


def test_other_types_are_left_to_orjson() -> None:
    """Subclasses, and nesting past C's bound: orjson writes them (json_text takes its bytes)."""
    deep: list[object] = []
    for _ in range(200):
        deep = [deep]
    for value in ({"a": _Str("x")}, [_Str("y")], deep, {"k": True, "n": [1.5, None]}.items()):
        assert _core.dumps(value) is None
        want = orjson_bytes(value, False, True)
        if want is not None:
            assert json_text.dumps(value, sort_keys=True) == want
        else:
            with pytest.raises(TypeError):
                json_text.dumps(value, sort_keys=True)


@pytest.mark.parametrize("path", JSON_SUITE, ids=lambda p: p.name)
def test_loads_on_the_json_test_suite(path: Path) -> None:
    """What C reads, orjson reads the same; what C refuses it leaves to orjson (which may read it)."""
    data = path.read_bytes()
    ours = _core.loads(data)
    if ours is None:
        return
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 5000))  # (``same`` walks 500 nested arrays)
    try:
        assert same(ours, orjson.loads(data)), path.name
        assert same(json_text.loads(data), ours)
    finally:
        sys.setrecursionlimit(limit)


def test_a_real_report_round_trips_byte_for_byte() -> None:
    """The project report of a fixture log, as the CLI writes it (sorted, indented) and spills it (compact)."""
    report = project_file(ROOT / "fixtures" / "runs" / "120d7eae7ee0c9c181816e553722e2fe" / "events.jsonl")
    assert_writes_as_orjson(report)
    compact = _core.dumps(report)
    assert compact is not None and same(_core.loads(compact), orjson.loads(compact))


def test_json_text_takes_orjson_under_the_python_core() -> None:
    """``RACT_CORE=python``: nothing of the native core runs, the bytes are the same."""
    value = {"b": [1, 2.5e-7, "\x01"], "a": None}
    native = json_text.dumps(value, indent=True, sort_keys=True)
    core.use_core("python")
    try:
        assert core.native_chosen() is None
        assert json_text.dumps(value, indent=True, sort_keys=True) == native
        assert json_text.loads(native) == value
    finally:
        core.use_core(core.core_name())


def test_loads_of_null_and_of_what_is_not_json() -> None:
    assert json_text.loads(b"null") is None and _core.loads(b"null") is None
    for bad in (b"", b"{", b"[1,]", b"NaN", b'{"a":1,"a":2}'):
        assert _core.loads(bad) is None
    with pytest.raises(ValueError):
        json_text.loads(b"{")
    assert json_text.loads(b'{"a":1,"a":2}') == {"a": 2}  # (orjson reads a duplicate key; C leaves it)


class _Key:
    """A dict key whose comparison changes what is being written (orjson refuses such a key)."""

    def __init__(self, victim: list[object]) -> None:
        self.victim = victim

    def __lt__(self, other: object) -> bool:
        self.victim.clear()
        return False

    def __gt__(self, other: object) -> bool:
        self.victim.clear()
        return True


def test_a_key_that_is_not_a_str_is_refused_before_any_sorting() -> None:
    """Sorting runs no Python code: a key other than an exact str (whose ``__lt__`` could free what is
    being written) is orjson's to refuse, checked before the keys are sorted."""
    outer: list[object] = []
    outer.append({"a" * 50: "x" * 1000, "b": [1, 2, 3], _Key(outer): 2})
    assert _core.dumps(outer, False, True) is None and len(outer) == 1
    assert _core.dumps({_Str("b"): 1, _Str("a"): 2}, False, True) is None


def test_a_finalizer_that_empties_the_list_being_written_does_not_crash_it() -> None:
    """A collection that making a keys list starts can run a finalizer, which can touch any container:
    each item is held while it is written, and a container whose size changed is left to orjson."""
    outer = [{"b" * 40: "x" * 200, "a" * 40: i} for i in range(64)]

    class Bomb:
        def __del__(self) -> None:
            outer.clear()

    gc.collect()
    gc.disable()
    try:
        bomb = Bomb()
        bomb.self = bomb  # type: ignore[attr-defined]  # a cycle: only the collector frees it
        gc.collect(0)
        del bomb  # unreachable, waiting in generation 1
        gc.set_threshold(1, 0, 1000)  # (a collection of generation 1 at the first allocation)
        gc.enable()
        written = _core.dumps(outer, False, True)
    finally:
        gc.set_threshold(700, 10, 10)
        gc.enable()
    assert outer == [] and written is None  # the finalizer ran while the list was written
