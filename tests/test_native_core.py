"""The native core (``ract_cli._core``) against the pure-Python reference path (SPEC §11).

Differential tests: both cores see the same bytes and must agree. The oracle is
``analyze_line(body, fast=False)``:

* module-level ``check_line`` (no kind or payload checks): a non-None answer
  promises the Python path finds no integrity problem (``INTEGRITY`` codes), and
  the event and hash are the Python path's, equal in type, value and key order;
* ``Verifier.check_line`` (from ``compile_kinds``): a non-None answer promises
  the Python path finds no problem at all (``problems == []``);
* on the layouts a writer may produce (key order, whitespace, ``\\uXXXX``
  escapes, ``\\/``, CRLF, number spellings) a line the Python path accepts must
  not be None (speed must not depend on layout);
* hostile bytes (bit flips, truncations, duplicate keys at depth, deep nesting,
  invalid UTF-8, lone surrogates, NaN, BOM, trailing garbage) need only the
  first two: None is always allowed there.

Every file under ``tests/data/native-fuzz/crashes/`` (written by
``scripts/fuzz_native.py``) is replayed with the same oracle, as is the seed
corpus under ``tests/data/native-fuzz/corpus/``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from time import time_ns

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from json_support import check_json_text, same
from kind_examples import INVARIANT_INVALID, all_field_invalid_cases, all_valid_cases, merged

from ract_cli.format.canonical import jcs_exact
from ract_cli.format.kinds import KINDS, LATEST_SCHEMA_VERSION, VALIDATORS, kinds_for_version
from ract_cli.format.model import ENVELOPE_ORDER
from ract_cli.read.handles import CLOSE_TO_OPEN
from ract_cli.read.json_rules import MAX_NESTING, parse_exact
from ract_cli.read.line import analyze_line

try:
    from ract_cli import _core
except ImportError as exc:  # pragma: no cover - depends on the build
    pytest.skip(
        f"the native core ract_cli._core is not built ({exc}); only the pure-Python path is available",
        allow_module_level=True,
    )

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
FUZZ_DIR = DATA / "native-fuzz"
LONG = os.environ.get("RACT_LONG") == "1"

INTEGRITY = frozenset({"MALFORMED_LINE", "DUPLICATE_KEY", "ENVELOPE_ERROR", "HASH_MISMATCH", "LINE_TOO_LONG"})
#: the open kinds of read/handles.py and their closes: the payloads the reader needs
HANDLE_KINDS = frozenset(
    {
        "run.started",
        "step.started",
        "tool.called",
        "prompt.sent",
        "handshake.requested",
        "run.completed",
        "run.aborted",
        "step.committed",
        "step.rolled_back",
        "tool.result",
        "response.received",
        "handshake.resolved",
    }
)


def _verifier(version: int, payload_kinds: frozenset[str] = HANDLE_KINDS) -> _core.Verifier:
    return _core.compile_kinds(KINDS, VALIDATORS, schema_version=version, payload_kinds=payload_kinds)


VERIFIERS = {v: _verifier(v) for v in range(1, LATEST_SCHEMA_VERSION + 1)}
VERIFIER = VERIFIERS[LATEST_SCHEMA_VERSION]
#: the reader's: check_block pairs closes with their opens in C
PAIRING_VERIFIER = _core.compile_kinds(
    KINDS, VALIDATORS, schema_version=LATEST_SCHEMA_VERSION, payload_kinds=HANDLE_KINDS, pairs=CLOSE_TO_OPEN
)


# --- the oracle ------------------------------------------------------------------


def agree(body: bytes, *, complete: bool, versions: tuple[int, ...] = (LATEST_SCHEMA_VERSION,)) -> bool:
    """Assert both cores agree on one line; return whether the line is fully valid (latest version).

    ``complete``: the line is in a layout a writer may produce, so a line the
    Python path accepts must be accepted natively too.
    """
    ref = analyze_line(body, fast=False)
    codes = {p.code for p in ref.problems}
    native = _core.check_line(body)
    if native is not None:
        assert not codes & INTEGRITY, (body[:300], codes)
        event, stored = native
        assert same(event, ref.event), (body[:300], event, ref.event)
        assert stored == ref.stored_hash
    elif complete and ref.parsed and not codes & INTEGRITY:
        pytest.fail(f"native check_line refused a line the Python path accepts: {body[:300]!r}")
    valid_latest = False
    for version in versions:
        r = ref if version == LATEST_SCHEMA_VERSION else analyze_line(body, version, fast=False)
        verifier = VERIFIERS[version]
        full = verifier.check_line(body, full=True)
        compact = verifier.check_line(body)
        assert (full is None) == (compact is None), body[:300]
        if full is None:
            if complete and r.parsed and not r.problems:
                pytest.fail(f"Verifier(v{version}) refused a valid line: {body[:300]!r}")
            continue
        assert not r.problems, (version, body[:300], [(p.code, p.message) for p in r.problems])
        event, stored = full
        assert same(event, r.event), (body[:300], event, r.event)
        assert stored == r.stored_hash
        check_compact(compact, r.event, stored, verifier)
        valid_latest |= version == LATEST_SCHEMA_VERSION
    return valid_latest


def check_compact(compact: tuple[object, ...], event: dict, stored: str, verifier: object) -> None:
    ident, run_id, step_id, parent_id, ts, kind, prev, hsh, payload = compact
    assert (ident, run_id, step_id, parent_id, ts, kind, prev, hsh) == (
        event["id"],
        event["run_id"],
        event["step_id"],
        event["parent_id"],
        event["timestamp_ns"],
        event["kind"],
        event["prev_hash"],
        stored,
    )
    assert type(ts) is int
    if kind in HANDLE_KINDS:
        assert same(payload, event["payload"])
    else:
        assert payload is None


def lines_of(path: Path) -> list[bytes]:
    """A file's lines without their ``\\n`` (a ``\\r`` stays: it is JSON whitespace)."""
    return path.read_bytes().split(b"\n")[:-1] if path.read_bytes().endswith(b"\n") else path.read_bytes().split(b"\n")


# --- corpora ------------------------------------------------------------------------

FIXTURE_LOGS = sorted((ROOT / "fixtures" / "runs").glob("*/events.jsonl"))
JOURNALS = sorted(p for p in (ROOT / "fixtures" / "journals").iterdir() if p.suffix == ".jsonl")
JSON_SUITE = sorted((DATA / "json-parsing" / "test_parsing").iterdir())
JCS_INPUTS = sorted((DATA / "jcs" / "input").iterdir())


def fixture_lines() -> list[bytes]:
    return [line for path in FIXTURE_LOGS for line in lines_of(path)]


def test_corpora_present() -> None:
    assert len(FIXTURE_LOGS) >= 5 and JOURNALS and len(JSON_SUITE) > 300 and len(JCS_INPUTS) >= 6


@pytest.mark.parametrize("path", FIXTURE_LOGS, ids=lambda p: p.parent.name)
def test_fixture_runs(path: Path) -> None:
    valid = [agree(line, complete=True, versions=tuple(range(1, LATEST_SCHEMA_VERSION + 1))) for line in lines_of(path)]
    assert any(valid)


@pytest.mark.parametrize("path", JOURNALS, ids=lambda p: p.name)
def test_journals_are_not_ract_events(path: Path) -> None:
    for line in lines_of(path):
        agree(line, complete=False)
        assert _core.check_line(line) is None  # a journal record has no "kind": never a RACT event
        assert VERIFIER.check_line(line) is None


def test_dialect_detection_is_the_same_with_either_core() -> None:
    """A file's first line: a valid RACT event is read natively (no orjson import at start-up, issue 14),
    any other line with orjson; either way the dialect is the one orjson's reading of the line gives."""
    from ract_cli.read import core
    from ract_cli.read.dialect import _record_dialect

    bodies = fixture_lines() + [line for path in JOURNALS for line in lines_of(path)]
    bodies += [path.read_bytes() for path in JSON_SUITE]
    try:
        core.use_core("python")
        by_python = [_record_dialect(body + b"\n") for body in bodies]
        core.use_core("native")
        by_native = [_record_dialect(body + b"\n") for body in bodies]
    finally:
        core.use_core(core.core_name())
    assert by_native == by_python
    assert {"ract", "raxol", None} <= set(by_python)


def python_canonical(body: bytes) -> bytes | None:
    """The canonical bytes the Python path gives one JSON value under the line rules, or None."""
    try:
        value = parse_exact(body)
        if _depth(value) > MAX_NESTING:
            return None
        return jcs_exact(value)
    except (ValueError, RecursionError):
        return None


def _depth(value: object) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if type(item) in (dict, list):
            deepest = max(deepest, level)
            stack.extend((c, level + 1) for c in (item.values() if type(item) is dict else item))  # type: ignore[union-attr]
    return deepest


@pytest.mark.parametrize("path", JSON_SUITE, ids=lambda p: p.name)
def test_json_test_suite(path: Path) -> None:
    body = path.read_bytes()
    agree(body, complete=False)
    assert _core.canonical(body) == python_canonical(body), path.name


def test_key_order_is_utf16() -> None:
    """RFC 8785 sorts keys by UTF-16 code units: U+E000..U+FFFF after astral characters."""
    import itertools

    keys = [
        "a",
        "\u00e9",
        "\ud7ff",
        "\ue000",
        "\uffff",
        "\U00010000",
        "\U0001f600",
        "\U0010ffff",
        "\ue000a",
        "\U0001f600b",
    ]
    rng = random.Random(2)
    for perm in itertools.islice(itertools.permutations(keys[:6]), 0, None, 7):
        body = json.dumps({k: i for i, k in enumerate(perm)}, ensure_ascii=rng.random() < 0.5).encode()
        assert _core.canonical(body) == python_canonical(body)
    for _ in range(200):
        chosen = rng.sample(keys, rng.randint(2, len(keys)))
        body = json.dumps({k: 1 for k in chosen}, ensure_ascii=False).encode()
        assert _core.canonical(body) == python_canonical(body)
        event = hashed_event("run.started", {k: 1 for k in chosen}, rng)
        assert agree(lay_out(event, "shuffled", rng), complete=True)


