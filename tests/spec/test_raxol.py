"""SPEC §8 Raxol agent journals: the evidence decoder, the contract, the optional chain.

Journals are written here as plain JSON lines; a chained journal is hashed
with ``tests/independent_jcs.py``.
"""

from __future__ import annotations

import enum
import hashlib
import json

import pytest
from independent_jcs import ZERO, jcs, rhash

from ract_cli.dialects.raxol.contract import evidence_status

from .builders import (
    codes,
    project_json,
    ract,
    sub,
    verify_json,
)

# --- §8 the evidence tri-state decoder ------------------------------------------------------------


EVIDENCE_ROWS = [
    ({"final": True, "evidence": "accepted"}, "accepted"),
    ({"final": True, "evidence": "rejected"}, "rejected"),
    ({"final": True, "evidence": "absent"}, "absent"),
    ({"final": True, "evidence": "absent", "refs": ["r1"]}, "absent"),  # key present is authoritative
    ({"final": True, "evidence": "rejected", "refs": ["r1"]}, "rejected"),
    ({"final": True, "refs": ["r1"]}, "accepted"),  # legacy grandfather
    ({"final": True}, "unknown"),  # never absent
    ({"final": True, "evidence": "bogus"}, "unknown"),
    ({"final": True, "evidence": "bogus", "refs": ["r1"]}, "unknown"),
    ({"final": True, "evidence": 7}, "unknown"),
    ({"final": True, "evidence": None}, "unknown"),
    ({"final": True, "evidence": ["accepted"]}, "unknown"),
    ({}, "unknown"),
]


@pytest.mark.parametrize("payload,want", EVIDENCE_ROWS)
def test_evidence_status_rows(payload, want):
    assert evidence_status(payload) == want


@pytest.mark.parametrize("payload", [None, 5, "x", [], {"evidence": {"a": 1}}, {"refs": 5}])
def test_evidence_status_never_raises(payload):
    assert evidence_status(payload) in ("accepted", "rejected", "absent", "unknown")
    assert evidence_status(payload) != "accepted"


class _Ev(enum.Enum):
    accepted = "accepted"
    rejected = "rejected"


DECODE = [
    ({":evidence": ":accepted"}, "accepted"),
    ({"evidence": ":rejected"}, "rejected"),
    ({"evidence": _Ev.accepted}, "accepted"),
    ({"evidence": True}, "unknown"),
    ({"evidence": ""}, "unknown"),
    ({"evidence": "Accepted"}, "unknown"),
    ({"evidence": " accepted"}, "unknown"),
    ({"evidence": "unknown"}, "unknown"),
    ({"evidence": "partial", "refs": ["r"]}, "unknown"),  # a future enum value: never accepted
    ({"evidence": None, "refs": ["a"]}, "unknown"),  # the key present is authoritative
    ({"evidence": "absent", "refs": ["a"]}, "absent"),
    ({"evidence": b"accepted"}, "unknown"),
    ({"usage": {}, "final": True}, "unknown"),  # legacy, no refs: never absent
    ({"usage": {}, "final": True, "refs": ["i1", "i2"]}, "accepted"),
]


@pytest.mark.parametrize("payload,want", DECODE, ids=[repr(d[0])[:40] for d in DECODE])
def test_evidence_status_decode(payload, want):
    got = evidence_status(payload)
    assert got == want
    assert got in ("accepted", "rejected", "absent", "unknown")


def test_evidence_status_hostile_inputs_never_raise():
    class Boom(dict):
        def __getitem__(self, k):
            raise RuntimeError

        def get(self, *a):
            raise RuntimeError

        def __contains__(self, k):
            raise RuntimeError

        def items(self):
            raise RuntimeError

        def keys(self):
            raise RuntimeError

        def __iter__(self):
            raise RuntimeError

    class BadEq:
        def __eq__(self, o):
            raise RuntimeError

        def __hash__(self):
            raise RuntimeError

        def __repr__(self):
            raise RuntimeError

    assert evidence_status(Boom(evidence="accepted")) == "unknown"
    assert evidence_status({"evidence": BadEq()}) == "unknown"


# --- §8 journals through the commands -------------------------------------------------------------


def _journal(tmp_path, recs, name="journal.jsonl"):
    p = tmp_path / name
    p.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in recs))
    return p


