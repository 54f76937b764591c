"""Raxol agent journals (SPEC §8): the evidence decode, encoding, detection, the contract, chained journals."""

from __future__ import annotations

import copy
import enum
import gzip
import math
import os
import types
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

import orjson
import pytest
from raxol_cases import (
    CHAIN_BREAKS,
    VIOLATIONS,
    WARNINGS,
    _chained,
    final_payload,
    rec,
    valid_journal,
    write_journal,
)

from ract_cli.dialects import raxol
from ract_cli.dialects.raxol.contract import ABSENT, ACCEPTED, REJECTED, UNKNOWN, Atom, EvidenceStatus, evidence_status
from ract_cli.dialects.raxol.encode import chain_records, encode_line, record_hash, sanitize_payload
from ract_cli.dialects.raxol.record import JournalEvent
from ract_cli.errors import ExitCode, UsageError
from ract_cli.read.dialect import detect_dialect, detect_file_dialect
from ract_cli.read.reader import ChainReader
from ract_cli.testing.synth_raxol import JOURNAL_FIXTURES, journal_bytes, journal_path, write_journal_fixtures

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


# --- atom-likes used by the decode table --------------------------------------


class Key(enum.Enum):
    evidence = "evidence"
    refs = "refs"


class Ev(enum.Enum):
    accepted = "accepted"
    rejected = "rejected"
    absent = "absent"
    partial = "partial"  # a future grow-only value


class EvStr(enum.StrEnum):
    ACCEPTED = "accepted"


class EvInt(enum.IntEnum):
    accepted = 1
    rejected = 2


class Named:
    def __init__(self, name: object) -> None:
        self.name = name


class HostileName:
    @property
    def name(self) -> str:
        raise RuntimeError("boom")


class HostileMapping(Mapping):
    def __getitem__(self, key):
        raise RuntimeError("boom")

    def __iter__(self):
        raise RuntimeError("boom")

    def __len__(self) -> int:
        return 1


class HostileEqStr(str):
    def __eq__(self, other):  # a forged string must not be able to claim equality
        return True

    __hash__ = str.__hash__


FINAL = {"usage": {"input_tokens": 10}, "iteration": 2, "final": True}