@pytest.mark.parametrize("path", JCS_INPUTS, ids=lambda p: p.name)
def test_jcs_vectors(path: Path) -> None:
    expected = (DATA / "jcs" / "output" / path.name).read_bytes()
    assert _core.canonical(path.read_bytes()) == expected


# --- layouts ------------------------------------------------------------------------


class Layout:
    """One way a writer may lay out the same values (the hash covers values, not bytes)."""

    def __init__(self, rng: random.Random, name: str) -> None:
        self.rng, self.name = rng, name
        self.ensure_ascii = name in ("json-defaults", "escapes", "wild")
        self.spacing = {"json-defaults": (", ", ": ")}.get(name, (",", ":"))

    def ws(self) -> str:
        if self.name != "wild" or self.rng.random() < 0.5:
            return ""
        return "".join(self.rng.choice(" \t\r\n") for _ in range(self.rng.randint(1, 3)))

    def keys(self, obj: dict, top: bool) -> list[str]:
        keys = list(obj)
        if self.name == "sorted":
            return sorted(keys)
        if self.name == "schema" and top:
            return [k for k in ENVELOPE_ORDER if k in obj] + [k for k in keys if k not in ENVELOPE_ORDER]
        if self.name in ("shuffled", "json-defaults", "wild", "escapes"):
            self.rng.shuffle(keys)
        return keys

    def string(self, text: str) -> str:
        out = ['"']
        for ch in text:
            code = ord(ch)
            if ch in '"\\':
                out.append("\\" + ch)
            elif code < 0x20:
                short = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}.get(ch)
                out.append(short if short and self.rng.random() < 0.7 else f"\\u{code:04x}")
            elif ch == "/" and self.name in ("escapes", "wild") and self.rng.random() < 0.5:
                out.append("\\/")
            elif (code > 0x7E and self.ensure_ascii) or (self.name in ("escapes", "wild") and self.rng.random() < 0.15):
                out.append(self._u_escape(code))
            else:
                out.append(ch)
        out.append('"')
        return "".join(out)

    def _u_escape(self, code: int) -> str:
        hexes = [f"{code:04x}"] if code < 0x10000 else None
        if hexes is None:
            code -= 0x10000
            hexes = [f"{0xD800 + (code >> 10):04x}", f"{0xDC00 + (code & 0x3FF):04x}"]
        upper = self.rng.random() < 0.3
        return "".join("\\u" + (h.upper() if upper else h) for h in hexes)

    def number(self, value: int | float, exact: bool) -> str:
        """A spelling of the number; ``exact``: an integer must stay an integer token (timestamp_ns)."""
        rng = self.rng
        if type(value) is int:
            if exact or self.name not in ("numbers", "wild") or rng.random() < 0.5:
                return "-0" if value == 0 and self.name in ("numbers", "wild") and rng.random() < 0.2 else str(value)
            if abs(value) > 2**53:
                return str(value)
            return rng.choice([f"{value}.0", f"{value}e0", f"{value}E+0", f"{value}.000e-0"])
        text = repr(value)
        if self.name not in ("numbers", "wild") or rng.random() < 0.4:
            return text
        return respell_float(text, rng)

    def dump(self, value: object, top: bool = True, exact: bool = False) -> str:
        ws = self.ws
        if value is None:
            return "null"
        if value is True:
            return "true"
        if value is False:
            return "false"
        if type(value) in (int, float):
            return self.number(value, exact)  # type: ignore[arg-type]
        if type(value) is str:
            return self.string(value)
        if type(value) is list:
            if not value:
                return "[" + ws() + "]"
            sep = ws() + self.spacing[0] + ws()
            return "[" + ws() + sep.join(self.dump(v, False) for v in value) + ws() + "]"
        assert type(value) is dict
        if not value:
            return "{" + ws() + "}"
        parts = []
        for k in self.keys(value, top):
            parts.append(
                self.string(k) + ws() + self.spacing[1] + ws() + self.dump(value[k], False, top and k == "timestamp_ns")
            )
        return "{" + ws() + (ws() + self.spacing[0] + ws()).join(parts) + ws() + "}"


def respell_float(text: str, rng: random.Random) -> str:
    """The same decimal value (so the same double) spelled with another exponent."""
    sign = ""
    if text.startswith("-"):
        sign, text = "-", text[1:]
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    if not digits:
        return sign + rng.choice(["0.0", "0e0", "0.000E+3", "0E-2"])
    e = int(exp or 0) - len(frac)  # value = digits * 10^e
    shift = rng.randint(0, 3)
    digits, e = digits + "0" * shift, e - shift
    letter = rng.choice("eE")
    if rng.random() < 0.5 and len(digits) > 1:
        point = rng.randint(1, len(digits) - 1)  # d.ddd * 10^(e + len - point)
        x = e + len(digits) - point
        return f"{sign}{digits[:point]}.{digits[point:]}{letter}{rng.choice(['', '+']) if x >= 0 else ''}{x}"
    return f"{sign}{digits}{letter}{'+' if e >= 0 and rng.random() < 0.5 else ''}{e}"


LAYOUTS = ("sorted", "schema", "shuffled", "json-defaults", "escapes", "numbers", "wild")


def hashed_event(kind: str, payload: dict, rng: random.Random, **envelope: object) -> dict:
    event: dict = {
        "id": f"{rng.getrandbits(128):032x}",
        "run_id": "1a2b3c4d5e6f708192a3b4c5d6e7f809",
        "step_id": rng.choice([None, f"{rng.getrandbits(128):032x}"]),
        "parent_id": rng.choice([None, f"{rng.getrandbits(128):032x}"]),
        "timestamp_ns": rng.choice([0, 1, 1_764_000_000_123_456_789, 2**63 - 1, rng.getrandbits(62)]),
        "kind": kind,
        "payload": payload,
        "prev_hash": f"{rng.getrandbits(256):064x}",
    }
    event.update(envelope)
    event["hash"] = hashlib.sha256(jcs_exact(event)).hexdigest()
    return event


def lay_out(event: dict, layout: str, rng: random.Random) -> bytes:
    text = Layout(rng, layout).dump(event)
    return text.encode("utf-8", "surrogatepass")


# --- hypothesis: generated envelopes in random layouts ---------------------------

_INT64 = st.integers(-(2**63), 2**63 - 1)
_EDGE_INTS = st.sampled_from([0, -1, 2**53, 2**53 + 1, -(2**53) - 1, 2**63 - 1, -(2**63), 2**63 - 2, 10**18])
_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",)) | st.sampled_from(["\ue000", "\uffff", "\U0001f600", "\x00", "/", '"']),
    max_size=12,
)
_SCALARS = (
    st.none()
    | st.booleans()
    | _INT64
    | _EDGE_INTS
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.1, 1e16, 1e21, 1e-7, 2.0, -0.0, 5e-324, 1.7976931348623157e308, 0.85, 19.411])
    | _TEXT
)
_VALUES = st.recursive(
    _SCALARS, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(_TEXT, kids, max_size=4), max_leaves=12
)
_VALID_CASES = all_valid_cases()


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples * (20 if LONG else 1),
        deadline=None,
        derandomize=not LONG,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )


@_settings(300)
@given(
    case=st.sampled_from(_VALID_CASES),
    extra=st.dictionaries(_TEXT, _VALUES, max_size=3),
    layout=st.sampled_from(LAYOUTS),
    seed=st.integers(0, 2**32),
)
def test_generated_envelopes_any_layout(case: tuple[str, str, dict], extra: dict, layout: str, seed: int) -> None:
    _, kind, payload = case
    rng = random.Random(seed)
    payload = {**{k: v for k, v in extra.items() if k not in payload}, **payload}
    body = lay_out(hashed_event(kind, payload, rng), layout, rng)
    valid = agree(body, complete=True)
    # A documented example plus undocumented keys is valid, unless a value breaks a line rule.
    ref = analyze_line(body, fast=False)
    assert valid == (not ref.problems)


@_settings(150)
@given(value=_VALUES, layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2**32))
def test_generated_values_canonical(value: object, layout: str, seed: int) -> None:
    body = lay_out({"v": value}, layout, random.Random(seed)) if layout != "sorted" else json.dumps(value).encode()
    assert _core.canonical(body) == python_canonical(body)


# --- payload verdicts: the compiled table against VALIDATORS -------------------------


def _payload_cases() -> Iterator[tuple[str, str, dict]]:
    yield from all_valid_cases()
    yield from all_field_invalid_cases()
    yield from ((i, k, merged(k, o)) for i, k, o in INVARIANT_INVALID)
    yield from mutated_payload_cases()