def _raxol_records(extra_final=None, unknown=False):
    recs = [
        {"type": "turn_started", "payload": {"prompt": "p"}, "schema_version": "1.1.0"},
        {"type": "item_started", "payload": {"item_id": "i1", "item_type": "message"}, "schema_version": "1.1.0"},
        {"type": "item_delta", "payload": {"item_id": "i1", "chunk": "x"}, "schema_version": "1.1.0"},
        {"type": "item_completed", "payload": {"item_id": "i1", "item_type": "message"}, "schema_version": "1.1.0"},
    ]
    if unknown:
        recs.append({"type": "future_thing", "payload": {}, "schema_version": "1.1.0"})
    fin = {"usage": {}, "iteration": 1, "final": True, "evidence": "accepted", "refs": ["i1"]}
    fin.update(extra_final or {})
    recs.append({"type": "turn_completed", "payload": fin, "schema_version": "1.1.0", "extra_top": 1})
    return recs


def test_raxol_detected_and_verifies(tmp_path, capsys):
    p = _journal(tmp_path, _raxol_records())
    rc, rep = verify_json(capsys, p)
    assert rc == 0, rep


def test_raxol_unknown_type_is_warning(tmp_path, capsys):
    p = _journal(tmp_path, _raxol_records(unknown=True))
    rc, rep = verify_json(capsys, p)
    assert rc == 0
    assert rep["files"][0]["findings"]


@pytest.mark.parametrize(
    "extra,want",
    [
        ({"evidence": "rejected", "evidence_rejected": {"refs": ["i9"], "reason": "missing_ref", "ref": None}}, 0),
        ({"evidence": "rejected", "evidence_rejected": {"refs": ["i9"], "reason": "not_evidence", "ref": 0}}, 0),
        ({"evidence": "accepted", "evidence_rejected": {"refs": [], "reason": "missing_ref", "ref": None}}, 3),
        ({"evidence": "rejected", "evidence_rejected": {"refs": [], "reason": "made_up", "ref": None}}, 3),
        ({"evidence": "maybe"}, 3),
    ],
)
def test_raxol_evidence_marker(tmp_path, capsys, extra, want):
    p = _journal(tmp_path, _raxol_records(extra))
    rc, rep = verify_json(capsys, p)
    assert rc == want, rep["files"][0]["findings"]


def test_raxol_legacy_marker_warning(tmp_path, capsys):
    recs = _raxol_records()
    for r in recs:
        r.pop("schema_version")
    p = _journal(tmp_path, recs)
    rc, rep = verify_json(capsys, p)
    assert rc == 0
    assert rep["files"][0]["findings"]


def test_raxol_open_journal_and_dialect_option(tmp_path, capsys):
    recs = [
        {"type": "turn_started", "payload": {"prompt": "p"}},
        {"type": "turn_completed", "payload": {"usage": {}, "iteration": 1, "final": False}},
    ]
    j = _journal(tmp_path, recs)
    rc, rep = verify_json(capsys, j)
    assert rc == 0 and "OPEN_RUN" in codes(rep)
    assert ract(capsys, "verify", "-q", "--require-closed", j)[0] == 4
    assert ract(capsys, "verify", "-q", "--dialect", "ract", j)[0] == 1
    assert ract(capsys, "verify", "-q", "--dialect", "raxol", j)[0] == 0


def test_raxol_repair_refuses(tmp_path, capsys):
    recs = _raxol_records()[:-1]
    p = _journal(tmp_path, recs)
    before = p.read_bytes()
    rc, out, err = ract(capsys, "repair", p)
    assert rc == 1
    assert "raxol" in (out + err).lower()
    assert p.read_bytes() == before


def test_raxol_chain_verified(tmp_path, capsys):
    recs = _raxol_records()
    prev = ZERO
    for r in recs:
        r["prev_hash"] = prev
        r["hash"] = hashlib.sha256(jcs({k: v for k, v in r.items() if k != "hash"}).encode()).hexdigest()
        prev = r["hash"]
    p = _journal(tmp_path, recs)
    rc, rep = verify_json(capsys, p)
    assert rc == 0, rep
    recs[1]["payload"]["item_id"] = "forged"
    p.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in recs))
    rc, rep = verify_json(capsys, p)
    assert rc == 1


def test_raxol_project_evidence_trust(tmp_path, capsys):
    recs = _raxol_records()
    rc, out = project_json(capsys, _journal(tmp_path, recs))
    d = json.loads(out)
    assert rc == 0 and d["evidence"]["status"] == "accepted" and d["evidence"]["verified_chain"] is False
    prev = ZERO
    for r in recs:
        r["prev_hash"] = prev
        r["hash"] = hashlib.sha256(jcs({k: v for k, v in r.items() if k != "hash"}).encode()).hexdigest()
        prev = r["hash"]
    rc, out = project_json(capsys, _journal(tmp_path, recs))
    d = json.loads(out)
    assert rc == 0 and d["evidence"]["verified_chain"] is True
    # item_delta is ephemeral: not durable
    assert d["chain"]["durable_events"] == d["chain"]["events"] - 1