# (id, payload, expected status). Every row of the decode of the reference contract.
DECODE = [
    # the key present is authoritative: wire strings
    ("string-accepted", {**FINAL, "evidence": "accepted", "refs": ["i3"]}, ACCEPTED),
    ("string-accepted-no-refs", {**FINAL, "evidence": "accepted"}, ACCEPTED),
    (
        "string-rejected",
        {**FINAL, "evidence": "rejected", "evidence_rejected": {"refs": ["i3"], "reason": "not_evidence", "ref": 0}},
        REJECTED,
    ),
    ("string-rejected-bare", {**FINAL, "evidence": "rejected"}, REJECTED),
    ("string-absent", {**FINAL, "evidence": "absent"}, ABSENT),
    ("key-wins-over-refs-absent", {**FINAL, "evidence": "absent", "refs": ["i3"]}, ABSENT),
    ("key-wins-over-refs-rejected", {**FINAL, "evidence": "rejected", "refs": ["i3"]}, REJECTED),
    ("key-present-null", {**FINAL, "evidence": None}, UNKNOWN),
    ("key-present-null-with-refs", {**FINAL, "evidence": None, "refs": ["i3"]}, UNKNOWN),
    # grandfather rule: legacy records (no evidence key)
    ("legacy-refs", {**FINAL, "refs": ["i3", "i5"]}, ACCEPTED),
    ("legacy-refs-tuple", {**FINAL, "refs": ("i3",)}, ACCEPTED),
    ("legacy-neither", dict(FINAL), UNKNOWN),
    ("legacy-empty-payload", {}, UNKNOWN),
    ("legacy-refs-empty-list", {**FINAL, "refs": []}, UNKNOWN),
    ("legacy-refs-null", {**FINAL, "refs": None}, UNKNOWN),
    ("legacy-refs-string", {**FINAL, "refs": "i3"}, UNKNOWN),
    ("legacy-refs-int", {**FINAL, "refs": 3}, UNKNOWN),
    ("legacy-refs-dict", {**FINAL, "refs": {"i3": True}}, UNKNOWN),
    ("legacy-refs-true", {**FINAL, "refs": True}, UNKNOWN),
    (
        "legacy-rejected-detail-only",
        {**FINAL, "evidence_rejected": {"refs": ["i3"], "reason": "missing_ref", "ref": None}},
        UNKNOWN,
    ),
    # forged strings: never accepted
    ("forged-upper", {**FINAL, "evidence": "ACCEPTED", "refs": ["i3"]}, UNKNOWN),
    ("forged-capital", {**FINAL, "evidence": "Accepted"}, UNKNOWN),
    ("forged-leading-space", {**FINAL, "evidence": " accepted"}, UNKNOWN),
    ("forged-trailing-newline", {**FINAL, "evidence": "accepted\n"}, UNKNOWN),
    ("forged-nul", {**FINAL, "evidence": "accepted\x00"}, UNKNOWN),
    ("forged-fullwidth", {**FINAL, "evidence": "\uff41ccepted"}, UNKNOWN),
    ("forged-cyrillic-a", {**FINAL, "evidence": "\u0430ccepted"}, UNKNOWN),
    ("forged-prefix", {**FINAL, "evidence": "accept"}, UNKNOWN),
    ("forged-yes", {**FINAL, "evidence": "yes"}, UNKNOWN),
    ("forged-true-string", {**FINAL, "evidence": "true"}, UNKNOWN),
    ("forged-empty", {**FINAL, "evidence": ""}, UNKNOWN),
    ("forged-unknown-string", {**FINAL, "evidence": "unknown"}, UNKNOWN),
    ("forged-colon-only", {**FINAL, "evidence": ":"}, UNKNOWN),
    ("forged-double-colon", {**FINAL, "evidence": "::accepted"}, UNKNOWN),
    ("forged-eq-str-subclass", {**FINAL, "evidence": HostileEqStr("nope")}, UNKNOWN),
    # future grow-only enum values
    ("future-partial", {**FINAL, "evidence": "partial", "refs": ["i3"]}, UNKNOWN),
    ("future-revoked", {**FINAL, "evidence": "revoked"}, UNKNOWN),
    ("future-enum-member", {**FINAL, "evidence": Ev.partial, "refs": ["i3"]}, UNKNOWN),
    ("future-atom", {**FINAL, "evidence": Atom("deferred")}, UNKNOWN),
    # garbage types
    ("garbage-int", {**FINAL, "evidence": 1}, UNKNOWN),
    ("garbage-zero", {**FINAL, "evidence": 0, "refs": ["i3"]}, UNKNOWN),
    ("garbage-float", {**FINAL, "evidence": 1.0}, UNKNOWN),
    ("garbage-nan", {**FINAL, "evidence": math.nan}, UNKNOWN),
    ("garbage-true", {**FINAL, "evidence": True, "refs": ["i3"]}, UNKNOWN),
    ("garbage-false", {**FINAL, "evidence": False}, UNKNOWN),
    ("garbage-list", {**FINAL, "evidence": ["accepted"]}, UNKNOWN),
    ("garbage-empty-list", {**FINAL, "evidence": []}, UNKNOWN),
    ("garbage-dict", {**FINAL, "evidence": {"value": "accepted"}}, UNKNOWN),
    ("garbage-tuple", {**FINAL, "evidence": ("accepted",)}, UNKNOWN),
    ("garbage-bytes", {**FINAL, "evidence": b"accepted"}, UNKNOWN),
    ("garbage-object", {**FINAL, "evidence": object()}, UNKNOWN),
    ("garbage-named-int", {**FINAL, "evidence": Named(1)}, UNKNOWN),
    ("garbage-hostile-name", {**FINAL, "evidence": HostileName(), "refs": ["i3"]}, UNKNOWN),
    # atom-keyed and atom-valued payloads (live in-memory events)
    (
        "atom-key-atom-value",
        {Atom("usage"): {}, Atom("final"): True, Atom("evidence"): Atom("accepted"), Atom("refs"): ["i3"]},
        ACCEPTED,
    ),
    ("atom-key-string-value", {Atom("evidence"): "rejected"}, REJECTED),
    ("string-key-atom-value", {"evidence": Atom("absent")}, ABSENT),
    ("enum-key-enum-value", {Key.evidence: Ev.accepted}, ACCEPTED),
    ("enum-value-rejected", {"evidence": Ev.rejected}, REJECTED),
    ("str-enum-value", {"evidence": EvStr.ACCEPTED}, ACCEPTED),
    ("int-enum-value-by-name", {"evidence": EvInt.rejected}, REJECTED),
    ("named-object-value", {"evidence": Named("absent")}, ABSENT),
    ("inspect-notation", {":evidence": ":accepted", ":refs": ["i3"]}, ACCEPTED),
    ("inspect-notation-value", {"evidence": ":rejected"}, REJECTED),
    ("atom-legacy-refs", {Atom("final"): True, Atom("refs"): ["i3"]}, ACCEPTED),
    ("enum-legacy-refs", {Key.refs: ["i3"]}, ACCEPTED),
    ("atom-legacy-neither", {Atom("usage"): {}, Atom("final"): True}, UNKNOWN),
    ("atom-key-garbage-value", {Atom("evidence"): 42}, UNKNOWN),
    ("atom-and-string-keys-agree", {Atom("evidence"): Atom("absent"), "evidence": "absent"}, ABSENT),
    ("atom-and-string-keys-disagree", {Atom("evidence"): Atom("rejected"), "evidence": "accepted"}, UNKNOWN),
    ("atom-and-string-refs-one-empty", {Atom("refs"): [], "refs": ["i3"]}, UNKNOWN),
    ("other-mapping-types", OrderedDict([("evidence", "accepted")]), ACCEPTED),
    ("mapping-proxy", types.MappingProxyType({"refs": ["i3"]}), ACCEPTED),
    # not a payload at all
    ("payload-none", None, UNKNOWN),
    ("payload-list", [("evidence", "accepted")], UNKNOWN),
    ("payload-string", "accepted", UNKNOWN),
    ("payload-int", 7, UNKNOWN),
    ("payload-bool", True, UNKNOWN),
    ("payload-hostile-mapping", HostileMapping(), UNKNOWN),
]


