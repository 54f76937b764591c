"""SPEC §2.4 the hash chain, §3 re-anchoring after a break, §10 ``--expect-head``.

Black-box: logs built with the independent oracles (``builders``; ``scratch`` for
the exact line and offset of every finding), run through the CLI.
"""

from __future__ import annotations

import json

import pytest
from independent_jcs import chain, rhash

from . import scratch_builders as scratch
from .builders import (
    closed_run,
    ev,
    logpath,
    sub,
    verify_json,
    write,
)

# --- §2.4 genesis, linkage, head ------------------------------------------------------------------


def test_bad_genesis_exit_1(tmp_path, capsys):
    evs = chain(closed_run(), start="11" * 32)
    rc, _rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 1


def test_hash_mismatch_exit_1(tmp_path, capsys):
    evs = closed_run()
    evs[1]["payload"]["parent_snapshot"] = "b" * 40  # edited after hashing
    rc, _rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 1


def test_broken_linkage_exit_1(tmp_path, capsys):
    evs = closed_run()
    evs[2]["prev_hash"] = "22" * 32
    evs[2]["hash"] = rhash(evs[2])
    evs[3]["prev_hash"] = evs[2]["hash"]
    evs[3]["hash"] = rhash(evs[3])
    rc, _rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 1


def test_deleted_line_exit_1(tmp_path, capsys):
    evs = closed_run()
    del evs[2]
    rc, _rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 1


def test_hash_mismatch_has_expected_actual(tmp_path, capsys):
    evs = closed_run()
    stored = evs[1]["hash"]
    evs[1]["payload"]["branch"] = "edited"
    _rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    f = next(f for f in rep["files"][0]["findings"] if f["line"] == 2)
    assert f["actual"] == stored or f["expected"] == stored
    assert rhash(evs[1]) in (f["actual"], f["expected"])


def test_chain_break_and_genesis_carry_expected_and_actual(tmp_path, capsys):
    evs = scratch.closed_run(n_reaped=2)
    del evs[2]
    _rc, rep = scratch.verify_json(capsys, scratch.write(scratch.logpath(tmp_path, "a"), evs))
    f = next(f for f in rep["files"][0]["findings"] if f["code"] == "CHAIN_BREAK")
    assert (f["expected"], f["actual"]) == (evs[1]["hash"], evs[2]["prev_hash"])
    evs = scratch.chain(scratch.closed_run(), start="12" * 32)
    _rc, rep = scratch.verify_json(capsys, scratch.write(scratch.logpath(tmp_path, "b"), evs))
    f = next(f for f in rep["files"][0]["findings"] if f["code"] == "MISSING_GENESIS")
    assert f["expected"] == scratch.ZERO and f["actual"] == "12" * 32 and f["line"] == 1 and f["offset"] == 0


# --- §3 re-anchoring: one finding per independent break, at the right line ------------------------


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
    assert all(ln in (3, 6) for ln in lines), lines


def test_deleted_line_is_one_break_then_reanchored(tmp_path, capsys):
    evs = [ev("run.started", {})] + [ev("tool.called", {"tool": str(i)}) for i in range(5)] + [ev("run.completed", {})]
    chain(evs)
    del evs[2]
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    errors = [f for f in rep["files"][0]["findings"] if f["severity"] == "error"]
    assert rc == 1 and [f["line"] for f in errors] == [3], errors