def _final_unversioned(**kw):
    return {"type": "turn_completed", "payload": {"usage": {}, "iteration": 1, "final": True, **kw}}


RAXOL_MARKER_CASES = [
    (
        "no schema_version (legacy 1.0.0) with a marker",
        None,
        _final_unversioned(evidence="accepted", refs=["i1"]),
        0,
        True,
    ),
    ("1.0.0 with a marker", "1.0.0", _final_unversioned(evidence="absent"), 0, True),
    (
        "ref must be an offset or null",
        "1.1.0",
        _final_unversioned(evidence="rejected", evidence_rejected={"refs": ["x"], "reason": "missing_ref", "ref": "x"}),
        3,
        False,
    ),
    (
        "refs must be a list",
        "1.1.0",
        _final_unversioned(evidence="rejected", evidence_rejected={"refs": "x", "reason": "missing_ref", "ref": None}),
        3,
        False,
    ),
    ("error type is in the vocabulary", "1.1.0", {"type": "error", "payload": {"reason": "boom"}}, 0, False),
]


@pytest.mark.parametrize("name,version,record,want,warn", RAXOL_MARKER_CASES, ids=[c[0] for c in RAXOL_MARKER_CASES])
def test_raxol_marker_rules(tmp_path, capsys, name, version, record, want, warn):
    recs = [{"type": "turn_started", "payload": {"prompt": "p"}}, record]
    if record["type"] != "turn_completed":
        recs.append(_final_unversioned(evidence="absent"))
    if version:
        recs = [dict(r, schema_version=version) for r in recs]
    rc, rep = verify_json(capsys, _journal(tmp_path, recs))
    assert rc == want, rep["files"][0]["findings"]
    if warn:
        assert any(f["severity"] == "warning" for f in rep["files"][0]["findings"])


def test_raxol_item_ids_turn_scoped_and_delta_never_replayed(tmp_path, capsys):
    ts = {"type": "turn_started", "payload": {"prompt": "p"}}
    its = {"type": "item_started", "payload": {"item_id": "i1", "item_type": "message"}}
    itc = {"type": "item_completed", "payload": {"item_id": "i1", "item_type": "message"}}
    dl = {"type": "item_delta", "payload": {"item_id": "i1", "chunk": "c"}}
    recs = [
        ts,
        its,
        dl,
        itc,
        {"type": "turn_completed", "payload": {"usage": {}, "iteration": 1, "final": False}},
        ts,
        its,
        itc,
        _final_unversioned(evidence="absent"),
    ]
    recs = [dict(r, schema_version="1.1.0") for r in recs]
    j = _journal(tmp_path, recs)
    assert ract(capsys, "verify", "-q", j)[0] == 0  # i1 again in a new turn is fine
    rc, out, _err = ract(capsys, "replay", "--format", "jsonl", "--workspace", tmp_path, j)
    assert rc == 0 and "item_delta" not in out and out.count("\n") == len(recs) - 1
    dup = [dict(r, schema_version="1.1.0") for r in [ts, its, itc, its, itc, _final_unversioned(evidence="absent")]]
    rc, _rep = verify_json(capsys, _journal(tmp_path, dup))
    assert rc == 3  # item ids are distinct per item within a turn


# --- §8 the contract, record by record ------------------------------------------------------------


V = "1.1.0"


def _r(t, p, **kw):
    return dict(type=t, payload=p, schema_version=V, **kw)


TS = _r("turn_started", {"prompt": "p"})
IS = _r("item_started", {"item_id": "i1", "item_type": "message"})
IC = _r("item_completed", {"item_id": "i1", "item_type": "message"})


def _final(**k):
    return _r("turn_completed", {"usage": {"in": 3}, "iteration": 1, "final": True, **k})


def _rej(reason, ref=None):
    return _final(evidence="rejected", evidence_rejected={"refs": ["i9"], "reason": reason, "ref": ref})


