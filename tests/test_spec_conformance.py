"""Black-box conformance checks written from /work/shared/SPEC.md §2-§9.

Logs are built here, hashed with an independent JCS-with-exact-integers
encoder (below) and sha256, so these tests check SPEC, not the project's own
writer/canonicalizer. Most cases run the CLI in-process
(``ract_cli.cli.app.main``); a representative subset runs ``python -m
ract_cli`` as a subprocess.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import rfc8785
from git_support import two_commit_repo
from independent_jcs import T0, ZERO, chain, event, jcs, line, new_id, rhash

from ract_cli.cli.app import main as ract_main

RUN = "ab" * 16


# Independent JCS (RFC 8785) with exact integers, and the hash: tests/independent_jcs.py
ehash = rhash


ev = functools.partial(event, run=RUN)


def write(path: Path, events, *, raw: bytes | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw if raw is not None else b"".join(line(e) for e in events))
    return path


def closed_run():
    s = new_id()
    return chain(
        [
            ev("run.started", {"intent_id": "x"}),
            ev("step.started", {"parent_snapshot": "a" * 40}, step=s),
            ev("step.committed", {"outcome": "COMMITTED"}, step=s),
            ev("run.completed", {"final_decision": "done"}),
        ]
    )


def logpath(tmp_path, run=RUN) -> Path:
    return tmp_path / "evals" / "runs" / run / "events.jsonl"


def ract(capsys, *args):
    rc = ract_main(["trace", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def verify_json(capsys, path, *extra):
    rc, out, err = ract(capsys, "verify", "--format", "json", *extra, path)
    return rc, json.loads(out)


def codes(report) -> list[str]:
    return [f["code"] for f in report["files"][0]["findings"]]


def sub(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "ract_cli", "trace", *map(str, args)],
        capture_output=True,
        cwd=cwd,
        timeout=60,
    )


# --------------------------------------------------------------------------
# sanity: the independent encoder agrees with the shared JCS corpus
# --------------------------------------------------------------------------
def test_own_jcs_matches_shared_corpus():
    corpora = Path("/work/shared/corpora/jcs")
    if not corpora.exists():
        pytest.skip("no corpus")
    n = 0
    for inp in sorted((corpora / "input").glob("*.json")):
        out = corpora / "output" / inp.name
        if not out.exists():
            continue
        value = json.loads(inp.read_bytes())
        assert jcs(value).encode() == out.read_bytes().rstrip(b"\n") or jcs(value).encode() == out.read_bytes()
        n += 1
    assert n > 0


# --------------------------------------------------------------------------
# §2.1 framing
# --------------------------------------------------------------------------
def test_clean_log_verifies(tmp_path, capsys):
    p = write(logpath(tmp_path), closed_run())
    rc, rep = verify_json(capsys, p)
    assert rc == 0 and rep["exit_code"] == 0
    assert rep["files"][0]["head"] == closed_run.__globals__["ehash"](json.loads(p.read_bytes().splitlines()[-1]))


def _good_lines():
    return [line(e) for e in closed_run()]


def _bad_variants():
    good = _good_lines()
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


def test_missing_final_newline_is_warning(tmp_path, capsys):
    raw = b"".join(_good_lines()).rstrip(b"\n")
    p = write(logpath(tmp_path), None, raw=raw)
    rc, rep = verify_json(capsys, p)
    assert rc == 0
    assert "MISSING_FINAL_NEWLINE" in codes(rep)


def test_torn_tail_exit_4(tmp_path, capsys):
    good = _good_lines()
    raw = b"".join(good) + good[0][:50]
    p = write(logpath(tmp_path), None, raw=raw)
    rc, rep = verify_json(capsys, p)
    assert rc == 4, codes(rep)


def test_torn_tail_subprocess(tmp_path):
    good = _good_lines()
    p = write(logpath(tmp_path), None, raw=b"".join(good) + good[0][:50])
    r = sub("verify", "-q", p)
    assert r.returncode == 4


def test_crlf_accepted(tmp_path, capsys):
    raw = b"".join(l.replace(b"\n", b"\r\n") for l in _good_lines())
    p = write(logpath(tmp_path), None, raw=raw)
    rc, rep = verify_json(capsys, p)
    assert rc == 0, codes(rep)


def test_empty_file_is_not_tampered_crash(tmp_path, capsys):
    p = write(logpath(tmp_path), None, raw=b"")
    rc, out, err = ract(capsys, "verify", p)
    assert rc in (0, 1, 4, 5)


# --------------------------------------------------------------------------
# §2.2 envelope
# --------------------------------------------------------------------------
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
    rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1


def test_null_step_and_parent_ok(tmp_path, capsys):
    evs = chain([ev("run.started", {}), ev("run.completed", {})])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 0, codes(rep)


def test_duplicate_id_exit_1(tmp_path, capsys):
    evs = closed_run()
    evs[2]["id"] = evs[1]["id"]
    chain(evs)
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 1


# --------------------------------------------------------------------------
# §2.3 canonical serialization: another writer's formatting still verifies
# --------------------------------------------------------------------------
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
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
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
    evs[0]["hash"] = ehash(evs[0])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 0, codes(rep)


# --------------------------------------------------------------------------
# §2.4 hash chain
# --------------------------------------------------------------------------
def test_bad_genesis_exit_1(tmp_path, capsys):
    evs = chain(closed_run(), start="11" * 32)
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 1


def test_hash_mismatch_exit_1(tmp_path, capsys):
    evs = closed_run()
    evs[1]["payload"]["parent_snapshot"] = "b" * 40  # edited after hashing
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 1


def test_broken_linkage_exit_1(tmp_path, capsys):
    evs = closed_run()
    evs[2]["prev_hash"] = "22" * 32
    evs[2]["hash"] = ehash(evs[2])
    evs[3]["prev_hash"] = evs[2]["hash"]
    evs[3]["hash"] = ehash(evs[3])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 1


def test_deleted_line_exit_1(tmp_path, capsys):
    evs = closed_run()
    del evs[2]
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 1


def test_head_is_last_hash_and_expect_head(tmp_path, capsys):
    evs = closed_run()
    p = write(logpath(tmp_path), evs)
    rc, rep = verify_json(capsys, p)
    assert rep["files"][0]["head"] == evs[-1]["hash"]
    rc, _ = verify_json(capsys, p, "--expect-head", evs[-1]["hash"])
    assert rc == 0
    rc, rep = verify_json(capsys, p, "--expect-head", evs[-2]["hash"])
    assert rc == 1


def test_expect_head_catches_truncation_subprocess(tmp_path):
    evs = closed_run()
    p = write(logpath(tmp_path), evs[:-1])
    assert sub("verify", "-q", p).returncode == 0
    assert sub("verify", "-q", "--expect-head", evs[-1]["hash"], p).returncode == 1


def test_two_independent_breaks_two_findings(tmp_path, capsys):
    evs = []
    for i in range(8):
        evs.append(
            ev("tool.called" if i not in (0, 7) else ("run.started" if i == 0 else "run.completed"), {"tool": "t"})
        )
    chain(evs)
    evs[2]["payload"]["tool"] = "edited"  # break 1 (hash mismatch on line 3)
    evs[5]["payload"]["tool"] = "edited"  # break 2 (line 6)
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 1
    lines = sorted({f["line"] for f in rep["files"][0]["findings"] if f["severity"] == "error"})
    assert 3 in lines and 6 in lines, rep["files"][0]["findings"]
    assert all(l in (3, 6) for l in lines), lines


def test_finding_fields(tmp_path, capsys):
    evs = closed_run()
    evs[2]["payload"]["reason"] = "edited"
    p = write(logpath(tmp_path), evs)
    rc, rep = verify_json(capsys, p)
    f = [f for f in rep["files"][0]["findings"] if f["line"] == 3][0]
    offset = sum(len(line(e)) for e in evs[:2])
    for key in ("code", "severity", "line", "message"):
        assert key in f
    assert f.get("offset", f.get("byte_offset")) == offset
    assert f.get("event_id") == evs[2]["id"]
    assert Path(f.get("file", rep["files"][0]["path"])).name == "events.jsonl"


# --------------------------------------------------------------------------
# §2.5 versions
# --------------------------------------------------------------------------
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


def test_unknown_kind_exit_3(tmp_path, capsys):
    evs = chain([ev("run.started", {}), ev("no.such.kind", {}), ev("run.completed", {})])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 3 and "UNKNOWN_KIND" in codes(rep)


def test_vocabulary_has_64_kinds():
    from ract_cli.format.kinds import kinds_for_version

    assert len(kinds_for_version(9)) == 64
    assert len(kinds_for_version(9) - kinds_for_version(8)) == 20
    assert len(kinds_for_version(4) - kinds_for_version(3)) == 7


# --------------------------------------------------------------------------
# §2.6 payloads
# --------------------------------------------------------------------------
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


def test_json_schemas_published():
    from ract_cli.format import schema_export

    names = [n for n in dir(schema_export) if not n.startswith("_")]
    assert names  # the module exists and exports something
    docs = Path(__file__).resolve().parents[1] / "docs" / "schemas"
    files = list(docs.glob("*.json"))
    assert len(files) >= 64
    sample = json.loads(files[0].read_text())
    assert "2020-12" in sample.get("$schema", "")


# --------------------------------------------------------------------------
# §3 exit codes, warnings, lowest non-zero rule
# --------------------------------------------------------------------------
def test_lowest_nonzero_across_files(tmp_path, capsys):
    ok = write(tmp_path / "a" / RUN / "events.jsonl", closed_run())
    schema = write(
        tmp_path / "b" / RUN / "events.jsonl",
        chain([ev("run.started", {}), ev("no.such", {}), ev("run.completed", {})]),
    )
    good = _good_lines()
    torn = write(tmp_path / "c" / RUN / "events.jsonl", None, raw=b"".join(good) + good[0][:30])
    bad = closed_run()
    bad[1]["payload"]["x"] = 1
    tampered = write(tmp_path / "d" / RUN / "events.jsonl", bad)
    assert ract(capsys, "verify", "-q", ok, schema, torn)[0] == 3
    assert ract(capsys, "verify", "-q", torn, ok)[0] == 4
    assert ract(capsys, "verify", "-q", torn, schema, tampered)[0] == 1
    r = sub("verify", "-q", torn, schema, tampered, ok)
    assert r.returncode == 1
    assert ract(capsys, "verify", "-q", ok, tmp_path / "missing.jsonl")[0] == 5
    assert ract(capsys, "verify", "-q", tampered, tmp_path / "missing.jsonl")[0] == 1


def test_usage_exit_2(capsys, tmp_path):
    assert ract(capsys, "verify", "--no-such-option", tmp_path)[0] == 2
    assert ract(capsys, "verify", "--schema-version", "10", tmp_path)[0] == 2
    assert sub("verify", "--bogus").returncode == 2


def test_io_exit_5(tmp_path, capsys):
    assert ract(capsys, "verify", tmp_path / "nope.jsonl")[0] == 5
    assert sub("verify", tmp_path / "nope.jsonl").returncode == 5


def test_clock_regression_warning(tmp_path, capsys):
    evs = closed_run()
    evs[2]["timestamp_ns"] = evs[1]["timestamp_ns"] - 5
    chain(evs)
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 0 and "CLOCK_REGRESSION" in codes(rep)


def test_run_dir_mismatch_warning(tmp_path, capsys):
    p = write(tmp_path / "evals" / "runs" / ("cd" * 16) / "events.jsonl", closed_run())
    rc, rep = verify_json(capsys, p)
    assert rc == 0 and "RUN_DIR_MISMATCH" in codes(rep)


def test_open_run_warning_and_require_closed(tmp_path, capsys):
    p = write(logpath(tmp_path), closed_run()[:-1])
    rc, rep = verify_json(capsys, p)
    assert rc == 0 and "OPEN_RUN" in codes(rep)
    rc, rep = verify_json(capsys, p, "--require-closed")
    assert rc == 4 and "OPEN_RUN" in codes(rep)
    rc, rep = verify_json(capsys, write(tmp_path / "c" / RUN / "events.jsonl", closed_run()), "--require-closed")
    assert rc == 0


def test_repaired_warning(tmp_path, capsys):
    p = write(logpath(tmp_path), closed_run()[:-1])
    assert ract(capsys, "repair", "-q", p)[0] == 0
    rc, rep = verify_json(capsys, p)
    assert rc == 0 and "REPAIRED" in codes(rep)


def test_warnings_have_warning_severity(tmp_path, capsys):
    raw = b"".join(_good_lines()).rstrip(b"\n")
    rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    f = [f for f in rep["files"][0]["findings"] if f["code"] == "MISSING_FINAL_NEWLINE"][0]
    assert f["severity"].lower().startswith("warn")


# --------------------------------------------------------------------------
# §4 repair
# --------------------------------------------------------------------------
def _open_run():
    s = new_id()
    run = ev("run.started", {"intent_id": "intent-1"})
    step = ev("step.started", {"parent_snapshot": "a" * 40}, step=s)
    tool = ev("tool.called", {"tool": "bash", "arguments": {}}, step=s, parent=None)
    prompt = ev("prompt.sent", {"provider": "p", "intent_id": "intent-1"}, step=s)
    hs = ev("handshake.requested", {"milestone_id": "m1"}, step=s)
    evs = chain([run, step, tool, prompt, hs])
    evs[-1]["timestamp_ns"] = T0 + 10**9  # largest timestamp: not the last by position
    evs[-2]["timestamp_ns"] = T0 + 5
    chain(evs)
    return evs


def _read(p: Path):
    return [json.loads(l) for l in p.read_bytes().splitlines()]


def test_repair_open_run(tmp_path, capsys):
    evs = _open_run()
    p = write(logpath(tmp_path), evs)
    original = p.read_bytes()
    assert ract(capsys, "repair", "--check", p)[0] == 4
    assert p.read_bytes() == original
    rc, out, err = ract(capsys, "repair", p)
    assert rc == 0, err
    data = p.read_bytes()
    assert data.startswith(original)  # original lines byte for byte
    assert Path(str(p) + ".bak").read_bytes() == original
    new = _read(p)[len(evs) :]
    assert [e["kind"] for e in new] == [
        "handshake.resolved",
        "response.received",
        "tool.result",
        "step.rolled_back",
        "run.aborted",
    ]
    maxts = max(e["timestamp_ns"] for e in evs)
    opens = list(reversed(evs))
    prev = evs[-1]["hash"]
    for close, op in zip(new, opens):
        assert close["payload"]["synthesized"] is True
        assert close["payload"]["reason"] == "interrupted"
        assert close["payload"]["source_event_id"] == op["id"]
        assert close["parent_id"] == op["id"]
        assert close["step_id"] == op["step_id"]
        assert close["run_id"] == RUN
        assert close["timestamp_ns"] == maxts
        assert close["id"] == hashlib.sha256(("ract.repair:" + op["id"]).encode()).hexdigest()[:32]
        assert close["prev_hash"] == prev
        assert close["hash"] == ehash(close)  # independent hash
        prev = close["hash"]
    by_kind = {e["kind"]: e for e in new}
    assert by_kind["tool.result"]["payload"]["status"] == "unknown"
    assert by_kind["tool.result"]["payload"].get("tool") == "bash"
    assert by_kind["response.received"]["payload"]["status"] == "timed_out"
    assert by_kind["response.received"]["payload"].get("provider") == "p"
    assert by_kind["handshake.resolved"]["payload"]["resolution"] == "interrupted"
    assert by_kind["handshake.resolved"]["payload"].get("milestone_id") == "m1"
    # verifies, is closed, and says REPAIRED
    rc, rep = verify_json(capsys, p, "--require-closed")
    assert rc == 0 and "REPAIRED" in codes(rep)
    # idempotent
    once = p.read_bytes()
    assert ract(capsys, "repair", "--check", p)[0] == 0
    rc, out, err = ract(capsys, "repair", p)
    assert rc == 0 and p.read_bytes() == once
    assert "nothing to repair" in (out + err).lower()


def test_repair_deterministic_and_output(tmp_path, capsys):
    evs = _open_run()
    a = write(tmp_path / "a" / RUN / "events.jsonl", evs)
    b = write(tmp_path / "b" / RUN / "events.jsonl", evs)
    src = a.read_bytes()
    out_a = tmp_path / "out_a.jsonl"
    assert ract(capsys, "repair", "--output", out_a, a)[0] == 0
    assert a.read_bytes() == src  # --output leaves the source untouched
    assert not Path(str(a) + ".bak").exists()
    r = sub("repair", b)
    assert r.returncode == 0, r.stderr
    assert b.read_bytes() == out_a.read_bytes()


def test_repair_pairs_existing_closes(tmp_path, capsys):
    s = new_id()
    run = ev("run.started", {})
    step = ev("step.started", {}, step=s)
    t1 = ev("tool.called", {"tool": "a"}, step=s)
    t2 = ev("tool.called", {"tool": "a"}, step=s)
    r1 = ev("tool.result", {"tool": "a", "ok": True}, step=s)  # FIFO: closes t1
    p1 = ev("prompt.sent", {"provider": "x"}, step=s)
    p1c = ev("response.received", {"provider": "y"}, step=s, parent=p1["id"])  # pairs by parent_id
    evs = chain([run, step, t1, t2, r1, p1, p1c])
    p = write(logpath(tmp_path), evs)
    assert ract(capsys, "repair", p)[0] == 0
    new = _read(p)[len(evs) :]
    assert [(e["kind"], e["payload"]["source_event_id"]) for e in new] == [
        ("tool.result", t2["id"]),
        ("step.rolled_back", step["id"]),
        ("run.aborted", run["id"]),
    ]


def test_repair_refuses_tampered(tmp_path, capsys):
    evs = _open_run()
    evs[1]["payload"]["branch"] = "edited"
    p = write(logpath(tmp_path), evs)
    before = p.read_bytes()
    assert ract(capsys, "repair", p)[0] == 1
    assert p.read_bytes() == before
    assert sorted(x.name for x in p.parent.iterdir()) == ["events.jsonl"]
    r = sub("repair", p)
    assert r.returncode == 1 and p.read_bytes() == before


def test_repair_refuses_schema_error(tmp_path, capsys):
    evs = chain([ev("run.started", {}), ev("no.such.kind", {})])
    p = write(logpath(tmp_path), evs)
    before = p.read_bytes()
    rc = ract(capsys, "repair", p)[0]
    assert rc == 1 and p.read_bytes() == before  # SPEC §4: refuses with exit 1 unless the log verifies


def test_repair_torn_tail_to_sidecar(tmp_path, capsys):
    evs = _open_run()
    good = b"".join(line(e) for e in evs)
    torn = b'{"id":"' + b"ab" * 10
    p = write(logpath(tmp_path), None, raw=good + torn)
    rc, out, err = ract(capsys, "repair", "--no-backup", p)
    assert rc == 0, err
    assert p.read_bytes().startswith(good)
    sidecars = [x for x in p.parent.iterdir() if x.name != "events.jsonl"]
    assert any(x.read_bytes() == torn for x in sidecars), sidecars
    assert ract(capsys, "verify", "-q", "--require-closed", p)[0] == 0


def test_repair_torn_tail_only_check(tmp_path, capsys):
    good = b"".join(_good_lines())
    p = write(logpath(tmp_path), None, raw=good + b'{"x"')
    assert ract(capsys, "repair", "--check", p)[0] == 4
    assert p.read_bytes() == good + b'{"x"'
    assert ract(capsys, "repair", p)[0] == 0
    assert p.read_bytes() == good


def test_repair_refuses_locked(tmp_path, capsys):
    from ract_cli.writer.event_writer import EventWriter

    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN) as w:
        w.append("run.started", {})
        before = p.read_bytes()
        r = sub("repair", p)
        assert r.returncode == 5
        assert p.read_bytes() == before


# --------------------------------------------------------------------------
# §5 replay
# --------------------------------------------------------------------------
@pytest.fixture
def repo(tmp_path):
    return two_commit_repo(tmp_path / "repo")


def _replay_log(tmp_path, snap, after=None, before=None):
    s = new_id()
    committed = {"outcome": "COMMITTED"}
    if after:
        committed["parent_snapshot_after"] = after
        committed["parent_snapshot_before"] = before
    evs = chain(
        [
            ev("run.started", {}),
            ev("step.started", {"parent_snapshot": snap}, step=s),
            ev("step.committed", committed, step=s),
            ev("run.completed", {}),
        ]
    )
    return write(logpath(tmp_path), evs), evs


def test_replay_head_mismatch_warns(tmp_path, repo):
    r, c1, c2 = repo
    p, _ = _replay_log(tmp_path, c1)
    res = sub("replay", p, "--workspace", r)
    assert res.returncode == 0
    err = res.stderr.decode()
    assert c1[:7] in err and c2[:7] in err
    assert "diverge" in err.lower()
    res = sub("replay", p, "--workspace", r, "--strict-head")
    assert res.returncode == 6


def test_replay_head_match_and_default_cwd(tmp_path, repo, capsys):
    r, c1, c2 = repo
    p, _ = _replay_log(tmp_path, c2)
    res = sub("replay", p, cwd=r)
    assert res.returncode == 0
    assert "diverge" not in res.stderr.decode().lower()
    assert sub("replay", p, "--strict-head", cwd=r).returncode == 0


def test_replay_dirty_tree_warns(tmp_path, repo, capsys):
    r, c1, c2 = repo
    (r / "f").write_text("dirty")
    p, _ = _replay_log(tmp_path, c2)
    rc, out, err = ract(capsys, "replay", p, "--workspace", r)
    assert rc == 0 and "dirty" in err.lower()


def test_replay_no_repo_or_no_snapshot_warns(tmp_path, capsys):
    ws = tmp_path / "plain"
    ws.mkdir()
    p, _ = _replay_log(tmp_path, "a" * 40)
    rc, out, err = ract(capsys, "replay", p, "--workspace", ws)
    assert rc == 0 and "cannot be checked" in err.lower()
    p2 = write(tmp_path / "x" / RUN / "events.jsonl", chain([ev("run.started", {}), ev("run.completed", {})]))
    rc, out, err = ract(capsys, "replay", p2, "--workspace", ws)
    assert rc == 0 and "cannot be checked" in err.lower()


def test_replay_check_commits(tmp_path, repo, capsys):
    r, c1, c2 = repo
    p, _ = _replay_log(tmp_path, c1, after=c2, before=c1)
    rc, out, err = ract(capsys, "replay", p, "--workspace", r, "--check-commits")
    assert rc == 0, err
    q, _ = _replay_log(tmp_path / "q", c1, after=c1, before=c2)  # does not descend
    rc, out, err = ract(capsys, "replay", q, "--workspace", r, "--check-commits")
    assert rc == 6
    z, _ = _replay_log(tmp_path / "z", c1, after="f" * 40, before=c1)  # does not exist
    rc, out, err = ract(capsys, "replay", z, "--workspace", r, "--check-commits")
    assert rc == 6


def test_replay_until_and_jsonl(tmp_path, capsys):
    p, evs = _replay_log(tmp_path, "a" * 40)
    rc, out, err = ract(capsys, "replay", p, "--until", "2", "--format", "jsonl", "--workspace", tmp_path)
    assert rc == 0
    assert out.encode() == b"".join(line(e) for e in evs[:2])
    rc, out, err = ract(capsys, "replay", p, "--until", evs[2]["id"], "--format", "jsonl", "--workspace", tmp_path)
    assert rc == 0 and out.encode() == b"".join(line(e) for e in evs[:3])


def test_replay_tampered_exit_1(tmp_path, capsys):
    p, evs = _replay_log(tmp_path, "a" * 40)
    evs[2]["payload"]["reason"] = "x"
    write(p, evs)
    rc, out, err = ract(capsys, "replay", p, "--format", "jsonl", "--workspace", tmp_path)
    assert rc == 1
    assert evs[2]["id"] not in out


# --------------------------------------------------------------------------
# §6 grep
# --------------------------------------------------------------------------
def _grep_log(tmp_path):
    s = new_id()
    evs = chain(
        [
            ev("run.started", {}),
            ev("process.reaped", {"reason": "timeout", "reap_latency_ms": 2000}, step=s),
            ev("process.reaped", {"reason": "exit", "reap_latency_ms": 5}, step=s),
            ev("tool.called", {"tool": "bash"}, step=s),
            ev("run.completed", {}),
        ]
    )
    return write(logpath(tmp_path), evs), evs


def test_grep_kind_glob_piped_bytes(tmp_path):
    p, evs = _grep_log(tmp_path)
    raw = p.read_bytes().splitlines(keepends=True)
    r = sub("grep", "--kind", "process.*", p)
    assert r.returncode == 0
    assert r.stdout == raw[1] + raw[2]
    r = sub("grep", "--kind", "process.reaped", "--where", "payload.reason=timeout", tmp_path)
    assert r.returncode == 0 and r.stdout == raw[1]


def test_grep_where_and_exact(tmp_path, capsys):
    p, evs = _grep_log(tmp_path)
    raw = p.read_bytes().splitlines(keepends=True)
    rc, out, err = ract(capsys, "grep", "--format", "jsonl", "--where", "payload.reap_latency_ms>1000", p)
    assert rc == 0 and out.encode() == raw[1]
    rc, out, err = ract(capsys, "grep", "--format", "jsonl", "--where", "payload.reason~^ex", p)
    assert rc == 0 and out.encode() == raw[2]
    rc, out, err = ract(capsys, "grep", "--format", "jsonl", "--kind", "process", p)
    assert rc == 7 and out == ""
    rc, out, err = ract(capsys, "grep", "--count", "--kind", "process.*", p)
    assert rc == 0 and out.strip().endswith("2")


def test_grep_preserves_foreign_bytes(tmp_path, capsys):
    evs = chain([ev("run.started", {"note": "caf\u00e9"}), ev("run.completed", {})])
    raw = b"".join(json.dumps(e, separators=(", ", ": ")).encode() + b"\r\n" for e in evs)
    p = write(logpath(tmp_path), None, raw=raw)
    r = sub("grep", "--kind", "run.started", p)
    assert r.returncode == 0
    assert r.stdout == raw.split(b"\n")[0] + b"\n"


def test_grep_stops_at_break(tmp_path, capsys):
    p, evs = _grep_log(tmp_path)
    evs[2]["payload"]["reason"] = "edited"
    write(p, evs)
    raw = p.read_bytes().splitlines(keepends=True)
    r = sub("grep", "--kind", "*", p)
    assert r.returncode == 1
    # nothing at or after the break (line 3); the project also withholds the event just before it (docs/grep.md)
    assert r.stdout in (raw[0], raw[0] + raw[1])
    assert raw[2] not in r.stdout and raw[3] not in r.stdout
    assert r.stderr
    rc, out, err = ract(capsys, "grep", "--format", "jsonl", "--kind", "tool.called", p)
    assert rc == 1 and out == ""


def test_grep_no_match_exit_7(tmp_path):
    p, _ = _grep_log(tmp_path)
    r = sub("grep", "--kind", "nothing.here", p)
    assert r.returncode == 7 and r.stdout == b""


def test_grep_synthesized(tmp_path, capsys):
    p = write(logpath(tmp_path), closed_run()[:-1])
    assert ract(capsys, "repair", "-q", p)[0] == 0
    rc, out, err = ract(capsys, "grep", "--format", "jsonl", "--synthesized", p)
    assert rc == 0
    assert [json.loads(l)["kind"] for l in out.splitlines()] == ["step.rolled_back", "run.aborted"] or [
        json.loads(l)["kind"] for l in out.splitlines()
    ] == ["run.aborted"]


# --------------------------------------------------------------------------
# §7 project
# --------------------------------------------------------------------------
def _project(capsys, *paths, fmt="json"):
    rc, out, err = ract(capsys, "project", "--format", fmt, *paths)
    return rc, out


def _status_of(doc):
    if "status" in doc:
        return doc["status"]
    if "runs" in doc:
        return doc["runs"][0]["status"]
    raise AssertionError(doc.keys())


def test_project_statuses(tmp_path, capsys):
    completed = write(tmp_path / "1" / RUN / "events.jsonl", closed_run())
    aborted_evs = chain([ev("run.started", {}), ev("run.aborted", {"reason": "halt"})])
    aborted = write(tmp_path / "2" / RUN / "events.jsonl", aborted_evs)
    opened = write(tmp_path / "3" / RUN / "events.jsonl", closed_run()[:-1])
    repaired = write(tmp_path / "4" / RUN / "events.jsonl", closed_run()[:-1])
    assert ract(capsys, "repair", "-q", repaired)[0] == 0
    for path, want in [(completed, "completed"), (aborted, "aborted"), (opened, "open"), (repaired, "repaired")]:
        rc, out = _project(capsys, path)
        assert rc == 0
        assert _status_of(json.loads(out)) == want
    rc, out, err = ract(capsys, "project", "--format", "json", "--require-closed", opened)
    assert rc == 4
    rc, out = _project(capsys, completed, aborted, opened, repaired)
    doc = json.loads(out)
    assert rc == 0 and len(doc["runs"]) == 4


def test_project_gate_inconsistent(tmp_path, capsys):
    evs = chain(
        [
            ev("run.started", {}),
            ev("predicate.evaluated", {"predicate_id": "p1", "kind": "test", "required": True, "ok": False}),
            ev("run.completed", {"final_decision": "done"}),
        ]
    )
    rc, out = _project(capsys, write(logpath(tmp_path), evs))
    doc = json.loads(out)
    assert rc == 0
    assert doc["predicates"]["gate_inconsistent"] is True
    evs2 = chain(
        [
            ev("run.started", {}),
            ev("predicate.evaluated", {"predicate_id": "p1", "kind": "test", "required": True, "ok": False}),
            ev("predicate.evaluated", {"predicate_id": "p1", "kind": "test", "required": True, "ok": True}),
            ev("run.completed", {"final_decision": "done"}),
        ]
    )
    rc, out = _project(capsys, write(tmp_path / "b" / RUN / "events.jsonl", evs2))
    assert json.loads(out)["predicates"]["gate_inconsistent"] is False


def test_project_markdown_and_tampered(tmp_path, capsys):
    p = write(logpath(tmp_path), closed_run())
    rc, out = _project(capsys, p, fmt="markdown")
    assert rc == 0 and "|" in out and "completed" in out
    evs = closed_run()
    evs[1]["payload"]["x"] = 1
    q = write(tmp_path / "t" / RUN / "events.jsonl", evs)
    r = sub("project", "--format", "json", q)
    assert r.returncode == 1


def test_project_chain_head(tmp_path, capsys):
    evs = closed_run()
    rc, out = _project(capsys, write(logpath(tmp_path), evs))
    assert evs[-1]["hash"] in out


# --------------------------------------------------------------------------
# §8 Raxol journals
# --------------------------------------------------------------------------
from ract_cli.dialects.raxol.contract import evidence_status

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


def _journal(tmp_path, records):
    p = tmp_path / "journal.jsonl"
    p.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
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


def test_raxol_legacy_marker_warning(tmp_path, capsys):
    recs = _raxol_records()
    for r in recs:
        r.pop("schema_version")
    p = _journal(tmp_path, recs)
    rc, rep = verify_json(capsys, p)
    assert rc == 0
    assert rep["files"][0]["findings"]


# --------------------------------------------------------------------------
# §9 writer
# --------------------------------------------------------------------------
def test_writer_lock_resume_and_verify(tmp_path, capsys):
    from ract_cli.writer.event_writer import EventWriter, is_locked

    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN) as w:
        w.append("run.started", {"intent_id": "x", "weird": object()})
        assert is_locked(p)
    assert not is_locked(p)
    with EventWriter(p, run_id=RUN) as w:  # resume
        w.append("run.completed", {})
    evs = _read(p)
    assert evs[0]["prev_hash"] == ZERO
    assert evs[1]["prev_hash"] == evs[0]["hash"]
    for e in evs:
        assert e["hash"] == ehash(e)  # independent hash
    assert isinstance(evs[0]["payload"]["weird"], str)
    assert ract(capsys, "verify", "-q", p)[0] == 0


def test_writer_redaction_from_yaml(tmp_path, capsys, monkeypatch):
    from ract_cli.writer.event_writer import EventWriter, RedactionProfile

    (tmp_path / "ract.yaml").write_text(
        "trace:\n  redaction:\n    patterns: ['sk-[A-Za-z0-9]{16,}']\n    fields: [password]\n"
    )
    profile = RedactionProfile.load(tmp_path / "ract.yaml")
    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN, redaction=profile) as w:
        w.append("run.started", {"note": "key sk-ABCDEFGHIJKLMNOPQRST here", "nested": {"password": {"x": 1}}})
    data = p.read_bytes()
    assert b"sk-ABCDEFGHIJKLMNOPQRST" not in data
    e = _read(p)[0]
    assert "here" in e["payload"]["note"]
    assert e["payload"]["nested"]["password"] != {"x": 1}
    assert e["hash"] == ehash(e)
    assert ract(capsys, "verify", "-q", p)[0] == 0


# --------------------------------------------------------------------------
# more §2.1-§2.4 edges
# --------------------------------------------------------------------------
def test_hash_fields_must_be_lowercase_hex(tmp_path, capsys):
    evs = closed_run()
    good = [line(e) for e in evs]
    upper_hash = good[1].replace(evs[1]["hash"].encode(), evs[1]["hash"].upper().encode())
    raw = good[0] + upper_hash + b"".join(good[2:])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1
    e = dict(evs[1])
    e["prev_hash"] = e["prev_hash"].upper()
    e["hash"] = ehash(e)
    raw = good[0] + line(e) + b"".join(good[2:])
    rc, rep = verify_json(capsys, write(tmp_path / "b" / RUN / "events.jsonl", None, raw=raw))
    assert rc == 1


@pytest.mark.parametrize("token", ["1764000000000000000.0", "1.764e18", "1764000000000000000e0"])
def test_timestamp_with_fraction_or_exponent_is_envelope_error(tmp_path, capsys, token):
    evs = closed_run()
    text = jcs(evs[1]).replace(f'"timestamp_ns":{evs[1]["timestamp_ns"]}', f'"timestamp_ns":{token}')
    good = [line(e) for e in evs]
    raw = good[0] + text.encode() + b"\n" + b"".join(good[2:])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1, codes(rep)


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
    good = _good_lines()
    raw = good[0] + good[1].replace(b'"payload":{', b'"payload":{' + raw_insert, 1) + b"".join(good[2:])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1, codes(rep)


def test_last_line_without_newline_judged_as_event(tmp_path, capsys):
    evs = closed_run()
    evs[-1]["payload"]["final_decision"] = "edited"  # hash no longer matches
    raw = b"".join(line(e) for e in evs).rstrip(b"\n")
    rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1


def test_trailing_blank_line_is_malformed(tmp_path, capsys):
    raw = b"".join(_good_lines()) + b"\n"
    rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1


def test_equal_timestamps_no_clock_regression(tmp_path, capsys):
    evs = closed_run()
    evs[2]["timestamp_ns"] = evs[1]["timestamp_ns"]
    chain(evs)
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 0 and "CLOCK_REGRESSION" not in codes(rep)


def test_max_findings_cap_still_decides_exit(tmp_path, capsys):
    evs = chain([ev("run.started", {}), ev("no.such", {}), ev("no.such2", {}), ev("run.completed", {})])
    evs[3]["payload"]["x"] = 1  # tampered after the schema errors
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs), "--max-findings", "1")
    assert rc == 1
    assert len(rep["files"][0]["findings"]) == 1


def test_hash_mismatch_has_expected_actual(tmp_path, capsys):
    evs = closed_run()
    stored = evs[1]["hash"]
    evs[1]["payload"]["branch"] = "edited"
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    f = [f for f in rep["files"][0]["findings"] if f["line"] == 2][0]
    assert f["actual"] == stored or f["expected"] == stored
    assert ehash(evs[1]) in (f["actual"], f["expected"])


def test_canonical_library_matches_corpus_and_rfc8785():
    import random

    from ract_cli.format.canonical import canonical_bytes

    corpora = Path("/work/shared/corpora/jcs")
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


# --------------------------------------------------------------------------
# more §2.6 closed enumerations and bounds named by SPEC
# --------------------------------------------------------------------------
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


def test_published_schemas_agree_with_verifier(tmp_path, capsys):
    import jsonschema

    schemas = Path(__file__).resolve().parents[1] / "docs" / "schemas"
    for kind, payload, want in PAYLOAD_CASES + ENUM_CASES:
        doc = json.loads((schemas / f"{kind}.json").read_text())
        assert doc["$schema"].endswith("2020-12/schema")
        valid = jsonschema.Draft202012Validator(doc).is_valid(payload)
        if "seated_tokens" in payload and "cap_tokens" in payload:
            continue  # a cross-field invariant JSON Schema cannot state
        assert valid == (want == 0), (kind, payload)


# --------------------------------------------------------------------------
# more §3 / §4 / §5 / §6 / §7
# --------------------------------------------------------------------------
def test_grep_lowest_nonzero(tmp_path, capsys):
    schema = write(
        tmp_path / "s" / RUN / "events.jsonl",
        chain([ev("run.started", {}), ev("no.such", {}), ev("run.completed", {})]),
    )
    assert ract(capsys, "grep", "-q", "--kind", "tool.called", schema)[0] == 3  # not 7: the chain had a finding
    ok = write(tmp_path / "o" / RUN / "events.jsonl", closed_run())
    good = _good_lines()
    torn = write(tmp_path / "t" / RUN / "events.jsonl", None, raw=b"".join(good) + b'{"x')
    assert ract(capsys, "grep", "-q", "--kind", "run.started", ok, tmp_path / "o")[0] == 0
    assert ract(capsys, "grep", "-q", "--kind", "no.such.kind", ok, torn)[0] == 4
    assert ract(capsys, "grep", "-q", "--kind", "run.started", ok, torn)[0] == 4


def test_grep_filters(tmp_path, capsys):
    s = new_id()
    evs = chain(
        [
            ev("run.started", {}),
            ev("tool.called", {"tool": "a"}, step=s),
            ev("tool.called", {"tool": "b"}),
            ev("run.completed", {}),
        ]
    )
    p = write(logpath(tmp_path), evs)
    raw = p.read_bytes().splitlines(keepends=True)
    rc, out, _ = ract(capsys, "grep", "--format", "jsonl", "--step", s, p)
    assert rc == 0 and out.encode() == raw[1]
    rc, out, _ = ract(capsys, "grep", "--format", "jsonl", "--run", "cd" * 16, p)
    assert rc == 7 and out == ""
    rc, out, _ = ract(capsys, "grep", "--format", "jsonl", "--since", T0 + 1000, "--until", T0 + 2000, p)
    assert rc == 0 and out.encode() == raw[1] + raw[2]
    rc, out, _ = ract(capsys, "grep", "--format", "jsonl", "--where", "payload.tool!=a", "--kind", "tool.*", p)
    assert rc == 0 and out.encode() == raw[2]
    rc, out, _ = ract(capsys, "grep", "--format", "jsonl", "--no-synthesized", "--kind", "run.*", p)
    assert rc == 0 and out.encode() == raw[0] + raw[3]


def test_grep_table_on_terminal(tmp_path):
    import pty

    p = write(logpath(tmp_path), closed_run())
    master, slave = pty.openpty()
    try:
        r = subprocess.run(
            [sys.executable, "-m", "ract_cli", "trace", "grep", "--kind", "*", str(p)],
            stdout=slave,
            stderr=subprocess.PIPE,
            timeout=60,
        )
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    assert r.returncode == 0
    assert b'"prev_hash"' not in out and b"run.started" in out  # a table, not the raw lines


def test_project_piped_default_is_json(tmp_path):
    p = write(logpath(tmp_path), closed_run())
    r = sub("project", p)
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "completed"


def test_project_report_sections(tmp_path, capsys):
    s = new_id()
    t1 = ev("tool.called", {"tool": "bash"}, step=s)
    evs = chain(
        [
            ev("run.started", {}),
            ev("step.started", {}, step=s),
            t1,
            ev("tool.result", {"tool": "bash", "ok": False, "duration_ns": 10**6}, step=s, parent=t1["id"]),
            ev("tool.refused", {"tool": "net", "refused_by": "sandbox", "reason": "r"}, step=s),
            ev("sandbox.unenforced", {"reason": "win"}),
            ev(
                "sandbox.env_scrubbed",
                {"backend": "stub", "never_passthrough_denied": 2, "credential_shaped_unblocked_count": 1},
            ),
            ev("process.reaped", {"reason": "timeout", "pid": 5}),
            ev("assumption.violated", {"assumption_id": "a"}),
            ev("memory.probe_scheduler_error", {}),
            ev("step.rolled_back", {"outcome": "ROLLED_BACK"}, step=s),
            ev("run.aborted", {"termination_cause": "BUDGET"}),
        ]
    )
    rc, out = _project(capsys, write(logpath(tmp_path), evs))
    d = json.loads(out)
    assert rc == 0 and d["status"] == "aborted"
    assert d["outcome"]["termination_cause"] == "BUDGET"
    assert d["tools"]["by_tool"]["bash"]["failed"] == 1
    assert d["tools"]["by_tool"]["net"]["refused_by"] == {"sandbox": 1}
    assert d["sandbox"]["unenforced"]["count"] == 1
    assert d["sandbox"]["never_passthrough_denied"]["total"] == 2
    assert d["sandbox"]["credential_shaped_unblocked"]["total"] == 1
    assert d["process_reaps"]["by_reason"] == {"timeout": 1}
    assert d["assumptions"]["violated"]["count"] == 1
    assert d["errors"]["by_kind"] == {"memory.probe_scheduler_error": 1}
    assert d["chain"]["head"] == evs[-1]["hash"]
    assert d["steps"]["rolled_back"] == 1


def test_repair_nothing_to_do_and_torn_plus_tampered(tmp_path, capsys):
    p = write(logpath(tmp_path), closed_run())
    before = p.read_bytes()
    rc, out, err = ract(capsys, "repair", p)
    assert rc == 0 and p.read_bytes() == before and "nothing to repair" in (out + err).lower()
    assert sorted(x.name for x in p.parent.iterdir()) == ["events.jsonl"]
    evs = closed_run()[:-1]
    evs[1]["payload"]["x"] = 1
    q = write(tmp_path / "t" / RUN / "events.jsonl", None, raw=b"".join(line(e) for e in evs) + b'{"torn')
    before = q.read_bytes()
    assert ract(capsys, "repair", q)[0] == 1
    assert q.read_bytes() == before and sorted(x.name for x in q.parent.iterdir()) == ["events.jsonl"]


def test_repair_missing_final_newline_and_regressed_clock(tmp_path, capsys):
    evs = [ev("run.started", {}, ts=T0 + 100), ev("tool.called", {"tool": "t"}, ts=T0 + 5)]
    chain(evs)
    raw = b"".join(line(e) for e in evs).rstrip(b"\n")
    p = write(logpath(tmp_path), None, raw=raw)
    assert ract(capsys, "repair", p)[0] == 0
    data = p.read_bytes()
    assert data.startswith(raw)
    new = _read(p)[2:]
    assert [e["timestamp_ns"] for e in new] == [T0 + 100, T0 + 100]
    assert [e["kind"] for e in new] == ["tool.result", "run.aborted"]
    assert ract(capsys, "verify", "-q", "--require-closed", p)[0] == 0


def test_replay_recorded_responses(tmp_path):
    from ract_cli.replay.session import recorded_responses

    s = new_id()
    evs = chain(
        [
            ev("run.started", {}),
            ev("prompt.sent", {"provider": "p", "intent_id": "I"}, step=s),
            ev("response.received", {"provider": "p", "intent_id": "I", "preview": "first"}, step=s),
            ev("prompt.sent", {"provider": "p", "intent_id": "I"}, step=s),
            ev("response.received", {"provider": "p", "intent_id": "I", "preview": "second"}, step=s),
            ev("run.completed", {}),
        ]
    )
    p = write(logpath(tmp_path), evs)
    responses = recorded_responses(p)
    got = responses.by_intent["I"]
    assert len(got) == 2
    assert "first" in repr(got[0]) and "second" in repr(got[1])


def test_replay_until_shows_state(tmp_path, capsys):
    s = new_id()
    evs = chain(
        [
            ev("run.started", {}),
            ev("step.started", {}, step=s),
            ev("tool.called", {"tool": "bash"}, step=s),
            ev("step.committed", {"outcome": "COMMITTED"}, step=s),
            ev("run.completed", {}),
        ]
    )
    p = write(logpath(tmp_path), evs)
    rc, out, err = ract(capsys, "replay", "--until", "3", "--workspace", tmp_path, p)
    assert rc == 0
    assert "run.completed" not in out and "bash" in out.split("state")[-1]


def test_replay_strict_head_tampered_is_1(tmp_path, repo):
    r, c1, c2 = repo
    p, evs = _replay_log(tmp_path, c1)
    evs[2]["payload"]["x"] = 1
    write(p, evs)
    assert sub("replay", p, "--workspace", r, "--strict-head").returncode == 1


# --------------------------------------------------------------------------
# more §8 / §9
# --------------------------------------------------------------------------
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


def test_raxol_project_evidence_trust(tmp_path, capsys):
    recs = _raxol_records()
    rc, out = _project(capsys, _journal(tmp_path, recs))
    d = json.loads(out)
    assert rc == 0 and d["evidence"]["status"] == "accepted" and d["evidence"]["verified_chain"] is False
    prev = ZERO
    for r in recs:
        r["prev_hash"] = prev
        r["hash"] = hashlib.sha256(jcs({k: v for k, v in r.items() if k != "hash"}).encode()).hexdigest()
        prev = r["hash"]
    rc, out = _project(capsys, _journal(tmp_path, recs))
    d = json.loads(out)
    assert rc == 0 and d["evidence"]["verified_chain"] is True
    # item_delta is ephemeral: not durable
    assert d["chain"]["durable_events"] == d["chain"]["events"] - 1


def test_writer_second_writer_refused_and_flush_per_event(tmp_path, capsys):
    from ract_cli.writer.event_writer import EventWriter

    p = logpath(tmp_path)
    for policy in ("every", "close", "never"):
        with EventWriter(p, run_id=RUN, fsync=policy) as w:
            w.append("tool.called" if p.exists() else "run.started", {"tool": "t"} if p.exists() else {})
            assert p.read_bytes().endswith(b"\n")  # flushed per event, before close
            with pytest.raises(Exception):
                EventWriter(p, run_id=RUN)
    assert ract(capsys, "verify", "-q", p)[0] == 0
    evs = _read(p)
    assert len(evs) == 3 and all(e["hash"] == ehash(e) for e in evs)


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
    g = _good_lines()
    raw = g[0] + g[1].rstrip(b"\n") + b"\r" + g[2] + g[3]
    rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1 and rep["files"][0]["findings"][0]["line"] == 2


def test_grep_goes_on_after_a_broken_file(tmp_path, capsys):
    bad = closed_run()
    bad[1]["payload"]["x"] = 1
    b = write(tmp_path / "bad" / RUN / "events.jsonl", bad)
    good = closed_run()
    g = write(tmp_path / "good" / RUN / "events.jsonl", good)
    r = sub("grep", "--kind", "run.completed", b, g)
    assert r.returncode == 1
    assert r.stdout == line(good[-1])
    assert b"bad" in r.stderr


def _fin(**kw):
    return {"type": "turn_completed", "payload": {"usage": {}, "iteration": 1, "final": True, **kw}}


RAXOL_MARKER_CASES = [
    ("no schema_version (legacy 1.0.0) with a marker", None, _fin(evidence="accepted", refs=["i1"]), 0, True),
    ("1.0.0 with a marker", "1.0.0", _fin(evidence="absent"), 0, True),
    (
        "ref must be an offset or null",
        "1.1.0",
        _fin(evidence="rejected", evidence_rejected={"refs": ["x"], "reason": "missing_ref", "ref": "x"}),
        3,
        False,
    ),
    (
        "refs must be a list",
        "1.1.0",
        _fin(evidence="rejected", evidence_rejected={"refs": "x", "reason": "missing_ref", "ref": None}),
        3,
        False,
    ),
    ("error type is in the vocabulary", "1.1.0", {"type": "error", "payload": {"reason": "boom"}}, 0, False),
]


@pytest.mark.parametrize("name,version,record,want,warn", RAXOL_MARKER_CASES, ids=[c[0] for c in RAXOL_MARKER_CASES])
def test_raxol_marker_rules(tmp_path, capsys, name, version, record, want, warn):
    recs = [{"type": "turn_started", "payload": {"prompt": "p"}}, record]
    if record["type"] != "turn_completed":
        recs.append(_fin(evidence="absent"))
    if version:
        recs = [dict(r, schema_version=version) for r in recs]
    rc, rep = verify_json(capsys, _journal(tmp_path, recs))
    assert rc == want, rep["files"][0]["findings"]
    if warn:
        assert any(f["severity"] == "warning" for f in rep["files"][0]["findings"])


def test_writer_sanitizes_unencodable_values(tmp_path, capsys):
    from ract_cli.writer.event_writer import EventWriter

    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN) as w:
        w.append("run.started", {"big": 2**70, "nan": float("nan"), "s": "\ud800", "b": b"xx", "set": {1}, 3: "k"})
    e = _read(p)[0]
    assert isinstance(e["payload"]["big"], str) and isinstance(e["payload"]["nan"], str)
    assert e["hash"] == ehash(e)
    assert ract(capsys, "verify", "-q", p)[0] == 0


def test_deleted_line_is_one_break_then_reanchored(tmp_path, capsys):
    evs = [ev("run.started", {})] + [ev("tool.called", {"tool": str(i)}) for i in range(5)] + [ev("run.completed", {})]
    chain(evs)
    del evs[2]
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    errors = [f for f in rep["files"][0]["findings"] if f["severity"] == "error"]
    assert rc == 1 and [f["line"] for f in errors] == [3], errors


def test_repair_no_backup_and_second_run_keeps_backup(tmp_path, capsys):
    a = write(tmp_path / "a" / RUN / "events.jsonl", _open_run())
    assert ract(capsys, "repair", "-q", "--no-backup", a)[0] == 0
    assert sorted(x.name for x in a.parent.iterdir()) == ["events.jsonl"]
    b = write(tmp_path / "b" / RUN / "events.jsonl", _open_run())
    original = b.read_bytes()
    assert ract(capsys, "repair", "-q", b)[0] == 0
    repaired = b.read_bytes()
    assert ract(capsys, "repair", "-q", b)[0] == 0
    assert b.read_bytes() == repaired
    assert Path(str(b) + ".bak").read_bytes() == original


def test_cli_surface(tmp_path):
    assert subprocess.run([sys.executable, "-m", "ract_cli", "--help"], capture_output=True).returncode == 0
    assert sub("verify").returncode == 2  # a path is required
    assert sub("no-such-command").returncode == 2


def test_writer_redaction_enabled_by_ract_yaml_in_cwd(tmp_path, capsys, monkeypatch):
    """Reference: the profile 'is off by default; enable it in ract.yaml' (SPEC §9: configured from ract.yaml)."""
    from ract_cli.writer.event_writer import EventWriter

    monkeypatch.chdir(tmp_path)
    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN) as w:  # no ract.yaml: off
        w.append("run.started", {"api_key": "k1"})
    assert _read(p)[0]["payload"]["api_key"] == "k1"
    (tmp_path / "ract.yaml").write_text(
        "trace:\n  redaction:\n    patterns: ['sk-[A-Za-z0-9]{20,}']\n    fields: [api_key]\n    replacement: '[REDACTED]'\n"
    )
    with EventWriter(p, run_id=RUN) as w:  # resume; the profile comes from ./ract.yaml
        w.append("tool.called", {"tool": "t", "arguments": {"api_key": "k2", "note": "sk-" + "A" * 24}})
    e = _read(p)[1]
    assert e["payload"]["arguments"] == {"api_key": "[REDACTED]", "note": "[REDACTED]"}
    assert e["hash"] == ehash(e)
    with EventWriter(p, run_id=RUN, redaction=None) as w:  # explicitly off
        w.append("tool.called", {"tool": "t", "arguments": {"api_key": "k3"}})
    assert _read(p)[2]["payload"]["arguments"]["api_key"] == "k3"
    assert ract(capsys, "verify", "-q", p)[0] == 0


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
        _fin(evidence="absent"),
    ]
    recs = [dict(r, schema_version="1.1.0") for r in recs]
    j = _journal(tmp_path, recs)
    assert ract(capsys, "verify", "-q", j)[0] == 0  # i1 again in a new turn is fine
    rc, out, err = ract(capsys, "replay", "--format", "jsonl", "--workspace", tmp_path, j)
    assert rc == 0 and "item_delta" not in out and out.count("\n") == len(recs) - 1
    dup = [dict(r, schema_version="1.1.0") for r in [ts, its, itc, its, itc, _fin(evidence="absent")]]
    rc, rep = verify_json(capsys, _journal(tmp_path, dup))
    assert rc == 3  # item ids are distinct per item within a turn


def _pairing_cases():
    s = new_id()
    run = ev("run.started", {})
    st = ev("step.started", {}, step=s)
    t1 = ev("tool.called", {"tool": "a"}, step=s)
    t2 = ev("tool.called", {"tool": "a"}, step=s)
    h1 = ev("handshake.requested", {"milestone_id": "m1"})
    h2 = ev("handshake.requested", {"milestone_id": "m2"})
    t4 = ev("tool.called", {"tool": "a"})
    return {
        # parent_id names no open: the step pairs by step_id
        "step by step_id": ([run, st, ev("step.committed", {"outcome": "COMMITTED"}, step=s, parent=new_id())], [run]),
        # parent_id wins over FIFO
        "tool by parent_id": (
            [run, st, t1, t2, ev("tool.result", {"tool": "a", "ok": True}, step=s, parent=t2["id"])],
            [t1, st, run],
        ),
        # FIFO is per (step_id, tool): a result for tool b leaves tool a open
        "tool FIFO per tool": ([run, st, t1, ev("tool.result", {"tool": "b", "ok": True}, step=s)], [t1, st, run]),
        "handshake by milestone": (
            [run, h1, h2, ev("handshake.resolved", {"milestone_id": "m1", "status": "approved"})],
            [h2, run],
        ),
        "run already closed": ([run, t4, ev("run.completed", {})], [t4]),
    }


@pytest.mark.parametrize("name", sorted(_pairing_cases()))
def test_repair_pairing_rules(tmp_path, capsys, name):
    evs, opens = _pairing_cases()[name]
    evs = chain([dict(e) for e in evs])
    p = write(logpath(tmp_path), evs)
    assert ract(capsys, "repair", "-q", p)[0] == 0
    new = _read(p)[len(evs) :]
    assert [e["payload"]["source_event_id"] for e in new] == [o["id"] for o in opens]


def test_quiet_prints_nothing_and_github_annotations(tmp_path):
    evs = closed_run()
    evs[1]["payload"]["x"] = 1
    p = write(logpath(tmp_path), evs)
    for cmd in (["verify", "-q"], ["grep", "-q", "--kind", "*"], ["repair", "-q"]):
        r = sub(*cmd, p)
        assert r.returncode == 1 and r.stdout == b"" and r.stderr == b"", cmd
    r = sub("verify", "--format", "github", p)
    assert r.returncode == 1
    assert r.stdout.decode().startswith("::error ") and "line=2" in r.stdout.decode()


@pytest.mark.parametrize(
    "insert",
    [b'"\\ud800":1,', b'"a":"\\x",', b'"a":"\x01",', b'"a":"\t",', b'"a":01,', b'"a":+1,', b"'a':1,"],
    ids=["lone-surrogate-key", "bad-escape", "raw-control", "raw-tab", "leading-zero", "plus-sign", "single-quote"],
)
def test_json_syntax_errors_are_malformed(tmp_path, capsys, insert):
    g = _good_lines()
    raw = g[0] + g[1].replace(b'"payload":{', b'"payload":{' + insert, 1) + b"".join(g[2:])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    assert rc == 1


@pytest.mark.parametrize("value", ["\x7f", "\x00", "\u00ad\u200b\ufeff", "\U0010ffff"])
def test_unusual_but_valid_strings_verify(tmp_path, capsys, value):
    evs = chain([ev("run.started", {"s": value, value: 1}), ev("run.completed", {})])
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 0, codes(rep)
