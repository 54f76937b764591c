"""The closed vocabulary (SPEC §2.5) and payload validation (SPEC §2.6)."""

from __future__ import annotations

import pytest
from kind_examples import (
    ABSENT,
    CLOSED_ENUMS,
    DOCUMENT_ORDER,
    EXTRA_VALID,
    INVALID,
    INVARIANT_INVALID,
    OPEN_STRINGS,
    SYNTHESIZED,
    VALID,
    all_field_invalid_cases,
    all_valid_cases,
)

from ract_cli.format.kinds import (
    KINDS,
    KINDS_BY_NAME,
    LATEST_SCHEMA_VERSION,
    SCHEMA_VERSIONS,
    VALIDATORS,
    kinds_for_version,
)

# --- vocabulary -----------------------------------------------------------


def test_sixty_four_kinds_in_document_order() -> None:
    assert tuple(k.name for k in KINDS) == DOCUMENT_ORDER
    assert len(KINDS) == 64
    assert set(KINDS_BY_NAME) == set(DOCUMENT_ORDER)
    assert all(KINDS_BY_NAME[k.name] is k for k in KINDS)


def test_versions_constants() -> None:
    assert LATEST_SCHEMA_VERSION == 9
    assert list(SCHEMA_VERSIONS) == [1, 2, 3, 4, 5, 6, 7, 8, 9]


@pytest.mark.parametrize(
    ("version", "count"),
    [(1, 34), (2, 34), (3, 34), (4, 41), (5, 41), (6, 42), (7, 43), (8, 44), (9, 64)],
)
def test_vocabulary_size_per_version(version: int, count: int) -> None:
    assert len(kinds_for_version(version)) == count


def test_versions_only_grow_and_name_the_added_kinds() -> None:
    added = {n: kinds_for_version(n) - (kinds_for_version(n - 1) if n > 1 else frozenset()) for n in SCHEMA_VERSIONS}
    assert added[2] == added[3] == added[5] == frozenset()
    assert added[4] == {
        "assumption.accepted",
        "tool.invocation.pre",
        "tool.invocation.post",
        "tool.invocation.refused",
        "manifest.ledger.appended",
        "manifest.ledger.refused",
        "whisperer.contract_violation",
    }
    assert added[6] == {"state.budget_capped"}
    assert added[7] == {"retrieval.grouping.applied"}
    assert added[8] == {"subagent.disposed"}
    assert added[9] == set(DOCUMENT_ORDER[44:])
    assert kinds_for_version(1) == set(DOCUMENT_ORDER[:34])
    assert kinds_for_version(9) == set(DOCUMENT_ORDER)


@pytest.mark.parametrize("bad", [0, 10, -1, True, 4.0, "4", None])
def test_kinds_for_version_rejects_unknown_versions(bad: object) -> None:
    with pytest.raises(ValueError):
        kinds_for_version(bad)  # type: ignore[arg-type]


def test_every_kind_has_a_validator_and_described_fields() -> None:
    assert set(VALIDATORS) == set(KINDS_BY_NAME)
    for kind in KINDS:
        assert kind.description and kind.section
        names = [f.name for f in kind.fields]
        assert len(names) == len(set(names)), kind.name
        for f in kind.fields:
            assert f.description, f"{kind.name}.{f.name} has no description"


# --- the example table covers the vocabulary --------------------------------


def test_examples_cover_every_kind_and_every_documented_field() -> None:
    assert set(VALID) == set(KINDS_BY_NAME)
    present: dict[str, set[str]] = {k: set(p) for k, p in VALID.items()}
    for k, p in SYNTHESIZED.items():
        present[k] |= set(p)
    for k, _label, over in EXTRA_VALID:
        present[k] |= {name for name, v in over.items() if v is not ABSENT}
    for kind in KINDS:
        missing = {f.name for f in kind.fields} - present[kind.name]
        assert not missing, f"{kind.name}: no valid example carries {sorted(missing)}"


def test_closed_enums_match_the_document() -> None:
    defined = {(k.name, f.name): f.enum for k in KINDS for f in k.fields if f.enum is not None}
    assert set(defined) == set(CLOSED_ENUMS)
    for key, values in CLOSED_ENUMS.items():
        assert tuple(defined[key]) == values, key  # type: ignore[arg-type]


@pytest.mark.parametrize(("kind", "field"), OPEN_STRINGS)
def test_open_vocabularies_are_plain_strings(kind: str, field: str) -> None:
    f = next(f for f in KINDS_BY_NAME[kind].fields if f.name == field)
    assert f.types == ("string",) and f.enum is None
    assert VALIDATORS[kind]({**VALID[kind], field: "anything-a-caller-supplies"}) == []


