"""Third black-box conformance pass: SPEC §4 repair, §5 replay, §7 project,
§8 Raxol journals, §9 writer — the cases tests/test_spec_conformance.py does
not already cover.

Inputs are built here with an independent JCS-with-exact-integers encoder and
hashlib (never with ract_cli's writer or canonicalizer), so these check the
SPEC and the issue texts, not the project against itself. The writer library
is exercised the way a user would call it (SPEC §9, issue 2) and its output
is re-hashed independently.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import rfc8785
from git_support import git as _git
from git_support import two_commit_repo
from independent_jcs import T0, ZERO, chain, event, jcs, line, new_id, rhash

from ract_cli.cli.app import main as ract_main

RUN = "cd" * 16


# --------------------------------------------------------------------------
# independent encoder + log builders
# --------------------------------------------------------------------------


def repair_id(source_id: str) -> str:
    return hashlib.sha256(("ract.repair:" + source_id).encode()).hexdigest()[:32]


nid = new_id
ev = functools.partial(event, run=RUN)


def lines(events) -> bytes:
    return b"".join(line(e) for e in events)


def logpath(base: Path, name: str = "x") -> Path:
    p = base / name / "evals" / "runs" / RUN / "events.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


def put(base: Path, events=None, *, raw: bytes | None = None, name: str = "x") -> Path:
    p = logpath(base, name)
    p.write_bytes(raw if raw is not None else lines(events))
    return p


def read(p: Path):
    return [json.loads(x) for x in p.read_bytes().splitlines()]


def ract(capsys, *args):
    rc = ract_main(["trace", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def sub(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "ract_cli", "trace", *map(str, args)], capture_output=True, cwd=cwd, timeout=120
    )


def siblings(p: Path) -> list[str]:
    return sorted(x.name for x in p.parent.iterdir())


def test_own_encoder_agrees_with_rfc8785():
    for v in [{"b": 1, "a": [1.5, "é", None]}, {"\u20ac": 1, "\U0001f600": 2, "\ufb33": 3}, [1e21, 1e-7, 4.5]]:
        assert jcs(v) == rfc8785.dumps(v).decode()


# --------------------------------------------------------------------------
# §4 repair: pairing, order, payloads
# --------------------------------------------------------------------------
def _pairing():
    s, s2 = nid(), nid()
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
    rc, out, err = ract(capsys, "repair", p)
    assert rc == 0, err
    new = read(p)[len(evs) :]
    assert [e["payload"]["source_event_id"] for e in new] == [o["id"] for o in opens]
    assert [e["id"] for e in new] == [repair_id(o["id"]) for o in opens]
    prev = evs[-1]["hash"]
    for e in new:
        assert e["prev_hash"] == prev and e["hash"] == rhash(e)
        prev = e["hash"]


def test_repair_interleaved_steps_close_in_reverse_opening_order(tmp_path, capsys):
    sa, sb = nid(), nid()
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
    s = nid()
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


# --------------------------------------------------------------------------
# §4 repair: files, refusals, exit codes
# --------------------------------------------------------------------------
def _open_log():
    s = nid()
    return chain([ev("run.started"), ev("step.started", step=s), ev("tool.called", {"tool": "é€😀"}, step=s)])


def test_repair_torn_mid_utf8_character_goes_to_sidecar(tmp_path, capsys):
    evs = _open_log()
    nxt = ev("tool.called", {"tool": "é€😀"}, step=evs[1]["step_id"])
    chain(evs + [nxt])
    full = line(nxt)
    torn = full[: full.index("€".encode()) + 1]  # cut inside a multi-byte character
    good = lines(evs)
    p = put(tmp_path, raw=good + torn)
    assert ract(capsys, "verify", "-q", p)[0] == 4
    rc, out, err = ract(capsys, "repair", p)
    assert rc == 0 and out == ""  # stderr carries what was done; stdout stays empty
    assert p.read_bytes().startswith(good)
    assert Path(str(p) + ".torn").read_bytes() == torn
    assert Path(str(p) + ".bak").read_bytes() == good + torn
    assert ract(capsys, "verify", "-q", "--require-closed", p)[0] == 0


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
    rc, out, err = ract(capsys, "repair", *args, p, *extra)
    assert rc == want, err
    if data is not None:
        assert p.read_bytes() == data
        assert sorted(os.listdir(p.parent)) == before  # no sidecar, backup or temp file
    assert not out_path.exists() or want == 0
    assert "Traceback" not in err


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


# --------------------------------------------------------------------------
# §5 replay
# --------------------------------------------------------------------------
@pytest.fixture
def repo(tmp_path):
    return two_commit_repo(tmp_path / "repo")


def _snap_log(tmp_path, snap, name="x"):
    s = nid()
    evs = chain(
        [
            ev("run.started"),
            ev("step.started", {"parent_snapshot": snap}, step=s),
            ev("step.committed", {"outcome": "COMMITTED"}, step=s),
            ev("run.completed"),
        ]
    )
    return put(tmp_path, evs, name=name), evs


UNTIL = [("0", 2), ("-1", 2), ("99", 2), ("abc", 2), ("f" * 32, 2), ("ID3", 0), ("ID3UPPER", 0), ("4", 0)]


@pytest.mark.parametrize("until,want", UNTIL, ids=[u[0] for u in UNTIL])
def test_replay_until_values(tmp_path, capsys, until, want):
    p, evs = _snap_log(tmp_path, "a" * 40)
    value = {"ID3": evs[2]["id"], "ID3UPPER": evs[2]["id"].upper()}.get(until, until)
    rc, out, err = ract(capsys, "replay", "--until", value, "--format", "jsonl", "--workspace", tmp_path, p)
    assert rc == want, err
    if want == 0:
        n = 3 if until.startswith("ID3") else int(until)
        assert out.encode() == lines(evs[:n])


JSONL_BYTES = [
    ("crlf", lambda raw: raw.replace(b"\n", b"\r\n"), 0, lambda raw: raw),
    ("missing final newline", lambda raw: raw[:-1], 0, lambda raw: raw),
    ("torn tail", lambda raw: raw + b'{"id":"', 4, lambda raw: raw[: -len(b'{"id":"')]),
    ("spaced foreign formatting", None, 0, None),
]


@pytest.mark.parametrize("name,mutate,want,expect", JSONL_BYTES, ids=[j[0] for j in JSONL_BYTES])
def test_replay_jsonl_is_byte_for_byte(tmp_path, name, mutate, want, expect):
    p, evs = _snap_log(tmp_path, "a" * 40)
    if mutate is None:
        raw = b"".join(
            json.dumps(e, indent=None, separators=(" , ", " : "), ensure_ascii=True).encode() + b"\n" for e in evs
        )
        expect = lambda r: r  # noqa: E731
    else:
        raw = mutate(lines(evs))
    p.write_bytes(raw)
    r = sub("replay", "--format", "jsonl", "--workspace", tmp_path, p)
    assert r.returncode == want, r.stderr
    assert r.stdout == expect(raw)


def test_replay_schema_error_is_3_and_still_replayed(tmp_path):
    evs = chain([ev("run.started"), ev("tool.result", {"tool": "t", "ok": "yes"}), ev("run.completed")])
    p = put(tmp_path, evs)
    r = sub("replay", "--format", "jsonl", "--workspace", tmp_path, p)
    assert r.returncode == 3 and r.stdout == lines(evs)


def test_replay_workspace_cases(tmp_path, repo):
    r, c1, c2 = repo
    p1, _ = _snap_log(tmp_path, c1, "p1")
    p2, _ = _snap_log(tmp_path, c2, "p2")
    plain = tmp_path / "plain"
    plain.mkdir()
    (r / "d").mkdir()
    # no repository: cannot be checked, never 6
    assert sub("replay", "--strict-head", "--workspace", plain, p1).returncode == 0
    # a subdirectory of the repository is the repository
    assert sub("replay", "--strict-head", "--workspace", r / "d", p1).returncode == 6
    assert sub("replay", "--strict-head", "--workspace", r / "d", p2).returncode == 0
    # dirty tree with HEAD == snapshot: warning only
    (r / "f").write_text("dirty")
    res = sub("replay", "--strict-head", "--workspace", r, p2)
    assert res.returncode == 0 and b"dirty" in res.stderr.lower()
    _git(r, "checkout", "-q", "f")
    # detached HEAD
    _git(r, "checkout", "-q", c1)
    assert sub("replay", "--strict-head", "--workspace", r, p1).returncode == 0
    res = sub("replay", "--strict-head", "--workspace", r, p2)
    assert res.returncode == 6 and c1[:7].encode() in res.stderr and c2[:7].encode() in res.stderr
    # a repository with no commit: HEAD cannot equal the snapshot
    unborn = tmp_path / "unborn"
    unborn.mkdir()
    _git(unborn, "init", "-q")
    assert sub("replay", "--strict-head", "--workspace", unborn, p1).returncode == 6
    # --strict-head with --until: the precondition still decides
    assert sub("replay", "--strict-head", "--until", "1", "--workspace", r, p2).returncode == 6


def test_replay_initial_snapshot_is_the_first_step_started(tmp_path, repo):
    r, c1, c2 = repo
    s1, s2 = nid(), nid()
    evs = chain(
        [
            ev("run.started"),
            ev("step.started", {"parent_snapshot": c2}, step=s1),
            ev("step.committed", {"outcome": "COMMITTED"}, step=s1),
            ev("step.started", {"parent_snapshot": c1}, step=s2),
            ev("step.committed", {"outcome": "COMMITTED"}, step=s2),
            ev("run.completed"),
        ]
    )
    p = put(tmp_path, evs)
    assert sub("replay", "--strict-head", "--workspace", r, p).returncode == 0  # HEAD is c2


# --------------------------------------------------------------------------
# §7 project
# --------------------------------------------------------------------------
def _rich_run():
    s1, s2 = nid(), nid()
    evs = [ev("run.started", {"intent_id": "I"}, ts=T0), ev("step.started", step=s1, ts=T0 + 10**9)]
    latencies_ms = [5, 1, 9, 3, 7, 2, 8, 4, 6, 10]
    for i, ms in enumerate(latencies_ms):
        c = ev("tool.called", {"tool": "bash"}, step=s1, ts=T0 + 10**9 + i)
        evs += [
            c,
            ev(
                "tool.result",
                {"tool": "bash", "ok": i % 3 != 0, "duration_ns": ms * 10**6},
                step=s1,
                parent=c["id"],
                ts=T0 + 10**9 + i,
            ),
        ]
    pr = ev("prompt.sent", {"provider": "anth", "intent_id": "I", "prompt_chars": 100}, step=s1, ts=T0 + 2 * 10**9)
    t = T0 + 4 * 10**9
    evs += [
        ev("tool.refused", {"tool": "net", "reason": "r", "refused_by": "policy"}, step=s1, ts=T0 + 2 * 10**9),
        ev("tool.refused", {"tool": "net", "reason": "r", "refused_by": "sandbox"}, step=s1, ts=T0 + 2 * 10**9),
        pr,
        ev("response.received", {"provider": "anth", "intent_id": "I"}, step=s1, parent=pr["id"], ts=T0 + 2 * 10**9),
        ev("response.rejected", {"error": "bad", "attempt": 1, "should_halt": False}, step=s1, ts=T0 + 2 * 10**9),
        ev("step.committed", {"outcome": "COMMITTED"}, step=s1, ts=T0 + 3 * 10**9),
        ev("step.started", step=s2, ts=t),
        ev("handshake.requested", {"milestone_id": "m1", "status": "pending"}, ts=t),
        ev("handshake.resolved", {"milestone_id": "m1", "status": "approved"}, ts=t),
        ev("handshake.requested", {"milestone_id": "m2", "status": "pending"}, ts=t),
        ev("handshake.resolved", {"milestone_id": "m2", "status": "deferred"}, ts=t),
        ev("budget.exceeded", {"function": "plan", "section_name": "x", "delta": 5, "boundary": "hard_ceiling"}, ts=t),
        ev(
            "process.reaped",
            {"pid": 1, "argv0": "a", "argv_len": 1, "reason": "commit_failed", "reap_latency_ms": 3},
            ts=t,
        ),
        ev(
            "process.reaped",
            {"pid": 2, "argv0": "a", "argv_len": 1, "reason": "dispose_unsuccessful", "reap_latency_ms": 3},
            ts=t,
        ),
        ev("laziness.gate_error", {"error_kind": "E", "message": "m"}, ts=t),
        ev("predicate.evaluated", {"predicate_id": "p", "kind": "test", "required": True, "ok": False}, ts=t),
        ev("step.rolled_back", {"outcome": "ROLLED_BACK"}, step=s2, ts=T0 + 5 * 10**9),
        ev("run.completed", {"final_decision": "ship"}, ts=T0 + 6 * 10**9),
    ]
    return chain(evs)


def _find(doc, pred, path=()):
    """Every (path, value) in the JSON document for which pred(value) holds."""
    hits = []
    if pred(doc):
        hits.append((path, doc))
    if isinstance(doc, dict):
        for k, v in doc.items():
            hits += _find(v, pred, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            hits += _find(v, pred, path + (i,))
    return hits


def test_project_report_numbers(tmp_path, capsys):
    evs = _rich_run()
    p = put(tmp_path, evs)
    rc, out, err = ract(capsys, "project", "--format", "json", p)
    assert rc == 0, err
    d = json.loads(out)
    assert d["status"] == "completed" and d["outcome"]["final_decision"] == "ship"
    assert (d["timing"]["start_ns"], d["timing"]["end_ns"], d["timing"]["duration_ns"]) == (
        T0,
        T0 + 6 * 10**9,
        6 * 10**9,
    )
    bash = d["tools"]["by_tool"]["bash"]
    assert (bash["called"], bash["ok"], bash["failed"]) == (10, 6, 4)
    # nearest-rank percentiles over 1..10 ms
    assert (bash["latency"]["p50_ms"], bash["latency"]["p90_ms"], bash["latency"]["p99_ms"]) == (5, 9, 10)
    assert d["tools"]["by_tool"]["net"]["refused_by"] == {"policy": 1, "sandbox": 1}
    assert (d["steps"]["committed"], d["steps"]["rolled_back"], d["steps"]["open"]) == (1, 1, 0)
    assert sorted(i["duration_ns"] for i in d["steps"]["items"]) == [10**9, 2 * 10**9]
    anth = d["providers"]["by_provider"]["anth"]
    assert (anth["prompts"], anth["responses"], d["providers"]["rejected"]) == (1, 1, 1)
    assert d["handshakes"]["by_status"] == {"approved": 1, "deferred": 1}
    assert d["process_reaps"]["by_reason"] == {"commit_failed": 1, "dispose_unsuccessful": 1}
    assert d["budgets"]["exceeded"]["count"] == 1
    assert d["errors"]["by_kind"] == {"laziness.gate_error": 1}
    assert d["predicates"]["gate_inconsistent"] is True
    assert (d["chain"]["head"], d["chain"]["first_ns"], d["chain"]["last_ns"]) == (evs[-1]["hash"], T0, T0 + 6 * 10**9)
    line_of = {e["kind"]: i for i, e in enumerate(evs, 1)}
    flags = {(f["code"], f["line"]) for f in d["audit_flags"]["items"]}
    want = {
        ("GATE_INCONSISTENT", line_of["run.completed"]),
        ("BUDGET_EXCEEDED", line_of["budget.exceeded"]),
        ("ERROR_EVENT", line_of["laziness.gate_error"]),
    }
    assert want <= flags
    rc, md, _ = ract(capsys, "project", "--format", "markdown", p)
    assert rc == 0 and "|---" in md.replace(" ", "") and "bash" in md and "ship" in md


def test_project_repaired_lists_synthesized_closes(tmp_path, capsys):
    s = nid()
    evs = chain([ev("run.started"), ev("step.started", step=s), ev("tool.called", {"tool": "t"}, step=s)])
    p = put(tmp_path, evs)
    assert ract(capsys, "repair", "-q", p)[0] == 0
    rc, out, _ = ract(capsys, "project", "--format", "json", p)
    d = json.loads(out)
    assert rc == 0 and d["status"] == "repaired"
    listed = {x["source_event_id"] for x in d["synthesized_closes"]["items"]}
    assert listed == {e["id"] for e in evs}


def test_project_fleet_of_a_directory(tmp_path, capsys):
    put(tmp_path, _rich_run(), name="a")
    put(tmp_path, chain([ev("run.started")]), name="b")
    rc, out, _ = ract(capsys, "project", "--format", "json", tmp_path)
    d = json.loads(out)
    assert rc == 0 and sorted(r["status"] for r in d["runs"]) == ["completed", "open"]
    rc, md, _ = ract(capsys, "project", "--format", "markdown", tmp_path)
    assert rc == 0 and md.count("\n|") >= 4  # header, separator, one row per run


# --------------------------------------------------------------------------
# §8 Raxol journals
# --------------------------------------------------------------------------
from ract_cli.dialects.raxol.contract import evidence_status


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


V = "1.1.0"


def _r(t, p, **kw):
    return dict(type=t, payload=p, schema_version=V, **kw)


TS = _r("turn_started", {"prompt": "p"})
IS = _r("item_started", {"item_id": "i1", "item_type": "message"})
IC = _r("item_completed", {"item_id": "i1", "item_type": "message"})


def _fin(**k):
    return _r("turn_completed", {"usage": {"in": 3}, "iteration": 1, "final": True, **k})


def _rej(reason, ref=None):
    return _fin(evidence="rejected", evidence_rejected={"refs": ["i9"], "reason": reason, "ref": ref})


CONTRACT = [
    ("clean", [TS, IS, IC, _fin(evidence="accepted", refs=["i1"])], 0),
    (
        "marker on a non-final turn_completed",
        [
            TS,
            _r("turn_completed", {"usage": {}, "iteration": 1, "final": False, "evidence": "absent"}),
            TS,
            _fin(evidence="absent"),
        ],
        3,
    ),
    (
        "evidence_rejected without evidence",
        [TS, _fin(evidence_rejected={"refs": [], "reason": "missing_ref", "ref": None})],
        3,
    ),
    (
        "evidence_rejected with absent",
        [TS, _fin(evidence="absent", evidence_rejected={"refs": [], "reason": "missing_ref", "ref": None})],
        3,
    ),
    ("record after the final turn_completed", [TS, _fin(evidence="absent"), TS], 3),
    ("item completed but never started", [TS, IC, _fin(evidence="absent")], 3),
    ("evidence value outside the enum", [TS, _fin(evidence="unknown")], 3),
    ("unknown type is a warning", [TS, _r("turn_paused", {}), _fin(evidence="absent")], 0),
    ("error record", [TS, _r("error", {"reason": "x"}), _fin(evidence="absent")], 0),
    ("extra top-level keys tolerated", [dict(TS, seq=1, at_ms=5), _fin(evidence="absent")], 0),
    ("no final: open run, warning", [TS, _r("turn_completed", {"usage": {}, "iteration": 1, "final": False})], 0),
] + [
    (f"rejected reason {r}", [TS, _rej(r, 0)], 0)
    for r in ("missing_ref", "not_evidence", "foreign_turn", "stale_evidence", "mutation_echo")
]


def _journal(tmp_path, recs, name="j.jsonl"):
    p = tmp_path / name
    p.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in recs))
    return p


@pytest.mark.parametrize("name,recs,want", CONTRACT, ids=[c[0] for c in CONTRACT])
def test_raxol_contract(tmp_path, capsys, name, recs, want):
    rc, out, err = ract(capsys, "verify", "--format", "json", _journal(tmp_path, json.loads(json.dumps(recs))))
    assert rc == want, out


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
        lambda r: r[:2] + [{k: v for k, v in r[2].items() if k not in ("hash", "prev_hash")}] + r[3:],
        1,
    ),
    ("edited evidence", lambda r: r[:3] + [dict(r[3], payload=dict(r[3]["payload"], evidence="accepted"))], 1),
    ("edited top-level key", lambda r: [dict(r[0], schema_version="1.2.0")] + r[1:], 1),
]


@pytest.mark.parametrize("name,mutate,want", CHAIN_MUTATIONS, ids=[c[0] for c in CHAIN_MUTATIONS])
def test_raxol_chain_mutations(tmp_path, capsys, name, mutate, want):
    recs = mutate(_chained([TS, IS, IC, _rej("missing_ref")]))
    p = _journal(tmp_path, recs)
    rc, out, err = ract(capsys, "verify", "--format", "json", p)
    assert rc == want, out
    rc, out, err = ract(capsys, "project", "--format", "json", p)
    ev_ = json.loads(out)["evidence"]
    assert ev_["verified_chain"] is (want == 0)


def test_raxol_project_evidence_outcomes(tmp_path, capsys):
    cases = [
        ([TS, _rej("not_evidence", 0)], "rejected"),
        ([TS, _fin(evidence="absent")], "absent"),
        ([TS, _r("turn_completed", {"usage": {}, "final": True})], "unknown"),
        ([TS, _r("turn_completed", {"usage": {}, "final": True, "refs": ["a"]})], "accepted"),
    ]
    for i, (recs, want) in enumerate(cases):
        rc, out, _ = ract(capsys, "project", "--format", "json", _journal(tmp_path, recs, f"j{i}.jsonl"))
        d = json.loads(out)["evidence"]
        assert rc == 0 and d["status"] == want and d["verified_chain"] is False


def test_raxol_grep_kind_matches_type(tmp_path):
    p = _journal(tmp_path, [TS, IS, _r("item_delta", {"item_id": "i1", "chunk": "c"}), IC, _fin(evidence="absent")])
    r = sub("grep", "--kind", "item_*", p)
    assert r.returncode == 0 and r.stdout.count(b"\n") == 3
    r = sub("grep", "--kind", "nothing", p)
    assert r.returncode == 7


# --------------------------------------------------------------------------
# §9 writer (library, as a user calls it)
# --------------------------------------------------------------------------
from ract_cli.format.sanitize import sanitize_payload
from ract_cli.writer.event_writer import EventWriter, encode_line


class _BadRepr:
    def __repr__(self):
        raise RuntimeError("no repr")


_self_ref: dict = {}
_self_ref["self"] = _self_ref
_deep: list = []
_cur = _deep
for _ in range(3000):
    _cur.append([])
    _cur = _cur[0]

SANITIZE = [
    ("raising repr", _BadRepr()),
    ("self-referencing dict", _self_ref),
    ("3000 levels deep", _deep),
    ("bytes", b"\xff\x00"),
    ("float beyond int64 as integer token", 9.5e18),
    ("infinity", float("inf")),
    ("nan", float("nan")),
    ("negative zero", -0.0),
    ("tuple key", {(1, 2): 3}),
    ("None key", {None: 1}),
    ("lone surrogate", "\udc80"),
    ("big int", -(2**64)),
    ("set", {1, 2}),
    ("object", object()),
]


@pytest.mark.parametrize("name,value", SANITIZE, ids=[s[0] for s in SANITIZE])
def test_writer_sanitizes_and_log_verifies(tmp_path, capsys, name, value):
    clean = sanitize_payload({"v": value})
    json.dumps(clean, allow_nan=False)  # encodable
    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN, redaction=None) as w:
        w.append("run.started", {"v": value})
    e = read(p)[0]
    assert e["hash"] == rhash(e) and e["prev_hash"] == ZERO
    assert ract(capsys, "verify", "-q", p)[0] == 0
    assert encode_line(e) == line(e)


@pytest.mark.parametrize("policy", ["every", "close", "never"])
def test_writer_fsync_policies(tmp_path, capsys, policy):
    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN, fsync=policy) as w:
        w.append("run.started", {})
        assert p.read_bytes().endswith(b"\n")  # flushed per event
    assert ract(capsys, "verify", "-q", p)[0] == 0


def test_writer_resumes_foreign_formatted_crlf_log(tmp_path, capsys):
    evs = chain([ev("run.started", {"note": "é"})])
    p = logpath(tmp_path)
    p.write_bytes(json.dumps(evs[0], indent=None, ensure_ascii=True).encode() + b"\r\n")
    with EventWriter(p) as w:
        assert w.run_id == RUN
        w.append("run.completed", {})
    got = read(p)
    assert got[1]["prev_hash"] == evs[0]["hash"] and got[1]["hash"] == rhash(got[1])
    assert ract(capsys, "verify", "-q", "--require-closed", p)[0] == 0


def test_writer_refuses_to_chain_onto_a_torn_tail_or_a_foreign_run(tmp_path):
    evs = chain([ev("run.started")])
    p = logpath(tmp_path)
    p.write_bytes(line(evs[0]) + b'{"id":')
    before = p.read_bytes()
    with pytest.raises(Exception):
        EventWriter(p)
    assert p.read_bytes() == before
    p.write_bytes(line(evs[0]))
    with pytest.raises(Exception):
        EventWriter(p, run_id="ef" * 16)
    assert p.read_bytes() == line(evs[0])


def test_writer_lock_seen_by_other_processes(tmp_path):
    p = logpath(tmp_path)
    probe = "import fcntl,sys\nf=open(sys.argv[1],'rb')\ntry:\n fcntl.flock(f,fcntl.LOCK_EX|fcntl.LOCK_NB); print('free')\nexcept OSError: print('held')\n"
    with EventWriter(p, run_id=RUN) as w:
        w.append("run.started", {})
        assert (
            subprocess.run([sys.executable, "-c", probe, str(p)], capture_output=True, text=True).stdout.strip()
            == "held"
        )
        assert sub("repair", "--check", p).returncode == 5
    assert (
        subprocess.run([sys.executable, "-c", probe, str(p)], capture_output=True, text=True).stdout.strip() == "free"
    )


def test_writer_redaction_patterns_and_fields_from_yaml(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ract.yaml").write_text(
        "trace:\n  redaction:\n    patterns: ['secret[0-9]+']\n    fields: [api_key]\n    replacement: '<X>'\n"
    )
    p = logpath(tmp_path)
    with EventWriter(p, run_id=RUN) as w:
        w.append("run.started", {"note": "a secret123 b", "list": ["secret9", {"api_key": {"deep": 1}}]})
        w.append("tool.refused", {"tool": "t", "reason": "secret42", "refused_by": "policy"})
    e0, e1 = read(p)
    assert e0["payload"] == {"note": "a <X> b", "list": ["<X>", {"api_key": "<X>"}]}
    assert e1["payload"]["reason"] == "<X>"
    assert b"secret" not in p.read_bytes()
    assert all(e["hash"] == rhash(e) for e in (e0, e1))
    assert ract(capsys, "verify", "-q", p)[0] == 0