CONTRACT = [
    ("clean", [TS, IS, IC, _final(evidence="accepted", refs=["i1"])], 0),
    (
        "marker on a non-final turn_completed",
        [
            TS,
            _r("turn_completed", {"usage": {}, "iteration": 1, "final": False, "evidence": "absent"}),
            TS,
            _final(evidence="absent"),
        ],
        3,
    ),
    (
        "evidence_rejected without evidence",
        [TS, _final(evidence_rejected={"refs": [], "reason": "missing_ref", "ref": None})],
        3,
    ),
    (
        "evidence_rejected with absent",
        [TS, _final(evidence="absent", evidence_rejected={"refs": [], "reason": "missing_ref", "ref": None})],
        3,
    ),
    ("record after the final turn_completed", [TS, _final(evidence="absent"), TS], 3),
    ("item completed but never started", [TS, IC, _final(evidence="absent")], 3),
    ("evidence value outside the enum", [TS, _final(evidence="unknown")], 3),
    ("unknown type is a warning", [TS, _r("turn_paused", {}), _final(evidence="absent")], 0),
    ("error record", [TS, _r("error", {"reason": "x"}), _final(evidence="absent")], 0),
    ("extra top-level keys tolerated", [dict(TS, seq=1, at_ms=5), _final(evidence="absent")], 0),
    ("no final: open run, warning", [TS, _r("turn_completed", {"usage": {}, "iteration": 1, "final": False})], 0),
] + [
    (f"rejected reason {r}", [TS, _rej(r, 0)], 0)
    for r in ("missing_ref", "not_evidence", "foreign_turn", "stale_evidence", "mutation_echo")
]


@pytest.mark.parametrize("name,recs,want", CONTRACT, ids=[c[0] for c in CONTRACT])
def test_raxol_contract(tmp_path, capsys, name, recs, want):
    rc, out, _err = ract(capsys, "verify", "--format", "json", _journal(tmp_path, json.loads(json.dumps(recs))))
    assert rc == want, out


# --- §8 the optional hash chain -------------------------------------------------------------------


def _chained(recs):
    recs = json.loads(json.dumps(recs))
    prev = ZERO
    for r in recs:
        r["prev_hash"] = prev
        r["hash"] = rhash(r)
        prev = r["hash"]
    return recs


def _genesis(recs):
    recs[0]["prev_hash"] = "1" * 64
    return _chained_from(recs)


def _chained_from(recs):
    prev = recs[0]["prev_hash"]
    for r in recs:
        r["prev_hash"] = prev
        r["hash"] = rhash(r)
        prev = r["hash"]
    return recs


CHAIN_MUTATIONS = [
    ("intact", lambda r: r, 0),
    ("bad genesis", _genesis, 1),
    ("deleted record", lambda r: r[:1] + r[2:], 1),
    (
        "record without hash",
        lambda r: [*r[:2], {k: v for k, v in r[2].items() if k not in ("hash", "prev_hash")}, *r[3:]],
        1,
    ),
    ("edited evidence", lambda r: [*r[:3], dict(r[3], payload=dict(r[3]["payload"], evidence="accepted"))], 1),
    ("edited top-level key", lambda r: [dict(r[0], schema_version="1.2.0"), *r[1:]], 1),
]


@pytest.mark.parametrize("name,mutate,want", CHAIN_MUTATIONS, ids=[c[0] for c in CHAIN_MUTATIONS])
def test_raxol_chain_mutations(tmp_path, capsys, name, mutate, want):
    recs = mutate(_chained([TS, IS, IC, _rej("missing_ref")]))
    p = _journal(tmp_path, recs)
    rc, out, _err = ract(capsys, "verify", "--format", "json", p)
    assert rc == want, out
    rc, out, _err = ract(capsys, "project", "--format", "json", p)
    ev_ = json.loads(out)["evidence"]
    assert ev_["verified_chain"] is (want == 0)


def test_raxol_project_evidence_outcomes(tmp_path, capsys):
    cases = [
        ([TS, _rej("not_evidence", 0)], "rejected"),
        ([TS, _final(evidence="absent")], "absent"),
        ([TS, _r("turn_completed", {"usage": {}, "final": True})], "unknown"),
        ([TS, _r("turn_completed", {"usage": {}, "final": True, "refs": ["a"]})], "accepted"),
    ]
    for i, (recs, want) in enumerate(cases):
        rc, out, _ = ract(capsys, "project", "--format", "json", _journal(tmp_path, recs, f"j{i}.jsonl"))
        d = json.loads(out)["evidence"]
        assert rc == 0 and d["status"] == want and d["verified_chain"] is False


def test_raxol_grep_kind_matches_type(tmp_path):
    p = _journal(tmp_path, [TS, IS, _r("item_delta", {"item_id": "i1", "chunk": "c"}), IC, _final(evidence="absent")])
    r = sub("grep", "--kind", "item_*", p)
    assert r.returncode == 0 and r.stdout.count(b"\n") == 3
    r = sub("grep", "--kind", "nothing", p)
    assert r.returncode == 7
