"""SPEC §7 project: statuses, the report's sections and numbers, fleets.

Black-box: logs built with ``tests/independent_jcs.py`` (``builders``).
"""

from __future__ import annotations

import json

from independent_jcs import T0, chain, new_id

from .builders import (
    RUN,
    closed_run,
    ev,
    logpath,
    project_json,
    put,
    ract,
    sub,
    write,
)

# --- §7 statuses ----------------------------------------------------------------------------------


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
        rc, out = project_json(capsys, path)
        assert rc == 0
        assert _status_of(json.loads(out)) == want
    rc, out, _err = ract(capsys, "project", "--format", "json", "--require-closed", opened)
    assert rc == 4
    rc, out = project_json(capsys, completed, aborted, opened, repaired)
    doc = json.loads(out)
    assert rc == 0 and len(doc["runs"]) == 4


def test_project_piped_default_is_json(tmp_path):
    p = write(logpath(tmp_path), closed_run())
    r = sub("project", p)
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "completed"


def test_project_markdown_and_tampered(tmp_path, capsys):
    p = write(logpath(tmp_path), closed_run())
    rc, out = project_json(capsys, p, fmt="markdown")
    assert rc == 0 and "|" in out and "completed" in out
    evs = closed_run()
    evs[1]["payload"]["x"] = 1
    q = write(tmp_path / "t" / RUN / "events.jsonl", evs)
    r = sub("project", "--format", "json", q)
    assert r.returncode == 1


def test_project_repaired_lists_synthesized_closes(tmp_path, capsys):
    s = new_id()
    evs = chain([ev("run.started"), ev("step.started", step=s), ev("tool.called", {"tool": "t"}, step=s)])
    p = put(tmp_path, evs)
    assert ract(capsys, "repair", "-q", p)[0] == 0
    rc, out, _ = ract(capsys, "project", "--format", "json", p)
    d = json.loads(out)
    assert rc == 0 and d["status"] == "repaired"
    listed = {x["source_event_id"] for x in d["synthesized_closes"]["items"]}
    assert listed == {e["id"] for e in evs}


# --- §7 the report --------------------------------------------------------------------------------


def test_project_gate_inconsistent(tmp_path, capsys):
    evs = chain(
        [
            ev("run.started", {}),
            ev("predicate.evaluated", {"predicate_id": "p1", "kind": "test", "required": True, "ok": False}),
            ev("run.completed", {"final_decision": "done"}),
        ]
    )
    rc, out = project_json(capsys, write(logpath(tmp_path), evs))
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
    rc, out = project_json(capsys, write(tmp_path / "b" / RUN / "events.jsonl", evs2))
    assert json.loads(out)["predicates"]["gate_inconsistent"] is False


def test_project_chain_head(tmp_path, capsys):
    evs = closed_run()
    _rc, out = project_json(capsys, write(logpath(tmp_path), evs))
    assert evs[-1]["hash"] in out


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
    rc, out = project_json(capsys, write(logpath(tmp_path), evs))
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


def _rich_run():
    s1, s2 = new_id(), new_id()
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
            hits += _find(v, pred, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            hits += _find(v, pred, (*path, i))
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


def test_project_fleet_of_a_directory(tmp_path, capsys):
    put(tmp_path, _rich_run(), name="a")
    put(tmp_path, chain([ev("run.started")]), name="b")
    rc, out, _ = ract(capsys, "project", "--format", "json", tmp_path)
    d = json.loads(out)
    assert rc == 0 and sorted(r["status"] for r in d["runs"]) == ["completed", "open"]
    rc, md, _ = ract(capsys, "project", "--format", "markdown", tmp_path)
    assert rc == 0 and md.count("\n|") >= 4  # header, separator, one row per run