# --- validation -------------------------------------------------------------


@pytest.mark.parametrize(("kind", "payload"), [pytest.param(k, p, id=i) for i, k, p in all_valid_cases()])
def test_valid_examples_are_accepted(kind: str, payload: dict) -> None:
    assert VALIDATORS[kind](payload) == []


@pytest.mark.parametrize(
    ("kind", "field", "value"),
    [pytest.param(k, f, v, id=f"{k}.{f}={v!r}") for (k, f), values in CLOSED_ENUMS.items() for v in values],
)
def test_every_documented_enum_value_is_accepted(kind: str, field: str, value: object) -> None:
    assert VALIDATORS[kind]({**VALID[kind], field: value}) == []


@pytest.mark.parametrize(("kind", "payload"), [pytest.param(k, p, id=i) for i, k, p in all_field_invalid_cases()])
def test_field_level_invalid_values_are_rejected(kind: str, payload: dict) -> None:
    errors = VALIDATORS[kind](payload)
    assert errors, f"{kind} accepted {payload!r}"
    assert len(errors) == 1, errors  # exactly the one bad field (the base example is valid)
    base = VALID[kind]
    changed = [k for k, v in payload.items() if k not in base or type(v) is not type(base[k]) or v != base[k]]
    assert len(changed) == 1 and errors[0].startswith(changed[0]), (changed, errors)


@pytest.mark.parametrize(("kind", "overrides"), [pytest.param(k, o, id=i) for i, k, o in INVARIANT_INVALID])
def test_invariant_violations_are_rejected(kind: str, overrides: dict) -> None:
    errors = VALIDATORS[kind]({**VALID[kind], **overrides})
    assert errors == ["invariant violated: seated_tokens <= cap_tokens"]


def test_hand_written_invalid_table_is_not_trivially_small() -> None:
    # every bound the document states appears in the hand-written table
    fields = {(k, f) for _i, k, o in INVALID for f in o}
    for key in [
        ("probe.evaluated", "score"),
        ("whisperer.contract_violation", "null_op_score"),
        ("retrieval.cascaded", "from_level"),
        ("retrieval.cascaded", "to_level"),
        ("substrate.subagent.orphan_reaped", "pids"),
        ("response.received", "preview"),
        ("runtime.run_id.env_rejected", "reason"),
        ("runtime.run_id.env_stripped_from_parent", "stripped_value_hash"),
        ("whisperer.contract_violation", "response_excerpt_hash"),
        ("whisperer.contract_violation", "response_full_hash"),
    ]:
        assert key in fields, key


@pytest.mark.parametrize("kind", DOCUMENT_ORDER)
def test_absent_documented_keys_are_accepted(kind: str) -> None:
    assert VALIDATORS[kind]({}) == []
    for name in VALID[kind]:
        partial = {k: v for k, v in VALID[kind].items() if k != name}
        assert VALIDATORS[kind](partial) == [], (kind, name)


@pytest.mark.parametrize("kind", DOCUMENT_ORDER)
def test_undocumented_keys_are_accepted(kind: str) -> None:
    payload = {
        **VALID[kind],
        "x_future_key": {"nested": [1, 2.5, None, True]},
        "another": "value",
        "count_like": -7,
    }
    # keep documented keys documented: only add names the kind does not define
    documented = {f.name for f in KINDS_BY_NAME[kind].fields}
    assert not documented & {"x_future_key", "another", "count_like"}
    assert VALIDATORS[kind](payload) == []


def test_integer_semantics() -> None:
    validate = VALIDATORS["run.completed"]
    assert validate({"event_count": 3}) == []
    assert validate({"event_count": 3.0}) == []  # JSON Schema: 3.0 is an integer
    assert validate({"event_count": 2**63 - 1}) == []
    assert validate({"event_count": 3.5})
    assert validate({"event_count": True})
    assert validate({"event_count": False})
    number = VALIDATORS["retrieval.satisfied"]
    assert number({"budget_used_pct": 3}) == []
    assert number({"budget_used_pct": 3.25}) == []
    assert number({"budget_used_pct": True})


def test_every_error_is_reported_not_just_the_first() -> None:
    errors = VALIDATORS["probe.evaluated"]({"probe": "x", "score": 2, "note": 1})
    assert len(errors) == 3


def test_invariants_run_only_after_field_checks_pass() -> None:
    errors = VALIDATORS["state.budget_capped"]({"cap_tokens": "600", "seated_tokens": 601})
    assert errors == ["cap_tokens must be integer, got string"]