@pytest.mark.parametrize(("payload", "expected"), [pytest.param(p, e, id=i) for i, p, e in DECODE])
def test_evidence_status_decode(payload: object, expected: EvidenceStatus) -> None:
    status = evidence_status(payload)
    assert status is expected
    assert status == expected.value  # compares equal to its wire string


def test_decode_outcomes_are_quaternary() -> None:
    assert {e for _, _, e in DECODE} == {ACCEPTED, REJECTED, ABSENT, UNKNOWN}
    assert [s.value for s in EvidenceStatus] == ["accepted", "rejected", "absent", "unknown"]
    assert str(ACCEPTED) == "accepted" and f"{UNKNOWN}" == "unknown"
    assert orjson.dumps({"s": REJECTED}) == b'{"s":"rejected"}'


def test_legacy_record_without_marker_is_never_absent() -> None:
    for payload in ({"usage": {}, "final": True}, {"final": True}, {}, {"usage": {"input_tokens": 1}}):
        assert evidence_status(payload) == "unknown"


# --- sanitize_payload / encode_line -------------------------------------------------


class Unencodable:
    def __repr__(self) -> str:
        return "<pid 0.123.0>"


class HostileRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


SANITIZE = [
    ("plain", {"a": 1, "b": "x", "c": [1.5, None, True]}, {"a": 1, "b": "x", "c": [1.5, None, True]}),
    ("atom-values", {"status": Atom("ok"), "e": Ev.accepted}, {"status": "ok", "e": "accepted"}),
    ("atom-keys", {Atom("item_id"): "i1", Key.refs: ["i3"]}, {"item_id": "i1", "refs": ["i3"]}),
    ("tuple", {"t": (1, "a")}, {"t": [1, "a"]}),
    ("mapping", {"m": types.MappingProxyType({Atom("k"): Ev.absent})}, {"m": {"k": "absent"}}),
    ("object", {"pid": Unencodable()}, {"pid": "<pid 0.123.0>"}),
    ("hostile-repr", {"x": HostileRepr()}, {"x": "<unrepresentable HostileRepr>"}),
    ("nan", {"x": math.nan}, {"x": "nan"}),
    ("inf", {"x": math.inf}, {"x": "inf"}),
    ("huge-int", {"x": 2**70}, {"x": str(2**70)}),
    ("set", {"x": {1}}, {"x": "{1}"}),
    ("bytes", {"x": b"ab"}, {"x": "b'ab'"}),
    ("int-key", {1: "one"}, {"1": "one"}),
    ("lone-surrogate", {"x": "a\ud800"}, {"x": "'a\\ud800'"}),
    ("non-dict", ["a"], {"value": ["a"]}),
    ("none", None, {"value": None}),
]


