"""The published JSON Schemas (docs/schemas/) agree with the verifier (SPEC §2.6)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from kind_examples import H32, INVARIANT_INVALID, all_field_invalid_cases, all_valid_cases, merged

from ract_cli.format.kinds import KINDS, KINDS_BY_NAME
from ract_cli.format.model import GENESIS_HASH
from ract_cli.format.schema_export import envelope_schema, export, kind_schema, main, render

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "docs" / "schemas"


def _files(directory: Path) -> dict[str, bytes]:
    # *-report.json are the commands' JSON report schemas (e.g. project-report.json),
    # hand-written and checked by their commands' tests, not exported from kinds.py.
    return {
        p.name: p.read_bytes()
        for p in sorted(directory.iterdir())
        if p.is_file() and not p.name.endswith("-report.json")
    }


@pytest.fixture(scope="module")
def validators() -> dict[str, jsonschema.Draft202012Validator]:
    return {k.name: jsonschema.Draft202012Validator(kind_schema(k)) for k in KINDS}


# --- (a) the export: deterministic, formatted, its entry point (fresh: tests/test_docs.py) ---


def test_export_is_deterministic_and_formatted(tmp_path: Path) -> None:
    export(tmp_path / "a")
    export(tmp_path / "b")
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert a == b
    assert len(a) == 64 + 2
    for name, data in a.items():
        text = data.decode("utf-8")
        assert text.endswith("}\n") and not text.endswith("\n\n"), name
        assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n", name


def test_module_entry_point_writes_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "out")]) == 0
    assert _files(tmp_path / "out") == _files(COMMITTED)
    assert "66" in capsys.readouterr().err
    assert main([]) == 2


# --- (b) every file is a valid Draft 2020-12 schema -------------------------


@pytest.mark.parametrize("name", sorted(p.name for p in COMMITTED.glob("*.json") if p.name != "index.json"))
def test_committed_file_is_a_valid_2020_12_schema(name: str) -> None:
    schema = json.loads((COMMITTED / name).read_text("utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"https://ract.dev/schemas/{name}"
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_kind_schema_shape(kind) -> None:  # type: ignore[no-untyped-def]
    schema = kind_schema(kind)
    assert schema["title"] == kind.name
    assert schema["type"] == "object"
    assert schema["x-ract-schema-version"] == kind.version
    assert "additionalProperties" not in schema  # the contract only grows
    assert "required" not in schema  # documented keys may be absent
    assert set(schema["properties"]) == {f.name for f in kind.fields}
    assert all(p.get("description") for p in schema["properties"].values())
    for p in schema["properties"].values():
        if "pattern" in p:
            assert p["pattern"].startswith("^") and p["pattern"].endswith("$")


def test_invariants_are_listed() -> None:
    schema = kind_schema(KINDS_BY_NAME["state.budget_capped"])
    assert schema["x-ract-invariants"] == ["seated_tokens <= cap_tokens"]


# --- (c) the schemas and the verifier agree on the examples -----------------


@pytest.mark.parametrize(("kind", "payload"), [pytest.param(k, p, id=i) for i, k, p in all_valid_cases()])
def test_schema_accepts_valid_examples(validators, kind: str, payload: dict) -> None:  # type: ignore[no-untyped-def]
    errors = [e.message for e in validators[kind].iter_errors(payload)]
    assert errors == []


@pytest.mark.parametrize(("kind", "payload"), [pytest.param(k, p, id=i) for i, k, p in all_field_invalid_cases()])
def test_schema_rejects_field_level_invalid_examples(validators, kind: str, payload: dict) -> None:  # type: ignore[no-untyped-def]
    assert not validators[kind].is_valid(payload)


@pytest.mark.parametrize(("kind", "overrides"), [pytest.param(k, o, id=i) for i, k, o in INVARIANT_INVALID])
def test_invariants_are_beyond_json_schema(validators, kind: str, overrides: dict) -> None:  # type: ignore[no-untyped-def]
    # Documented limitation: the schema carries the invariant as x-ract-invariants only.
    assert validators[kind].is_valid(merged(kind, overrides))


def test_schema_accepts_undocumented_keys(validators) -> None:  # type: ignore[no-untyped-def]
    assert validators["tool.result"].is_valid({"tool": "x", "new_key": [1, {"a": None}]})


# --- envelope ----------------------------------------------------------------

ENVELOPE = {
    "id": H32,
    "run_id": "4a1c0f9e6b3d2a5c8f9e1b4d2a7c6f3e",
    "step_id": None,
    "parent_id": None,
    "timestamp_ns": 1_732_900_000_000_000_000,
    "kind": "run.started",
    "payload": {},
    "prev_hash": GENESIS_HASH,
    "hash": "ab" * 32,
}


def test_envelope_accepts_a_valid_envelope() -> None:
    v = jsonschema.Draft202012Validator(envelope_schema())
    assert v.is_valid(ENVELOPE)
    assert v.is_valid({**ENVELOPE, "step_id": H32, "parent_id": H32, "timestamp_ns": 2**63 - 1})
    assert v.is_valid({**ENVELOPE, "timestamp_ns": 0, "kind": "not.in.vocabulary"})  # UNKNOWN_KIND is not envelope


@pytest.mark.parametrize(
    "change",
    [
        {"extra": 1},
        {"id": H32.upper()},
        {"id": H32[:-1]},
        {"run_id": None},
        {"step_id": "x" * 32},
        {"parent_id": 7},
        {"timestamp_ns": -1},
        {"timestamp_ns": 2**63},
        {"timestamp_ns": 1.5},
        {"timestamp_ns": True},
        {"kind": 3},
        {"payload": []},
        {"prev_hash": "0" * 63},
        {"hash": "AB" * 32},
    ],
    ids=repr,
)
def test_envelope_rejects(change: dict) -> None:
    assert not jsonschema.Draft202012Validator(envelope_schema()).is_valid({**ENVELOPE, **change})


@pytest.mark.parametrize("key", sorted(ENVELOPE))
def test_envelope_requires_every_key(key: str) -> None:
    envelope = {k: v for k, v in ENVELOPE.items() if k != key}
    assert not jsonschema.Draft202012Validator(envelope_schema()).is_valid(envelope)


def test_render_is_sorted_two_space_with_newline() -> None:
    assert render({"b": 1, "a": [1]}) == b'{\n  "a": [\n    1\n  ],\n  "b": 1\n}\n'