def mutated_payload_cases() -> Iterator[tuple[str, str, dict]]:
    """Per field of every kind: boundary and wrong values the table must judge as VALIDATORS does."""
    wrong: tuple[object, ...] = (
        None,
        True,
        False,
        0,
        1,
        -1,
        1.5,
        3.0,
        2**63 - 1,
        -(2**63),
        1e300,
        "",
        "x",
        [],
        {},
        [1],
        {"a": 1},
    )
    for kind in KINDS:
        base = next((p for _, k, p in _VALID_CASES if k == kind.name), {})
        for f in kind.fields:
            values: list[object] = list(wrong)
            if f.minimum is not None:
                values += [f.minimum, f.minimum - 1, f.minimum - 0.5, float(f.minimum), f.minimum + 0.25]
            if f.maximum is not None:
                values += [f.maximum, f.maximum + 1, f.maximum + 1e-9, float(f.maximum), f.maximum - 0.25]
            if f.max_length is not None:
                n = f.max_length
                values += [
                    "a" * n,
                    "a" * (n + 1),
                    "é" * n,
                    "é" * (n + 1),
                    "😀" * n,
                    "😀" * (n + 1),
                    "😀" * (n // 2 + 1),
                ]
            if f.enum is not None:
                values += [*f.enum, "not-a-value", "", *(str(e).upper() for e in f.enum if isinstance(e, str))]
            if f.pattern is not None:
                values += ["0" * 16, "a" * 32, "f" * 64, "A" * 32, "g" * 32, "0" * 31, "0" * 33, "\u0660" * 32]
            if f.max_items is not None:
                values += [[1] * f.max_items, [1] * (f.max_items + 1), [1.0, 2], [True], ["1"], [1.5]]
            if f.items is not None:
                values += [[{}], [[]], [None], [1, 2.0], ["a"], [{"k": 1}, 2]]
            for i, value in enumerate(values):
                yield f"{kind.name}.{f.name}#{i}", kind.name, {**base, f.name: value}


PAYLOAD_CASES = list(_payload_cases())


def test_payload_cases_cover_every_kind() -> None:
    assert {k for _, k, _ in PAYLOAD_CASES} == {k.name for k in KINDS}
    assert len(PAYLOAD_CASES) > 3000


@pytest.mark.parametrize("layout", ["sorted", "schema", "escapes", "numbers"])
def test_payload_verdicts_equal_validators(layout: str) -> None:
    rng = random.Random(layout)
    accepted = rejected = 0
    for case_id, kind, payload in PAYLOAD_CASES:
        body = lay_out(hashed_event(kind, payload, rng), layout, rng)
        ref = analyze_line(body, fast=False)
        integrity = {p.code for p in ref.problems} & INTEGRITY
        if integrity:  # e.g. an integer the layout cannot carry: not a payload case
            continue
        verdict = VERIFIER.check_line(body)
        # Read back from the line itself: a layout may turn 3 into 3.0, which a validator also judges.
        expected = VALIDATORS[kind](ref.event["payload"]) == []
        assert (verdict is not None) == expected, (case_id, layout, body[:300], VALIDATORS[kind](ref.event["payload"]))
        if layout in ("sorted", "schema"):
            assert expected == (VALIDATORS[kind](payload) == []), case_id
        accepted += expected
        rejected += not expected
        for version in (1, 5, 6, 8):  # vocabulary by schema version (SPEC §2.5)
            in_vocabulary = kind in kinds_for_version(version)
            assert (VERIFIERS[version].check_line(body) is not None) == (expected and in_vocabulary), (case_id, version)
    assert accepted > 500 and rejected > 1000


def test_unknown_kind_is_refused() -> None:
    rng = random.Random(3)
    for kind in ("no.such.kind", "", "run.Started", "run.started\u0000", "run.started "):
        body = lay_out(hashed_event(kind, {}, rng), "sorted", rng)
        assert VERIFIER.check_line(body) is None
        assert _core.check_line(body) is not None  # the envelope alone is fine
        agree(body, complete=True)


def test_escaped_kind_and_field_names() -> None:
    rng = random.Random(4)
    event = hashed_event("probe.evaluated", {"score": 0.5, "probe": "needle"}, rng)
    body = Layout(rng, "sorted").dump(event).encode()
    escaped = body.replace(b'"probe.evaluated"', b'"\\u0070robe\\u002eevaluated"').replace(b'"score"', b'"sc\\u006fre"')
    assert escaped != body
    assert agree(escaped, complete=True)
    bad_event = hashed_event("probe.evaluated", {"score": 1.5, "probe": "needle"}, rng)
    bad = Layout(rng, "sorted").dump(bad_event).encode().replace(b'"score"', b'"sc\\u006fre"')
    assert b"\\u006f" in bad
    assert _core.check_line(bad) is not None  # the envelope and hash are fine
    assert VERIFIER.check_line(bad) is None  # the escaped key is still "score": out of range
    agree(bad, complete=True)


def test_kind_table_introspection() -> None:
    table = VERIFIER.kinds()
    assert set(table) == {k.name for k in KINDS}
    python_kinds = {name for name, (_, _, py, _) in table.items() if py}
    assert python_kinds == {k.name for k in KINDS if k.invariants}  # every field is judged in C
    assert {name for name, (_, want, _, _) in table.items() if want} == HANDLE_KINDS
    assert VERIFIERS[5].kinds()["state.budget_capped"][0] is False
    assert VERIFIER.schema_version == LATEST_SCHEMA_VERSION


def test_compile_kinds_arguments() -> None:
    with pytest.raises(TypeError):
        _core.compile_kinds(KINDS, VALIDATORS)  # schema_version is required
    with pytest.raises(KeyError):
        _core.compile_kinds(KINDS, {}, schema_version=9)
    with pytest.raises(ValueError, match="twice"):
        _core.compile_kinds((*KINDS, KINDS[0]), VALIDATORS, schema_version=9)
    with pytest.raises(TypeError):
        VERIFIER.check_line("not bytes")
    with pytest.raises(TypeError):
        VERIFIER.check_lines([b"{}", "x"])
    none_wanted = _core.compile_kinds(KINDS, VALIDATORS, schema_version=9, payload_kinds=())
    line = fixture_lines()[0]
    result = none_wanted.check_line(line)
    assert result is not None and result[8] is None


# --- hostile mutations ------------------------------------------------------------


def _base_lines() -> list[bytes]:
    rng = random.Random(11)
    base = []
    for case_id, kind, payload in _VALID_CASES[:40]:
        event = hashed_event(kind, {**payload, "nested": {"a": [1, {"b": "c"}], "d": 1.5}}, rng)
        base.append(lay_out(event, LAYOUTS[len(base) % len(LAYOUTS)], rng))
        assert case_id
    return base


BASE = _base_lines()


def hostile_variants(body: bytes) -> Iterator[bytes]:
    yield b""
    yield b" "
    yield b"\xef\xbb\xbf" + body  # BOM
    yield body + b" x"
    yield body + b"{}"
    yield body + b","
    yield body[:-1]
    yield body + b"\x00"
    yield body.replace(b"{", b"[", 1)
    for cut in (1, 2, 10, len(body) // 2, len(body) - 2):
        yield body[:cut]
    for literal in (
        b"NaN",
        b"Infinity",
        b"-Infinity",
        b"1e400",
        b"-1e400",
        b"1e-400",
        b"01",
        b"1.",
        b".5",
        b"+1",
        b"0x10",
        b"1e",
        b"-",
        b"--1",
        b"9223372036854775808",
        b"-9223372036854775809",
        b"9223372036854775807",
        b"-9223372036854775808",
        b"18446744073709551616",
        b"1E+2",
        b"-0",
        b"-0.0",
        b"1.0",
        b"100000000000000000000000",
        b"0.30000000000000004",
        b"tru",
        b"nul",
        b"True",
        b'"\\ud800"',
        b'"\\udc00"',
        b'"\\ud800\\u0041"',
        b'"\\ud83d\\ude00"',
        b'"\\u00"',
        b'"\\x41"',
        b'"\t"',
        b'"\xc0\x80"',
        b'"\xe0\x80\x80"',
        b'"\xed\xa0\x80"',
        b'"\xf4\x90\x80\x80"',
        b'"\xf5\x80\x80\x80"',
        b'"\x80"',
        b'"\xc3"',
        b'"\xe2\x82"',
        b'"\xff"',
        b'"\\u0000"',
        b'"\\/"',
        b'{"a":1,"a":2}',
        b'{"a":{"b":1,"b":1}}',
        b'[{"x":1,"y":2,"x":3}]',
        b'{"\\u0061":1,"a":2}',
        b'{"\xc3\xa9":1,"\\u00e9":2}',
    ):
        yield re_value(body, b'"nested"', literal)
    depth_ok = MAX_NESTING - 2  # the line's object (1) and "payload" (2) hold it
    yield re_value(body, b'"nested"', b"[" * depth_ok + b"]" * depth_ok)
    yield re_value(body, b'"nested"', b"[" * (depth_ok + 1) + b"]" * (depth_ok + 1))
    yield re_value(body, b'"nested"', b"[" * 2000 + b"]" * 2000)
    yield re_value(body, b'"nested"', b'{"a":' * (depth_ok + 1) + b"1" + b"}" * (depth_ok + 1))
    yield body.replace(b'"kind"', b'"kind":"x","kind"', 1)
    yield body.replace(b'"payload"', b'"extra":1,"payload"', 1)
    yield body.replace(b'"hash"', b'"hash":"' + b"0" * 64 + b'","hash"', 1)
    for key in (b'"id"', b'"run_id"', b'"step_id"', b'"timestamp_ns"', b'"prev_hash"', b'"hash"'):
        yield swap_value(body, key, b"null")
        yield swap_value(body, key, b'"' + b"A" * 32 + b'"')
        yield swap_value(body, key, b"1.0")
        yield swap_value(body, key, b"-1")
        yield swap_value(body, key, b"9223372036854775808")


def re_value(body: bytes, key: bytes, value: bytes) -> bytes:
    """The line with the value of the first ``key`` member (an object or array) replaced by ``value``."""
    start = body.find(key)
    if start < 0:
        return body
    colon = body.index(b":", start + len(key))
    open_at = colon + 1
    while body[open_at : open_at + 1] in b" \t\r\n":
        open_at += 1
    end = _value_end(body, open_at)
    return body[: colon + 1] + value + body[end:]


def swap_value(body: bytes, key: bytes, value: bytes) -> bytes:
    start = body.find(key + b":")
    if start < 0:
        start = body.find(key + b": ")
        if start < 0:
            return body
    return re_value(body, key, value)


def _value_end(body: bytes, i: int) -> int:
    if body[i : i + 1] in (b"{", b"["):
        depth, in_str, esc = 0, False, False
        for j in range(i, len(body)):
            c = body[j : j + 1]
            if in_str:
                if esc:
                    esc = False
                elif c == b"\\":
                    esc = True
                elif c == b'"':
                    in_str = False
            elif c == b'"':
                in_str = True
            elif c in (b"{", b"["):
                depth += 1
            elif c in (b"}", b"]"):
                depth -= 1
                if depth == 0:
                    return j + 1
        return len(body)
    if body[i : i + 1] == b'"':
        j = i + 1
        while j < len(body) and body[j : j + 1] != b'"':
            j += 2 if body[j : j + 1] == b"\\" else 1
        return j + 1
    j = i
    while j < len(body) and body[j : j + 1] not in b",}] \t\r\n":
        j += 1
    return j


def test_hostile_table() -> None:
    count = 0
    for body in BASE[:12]:
        assert agree(body, complete=True)
        for variant in hostile_variants(body):
            agree(variant, complete=False)
            count += 1
    assert count > 1000


def test_valid_variants_still_valid() -> None:
    """Mutations that keep the values (so the hash) valid must stay on the native path."""
    for body in BASE:
        for variant in (body + b" ", b"\t" + body, body + b"\r", body + b" \r"):
            assert agree(variant, complete=True), variant[:200]


def test_bit_flips() -> None:
    rng = random.Random(5)
    flips = 0
    for body in BASE:
        positions = range(len(body)) if LONG else rng.sample(range(len(body)), min(60, len(body)))
        for pos in positions:
            for bit in (rng.randrange(8),) if not LONG else range(8):
                mutated = bytearray(body)
                mutated[pos] ^= 1 << bit
                agree(bytes(mutated), complete=False)
                flips += 1
    assert flips > 1000


def test_hash_mismatch_and_envelope_errors_are_refused() -> None:
    for body in BASE[:5]:
        event = json.loads(body)
        tampered = dict(event, timestamp_ns=event["timestamp_ns"] ^ 1)
        line = json.dumps(tampered).encode()
        assert _core.check_line(line) is None and VERIFIER.check_line(line) is None
        agree(line, complete=False)


# --- batches -------------------------------------------------------------------------


def _mixed_batch() -> list[bytes]:
    lines = fixture_lines() + BASE
    for body in BASE[:6]:
        lines += list(hostile_variants(body))[::7]
    rng = random.Random(9)
    rng.shuffle(lines)
    return lines


def test_check_lines_equals_check_line() -> None:
    lines = _mixed_batch()
    assert len(lines) > 200
    singles = [_core.check_line(b) for b in lines]
    assert all(same_result(a, b) for a, b in zip(_core.check_lines(lines), singles, strict=True))
    for full in (False, True):
        singles = [VERIFIER.check_line(b, full=full) for b in lines]
        batch = VERIFIER.check_lines(lines, full=full)
        assert all(same_result(a, b) for a, b in zip(batch, singles, strict=True))
        assert all(same_result(a, b) for a, b in zip(VERIFIER.check_lines(tuple(lines), full=full), batch, strict=True))
    assert VERIFIER.check_lines([]) == [] and _core.check_lines([]) == []


def same_result(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]


def test_check_lines_large_batch_repeats_strings() -> None:
    """Many chunks; the run_id and the previous hash objects are shared across lines."""
    lines = [line for line in lines_of(FIXTURE_LOGS[0]) if VERIFIER.check_line(line) is not None]
    results = VERIFIER.check_lines(lines * 50)
    assert len(results) == len(lines) * 50 and all(r is not None for r in results)
    linked = [i for i in range(1, len(results)) if results[i][6] == results[i - 1][7]]
    assert linked and all(results[i][6] is results[i - 1][7] for i in linked)  # one object, not two
    assert all(same_result(r, VERIFIER.check_line(line)) for r, line in zip(results, lines, strict=False))


def test_threads_agree() -> None:
    """The GIL is released while a batch is checked: threads on one file give the same results."""
    lines = _mixed_batch() * 4
    expected = VERIFIER.check_lines(lines)
    out: dict[int, list[object]] = {}

    def work(i: int) -> None:
        out[i] = VERIFIER.check_lines(lines[i::3])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(3):
        assert all(same_result(a, b) for a, b in zip(out[i], expected[i::3], strict=True))


# --- the fuzz corpus and crash reproducers ---------------------------------------------

FUZZ_FILES = sorted(
    p for sub in ("corpus", "crashes") for p in (FUZZ_DIR / sub).glob("*") if p.is_file() and p.name != "README.md"
)


@pytest.mark.parametrize("path", FUZZ_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fuzz_files_replay(path: Path) -> None:
    body = path.read_bytes()
    agree(body, complete=False)  # a file is one line's body, byte for byte
    assert _core.canonical(body) == python_canonical(body)
    check_json_text(_core, body)
    if path.name.startswith(("batch-", "chain-")):  # a batch or a log: its lines joined by "\n"
        lines = body.split(b"\n")
        for line in lines:
            agree(line, complete=False)
        assert all(
            same_result(a, VERIFIER.check_line(b)) for a, b in zip(VERIFIER.check_lines(lines), lines, strict=True)
        )
        expected = reference_chain(lines).state()
        for batch in (1, 3, 64):
            assert native_chain(lines, batch).state() == expected
        assert block_chain(lines).state() == expected
        assert block_chain(lines, verifier=PAIRING_VERIFIER).state() == expected
        assert block_chain(lines, verifier=PAIRING_VERIFIER, threads=2).state() == expected


def test_fuzz_dirs_exist() -> None:
    assert (FUZZ_DIR / "corpus").is_dir() and (FUZZ_DIR / "crashes").is_dir()
    assert any((FUZZ_DIR / "corpus").iterdir())


# --- chain mode: the clean prefix of a batch taken in C ------------------------------


class _PySet:
    def __init__(self) -> None:
        self.items: set[str] = set()

    def add(self, value: str) -> bool:
        if value in self.items:
            return False
        self.items.add(value)
        return True

    def __len__(self) -> int:
        return len(self.items)


class MiniChain:
    """ChainState.feed's rules in miniature: its fast path exactly, and a general path with its findings."""

    def __init__(self, ids: object) -> None:
        self.expected_prev: str | None = "0" * 64
        self.run_id: str | None = None
        self.prev_ts: int | None = None
        self.last_ts: int | None = None
        self.events = 0
        self.ids = ids
        self.findings: list[tuple[int, str]] = []
        self.fed: list[tuple[int, str]] = []  # (line index, kind) of every event, as handles.feed sees them
        self.seen_first = False

    def feed(self, i: int, event: dict | None, stored: str | None, problems: list[str]) -> None:
        if (
            event is not None
            and not problems
            and event["prev_hash"] == self.expected_prev
            and event["run_id"] == self.run_id
            and self.prev_ts is not None
            and event["timestamp_ns"] >= self.prev_ts
        ):
            if not self.ids.add(event["id"]):  # type: ignore[attr-defined]
                self.findings.append((i, "DUPLICATE_ID"))
            ts = self.prev_ts = event["timestamp_ns"]
            self.last_ts = max(self.last_ts, ts)  # type: ignore[type-var]
            self.events += 1
            self.expected_prev = stored
            self.fed.append((i, event["kind"]))
            return
        self.findings += [(i, code) for code in problems]
        first, self.seen_first = not self.seen_first, True
        if event is None:
            self.expected_prev = stored
            return
        if self.expected_prev is not None and event["prev_hash"] != self.expected_prev:
            self.findings.append((i, "MISSING_GENESIS" if first else "CHAIN_BREAK"))
        self.expected_prev = stored
        if self.run_id is None:
            self.run_id = event["run_id"]
        elif event["run_id"] != self.run_id:
            self.findings.append((i, "FOREIGN_RUN_ID"))
        if not self.ids.add(event["id"]):  # type: ignore[attr-defined]
            self.findings.append((i, "DUPLICATE_ID"))
        ts = event["timestamp_ns"]
        if self.prev_ts is not None and ts < self.prev_ts:
            self.findings.append((i, "CLOCK_REGRESSION"))
        self.prev_ts = ts
        self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)
        self.events += 1
        self.fed.append((i, event["kind"]))

    def state(self) -> tuple[object, ...]:
        return (
            self.expected_prev,
            self.run_id,
            self.prev_ts,
            self.last_ts,
            self.events,
            len(self.ids),
            self.findings,
            self.fed,
        )  # type: ignore[arg-type]


def reference_chain(lines: list[bytes]) -> MiniChain:
    mini = MiniChain(_PySet())
    for i, body in enumerate(lines):
        r = analyze_line(body, fast=False)
        mini.feed(i, r.event, r.stored_hash, [p.code for p in r.problems])
    return mini


def native_chain(lines: list[bytes], batch: int, verifier: object = VERIFIER) -> MiniChain:
    """What a reader does with chain mode: C takes the clean prefix of each batch, the rest goes line by line."""
    chain = _core.Chain()
    mini = MiniChain(chain.ids)
    for start in range(0, len(lines), batch):
        part = lines[start : start + batch]
        chain.expected_prev, chain.run_id = mini.expected_prev, mini.run_id
        chain.prev_ts, chain.last_ts, chain.events = mini.prev_ts, mini.last_ts, mini.events
        taken, results = verifier.check_lines(part, chain=chain)  # type: ignore[attr-defined]
        assert len(results) == len(part) and 0 <= taken <= len(part)
        mini.expected_prev, mini.prev_ts, mini.last_ts, mini.events = (
            chain.expected_prev,
            chain.prev_ts,
            chain.last_ts,
            chain.events,
        )
        if mini.run_id is None and taken:  # C took the file's first event: its run_id is the file's
            mini.run_id, mini.seen_first = chain.run_id, True
        assert chain.run_id == mini.run_id
        for j in range(taken):
            r = results[j]
            ref = analyze_line(part[j], fast=False)
            assert not ref.problems
            if ref.event["kind"] in HANDLE_KINDS:
                check_compact(r, ref.event, ref.stored_hash, verifier)
            else:
                assert r is None
            mini.fed.append((start + j, ref.event["kind"]))
        for j in range(taken, len(part)):
            r = results[j]
            if r is not None:
                ref = analyze_line(part[j], fast=False)
                assert not ref.problems and same(r[0], ref.event) and r[1] == ref.stored_hash
                mini.feed(start + j, r[0], r[1], [])
            else:
                ref = analyze_line(part[j], fast=False)
                mini.feed(start + j, ref.event, ref.stored_hash, [p.code for p in ref.problems])
    return mini


def assert_paired(events: list[dict], pairing: bool) -> None:
    """The handle events one check_block call left out of found: opens and the closes that name
    them as parent, each open once (what SPEC §4's rule 2 pairs)."""
    assert pairing or not events
    opens = {e["id"]: e["kind"] for e in events if e["kind"] in CLOSE_TO_OPEN.values()}
    closes = [e for e in events if e["kind"] in CLOSE_TO_OPEN]
    assert len(opens) == len(closes) == len(events) / 2
    for close in closes:
        assert opens.pop(close["parent_id"]) == CLOSE_TO_OPEN[close["kind"]]
        assert close["payload"].get("synthesized") is not True


def block_chain(
    lines: list[bytes], max_line: int = 1 << 20, verifier: object = VERIFIER, threads: int = 1
) -> MiniChain:
    """What the reader does with a block (``Verifier.check_block``): C frames and takes lines up to the
    first it does not take (or that is not clean, or longer than ``max_line``), that line is judged
    line by line, and C goes on after it. ``lines`` must hold no "\\n"."""
    data = b"".join(line + b"\n" for line in lines)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    chain = _core.Chain()
    mini = MiniChain(chain.ids)
    i = 0
    while i < len(lines):
        chain.expected_prev, chain.run_id = mini.expected_prev, mini.run_id
        chain.prev_ts, chain.last_ts, chain.events = mini.prev_ts, mini.last_ts, mini.events
        if threads == 1:
            stop, taken, last, found = verifier.check_block(
                data, starts[i], chain=chain, max_line=max_line, threads=threads
            )  # type: ignore[attr-defined]
        else:  # the helper thread also reads ahead: some bytes of a file, or past its end
            fd, want = ahead_file(), ahead_request(len(data), i)
            # and it may have been started already (start_block): on this block (taken over), or another
            # start or max_line (dropped: the call starts its own)
            started = None
            if i % 3 != 2:
                other = starts[min(i + 1, len(lines))] if i % 3 else starts[i]
                started = verifier.start_block(data, other, max_line=max_line)  # type: ignore[attr-defined]
            stop, taken, last, found, read = verifier.check_block(
                data,
                starts[i],
                chain=chain,
                max_line=max_line,
                threads=threads,
                read_ahead=(fd, *want),
                started=started,
            )  # type: ignore[attr-defined]
            whole = want[0] + want[1] <= AHEAD_FILE_BYTES
            assert read == (os.pread(fd, want[1], want[0]) if whole else None), want
            # (taken over only on its own start; there, unless it staged the whole block and ended first)
            assert started is None or not started.taken or started.start == starts[i]
            del started  # (one not taken stops its thread)
        assert stop == starts[i + taken] and last == (starts[i + taken - 1] if taken else -1)
        mini.expected_prev, mini.prev_ts, mini.last_ts, mini.events = (
            chain.expected_prev,
            chain.prev_ts,
            chain.last_ts,
            chain.events,
        )
        if mini.run_id is None and taken:  # C took the file's first event: its run_id is the file's
            mini.run_id, mini.seen_first = chain.run_id, True
        assert chain.run_id == mini.run_id
        at = {index: (offset, compact) for index, offset, compact in found}
        paired: list[dict] = []  # handle events not in found: paired in C (PAIRING_VERIFIER)
        for j in range(taken):
            ref = analyze_line(lines[i + j], fast=False)
            assert not ref.problems and len(lines[i + j]) <= max_line
            if ref.event["kind"] in HANDLE_KINDS and j in at:
                assert at[j][0] == starts[i + j]
                check_compact(at[j][1], ref.event, ref.stored_hash, verifier)
            elif ref.event["kind"] in HANDLE_KINDS:
                paired.append(ref.event)
            else:
                assert j not in at
            mini.fed.append((i + j, ref.event["kind"]))
        assert_paired(paired, verifier is PAIRING_VERIFIER)
        i += taken
        if i < len(lines):  # the line C did not take: line by line
            ref = analyze_line(lines[i], fast=False)
            mini.feed(i, ref.event, ref.stored_hash, [p.code for p in ref.problems])
            i += 1
    return mini


#: the file ``block_chain`` has check_block's helper read ahead from (``read_ahead=``)
AHEAD_FILE_BYTES = 3 << 20
_ahead_fd: list[int] = []


def ahead_file() -> int:
    """A descriptor of a file of ``AHEAD_FILE_BYTES`` random bytes, made once (removed at once: the descriptor
    keeps it; closed when the process exits)."""
    if not _ahead_fd:
        import tempfile

        with tempfile.NamedTemporaryFile(prefix="ract-ahead-") as f:
            f.write(random.Random(11).randbytes(AHEAD_FILE_BYTES))
            f.flush()
            _ahead_fd.append(os.open(f.name, os.O_RDONLY))
    return _ahead_fd[0]


def ahead_request(size: int, index: int) -> tuple[int, int]:
    """(offset, size) of a read ahead, varied by the block's size and the call: about one in eight past the
    end of the file (then the answer is None)."""
    at = (size * 7919 + index * 104729) % AHEAD_FILE_BYTES
    return at, 1 + (size * 31 + index * 8191) % (AHEAD_FILE_BYTES // 3)


def make_chain(n: int, rng: random.Random, faults: dict[int, str]) -> list[bytes]:
    """A chained log of n events in random layouts, with faults at the given positions."""
    lines: list[bytes] = []
    prev, ts = "0" * 64, 1_764_000_000_000_000_000
    ids: list[str] = []
    for i in range(n):
        fault = faults.get(i, "")
        _, kind, payload = rng.choice(_VALID_CASES)
        if fault == "payload":
            kind, payload = "probe.evaluated", {"score": 2}
        elif fault == "invariant":
            kind, payload = "state.budget_capped", {"cap_tokens": 5, "seated_tokens": 6}
        elif fault == "invariant-ok":
            kind, payload = "state.budget_capped", {"cap_tokens": 6, "seated_tokens": 6}
        elif fault == "unknown":
            kind = "no.such.kind"
        ts += rng.randint(0, 10**6)
        envelope: dict[str, object] = {"prev_hash": prev, "timestamp_ns": ts if fault != "clock" else ts - 10**7}
        if fault == "foreign":
            envelope["run_id"] = "f" * 32
        if fault == "break":
            envelope["prev_hash"] = "e" * 64
        if fault == "dup" and ids:
            envelope["id"] = rng.choice(ids)
        if ids and rng.random() < 0.4:  # a parent just before it: a close may pair with it in C
            envelope["parent_id"] = ids[-rng.randint(1, min(3, len(ids)))]
        event = hashed_event(kind, payload, rng, **envelope)
        ids.append(event["id"])
        body = lay_out(event, rng.choice(LAYOUTS), rng)
        if fault == "tamper":
            body = body.replace(b'"timestamp_ns"', b'"timestamp_ns" ', 1).replace(
                str(ts).encode(), str(ts + 1).encode(), 1
            )
        if fault == "garbage":
            body = b"{not json"
        lines.append(body)
        prev = event["hash"]
    return lines


FAULTS = ("clock", "foreign", "break", "dup", "tamper", "payload", "invariant", "invariant-ok", "unknown", "garbage")


@pytest.mark.parametrize("batch", [1, 2, 7, 64, 65, 1000])
def test_chain_mode_equals_line_by_line(batch: int) -> None:
    rng = random.Random(batch)
    for trial in range(6):
        n = rng.randint(1, 150)
        faults = {rng.randrange(n): rng.choice(FAULTS) for _ in range(rng.randint(0, 4))} if trial else {}
        lines = make_chain(n, rng, faults)
        expected = reference_chain(lines)
        got = native_chain(lines, batch)
        assert got.state() == expected.state(), (batch, trial, faults)
        # the block framing: every line within max_line, or the longer ones left to Python
        assert block_chain(lines, max_line=batch * 40).state() == expected.state(), (batch, trial, faults)
        assert block_chain(lines, batch * 40, PAIRING_VERIFIER).state() == expected.state(), (batch, trial, faults)
        for verifier in (VERIFIER, PAIRING_VERIFIER):  # a helper thread sharing the chunks
            assert block_chain(lines, batch * 40, verifier, threads=2).state() == expected.state(), (batch, faults)


def test_chain_mode_fixtures() -> None:
    for path in FIXTURE_LOGS:
        lines = lines_of(path)
        expected = reference_chain(lines)
        for batch in (1, 5, 4096):
            assert native_chain(lines, batch).state() == expected.state(), (path, batch)
        assert block_chain(lines).state() == expected.state(), path
        assert block_chain(lines, verifier=PAIRING_VERIFIER).state() == expected.state(), path
        assert block_chain(lines, verifier=PAIRING_VERIFIER, threads=2).state() == expected.state(), path


def test_chain_mode_takes_most_of_a_clean_log() -> None:
    rng = random.Random(1)
    lines = make_chain(300, rng, {})
    chain = _core.Chain()
    first = analyze_line(lines[0], fast=False).event
    chain.expected_prev, chain.run_id, chain.prev_ts = first["hash"], first["run_id"], first["timestamp_ns"]
    chain.last_ts, chain.events = first["timestamp_ns"], 1
    assert chain.ids.add(first["id"])
    taken, results = VERIFIER.check_lines(lines[1:], chain=chain)
    assert taken == 299 and chain.events == 300 and len(chain.ids) == 300
    assert chain.expected_prev == analyze_line(lines[-1], fast=False).event["hash"]
    # every taken non-payload line crossed as None, the payload kinds as compact tuples
    assert sum(r is not None for r in results) == sum(
        analyze_line(b, fast=False).event["kind"] in HANDLE_KINDS for b in lines[1:]
    )


def test_chain_and_idset_api() -> None:
    ids = _core.IdSet()
    assert ids.add("0" * 32) and not ids.add("0" * 32) and ids.add("a" * 32) and len(ids) == 2
    assert "a" * 32 in ids and "b" * 32 not in ids and 5 not in ids
    for bad in ("A" * 32, "a" * 31, "g" * 32, "\u00e9" * 32, 1):
        with pytest.raises(ValueError):
            ids.add(bad)  # type: ignore[arg-type]
    rng = random.Random(0)
    many = {f"{rng.getrandbits(128):032x}" for _ in range(50_000)}
    assert all(ids.add(x) for x in many) and len(ids) == 50_002
    assert not any(ids.add(x) for x in list(many)[:1000])
    chain = _core.Chain(ids=ids)
    assert chain.ids is ids and chain.expected_prev is None and chain.prev_ts is None and chain.events == 0
    chain.expected_prev = "1" * 64
    chain.run_id = "2" * 32
    chain.prev_ts = chain.last_ts = 2**63 - 1
    assert (chain.expected_prev, chain.run_id, chain.prev_ts) == ("1" * 64, "2" * 32, 2**63 - 1)
    for attr, bad in (("expected_prev", "1" * 63), ("run_id", "X" * 32), ("prev_ts", 2**64), ("prev_ts", 1.0)):
        with pytest.raises((ValueError, TypeError, OverflowError)):
            setattr(chain, attr, bad)
    chain.expected_prev = None
    assert chain.expected_prev is None
    with pytest.raises(ValueError):
        VERIFIER.check_lines([], chain=chain, full=True)
    with pytest.raises(TypeError):
        VERIFIER.check_lines([], chain=object())
    assert VERIFIER.check_lines([], chain=chain) == (0, [])


def test_gil_is_released_during_a_batch() -> None:
    """While one thread checks a batch in C, another thread runs Python code (no GIL held throughout)."""
    # no kind whose invariants run Python code (its bytecode could hand the GIL over)
    python_kinds = {k.name for k in KINDS if k.invariants}
    lines = [b for b in fixture_lines() if (VERIFIER.check_line(b) or (0,) * 6)[5] not in python_kinds]
    lines = lines * (40_000 // len(lines) + 1)
    stamps: list[int] = []
    done = threading.Event()

    def count() -> None:
        while not done.is_set():
            stamps.append(time_ns())

    other = threading.Thread(target=count)
    other.start()
    try:
        time.sleep(0.02)
        start = time_ns()
        VERIFIER.check_lines(lines)
        end = time_ns()
    finally:
        done.set()
        other.join()
    span = end - start
    assert span > 30_000_000, "batch too short to judge"  # several of the interpreter's 5 ms switch intervals
    # Holding the GIL throughout, the other thread could only run near the ends (a switch interval
    # before the call starts, or after it returns); released, it runs all along.
    middle = [t for t in stamps if start + span * 0.3 < t < end - span * 0.3]
    assert middle, f"the other thread never ran during the middle of a {span / 1e6:.0f} ms batch"


def test_integers_of_every_length() -> None:
    rng = random.Random(8)
    values = [0, -1, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 10**19, -(10**19), 99999999, 100000000]
    for digits in range(1, 21):
        for _ in range(5):
            v = rng.randrange(10 ** (digits - 1), 10**digits)
            values += [v, -v]
    for v in values:
        body = json.dumps({"v": v, "w": [v, {"x": v}]}).encode()
        assert _core.canonical(body) == python_canonical(body), v
        event = hashed_event("run.started", {"n": v}, rng) if -(2**63) <= v < 2**63 else None
        if event is not None:
            for layout in ("sorted", "json-defaults"):
                assert agree(lay_out(event, layout, rng), complete=True)


def _spellings(x: float) -> Iterator[str]:
    """Ways a writer spells the double ``x``: repr (Python, orjson: 16-17 digits for most doubles), 15 to
    17 significant digits (the shortest, or not), and the two 17-digit decimals next to the closest one
    (which may read back as ``x`` too, without being its canonical digits)."""
    yield repr(x)
    for digits in (15, 16, 17):
        yield f"{x:.{digits}g}"
    mantissa, _, exponent = f"{x:.16e}".partition("e")
    last = int(mantissa[-1])
    for d in (last - 1, last + 1):
        if 0 <= d <= 9:
            yield f"{mantissa[:-1]}{d}e{exponent}"


#: doubles at the edges of the 16-17 digit path: around 10^-27 (its smallest power) and 2^53, just below
#: and above powers of two and ten, halfway-looking digits, the smallest and largest of each digit count
FLOAT_EDGES = [
    0.1 + 0.2,
    1 / 3,
    2 / 3,
    123.45678901234567,
    9007199254740993.0,
    2.0**-30,
    2.0**53 - 1,
    1e-27 * 1.2345678901234567,
    1e-28 * 1.2345678901234567,
    1e-11 * 9.999999999999999,
    0.30000000000000004,
    5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
    math.nextafter(1.0, 0.0),
    math.nextafter(1.0, 2.0),
    math.nextafter(0.5, 0.0),
    math.nextafter(1e16, 0.0),
    math.nextafter(1e-6, 0.0),
    math.nextafter(1e21, 0.0),
    4.35,
    0.8444218515250481,
]


@pytest.mark.parametrize("x", FLOAT_EDGES, ids=range(len(FLOAT_EDGES)))
def test_doubles_at_the_edges_of_the_long_digit_path(x: float) -> None:
    for text in _spellings(x):
        for token in (text, "-" + text):
            body = f'{{"v": {token}, "w": [{token}]}}'.encode()
            assert _core.canonical(body) == python_canonical(body), token


def test_doubles_of_every_magnitude_and_spelling() -> None:
    """A seeded sweep, the same oracle: doubles of every kind a writer makes (random.random(), a uniform
    latency, any magnitude, any bit pattern), each in every spelling of ``_spellings``, 200 to a body
    (a mismatch is then looked for token by token)."""
    rng = random.Random(16)
    makers = [
        rng.random,
        lambda: rng.uniform(1, 500),
        lambda: rng.random() * 10 ** rng.randint(-30, 30),
        lambda: struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64) & 0x7FEFFFFFFFFFFFFF))[0],
    ]
    for _ in range(60 * (20 if LONG else 1)):
        tokens = [t for _ in range(200) for t in _spellings(rng.choice(makers)())]
        body = ("[" + ",".join(tokens) + "]").encode()
        if _core.canonical(body) != python_canonical(body):
            wrong = [t for t in tokens if _core.canonical(f"[{t}]".encode()) != python_canonical(f"[{t}]".encode())]
            raise AssertionError(f"canonical digits differ for {wrong[:5]}")


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
@pytest.mark.skipif("LD_PRELOAD" in os.environ, reason="a preloaded runtime (make fuzz-native's sanitizers)")
def test_long_digits_stay_exact_where_long_double_is_not_extended() -> None:
    """valgrind computes x87 arithmetic in double precision while reporting the extended control word: the
    16-17 digit path must notice (it probes at import) and leave those numbers to dtoa (found by a review)."""
    rng = random.Random(17)
    tokens = [t for _ in range(100) for t in _spellings(rng.random() * 10 ** rng.randint(-5, 12))]
    body = ("[" + ",".join(tokens) + "]").encode()
    script = "import sys, ract_cli._core as c; sys.stdout.buffer.write(c.canonical(sys.stdin.buffer.read()))"
    run = subprocess.run(
        ["valgrind", "-q", sys.executable, "-c", script], input=body, capture_output=True, timeout=600, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout == python_canonical(body)


@_settings(300)
@given(x=st.floats(allow_nan=False, allow_infinity=False), spelling=st.integers(0, 5))
def test_any_double_in_any_spelling(x: float, spelling: int) -> None:
    spellings = list(_spellings(x))
    token = spellings[spelling % len(spellings)]
    body = f'[{token}, {{"x": {token}}}]'.encode()
    assert _core.canonical(body) == python_canonical(body), token


# --- long lines: read in place, hashed as written, strings left undecoded (issue 15, item 8) ----------

_LONG_UNITS = ("a", "é", "中", "😀", "\n", '"', "\\", "\x01", "/", "\ue000", "\x7f", "\u2028", "\t")


def _long_text(rng: random.Random, size: int) -> str:
    """About ``size`` characters: plain runs with escapes and non-ASCII characters between them."""
    parts: list[str] = []
    held = 0
    while held < size:
        parts.append(rng.choice(_LONG_UNITS) if rng.random() < 0.3 else "x" * rng.randint(1, 60))
        held += len(parts[-1])
    return "".join(parts)


def _long_cases() -> Iterator[bytes]:
    """Events with long strings, in every layout: past LAZY_STR (4 KiB), STREAM_BYTES (64 KiB) and
    SCRATCH_CAP (1 MiB of decoded escapes) of _core.c, in unchecked and checked fields."""
    rng = random.Random(12)
    cases = [c for c in _VALID_CASES if c[1] in ("response.received", "step.committed", "tool.result", "run.started")]
    for size, n in ((5_000, 4), (70_000, 4), (1_200_000, 2)):
        for _, kind, payload in cases[:n]:
            p = dict(payload)
            p["blob"] = _long_text(rng, size)
            p["many"] = [_long_text(rng, rng.randint(1, 300)) for _ in range(rng.randint(0, 30))]
            p["preview"] = _long_text(rng, rng.choice([10, 150, 5000]))  # max_length 200 in response.received
            if kind == "step.committed":
                p["outcome"] = rng.choice(["COMMITTED", "COMMITTED\n" * 600])  # an enum field, long: refused
            event = hashed_event(kind, p, rng)
            for layout in ("sorted", "escapes", "json-defaults", "shuffled"):
                yield lay_out(event, layout, rng)


LONG_CASES = list(_long_cases())


def test_long_strings_agree_with_the_python_path() -> None:
    valid = 0
    for body in LONG_CASES:
        valid += agree(body, complete=True)
        assert _core.canonical(body) == python_canonical(body)
    assert 0 < valid < len(LONG_CASES)  # some too long for a checked field, most valid


#: a byte JCS escapes, one it writes as it is, and UTF-8 around them: the vector scans of _core.c
#: (16 bytes a step, unsigned compares) must stop at exactly the first of the first group
_ESCAPED_UNITS = ('"', "\\", "\n", "\x00", "\x1f")
_PLAIN_UNITS = ("a", " ", "\x7f", "\x80", "\x9f", "\xa0", "é", "中", "😀", "\ue000")


@pytest.mark.parametrize("unit", _ESCAPED_UNITS + _PLAIN_UNITS, ids=ascii)
def test_string_scans_stop_at_every_position(unit: str) -> None:
    """A string of 0-40 filler characters with ``unit`` at each position, raw and \\u-escaped: the native
    canonical bytes are the Python path's (the run before, at and after the vector width)."""
    for filler in ("x", "é", "中"):
        for n in range(41):
            for i in range(n + 1):
                text = filler * i + unit + filler * (n - i)
                for body in (json.dumps([text], ensure_ascii=False).encode(), json.dumps([text]).encode()):
                    assert _core.canonical(body) == python_canonical(body), (unit, filler, n, i)


def test_a_view_is_read_as_its_bytes() -> None:
    lines = LONG_CASES[::5] + fixture_lines()[:40] + list(hostile_variants(BASE[0]))[::9]
    views = [memoryview(b) for b in lines]
    for body, view in zip(lines, views, strict=True):
        assert same_result(_core.check_line(view), _core.check_line(body))
        for full in (False, True):
            assert same_result(VERIFIER.check_line(view, full=full), VERIFIER.check_line(body, full=full))
    for full in (False, True):
        assert all(
            same_result(a, b)
            for a, b in zip(VERIFIER.check_lines(views, full=full), VERIFIER.check_lines(lines, full=full), strict=True)
        )
    longer = memoryview(b"x" + lines[0] + b"y")[1:-1]  # a view into the middle of a longer buffer
    assert same_result(VERIFIER.check_line(longer, full=True), VERIFIER.check_line(lines[0], full=True))
    for writable in (memoryview(bytearray(lines[0])), bytearray(lines[0])):
        with pytest.raises(TypeError, match="read-only"):
            VERIFIER.check_line(writable)
        with pytest.raises(TypeError, match="read-only"):
            VERIFIER.check_lines([lines[0], writable])
    with pytest.raises((TypeError, BufferError)):
        VERIFIER.check_line(memoryview(b"abcd")[::2])  # not contiguous


def test_chain_mode_takes_a_long_line_as_a_view() -> None:
    """A long line crosses as a view, is taken in C and returns nothing: no payload object is built."""
    rng = random.Random(3)
    kind, payload = next((k, p) for _, k, p in _VALID_CASES if k not in HANDLE_KINDS)
    lines, prev = [], "0" * 64
    for i in range(4):
        blob = {"blob": _long_text(rng, 300_000)} if i == 2 else {}
        event = hashed_event(kind, {**payload, **blob}, rng, prev_hash=prev, timestamp_ns=1_764_000_000_000_000_000 + i)
        prev = event["hash"]
        lines.append(lay_out(event, "sorted", rng))
    views = [memoryview(b) for b in lines]
    assert native_chain(views, 4).state() == reference_chain(lines).state()  # type: ignore[arg-type]
    first = analyze_line(lines[0], fast=False).event
    assert first is not None
    chain = _core.Chain()
    chain.expected_prev, chain.run_id, chain.prev_ts = first["hash"], first["run_id"], first["timestamp_ns"]
    assert chain.ids.add(first["id"])
    assert VERIFIER.check_lines(views[1:], chain=chain) == (3, [None, None, None])
    assert chain.expected_prev == prev


def test_streamed_hash_crosses_every_buffer_boundary() -> None:
    """Strings whose escapes straddle the 64 KiB hashing buffer at every offset near its end."""
    rng = random.Random(4)
    for pad in range(65_520, 65_560, 3):
        event = hashed_event("run.started", {"blob": "y" * pad + '"\\\n\x01é😀' * 3, "n": 1.5}, rng)
        for layout in ("sorted", "escapes"):
            assert agree(lay_out(event, layout, rng), complete=True)


def test_check_block_pairs_a_close_with_its_open_in_c() -> None:
    """With compile_kinds' pairs, a close whose parent_id names an open taken in the same call is paired
    in C: neither is in found. A synthesized close, one naming no open taken here, and every open
    before a close C hands out, are in found (HandleTracker.feed decides them)."""
    payload = {kind: p for name, kind, p in _VALID_CASES if not name.endswith("-synthesized")}
    pairs = {"tool.result": "tool.called", "step.committed": "step.started"}
    verifier = _core.compile_kinds(KINDS, VALIDATORS, schema_version=9, payload_kinds=HANDLE_KINDS, pairs=pairs)
    rng = random.Random(3)

    def block(plan: list[tuple[str, int | None, bool]]) -> list[str]:
        """Lines of (kind, index of the parent event, synthesized); the kinds of the events found."""
        events: list[dict] = []
        prev = "0" * 64
        for kind, parent, synthesized in plan:
            body = dict(payload[kind], synthesized=True, source_event_id="9" * 32) if synthesized else payload[kind]
            parent_id = events[parent]["id"] if parent is not None else None
            event = hashed_event(
                kind, body, rng, prev_hash=prev, timestamp_ns=len(events), parent_id=parent_id, step_id=None
            )
            events.append(event)
            prev = event["hash"]
        data = b"".join(jcs_exact(e) + b"\n" for e in events)
        chain = _core.Chain()
        chain.expected_prev, chain.run_id, chain.prev_ts = "0" * 64, events[0]["run_id"], 0
        stop, taken, _, found = verifier.check_block(data, 0, chain=chain, max_line=1 << 20)
        assert (stop, taken) == (len(data), len(plan))
        return [events[i]["kind"] for i, _, _ in found]

    paired = [("run.started", None, False), ("tool.called", None, False), ("tool.result", 1, False)]
    assert block(paired) == ["run.started"]
    assert block([*paired[:2], ("tool.result", 1, True)]) == ["run.started", "tool.called", "tool.result"]
    assert block([*paired[:2], ("tool.result", 0, False)]) == ["run.started", "tool.called", "tool.result"]
    handed_out = [("run.started", None, False), ("step.started", None, False), ("tool.called", None, False)]
    handed_out += [("tool.result", None, False), ("step.committed", 1, False), ("tool.result", 2, False)]
    assert block(handed_out) == [kind for kind, _, _ in handed_out]  # the first tool.result: no more pairs
    with pytest.raises(ValueError, match="not a close and an open"):
        _core.compile_kinds(KINDS, VALIDATORS, schema_version=9, pairs={"tool.result": "no.such.kind"})
    with pytest.raises(ValueError, match="not a payload kind"):
        _core.compile_kinds(KINDS, VALIDATORS, schema_version=9, payload_kinds=(), pairs=pairs)
    with pytest.raises(TypeError):
        _core.compile_kinds(KINDS, VALIDATORS, schema_version=9, pairs=[("tool.result", "tool.called")])


@pytest.mark.parametrize("threads", [1, 2])
def test_check_block_hands_out_the_whole_events_of_event_kinds(tmp_path: Path, threads: int) -> None:
    """compile_kinds(event_kinds=): found carries each such event as (event, hash), exactly what
    check_line(full=True) builds from its line (key order too); the other kinds stay compact."""
    from ract_cli.testing.synth import write_benchmark_log

    path = tmp_path / "events.jsonl"
    write_benchmark_log(path, events=1500)
    lines = path.read_bytes().splitlines(keepends=True)
    # the schema's field order, as the runtime writes it (the log's own is sorted)
    lines = [
        json.dumps({k: e[k] for k in ENVELOPE_ORDER}, separators=(",", ":")).encode() + b"\n"
        for e in map(json.loads, lines)
    ]
    data = b"".join(lines)
    wanted = {"tool.called", "tool.result", "predicate.evaluated", "run.started"}
    verifier = _core.compile_kinds(
        KINDS,
        VALIDATORS,
        schema_version=LATEST_SCHEMA_VERSION,
        payload_kinds=HANDLE_KINDS,
        pairs={c: o for c, o in CLOSE_TO_OPEN.items() if c not in wanted and o not in wanted},
        closes=frozenset(CLOSE_TO_OPEN),
        event_kinds=wanted,
    )
    chain = _core.Chain()
    chain.expected_prev = "0" * 64
    stop, taken, _, found = verifier.check_block(data, 0, chain=chain, max_line=1 << 20, threads=threads)
    assert (stop, taken) == (len(data), len(lines))
    starts = {at: i for i, at in enumerate(itertools.accumulate((len(x) for x in lines), initial=0))}
    whole = [(i, at, entry) for i, at, entry in found if len(entry) == 2]
    expected = [i for i, line in enumerate(lines) if json.loads(line)["kind"] in wanted]
    assert [i for i, _, _ in whole] == expected and len(expected) > 300
    for i, at, entry in whole:
        assert starts[at] == i and same(entry, VERIFIER.check_line(lines[i][:-1], full=True))
    assert all(len(entry) == 9 and entry[5] not in wanted for _, _, entry in found if len(entry) != 2)
    with pytest.raises(ValueError, match="event kind"):
        _core.compile_kinds(
            KINDS,
            VALIDATORS,
            schema_version=9,
            payload_kinds=HANDLE_KINDS,
            pairs=CLOSE_TO_OPEN,
            event_kinds=["tool.result"],
        )
    with pytest.raises(TypeError, match="event_kinds"):
        _core.compile_kinds(KINDS, VALIDATORS, schema_version=9, event_kinds=[1])


def _parsed(line: bytes) -> object:
    try:
        return json.loads(line)
    except ValueError:
        return None


@pytest.mark.parametrize("seed", range(4))
def test_check_block_with_a_helper_thread_equals_one_thread(seed: int) -> None:
    """Thousands of lines (many 64-line chunks, every other one checked by the helper), faults late and
    early: the same stop, lines taken, found entries and chain as one thread."""
    rng = random.Random(seed)
    n = 2_500
    faults = {rng.randrange(n): rng.choice(FAULTS) for _ in range(seed)}
    lines = make_chain(n, rng, faults)
    expected = reference_chain(lines).state()
    for verifier in (VERIFIER, PAIRING_VERIFIER):
        assert block_chain(lines, verifier=verifier, threads=2).state() == expected
    # every line re-laid compact and clean: C takes them in one call, up to the first fault
    data = b"".join(jcs_exact(e) + b"\n" for e in map(_parsed, lines) if isinstance(e, dict))
    answers = []
    for threads in (1, 2):
        chain = _core.Chain()
        chain.expected_prev, chain.run_id, chain.prev_ts = "0" * 64, json.loads(lines[0])["run_id"], 0
        answers.append(PAIRING_VERIFIER.check_block(data, 0, chain=chain, max_line=1 << 20, threads=threads))
        answers.append((chain.expected_prev, chain.last_ts, chain.events, len(chain.ids)))
    assert answers[:2] == answers[2:] and (answers[0][1] > 2_000 or seed)


@pytest.mark.parametrize(
    ("read_ahead", "error"),
    [
        ((-1, 0, 10), ValueError),  # no descriptor
        ((0, -1, 10), ValueError),  # before the file
        ((0, 0, 0), ValueError),  # nothing to read
        ((0, 0, (64 << 20) + 1), ValueError),  # more than check_block reads ahead
        ((0, 2**63 - 5, 10), ValueError),  # its end past the largest offset
        ((0, 0), TypeError),  # not (fd, offset, size)
        ((0, "0", 10), TypeError),
        ((0, 2**63, 10), OverflowError),
    ],
)
def test_check_block_refuses_a_bad_read_ahead(read_ahead: tuple[object, ...], error: type[Exception]) -> None:
    with pytest.raises(error):
        VERIFIER.check_block(b"{}\n", 0, chain=_core.Chain(), max_line=1 << 20, threads=2, read_ahead=read_ahead)


def test_check_block_reads_ahead_what_is_there_or_nothing(tmp_path: Path) -> None:
    """The fifth item: the bytes at that offset, all of them, or None: past the end of the file, from a
    descriptor that is not open or not readable, and with no helper thread (threads=1)."""
    path = tmp_path / "next"
    path.write_bytes(bytes(range(256)) * 40)
    block = b"".join(block_chain_lines(300))

    def ahead(fd: int, at: int, size: int, threads: int = 2) -> object:
        chain = _core.Chain()
        chain.expected_prev, chain.run_id, chain.prev_ts = (
            "0" * 64,
            json.loads(block[: block.index(b"\n")])["run_id"],
            0,
        )
        answer = VERIFIER.check_block(
            block, 0, chain=chain, max_line=1 << 20, threads=threads, read_ahead=(fd, at, size)
        )
        assert answer[1] == 300  # (the block itself is checked as ever)
        return answer[4]

    fd = os.open(path, os.O_RDONLY)
    try:
        assert ahead(fd, 0, 10_240) == path.read_bytes()
        assert ahead(fd, 1000, 5) == path.read_bytes()[1000:1005]
        assert ahead(fd, 10_000, 241) is None  # one byte short
        assert ahead(fd, 20_000, 1) is None
        assert ahead(fd, 0, 10, threads=1) is None
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0  # (pread: the descriptor's position is not moved)
    finally:
        os.close(fd)
    assert ahead(fd, 0, 10) is None  # closed
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]  # (no descriptor reaches it)
    assert ahead(hard if 0 < hard < 2**31 else 2**31 - 1, 0, 10) is None
    write_only = os.open(path, os.O_WRONLY)
    try:
        assert ahead(write_only, 0, 10) is None
    finally:
        os.close(write_only)


def test_a_started_helper_is_taken_over_only_on_its_own_block() -> None:
    """``start_block``: a helper staging a block's first chunks at once. ``check_block`` takes it over when it
    is on that very block (the object), from that start, with that max_line and two threads; the answer is
    the call's without it either way."""
    block = b"".join(block_chain_lines(700))  # (over the 4 chunks of 64 lines it stages before a call takes one)
    first = json.loads(block[: block.index(b"\n")])["run_id"]

    def check(started: object = None, *, on: bytes = block, start: int = 0, max_line: int = 1 << 20, threads: int = 2):
        chain = _core.Chain()
        chain.expected_prev, chain.run_id, chain.prev_ts = "0" * 64, first, 0
        answer = VERIFIER.check_block(on, start, chain=chain, max_line=max_line, threads=threads, started=started)
        return answer, chain.expected_prev, chain.events

    alone = check()
    assert alone[0][1] == 700
    started = VERIFIER.start_block(block, 0, max_line=1 << 20)
    assert (started.block, started.start, started.taken) == (block, 0, False)
    assert check(started) == alone and started.taken
    assert check(started) == alone  # (taken: the second call starts its own)
    second = block.index(b"\n") + 1
    copy = bytes(bytearray(block))  # (equal bytes, another object)
    for kwargs, made in (
        ({"on": copy}, (block, 0)),
        ({}, (block, second)),  # another start
        ({"max_line": 1 << 19}, (block, 0)),
        ({"threads": 1}, (block, 0)),
    ):
        started = VERIFIER.start_block(*made, max_line=1 << 20)
        assert check(started, **kwargs) == check(**kwargs) and not started.taken, kwargs
    started = PAIRING_VERIFIER.start_block(block, 0, max_line=1 << 20)  # (another Verifier's)
    assert check(started) == alone and not started.taken


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        ((b"{}\n", -1), {"max_line": 10}, ValueError),
        ((b"{}\n", 4), {"max_line": 10}, ValueError),
        ((b"{}\n", 0), {}, ValueError),  # no max_line
        ((b"{}\n", 0), {"max_line": -1}, ValueError),
        ((bytearray(b"{}\n"), 0), {"max_line": 10}, TypeError),
        ((b"{}\n", "0"), {"max_line": 10}, TypeError),
    ],
)
def test_start_block_refuses_bad_arguments(args: tuple[object, ...], kwargs: dict, error: type[Exception]) -> None:
    with pytest.raises(error):
        VERIFIER.start_block(*args, **kwargs)