@pytest.mark.parametrize(("payload", "expected"), [pytest.param(p, e, id=i) for i, p, e in SANITIZE])
def test_sanitize_payload(payload: object, expected: dict) -> None:
    clean = sanitize_payload(payload)
    assert clean == expected
    orjson.dumps(clean)  # encodable


def test_sanitize_payload_survives_a_cycle() -> None:
    cyclic: dict = {"a": 1}
    cyclic["self"] = cyclic
    clean = sanitize_payload(cyclic)
    assert clean["a"] == 1
    orjson.dumps(clean)


def test_encode_line_is_one_canonical_json_line() -> None:
    line = encode_line(
        {
            "type": Atom("turn_completed"),
            "payload": {"usage": {"t": 1}, "final": True, "evidence": Ev.accepted, "blob": Unencodable()},
        }
    )
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert orjson.loads(line) == {
        "type": "turn_completed",
        "payload": {"usage": {"t": 1}, "final": True, "evidence": "accepted", "blob": "<pid 0.123.0>"},
    }
    assert line == orjson.dumps(orjson.loads(line), option=orjson.OPT_SORT_KEYS) + b"\n"


def test_chain_records_hash_the_record_without_hash() -> None:
    records = chain_records(
        [{"type": "turn_started", "payload": {"prompt": "p"}}, {"type": "error", "payload": {"reason": "x"}}]
    )
    assert records[0]["prev_hash"] == "0" * 64
    assert records[1]["prev_hash"] == records[0]["hash"]
    for r in records:
        assert r["hash"] == record_hash(r) == record_hash({k: v for k, v in r.items() if k != "hash"})


# --- dialect detection --------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "dialect"),
    [
        ({"type": "turn_started", "payload": {}}, "raxol"),
        ({"type": "x"}, "raxol"),
        ({"type": "turn_started", "kind": "run.started", "payload": {}}, "ract"),
        ({"kind": "run.started", "payload": {}}, "ract"),
        ({}, "ract"),
        (["type"], "ract"),
        (None, "ract"),
        ("type", "ract"),
    ],
)
def test_detect_dialect(record: object, dialect: str) -> None:
    assert detect_dialect(record) == dialect


