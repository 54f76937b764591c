"""SPEC §4 repair: what it closes and how, what it refuses, what it leaves on disk.

Black-box: logs built with ``tests/independent_jcs.py`` (``builders``); every
synthesized close is re-hashed independently.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
from independent_jcs import T0, chain, line, new_id, rhash

from ract_cli.writer.event_writer import EventWriter

from .builders import (
    RUN,
    closed_run,
    codes,
    ev,
    good_lines,
    lines,
    logpath,
    put,
    ract,
    read,
    siblings,
    sub,
    verify_json,
    write,
)

# --- §4 closing what was left open ----------------------------------------------------------------


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
    new = read(p)[len(evs) :]
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
    for close, op in zip(new, opens, strict=False):
        assert close["payload"]["synthesized"] is True
        assert close["payload"]["reason"] == "interrupted"
        assert close["payload"]["source_event_id"] == op["id"]
        assert close["parent_id"] == op["id"]
        assert close["step_id"] == op["step_id"]
        assert close["run_id"] == RUN
        assert close["timestamp_ns"] == maxts
        assert close["id"] == hashlib.sha256(("ract.repair:" + op["id"]).encode()).hexdigest()[:32]
        assert close["prev_hash"] == prev
        assert close["hash"] == rhash(close)  # independent hash
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
    new = read(p)[len(evs) :]
    assert [(e["kind"], e["payload"]["source_event_id"]) for e in new] == [
        ("tool.result", t2["id"]),
        ("step.rolled_back", step["id"]),
        ("run.aborted", run["id"]),
    ]


def test_repair_missing_final_newline_and_regressed_clock(tmp_path, capsys):
    evs = [ev("run.started", {}, ts=T0 + 100), ev("tool.called", {"tool": "t"}, ts=T0 + 5)]
    chain(evs)
    raw = b"".join(line(e) for e in evs).rstrip(b"\n")
    p = write(logpath(tmp_path), None, raw=raw)
    assert ract(capsys, "repair", p)[0] == 0
    data = p.read_bytes()
    assert data.startswith(raw)
    new = read(p)[2:]
    assert [e["timestamp_ns"] for e in new] == [T0 + 100, T0 + 100]
    assert [e["kind"] for e in new] == ["tool.result", "run.aborted"]
    assert ract(capsys, "verify", "-q", "--require-closed", p)[0] == 0


# --- §4 pairing, order, payloads ------------------------------------------------------------------


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
    new = read(p)[len(evs) :]
    assert [e["payload"]["source_event_id"] for e in new] == [o["id"] for o in opens]


def repair_id(source_id: str) -> str:
    return hashlib.sha256(("ract.repair:" + source_id).encode()).hexdigest()[:32]


def _pairing():
    s, s2 = new_id(), new_id()
    run = ev("run.started")
    st = ev("step.started", step=s)
    st2 = ev("step.started", step=s2)
    p_a = ev("prompt.sent", {"provider": "x", "intent_id": "A"}, step=s)
    p_a2 = ev("prompt.sent", {"provider": "x", "intent_id": "A"}, step=s)
    t_s = ev("tool.called", {"tool": "t"}, step=s)
    pr = ev("prompt.sent", {"provider": "x"}, step=s)
    tc = ev("tool.called", {"tool": "t"}, step=s)
    return {
        # prompts FIFO per (step_id, provider, intent_id): a response for intent B leaves A open
        "prompt FIFO keyed by intent_id": (
            [run, st, p_a, ev("response.received", {"provider": "x", "intent_id": "B"}, step=s)],
            [p_a, st, run],
        ),
        "prompt FIFO keyed by provider": (
            [run, st, p_a, ev("response.received", {"provider": "y", "intent_id": "A"}, step=s)],
            [p_a, st, run],
        ),
        "prompt FIFO: first in, first out": (
            [run, st, p_a, p_a2, ev("response.received", {"provider": "x", "intent_id": "A"}, step=s)],
            [p_a2, st, run],
        ),
        # tool calls FIFO per (step_id, tool): a result in another step leaves this one open
        "tool FIFO keyed by step_id": (
            [run, st, st2, t_s, ev("tool.result", {"tool": "t", "ok": True}, step=s2)],
            [t_s, st2, st, run],
        ),
        # a close whose parent_id names an open of another kind does not close it
        "parent_id of another kind": (
            [run, st, pr, tc, ev("tool.result", {"tool": "t", "ok": True}, step=s, parent=pr["id"])],
            [pr, st, run],
        ),
        # reverse order of opening, whatever the nesting; the run's close last
        "step opened before the run": ([st, run, tc], [tc, st, run]),
        "an aborted run is closed": ([run, st, ev("run.aborted", {"reason": "x"})], [st]),
    }


@pytest.mark.parametrize("name", sorted(_pairing()))
def test_repair_pairing_and_order(tmp_path, capsys, name):
    evs, opens = _pairing()[name]
    evs = chain([json.loads(json.dumps(e)) for e in evs])
    p = put(tmp_path, evs)
    rc, _out, err = ract(capsys, "repair", p)
    assert rc == 0, err
    new = read(p)[len(evs) :]
    assert [e["payload"]["source_event_id"] for e in new] == [o["id"] for o in opens]
    assert [e["id"] for e in new] == [repair_id(o["id"]) for o in opens]
    prev = evs[-1]["hash"]
    for e in new:
        assert e["prev_hash"] == prev and e["hash"] == rhash(e)
        prev = e["hash"]


def test_repair_interleaved_steps_close_in_reverse_opening_order(tmp_path, capsys):
    sa, sb = new_id(), new_id()
    evs = chain(
        [
            ev("run.started"),
            ev("step.started", step=sa),
            ev("tool.called", {"tool": "x"}, step=sa),
            ev("step.started", step=sb),
            ev("prompt.sent", {"provider": "p"}, step=sb),
            ev("tool.called", {"tool": "y"}, step=sa),
        ]
    )
    p = put(tmp_path, evs)
    assert ract(capsys, "repair", "-q", p)[0] == 0
    new = read(p)[len(evs) :]
    assert [e["payload"]["source_event_id"] for e in new] == [e["id"] for e in reversed(evs)]
    assert [e["step_id"] for e in new] == [e["step_id"] for e in reversed(evs)]


def test_repair_payloads_never_invent_values(tmp_path, capsys):
    s = new_id()
    evs = chain(
        [
            ev("run.started", {"intent_id": "I", "suite_digest": "d", "predicate_count": 1, "coverage_gate": 0.5}),
            ev("step.started", {"branch": "rootact/step/x", "timeout_seconds": 5}, step=s),
            ev("tool.called", {"tool": "t", "arguments": {"a": 1}, "undocumented": 1}, step=s),
            ev("prompt.sent", {"provider": "p", "intent_id": "I", "prompt_chars": 3}, step=s),
            ev(
                "handshake.requested",
                {"milestone_id": "m", "status": "pending", "description": "d", "reason": "r"},
                step=s,
            ),
        ]
    )
    p = put(tmp_path, evs)
    assert ract(capsys, "repair", "-q", p)[0] == 0
    by_kind = {e["kind"]: e["payload"] for e in read(p)[len(evs) :]}
    base = {"synthesized", "reason", "source_event_id"}
    # the reference's example synthesized run.aborted: the three repair keys only
    assert set(by_kind["run.aborted"]) == base
    assert by_kind["tool.result"]["status"] == "unknown" and by_kind["tool.result"]["tool"] == "t"
    assert "ok" not in by_kind["tool.result"] and "arguments" not in by_kind["tool.result"]
    assert "undocumented" not in by_kind["tool.result"]
    assert by_kind["response.received"]["status"] == "timed_out"
    assert (by_kind["response.received"]["provider"], by_kind["response.received"]["intent_id"]) == ("p", "I")
    hs = by_kind["handshake.resolved"]
    assert hs["resolution"] == "interrupted" and hs["milestone_id"] == "m"
    assert hs.get("status") != "pending"  # not a valid resolved status
    assert all(pl["reason"] == "interrupted" and pl["synthesized"] is True for pl in by_kind.values())
    assert by_kind["step.rolled_back"].get("branch") == "rootact/step/x"
    assert ract(capsys, "verify", "-q", "--require-closed", p)[0] == 0


# --- §4 refusals and exit codes -------------------------------------------------------------------


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


def test_repair_refuses_locked(tmp_path, capsys):

    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN) as w:
        w.append("run.started", {})
        before = p.read_bytes()
        r = sub("repair", p)
        assert r.returncode == 5
        assert p.read_bytes() == before


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


def _open_log():
    s = new_id()
    return chain([ev("run.started"), ev("step.started", step=s), ev("tool.called", {"tool": "é€😀"}, step=s)])


REFUSALS = [
    # name, how to break the log, args before PATH, expected exit
    ("tampered --check", "tamper", ["--check"], 1),
    ("tampered in place", "tamper", [], 1),
    ("tampered --output", "tamper", ["--output", "OUT"], 1),
    ("--check with --output", None, ["--check", "--output", "OUT"], 2),
    ("missing file", "missing", [], 5),
    ("journal --check", "journal", ["--check"], 1),
    ("journal with torn tail", "journal-torn", [], 1),
    ("journal --dialect raxol", "journal", ["--dialect", "raxol"], 1),
]


@pytest.mark.parametrize("name,breakage,args,want", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_repair_refusals(tmp_path, capsys, name, breakage, args, want):
    evs = _open_log()
    extra = []
    if breakage == "tamper":
        evs[1]["payload"]["branch"] = "edited"
    p = put(tmp_path, evs)
    if breakage == "missing":
        p.unlink()
    if breakage == "two":
        extra = [put(tmp_path, evs, name="y")]
    if breakage and breakage.startswith("journal"):
        recs = [
            {"type": "turn_started", "payload": {"prompt": "p"}},
            {"type": "item_started", "payload": {"item_id": "i1", "item_type": "message"}},
        ]
        raw = b"".join(json.dumps(r).encode() + b"\n" for r in recs)
        p = tmp_path / "journal.jsonl"
        p.write_bytes(raw + (b'{"type":"item_compl' if breakage == "journal-torn" else b""))
    out_path = tmp_path / "out" / "o.jsonl"
    out_path.parent.mkdir()
    before = sorted(os.listdir(p.parent)) if p.parent.exists() else None
    data = p.read_bytes() if p.exists() else None
    args = [str(out_path) if a == "OUT" else a for a in args]
    rc, _out, err = ract(capsys, "repair", *args, p, *extra)
    assert rc == want, err
    if data is not None:
        assert p.read_bytes() == data
        assert sorted(os.listdir(p.parent)) == before  # no sidecar, backup or temp file
    assert not out_path.exists() or want == 0
    assert "Traceback" not in err


# --- §4 files: torn tails, backups, modes ---------------------------------------------------------


def test_repair_torn_tail_to_sidecar(tmp_path, capsys):
    evs = _open_run()
    good = b"".join(line(e) for e in evs)
    torn = b'{"id":"' + b"ab" * 10
    p = write(logpath(tmp_path), None, raw=good + torn)
    rc, _out, err = ract(capsys, "repair", "--no-backup", p)
    assert rc == 0, err
    assert p.read_bytes().startswith(good)
    sidecars = [x for x in p.parent.iterdir() if x.name != "events.jsonl"]
    assert any(x.read_bytes() == torn for x in sidecars), sidecars
    assert ract(capsys, "verify", "-q", "--require-closed", p)[0] == 0


def test_repair_torn_tail_only_check(tmp_path, capsys):
    good = b"".join(good_lines())
    p = write(logpath(tmp_path), None, raw=good + b'{"x"')
    assert ract(capsys, "repair", "--check", p)[0] == 4
    assert p.read_bytes() == good + b'{"x"'
    assert ract(capsys, "repair", p)[0] == 0
    assert p.read_bytes() == good


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


def test_repair_torn_mid_utf8_character_goes_to_sidecar(tmp_path, capsys):
    evs = _open_log()
    nxt = ev("tool.called", {"tool": "é€😀"}, step=evs[1]["step_id"])
    chain([*evs, nxt])
    full = line(nxt)
    torn = full[: full.index("€".encode()) + 1]  # cut inside a multi-byte character
    good = lines(evs)
    p = put(tmp_path, raw=good + torn)
    assert ract(capsys, "verify", "-q", p)[0] == 4
    rc, out, _err = ract(capsys, "repair", p)
    assert rc == 0 and out == ""  # stderr carries what was done; stdout stays empty
    assert p.read_bytes().startswith(good)
    assert Path(str(p) + ".torn").read_bytes() == torn
    assert Path(str(p) + ".bak").read_bytes() == good + torn
    assert ract(capsys, "verify", "-q", "--require-closed", p)[0] == 0


def test_repair_check_writes_nothing_and_keeps_mode(tmp_path, capsys):
    evs = _open_log()
    p = put(tmp_path, raw=lines(evs) + b'{"torn')
    os.chmod(p, 0o640)
    assert ract(capsys, "repair", "--check", p)[0] == 4
    assert siblings(p) == ["events.jsonl"]
    assert ract(capsys, "repair", "-q", p)[0] == 0
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640  # the rewrite keeps the file's mode
    assert not [n for n in siblings(p) if n.endswith(".tmp")]
    assert ract(capsys, "repair", "--check", p)[0] == 0


def test_repair_never_overwrites_an_earlier_backup(tmp_path, capsys):
    p = put(tmp_path, _open_log())
    first = p.read_bytes()
    assert ract(capsys, "repair", "-q", p)[0] == 0
    repaired = p.read_bytes()
    last = read(p)[-1]
    late = ev("tool.called", {"tool": "late"}, ts=T0)
    late["prev_hash"] = last["hash"]
    late["hash"] = rhash(late)
    p.write_bytes(repaired + line(late))
    assert ract(capsys, "repair", "-q", p)[0] == 0
    assert Path(str(p) + ".bak").read_bytes() == first
    backups = [n for n in siblings(p) if n.startswith("events.jsonl.bak") and n != "events.jsonl.bak"]
    assert len(backups) == 1 and (p.parent / backups[0]).read_bytes() == repaired + line(late)
    new = read(p)[-1]
    assert new["payload"]["source_event_id"] == late["id"] and new["hash"] == rhash(new)


def test_repair_crlf_log_keeps_its_bytes(tmp_path, capsys):
    evs = _open_log()
    raw = lines(evs).replace(b"\n", b"\r\n")
    p = put(tmp_path, raw=raw + b'{"x')
    assert ract(capsys, "repair", "-q", "--no-backup", p)[0] == 0
    assert p.read_bytes().startswith(raw)
    assert ract(capsys, "verify", "-q", "--require-closed", p)[0] == 0


def test_repair_log_that_was_only_a_torn_line(tmp_path, capsys):
    p = put(tmp_path, raw=b'{"id":"ab')
    assert ract(capsys, "repair", "-q", p)[0] == 0
    assert p.read_bytes() == b""
    assert Path(str(p) + ".torn").read_bytes() == b'{"id":"ab'
