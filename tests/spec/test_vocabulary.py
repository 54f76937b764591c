"""SPEC §2.5 the closed vocabulary and its schema versions, §2.6 payloads.

Which kind each schema version adds is read from the reference document's
kind list, copied to ``tests/data/reference/`` (see its README), not from
``ract_cli``'s own table. The published JSON Schemas (``docs/schemas/``) are
checked against the same cases as the verifier.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from independent_jcs import chain

from . import scratch_builders as scratch
from .builders import (
    REFERENCE,
    codes,
    ev,
    logpath,
    ract,
    verify_json,
    write,
)

# --- §2.5 versions --------------------------------------------------------------------------------


def test_schema_versions(tmp_path, capsys):
    evs = chain(
        [
            ev("run.started", {}),
            ev("substrate.subagent.orphan_reaped", {"count": 1, "pids": [1]}),
            ev("run.completed", {}),
        ]
    )
    p = write(logpath(tmp_path), evs)
    rc, rep = verify_json(capsys, p)
    assert rc == 0, codes(rep)
    rc, rep = verify_json(capsys, p, "--schema-version", "9")
    assert rc == 0
    rc, rep = verify_json(capsys, p, "--schema-version", "8")
    assert rc == 3 and "UNKNOWN_KIND" in codes(rep)


@pytest.mark.parametrize(
    "kind,payload,ok_from",
    [
        ("state.budget_capped", {"cap_tokens": 5, "seated_tokens": 3}, 6),
        ("retrieval.grouping.applied", {"rule_fired": "trait_impls"}, 7),
        ("subagent.disposed", {"ok": True}, 8),
    ],
)
def test_version_boundaries(tmp_path, capsys, kind, payload, ok_from):
    evs = chain([ev("run.started", {}), ev(kind, payload), ev("run.completed", {})])
    p = write(logpath(tmp_path), evs)
    rc, rep = verify_json(capsys, p, "--schema-version", ok_from)
    assert rc == 0, codes(rep)
    rc, rep = verify_json(capsys, p, "--schema-version", ok_from - 1)
    assert rc == 3 and "UNKNOWN_KIND" in codes(rep)


@pytest.mark.parametrize(
    "kind,since",
    [("tool.invocation.pre", 4), ("whisperer.contract_violation", 4), ("budget.declared", 1), ("run.started", 1)],
)
def test_schema_version_sections(tmp_path, capsys, kind, since):
    evs = chain([ev("run.started", {}), ev(kind, {}), ev("run.completed", {})])
    p = write(logpath(tmp_path), evs)
    assert ract(capsys, "verify", "-q", "--schema-version", since, p)[0] == 0
    assert ract(capsys, "verify", "-q", "--schema-version", 5, p)[0] == 0
    if since > 1:
        rc, rep = verify_json(capsys, p, "--schema-version", since - 1)
        assert rc == 3 and "UNKNOWN_KIND" in codes(rep)


def test_unknown_kind_exit_3(tmp_path, capsys):
    evs = chain([ev("run.started", {}), ev("no.such.kind", {}), ev("run.completed", {})])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 3 and "UNKNOWN_KIND" in codes(rep)


def test_vocabulary_has_64_kinds():
    from ract_cli.format.kinds import kinds_for_version

    assert len(kinds_for_version(9)) == 64
    assert len(kinds_for_version(9) - kinds_for_version(8)) == 20
    assert len(kinds_for_version(4) - kinds_for_version(3)) == 7


# --- §2.5 every kind x every version, read from the reference document ----------------------------


def _kinds_since() -> dict[str, int]:
    text = REFERENCE.read_text(encoding="utf-8").splitlines()
    marks = []  # (line index where a version section starts, version)
    for i, ln in enumerate(text):
        m = re.search(r"\(schema_version (\d+)", ln)
        if m and (not marks or int(m.group(1)) > marks[-1][1]):  # the first section of each newer version
            marks.append((i, int(m.group(1))))
    since = {}
    for i, ln in enumerate(text):
        m = re.fullmatch(r"`([a-z_.]+)`", ln.strip())
        if m and m.group(1) not in since:
            v = 1
            for start, ver in marks:
                if i > start:
                    v = ver
            since[m.group(1)] = v
    return since


def test_every_kind_against_every_schema_version(tmp_path, capsys):
    since = _kinds_since()
    assert len(since) == 64
    assert sorted(since.values()).count(9) == 20 and sorted(since.values()).count(4) == 7
    by_run = {}
    for k in since:
        rid = hashlib.md5(k.encode()).hexdigest()
        by_run[rid] = k
        # an empty payload is valid for every kind: documented keys may be absent (§2.6)
        scratch.write(
            tmp_path / rid / "events.jsonl",
            scratch.chain(
                [
                    scratch.ev("run.started", {}, run=rid),
                    scratch.ev(k, {}, run=rid),
                    scratch.ev("run.completed", {}, run=rid),
                ]
            ),
        )
    for version in range(1, 10):
        rc, rep = scratch.verify_json(capsys, "--schema-version", version, tmp_path)
        assert len(rep["files"]) == 64
        for f in rep["files"]:
            k = by_run[Path(f["path"]).parent.name]
            if version >= since[k]:
                assert f["exit_code"] == 0 and scratch.errors({"files": [f]}) == [], (version, k, f["findings"])
            else:
                assert f["exit_code"] == 3 and [c for c, _, _ in scratch.errors({"files": [f]})] == ["UNKNOWN_KIND"], (
                    version,
                    k,
                )
        assert rc == (0 if version == 9 else 3)


# --- §2.6 payloads --------------------------------------------------------------------------------


PAYLOAD_CASES = [
    ("run.started", {"predicate_count": True}, 3),  # integer field given a boolean
    ("run.started", {"predicate_count": 1.5}, 3),
    ("run.started", {"predicate_count": "1"}, 3),
    ("run.started", {"coverage_gate": 1}, 0),  # float field given an int
    ("run.started", {"coverage_gate": True}, 3),
    ("run.started", {"intent_id": 5}, 3),
    ("run.started", {"undocumented": {"anything": [1]}}, 0),
    ("run.started", {}, 0),  # documented keys may be absent
    ("tool.refused", {"refused_by": "sandbox"}, 0),
    ("tool.refused", {"refused_by": "someone"}, 3),
    ("tool.result", {"ok": 1}, 3),
    ("substrate.subagent.orphan_reaped", {"pids": list(range(32))}, 0),
    ("substrate.subagent.orphan_reaped", {"pids": list(range(33))}, 3),
    ("substrate.subagent.orphan_reaped", {"pids": [True]}, 3),
    ("response.received", {"preview": "x" * 200}, 0),
    ("response.received", {"preview": "x" * 201}, 3),
    ("response.received", {"preview": "\U0001f600" * 200}, 0),  # 200 chars (code points)
    ("state.budget_capped", {"cap_tokens": 5, "seated_tokens": 5}, 0),
    ("state.budget_capped", {"cap_tokens": 5, "seated_tokens": 6}, 3),
    ("state.budget_capped", {"strategy": "truncate_head"}, 3),
    ("predicate.evaluated", {"kind": "test", "required": True, "ok": False}, 0),
    ("predicate.evaluated", {"kind": "vibes"}, 3),
    ("retrieval.grouping.applied", {"rule_fired": "nope"}, 3),
    ("step.committed", {"outcome": "ROLLED_BACK"}, 3),
]


@pytest.mark.parametrize(
    "kind,payload,want", PAYLOAD_CASES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(PAYLOAD_CASES)]
)
def test_payload_types(tmp_path, capsys, kind, payload, want):
    evs = chain([ev("run.started", {}), ev(kind, payload), ev("run.completed", {})])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == want, codes(rep)


def _score_kind():
    from ract_cli.format.kinds import KINDS

    for k in KINDS:
        for f in k.fields:
            if f.name == "score":
                return k.name
    return None


@pytest.mark.parametrize("score,want", [(0, 0), (1, 0), (0.5, 0), (1.5, 3), (-0.1, 3)])
def test_score_bounds(tmp_path, capsys, score, want):
    kind = _score_kind()
    assert kind
    evs = chain([ev("run.started", {}), ev(kind, {"score": score}), ev("run.completed", {})])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == want, codes(rep)


ENUM_CASES = [
    ("sandbox.env_scrubbed", {"backend": "docker"}, 3),
    ("sandbox.env_scrubbed", {"allowlist_source": "env"}, 3),
    ("sandbox.env_scrubbed", {"backend": "linux-bwrap", "allowlist_source": "manifest", "scrubbed_count": 3}, 0),
    ("sandbox.env_scrubbed", {"scrubbed_count": True}, 3),
    ("tool.invocation.refused", {"gate": "budget"}, 0),
    ("tool.invocation.refused", {"gate": "x"}, 3),
    ("probe.evaluated", {"probe": "needle", "score": 0.25}, 0),
    ("probe.evaluated", {"probe": "x"}, 3),
    ("probe.evaluated", {"score": True}, 3),
    ("handshake.resolved", {"status": "approved"}, 0),
    ("handshake.resolved", {"status": "maybe"}, 3),
    ("retrieval.grouping.applied", {"rule_fired": "test_subject"}, 0),
    ("state.budget_capped", {"strategy": "truncate_tail"}, 0),
]


@pytest.mark.parametrize("kind,payload,want", ENUM_CASES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(ENUM_CASES)])
def test_closed_enumerations(tmp_path, capsys, kind, payload, want):
    evs = chain([ev("run.started", {}), ev(kind, payload), ev("run.completed", {})])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == want, codes(rep)


# --- §2.6 the published JSON Schemas --------------------------------------------------------------


def test_json_schemas_published():
    from ract_cli.format import schema_export

    names = [n for n in dir(schema_export) if not n.startswith("_")]
    assert names  # the module exists and exports something
    docs = Path(__file__).resolve().parents[2] / "docs" / "schemas"
    files = list(docs.glob("*.json"))
    assert len(files) >= 64
    sample = json.loads(files[0].read_text())
    assert "2020-12" in sample.get("$schema", "")


def test_published_schemas_agree_with_verifier(tmp_path, capsys):
    import jsonschema

    schemas = Path(__file__).resolve().parents[2] / "docs" / "schemas"
    for kind, payload, want in PAYLOAD_CASES + ENUM_CASES:
        doc = json.loads((schemas / f"{kind}.json").read_text())
        assert doc["$schema"].endswith("2020-12/schema")
        valid = jsonschema.Draft202012Validator(doc).is_valid(payload)
        if "seated_tokens" in payload and "cap_tokens" in payload:
            continue  # a cross-field invariant JSON Schema cannot state
        assert valid == (want == 0), (kind, payload)