def test_detect_file_dialect(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    journal.write_bytes(b"\n{broken\n" + encode_line({"type": "turn_started", "payload": {"prompt": "p"}}))
    assert detect_file_dialect(journal) == "raxol"
    assert detect_file_dialect(tmp_path / "missing.jsonl") == "ract"
    assert detect_file_dialect(tmp_path) == "ract"
    assert detect_file_dialect(FIXTURES / "runs" / "120d7eae7ee0c9c181816e553722e2fe" / "events.jsonl") == "ract"
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert detect_file_dialect(empty) == "ract"


_TURN = encode_line({"type": "turn_started", "payload": {"prompt": "p"}})
_RACT_FIRST = b'{"id":"a","kind":"run.started"}\n'
#: first bytes of a file -> its dialect: the quick look at the first read must give what reading line by line gives
DETECTION_CASES = {
    "a journal": (_TURN, "raxol"),
    "a run": (_RACT_FIRST + _TURN, "ract"),
    "a journal after a broken line": (b"{broken\n" + _TURN, "raxol"),
    "a journal after a non-object": (b"[1]\n" + _TURN, "raxol"),
    "a journal after CRLF garbage": (b"x\r\n" + _TURN, "raxol"),
    "a journal with CRLF endings": (_TURN[:-1] + b"\r\n", "raxol"),
    "a first line longer than the quick read": (b'{"type":"t","p":"' + b"x" * (70 << 10) + b'"}\n', "raxol"),
    "a first line past max_line_bytes": (b'{"type":"t","p":"' + b"x" * 300 + b'"}\n' + _TURN, "ract"),
    "no newline": (_TURN[:-1], "raxol"),
    "nine lines of garbage first": (b"x\n" * 9 + _TURN, "ract"),
    "empty": (b"", "ract"),
}


@pytest.mark.parametrize("case", DETECTION_CASES)
@pytest.mark.parametrize("gzipped", [False, True])
def test_detection_reads_the_first_records(tmp_path: Path, case: str, gzipped: bool) -> None:
    data, dialect = DETECTION_CASES[case]
    path = tmp_path / ("log.jsonl.gz" if gzipped else "log.jsonl")
    path.write_bytes(gzip.compress(data) if gzipped else data)
    limit = 256 if case == "a first line past max_line_bytes" else 1 << 20
    assert detect_file_dialect(path, max_line_bytes=limit) == dialect
    assert ChainReader(path, max_line_bytes=limit).dialect == dialect


def test_detection_of_a_fifo_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    assert detect_file_dialect(fifo) == "ract"


def test_reader_dialect_option(tmp_path: Path) -> None:
    journal = FIXTURES / "journals" / "accepted.jsonl"
    assert ChainReader(journal).dialect == "raxol"
    run = FIXTURES / "runs" / "120d7eae7ee0c9c181816e553722e2fe" / "events.jsonl"
    assert ChainReader(run).dialect == "ract"
    # forcing the wrong dialect: a journal is not a RACT log, a RACT log is not a journal
    forced = ChainReader(journal, dialect="ract")
    forced.read_all()
    assert forced.exit_code == ExitCode.TAMPERED and forced.findings[0].code == "ENVELOPE_ERROR"
    forced = ChainReader(run, dialect="raxol")
    forced.read_all()
    assert forced.exit_code == ExitCode.SCHEMA
    assert {f.code for f in forced.findings if f.severity == "error"} == {"CONTRACT_VIOLATION"}
    with pytest.raises(UsageError):
        ChainReader(journal, dialect="elixir")


# --- the contract -------------------------------------------------------------------


def read(path: Path, **kw: object) -> ChainReader:
    reader = ChainReader(path, **kw)
    reader.read_all()
    return reader


@pytest.mark.parametrize(("mutate", "line"), [pytest.param(m, ln, id=i) for i, m, ln in VIOLATIONS])
def test_contract_violation_exits_3(tmp_path: Path, mutate, line: int) -> None:
    records = valid_journal()
    mutate(records)
    reader = read(write_journal(tmp_path / "j.jsonl", records))
    assert reader.dialect == "raxol"
    violations = [f for f in reader.findings if f.code == "CONTRACT_VIOLATION"]
    assert violations, reader.findings
    assert violations[0].line == line
    assert violations[0].severity == "error"
    assert reader.exit_code == ExitCode.SCHEMA


def test_valid_journal_is_clean(tmp_path: Path) -> None:
    reader = read(write_journal(tmp_path / "j.jsonl", valid_journal()))
    assert reader.findings == [] and reader.exit_code == ExitCode.OK
    events = list(ChainReader(tmp_path / "j.jsonl"))
    assert all(type(e) is JournalEvent for e in events)
    assert [e.kind for e in events if not e.durable] == ["item_delta", "item_delta"]
    assert events[0].payload == {"prompt": "fix it"}


@pytest.mark.parametrize(("mutate", "code"), [pytest.param(m, c, id=i) for i, m, c in WARNINGS])
def test_contract_warning_exits_0(tmp_path: Path, mutate, code: str) -> None:
    records = valid_journal()
    mutate(records)
    reader = read(write_journal(tmp_path / "j.jsonl", records))
    assert code in {f.code for f in reader.findings if f.severity == "warning"}, reader.findings
    assert reader.exit_code == ExitCode.OK, reader.findings


def test_marker_in_pre_1_1_0_journal_is_a_warning(tmp_path: Path) -> None:
    records = valid_journal()
    for r in records:
        del r["schema_version"]
    reader = read(write_journal(tmp_path / "legacy.jsonl", records))
    assert [(f.code, f.line) for f in reader.findings] == [("CONTRACT_WARNING", 12)]
    assert "1.0.0" in reader.findings[0].message
    assert reader.exit_code == ExitCode.OK
    for r in records:
        r["schema_version"] = "1.0.9"
    assert [f.code for f in read(write_journal(tmp_path / "legacy.jsonl", records)).findings] == ["CONTRACT_WARNING"]
    for r in records:
        r["schema_version"] = "1.1.0"
    assert read(write_journal(tmp_path / "legacy.jsonl", records)).findings == []
    # the version stamped on an earlier record carries over to records without one
    for r in records[1:]:
        del r["schema_version"]
    assert read(write_journal(tmp_path / "legacy.jsonl", records)).findings == []


def test_legacy_journal_without_marker_is_clean(tmp_path: Path) -> None:
    records = valid_journal()
    for r in records:
        del r["schema_version"]
    del final_payload(records)["evidence"]
    reader = read(write_journal(tmp_path / "legacy.jsonl", records))
    assert reader.findings == []
    summary = reader.state.summary()
    assert summary.schema_version == "1.0.0" and summary.evidence == ACCEPTED  # grandfathered by its refs
    del final_payload(records)["refs"]
    assert read(write_journal(tmp_path / "legacy.jsonl", records)).state.summary().evidence == UNKNOWN


def test_open_journal_under_require_closed_exits_4(tmp_path: Path) -> None:
    records = valid_journal()[:-1]
    path = write_journal(tmp_path / "open.jsonl", records)
    assert read(path).exit_code == ExitCode.OK
    reader = read(path, require_closed=True)
    assert reader.exit_code == ExitCode.INCOMPLETE
    assert [f.code for f in reader.findings if f.severity == "error"] == ["OPEN_RUN"]


def test_extra_top_level_and_payload_keys_are_tolerated(tmp_path: Path) -> None:
    records = valid_journal()
    for i, r in enumerate(records):
        r["seq"] = i
        r["at"] = "2026-11-29T20:00:00Z"
        r["payload"]["x_new_field"] = {"nested": [1, 2]}
    assert read(write_journal(tmp_path / "grown.jsonl", records)).findings == []


def test_summary_counts(tmp_path: Path) -> None:
    records = valid_journal()
    records.insert(6, rec("error", {"reason": "tool timed out"}))
    summary = read(write_journal(tmp_path / "j.jsonl", records)).state.summary()
    assert summary.turns == 2 and summary.turn_boundaries == 2
    assert summary.items_by_type == {"message": 1, "tool_result": 1, "tool_use": 1}
    assert summary.usage == {"input_tokens": 15, "output_tokens": 3}
    assert summary.iterations == 2
    assert summary.deltas == 2 and summary.records == 13 and summary.durable_records == 11
    assert summary.errors == [{"line": 7, "reason": "tool timed out"}]
    assert summary.closed and summary.final_line == 13
    assert summary.evidence == ACCEPTED and summary.trust == "journal-trust"
    assert summary.to_dict()["evidence"] == "accepted"


# --- chained journals ---------------------------------------------------------------


def test_chained_journal_verifies(tmp_path: Path) -> None:
    path = write_journal(tmp_path / "c.jsonl", chain_records(valid_journal()))
    reader = read(path)
    assert reader.findings == []
    summary = reader.state.summary()
    assert summary.chained and summary.chain_verified and summary.trust == "verified-chain"
    assert summary.head == reader.state.head == chain_records(valid_journal())[-1]["hash"]


@pytest.mark.parametrize(("mutate", "code", "line"), [pytest.param(m, c, ln, id=i) for i, m, c, ln in CHAIN_BREAKS])
def test_chain_break_exits_1(tmp_path: Path, mutate, code: str, line: int) -> None:
    records = _chained()
    mutate(records)
    reader = read(write_journal(tmp_path / "c.jsonl", records))
    first = next(f for f in reader.findings if f.severity == "error" and f.exit_code == ExitCode.TAMPERED)
    assert (first.code, first.line) == (code, line), reader.findings
    assert reader.exit_code == ExitCode.TAMPERED
    summary = reader.state.summary()
    assert not summary.chain_verified and summary.trust == "broken-chain"


def test_chain_starting_mid_journal_is_a_break(tmp_path: Path) -> None:
    records = valid_journal()[:6] + chain_records(valid_journal()[6:])
    reader = read(write_journal(tmp_path / "c.jsonl", records))
    assert reader.exit_code == ExitCode.TAMPERED
    assert reader.findings[0].code == "CHAIN_BREAK" and reader.findings[0].line == 7


def test_events_after_a_break_are_untrusted(tmp_path: Path) -> None:
    records = _chained()
    records[3]["payload"]["output"] = "forged"
    events = list(ChainReader(write_journal(tmp_path / "c.jsonl", records)))
    assert [e.trusted for e in events] == [True] * 2 + [False] * 10  # record 3 is confirmed by no clean successor


# --- framing: the one reader's, same as RACT ----------------------------------------


def test_journal_framing(tmp_path: Path) -> None:
    body = b"".join(encode_line(r) for r in valid_journal())
    cases = {
        "torn-tail": (body + b'{"type":"item_sta', "TORN_TAIL", ExitCode.INCOMPLETE),
        "malformed-line": (body[:50] + b"\n" + body, "MALFORMED_LINE", ExitCode.TAMPERED),
        "duplicate-key": (
            b'{"type":"error","type":"error","payload":{"reason":"x"}}\n' + body,
            "DUPLICATE_KEY",
            ExitCode.TAMPERED,
        ),
        "nan": (b'{"type":"error","payload":{"reason":NaN}}\n' + body, "MALFORMED_LINE", ExitCode.TAMPERED),
        "blank-line": (b"\n" + body, "MALFORMED_LINE", ExitCode.TAMPERED),
        "missing-final-newline": (body[:-1], "MISSING_FINAL_NEWLINE", ExitCode.OK),
    }
    for name, (data, code, exit_code) in cases.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(data)
        reader = read(path, dialect="raxol")
        assert code in {f.code for f in reader.findings}, (name, reader.findings)
        assert reader.exit_code == exit_code, (name, reader.findings)
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(body.replace(b"\n", b"\r\n"))
    assert read(crlf).findings == []
    long = tmp_path / "long.jsonl"
    long.write_bytes(body)
    reader = read(long, dialect="raxol", max_line_bytes=120)
    assert "LINE_TOO_LONG" in {f.code for f in reader.findings}


def test_empty_journal(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    reader = read(path, dialect="raxol")
    assert [f.code for f in reader.findings] == ["EMPTY_LOG"] and reader.exit_code == ExitCode.OK


# --- fixtures -----------------------------------------------------------------------


def test_committed_journal_fixtures_match_the_generator(tmp_path: Path) -> None:
    written = write_journal_fixtures(tmp_path)
    assert sorted(p.name for p in (FIXTURES / "journals").glob("*.jsonl")) == sorted(p.name for p in written.values())
    for name, path in written.items():
        assert journal_path(FIXTURES, name).read_bytes() == path.read_bytes(), f"{name}: run make fixtures"


def test_generator_is_deterministic() -> None:
    for fixture in JOURNAL_FIXTURES.values():
        assert journal_bytes(fixture.make()) == journal_bytes(copy.deepcopy(fixture.make()))


@pytest.mark.parametrize("name", list(JOURNAL_FIXTURES))
def test_journal_fixture_verdicts(name: str) -> None:
    fixture = JOURNAL_FIXTURES[name]
    reader = read(journal_path(FIXTURES, name))
    assert reader.dialect == "raxol"
    assert int(reader.exit_code) == fixture.exit_code, reader.findings
    summary = reader.state.summary()
    assert summary.evidence == fixture.evidence
    assert summary.trust == fixture.trust


# --- replay and project (library) ---------------------------------------------------


def test_journal_replay_skips_deltas_and_stops_at_a_break(tmp_path: Path) -> None:
    from ract_cli.replay.journal import JournalReplaySession

    session = JournalReplaySession(FIXTURES / "journals" / "accepted.jsonl")
    kinds = [step.event.kind for step in session.steps()]
    result = session.finish()
    assert "item_delta" not in kinds and kinds[0] == "turn_started" and kinds[-1] == "turn_completed"
    raw = (FIXTURES / "journals" / "accepted.jsonl").read_bytes().splitlines()
    assert len(kinds) == sum(1 for line in raw if b'"type":"item_delta"' not in line)
    assert result.exit_code == ExitCode.OK and result.stop == "end"
    assert result.state["closed"] and result.state["evidence"] == "accepted"

    session = JournalReplaySession(FIXTURES / "journals" / "chained-tampered.jsonl")
    steps = list(session.steps())
    result = session.finish()
    assert result.stop == "break" and result.broken_at == 28 and result.exit_code == ExitCode.TAMPERED
    assert all(s.event.line < 29 for s in steps) and not result.state["closed"]

    session = JournalReplaySession(FIXTURES / "journals" / "accepted.jsonl", until=3)
    assert [s.index for s in session.steps()] == [1, 2, 3]
    result = session.finish()
    assert result.stop == "until" and result.until_reached and result.state["index"] == 3


def test_journal_report_shape() -> None:
    from ract_cli.project.journal import journal_report

    for name, fixture in JOURNAL_FIXTURES.items():
        reader = read(journal_path(FIXTURES, name))
        report = journal_report(reader, name)
        assert report["dialect"] == "raxol" and report["exit_code"] == fixture.exit_code
        if report["trusted"]:
            assert report["evidence"]["status"] == fixture.evidence and report["evidence"]["claimed"] is None
        else:  # the tampered fixture's final record is the edited one: a claim, never the verdict
            assert report["evidence"]["status"] is None and report["status"] == "open"
            assert report["evidence"]["claimed"] == {"status": fixture.evidence, "line": 29, "rejected": None}
        assert report["evidence"]["trust"] == fixture.trust
        assert report["trusted"] is (fixture.exit_code != 1)
        orjson.dumps(report)
    report = journal_report(read(journal_path(FIXTURES, "rejected")), "r")
    assert report["evidence"]["rejected"] == {
        "reason": "stale_evidence",
        "ref": 1,
        "refs": ["i3", "i5"],
        "refs_count": 2,
    }
    assert report["journal"]["errors"]["count"] == 1


@pytest.mark.parametrize("depth", [254, 300, 990, 5000])
def test_deeply_nested_records_never_crash(tmp_path: Path, depth: int) -> None:
    nested = "[" * depth + "]" * depth
    lines = [
        '{"type":"turn_started","payload":{"prompt":"p"}}',
        '{"type":' + nested + ',"payload":{}}',
        '{"type":"turn_completed","payload":{"usage":' + nested + ',"final":false,"iteration":' + nested + "}}",
        '{"type":"turn_completed","payload":{"usage":{},"final":true,"evidence":' + nested + ',"refs":' + nested + "}}",
    ]
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    reader = read(path, dialect="raxol")
    assert reader.exit_code in (ExitCode.TAMPERED, ExitCode.SCHEMA)
    assert reader.state.summary().evidence in (UNKNOWN, None)
    chained = tmp_path / "deep-chained.jsonl"
    chained.write_text(
        '{"type":"error","payload":{"reason":'
        + nested
        + '},"prev_hash":"'
        + "0" * 64
        + '","hash":"'
        + "0" * 64
        + '"}\n'
    )
    assert read(chained, dialect="raxol").exit_code == ExitCode.TAMPERED


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1.1.0", (1, 1, 0)),
        ("1.0.0", (1, 0, 0)),
        ("2.10.3", (2, 10, 3)),
        ("1.1", (1, 1, 0)),
        ("v1.1.0", (1, 1, 0)),
        ("1.1.0-rc1", (1, 1, 0)),
        ("1", (1, 0, 0)),
        (1.1, (1, 1, 0)),
        (2, (2, 0, 0)),
        ("one", None),
        ("", None),
        ("1.1.0.0", None),
        (True, None),
        (None, None),
        ([1, 1, 0], None),
        (-1, None),
    ],
)
def test_parse_version(value: object, expected: tuple | None) -> None:
    assert raxol.parse_version(value) == expected