def test_started_helpers_dropped_unused_stop_their_threads() -> None:
    """Each ``Started`` dropped without a ``check_block`` stops and joins its helper thread: the process ends
    with the threads it had (``/proc/self/task``), none left staging."""
    block = b"".join(block_chain_lines(200))
    tasks = lambda: len(os.listdir("/proc/self/task"))  # noqa: E731
    before = tasks()
    for start in range(300):
        started = VERIFIER.start_block(block, start % 50, max_line=1 << 20)
        assert started is not None and not started.taken
        if start == 150:
            assert tasks() == before + 1  # (its helper runs until it is dropped)
        del started
    assert tasks() == before


@pytest.mark.parametrize("then", ["dropped", "taken over"])
def test_a_started_helper_in_a_forked_child_is_neither_joined_nor_taken_over(then: str) -> None:
    """A forked child has the ``Started`` but not its thread: dropping it must not wait for that thread (nor
    take its mutex, which the thread may have held at the fork), and a call in the child checks the block with
    a helper of its own, the same answer. The parent's helper is taken over as ever."""
    block = b"".join(block_chain_lines(700))
    first = json.loads(block[: block.index(b"\n")])["run_id"]

    def check(started: object) -> tuple[object, ...]:
        chain = _core.Chain()
        chain.expected_prev, chain.run_id, chain.prev_ts = "0" * 64, first, 0
        return VERIFIER.check_block(block, 0, chain=chain, max_line=1 << 20, threads=2, started=started)

    if then == "taken over" and "tsan" in os.environ.get("LD_PRELOAD", ""):
        pytest.skip("ThreadSanitizer kills a forked child that starts a thread (make fuzz-native)")
    alone = check(None)
    started = VERIFIER.start_block(block, 0, max_line=1 << 20)
    time.sleep(0.2)  # (its helper has staged the chunks it may and waits on its condition variable)
    pid = os.fork()
    if pid == 0:  # (the child: its exit code is its verdict; os._exit, never back into pytest)
        code = 1
        try:
            if then == "dropped":
                del started
                code = 0
            else:
                code = 0 if check(started) == alone and not started.taken else 3
        finally:
            os._exit(code)
    deadline = time.monotonic() + 30
    while (waited := os.waitpid(pid, os.WNOHANG)) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.01)
    if waited == (0, 0):
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung")
    assert os.waitstatus_to_exitcode(waited[1]) == 0
    assert check(started) == alone and started.taken