def _reanchor_cases():
    def edit_kept_hash(evs):
        scratch.edit(evs[3], reason="edited")
        return evs, [("HASH_MISMATCH", 4)]

    def edit_rehashed(evs):
        scratch.edit(evs[3], reason="edited")
        evs[3]["hash"] = scratch.ehash(evs[3])
        return evs, [("CHAIN_BREAK", 5)]

    def deleted(evs):
        del evs[3]
        return evs, [("CHAIN_BREAK", 4)]

    def swapped(evs):
        evs[3], evs[4] = evs[4], evs[3]
        return evs, [("CHAIN_BREAK", 4), ("CHAIN_BREAK", 5), ("CHAIN_BREAK", 6)]

    def linked_forgery_inserted(evs):
        f = json.loads(json.dumps(evs[3]))
        f["id"] = scratch.nid()
        f["prev_hash"] = evs[3]["hash"]
        f["hash"] = scratch.ehash(f)
        evs.insert(4, f)
        return evs, [("CHAIN_BREAK", 6)]

    def unlinked_forgery_inserted(evs):
        f = json.loads(json.dumps(evs[3]))
        f["id"] = scratch.nid()
        f["prev_hash"] = "11" * 32
        f["hash"] = scratch.ehash(f)
        evs.insert(4, f)
        return evs, [("CHAIN_BREAK", 5), ("CHAIN_BREAK", 6)]

    def two_edits(evs):
        scratch.edit(evs[2], reason="x")
        scratch.edit(evs[6], reason="y")
        return evs, [("HASH_MISMATCH", 3), ("HASH_MISMATCH", 7)]

    def adjacent_edits(evs):
        scratch.edit(evs[3], reason="x")
        scratch.edit(evs[4], reason="y")
        return evs, [("HASH_MISMATCH", 4), ("HASH_MISMATCH", 5)]

    def genesis_deleted(evs):
        return evs[1:], [("MISSING_GENESIS", 1)]

    def second_genesis_appended(evs):
        evs.append(scratch.chain([scratch.ev("run.started", {"intent_id": "again"})], t0=scratch.T0 + 10**6)[0])
        return evs, [("CHAIN_BREAK", len(evs))]

    def duplicate_id(evs):
        evs[5]["id"] = evs[2]["id"]
        scratch.chain(evs)
        return evs, [("DUPLICATE_ID", 6)]

    def foreign_run_id(evs):
        evs[3]["run_id"] = scratch.RUN2
        scratch.chain(evs)
        return evs, [("FOREIGN_RUN_ID", 4)]

    return {
        f.__name__: f
        for f in (
            edit_kept_hash,
            edit_rehashed,
            deleted,
            swapped,
            linked_forgery_inserted,
            unlinked_forgery_inserted,
            two_edits,
            adjacent_edits,
            genesis_deleted,
            second_genesis_appended,
            duplicate_id,
            foreign_run_id,
        )
    }


@pytest.mark.parametrize("name", sorted(_reanchor_cases()))
def test_each_independent_break_is_reported_once(tmp_path, capsys, name):
    evs, want = _reanchor_cases()[name](scratch.closed_run(n_reaped=5))
    lines = [scratch.line(e) for e in evs]
    rc, rep = scratch.verify_json(capsys, scratch.write(scratch.logpath(tmp_path), raw=b"".join(lines)))
    assert rc == 1
    offs = scratch.offsets(lines)
    assert scratch.errors(rep) == [(code, ln, offs[ln - 1]) for code, ln in want], rep
    for f in rep["files"][0]["findings"]:
        if f["severity"] == "error":
            assert f["event_id"] == evs[f["line"] - 1]["id"]


# --- §10 the chain head and --expect-head ---------------------------------------------------------


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


def test_expect_head(tmp_path, capsys):
    evs, L = scratch.base()
    head = evs[-1]["hash"]
    p = scratch.write(scratch.logpath(tmp_path, "a"), evs)
    cases = [
        (["--expect-head", head, p], 0),
        (["--expect-head", head, p.parent], 0),  # a directory holding exactly one log
        (["--expect-head", head, p, p], 0),  # the same file twice is one log
        (["--expect-head", evs[-2]["hash"], p], 1),
        (["--expect-head", head, scratch.write(scratch.logpath(tmp_path, "nl"), raw=b"".join(L)[:-1])], 0),
        (["--expect-head", head, scratch.write(scratch.logpath(tmp_path, "torn"), raw=b"".join(L) + b'{"i')], 4),
        (["--expect-head", head, scratch.write(scratch.logpath(tmp_path, "cut"), raw=b"".join(L[:-1]))], 1),
        (["--expect-head", head, scratch.write(scratch.logpath(tmp_path, "empty"), raw=b"")], 1),
        (["--expect-head", head, p, scratch.write(scratch.logpath(tmp_path, "b"), evs)], 2),
        (["--expect-head", head, tmp_path], 2),  # a directory holding several logs
        (["--expect-head", head[:-1], p], 2),
        (["--expect-head", "z" * 64, p], 2),
        (["--expect-head", "", p], 2),
    ]
    for args, want in cases:
        rc, _out, err = scratch.ract(capsys, "verify", "-q", *args)
        assert rc == want, (args, err)
    rc, rep = scratch.verify_json(capsys, "--expect-head", evs[-2]["hash"], p)
    f = rep["files"][0]["findings"]
    assert [(x["code"], x["severity"], x["line"], x["expected"], x["actual"]) for x in f] == [
        ("HEAD_MISMATCH", "error", None, evs[-2]["hash"], head)
    ]
    # a rewrite of the whole file with recomputed hashes verifies on its own; only the pinned head catches it
    forged = scratch.closed_run()
    q = scratch.write(scratch.logpath(tmp_path, "forged"), forged)
    assert scratch.ract(capsys, "verify", "-q", q)[0] == 0
    assert scratch.ract(capsys, "verify", "-q", "--expect-head", head, q)[0] == 1