def block_chain_lines(n: int) -> list[bytes]:
    """n clean lines of one chain, each ending in a newline, the first linking on to genesis."""
    return [jcs_exact(e) + b"\n" for e in map(_parsed, make_chain(n, random.Random(n), {})) if isinstance(e, dict)]


# --- the prefilter's scan (grep --no-verify): find_lines ---------------------------------------


def lines_holding(data: bytes, lo: int, hi: int, needles: tuple[bytes, ...]) -> tuple[list[int], int]:
    """What ``_core.find_lines`` answers, in plain Python (``data[lo:hi]``: whole lines; the fuzzer's
    model too): the flat list start, stop, line of each line holding a needle, and the lines."""
    found, pos = [], lo
    lines = [part + b"\n" for part in data[lo : hi - 1].split(b"\n")] if hi > lo else []
    for line, raw in enumerate(lines):  # (not splitlines: that cuts at "\r" too)
        if any(n in raw for n in needles):
            found += [pos, pos + len(raw), line]
        pos += len(raw)
    return found, len(lines)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(
        # near misses too: a first and last byte that match around a middle that does not
        st.sampled_from(
            [
                b"x" * 7,
                b"\n",
                b"kind",
                b"kin",
                b"ind",
                b"\\u00",
                b"\\u0",
                b"k",
                b"d",
                b"kand",
                b"kinx",
                b"kkd",
                b"\\x00",
            ]
        ),
        max_size=200,
    ),
    needles=st.lists(st.sampled_from([b"kind", b"\\u00", b"k", b"dk", b"x" * 20, b"ndxx"]), min_size=1, max_size=3),
    cut=st.integers(0, 40),
)
def test_find_lines_in_c_equals_the_model(pieces: list[bytes], needles: list[bytes], cut: int) -> None:
    """Long blocks (16 bytes at a time in C, the rest byte by byte): needles at every place, split across
    lines, at the ends; the lines holding one, their numbers, and the newlines counted."""
    body = b"".join(pieces) + b"\n"
    data = b"garbage" * cut + body + b"partial line kind"  # lo and hi inside the data, as a Block has them
    lo, hi = 7 * cut, 7 * cut + len(body)
    assert _core.find_lines(data, lo, hi, tuple(needles)) == lines_holding(data, lo, hi, tuple(needles))


def test_find_lines_arguments() -> None:
    with pytest.raises(ValueError):
        _core.find_lines(b"a\n", 0, 3, (b"a",))  # hi past the end
    with pytest.raises(ValueError):
        _core.find_lines(b"a\n", 0, 2, (b"",))
    with pytest.raises(ValueError):
        _core.find_lines(b"a\n", 0, 2, (b"a\nb",))
    with pytest.raises(ValueError):
        _core.find_lines(b"a\n", 0, 2, ())
    assert _core.find_lines(b"a\nb\n", 2, 4, (b"a",)) == ([], 1)
    # a near miss before the needle in one 16-byte window, at every alignment
    for pad in range(17):
        data = b"x" * pad + b"kandkind" + b"y" * 20 + b"\nkand" + b"y" * 20 + b"\n"
        assert _core.find_lines(data, 0, len(data), (b"kind",)) == ([0, pad + 29, 0], 2), pad
