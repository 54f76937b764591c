"""repair (SPEC §4), library level: what it synthesizes, what it keeps, what it refuses.

The expected open handles are computed here by a small, independent
implementation of SPEC §4's pairing (``expected_opens``), never by asking the
library's own ``HandleTracker``.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest
from hardening_support import chain_events
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ract_cli.errors import ExitCode, LogIOError, UsageError, WriterLockedError
from ract_cli.format.kinds import VALIDATORS
from ract_cli.read.reader import ChainReader
from ract_cli.repair.repairer import RepairOptions, RepairRefused, closes_for_events, repair_file, repair_id
from ract_cli.testing.synth import FIXTURES, fixture_path, fixture_run_id
from ract_cli.writer.event_writer import EventWriter, FsyncPolicy, encode_line, event_hash

ROOT = Path(__file__).resolve().parents[1]

# SPEC §4, written out again here on purpose.
CLOSE_OF = {
    "run.started": "run.aborted",
    "step.started": "step.rolled_back",
    "tool.called": "tool.result",
    "prompt.sent": "response.received",
    "handshake.requested": "handshake.resolved",
}
OPEN_OF = {
    "step.committed": "step.started",
    "step.rolled_back": "step.started",
    "tool.result": "tool.called",
    "response.received": "prompt.sent",
    "handshake.resolved": "handshake.requested",
}
ADDITION = {
    "run.aborted": {},
    "step.rolled_back": {},
    "tool.result": {"status": "unknown"},
    "response.received": {"status": "timed_out"},
    "handshake.resolved": {"resolution": "interrupted"},
}


def _pair_key(ev: dict) -> tuple:
    p, k = ev["payload"], ev["kind"]
    if k.startswith("step."):
        return ("step", ev["step_id"])
    if k.startswith("handshake."):
        return ("handshake", p.get("milestone_id"))
    if k.startswith("tool."):
        return ("tool", ev["step_id"], p.get("tool"))
    return ("prompt", ev["step_id"], p.get("provider"), p.get("intent_id"))


def expected_opens(events: list[dict]) -> list[dict]:
    """Independent SPEC §4 pairing: the open events left open, in opening order (O(n^2), for tests)."""
    opens: list[dict] = []
    run_closed = False
    for ev in events:
        kind = ev["kind"]
        if kind in CLOSE_OF:
            if not (kind == "run.started" and run_closed):
                opens.append(ev)
        elif kind in ("run.completed", "run.aborted"):
            run_closed = True
            opens = [o for o in opens if o["kind"] != "run.started"]
        elif kind in OPEN_OF:
            candidates = [o for o in opens if o["kind"] == OPEN_OF[kind]]
            p = ev["payload"]
            pick = None
            if p.get("synthesized") is True:
                pick = next((o for o in candidates if o["id"] == p.get("source_event_id")), None)
            if pick is None:
                pick = next((o for o in candidates if o["id"] == ev["parent_id"]), None)
            if pick is None:
                pick = next((o for o in candidates if _pair_key(o) == _pair_key(ev)), None)
            if pick is not None:
                opens.remove(pick)
    return opens


def expected_close_plan(events: list[dict]) -> list[tuple[str, str]]:
    """(close kind, source id) in append order: innermost first, the run's close last."""
    opens = expected_opens(events)
    plan = [(CLOSE_OF[o["kind"]], o["id"]) for o in reversed(opens) if o["kind"] != "run.started"]
    runs = [o for o in opens if o["kind"] == "run.started"]
    if runs:
        plan.append(("run.aborted", runs[0]["id"]))
    return plan


def split_complete(data: bytes) -> tuple[bytes, list[dict], bytes]:
    """(kept prefix, its events, torn bytes) of a log that verifies apart from a torn tail."""
    if not data:
        return b"", [], b""
    lines = data.split(b"\n")
    last = lines.pop()  # b"" when data ends in "\n"
    kept = b"".join(line + b"\n" for line in lines)
    torn = b""
    if last:
        try:
            json.loads(last)
            kept += last  # a complete event lacking its final newline
        except ValueError:
            torn = last
    events = [json.loads(line) for line in kept.splitlines() if line.strip()]
    return kept, events, torn


def verify(path: Path):
    reader = ChainReader(path)
    reader.read_all()
    return reader


def check_repaired(original: bytes, path: Path, result) -> None:
    """The repaired file: kept bytes, then exactly the expected closes, and it verifies."""
    kept, events, torn = split_complete(original)
    data = path.read_bytes()
    plan = expected_close_plan(events)
    newline = b"\n" if plan and kept and not kept.endswith(b"\n") else b""
    assert data.startswith(kept + newline), "original complete lines must be kept byte for byte"
    tail = data[len(kept + newline) :]
    closes = [json.loads(line) for line in tail.splitlines()]
    assert [(c["kind"], c["payload"]["source_event_id"]) for c in closes] == plan
    assert [(c.close_kind, c.source_event_id) for c in result.closes] == plan
    by_id = {e["id"]: e for e in events}
    max_ts = max((e["timestamp_ns"] for e in events), default=None)
    prev = events[-1]["hash"] if events else None
    for c in closes:
        src = by_id[c["payload"]["source_event_id"]]
        assert c["id"] == hashlib.sha256(("ract.repair:" + src["id"]).encode()).hexdigest()[:32]
        assert c["parent_id"] == src["id"] and c["step_id"] == src["step_id"] and c["run_id"] == src["run_id"]
        assert c["timestamp_ns"] == max_ts
        assert c["prev_hash"] == prev
        prev = c["hash"]
        p = c["payload"]
        assert p["synthesized"] is True and p["reason"] == "interrupted"
        for key, value in ADDITION[c["kind"]].items():
            assert p[key] == value
        assert VALIDATORS[c["kind"]](p) == []
    if torn:
        assert result.torn is not None and result.torn.sidecar is not None
        assert result.torn.sidecar.read_bytes() == torn
    else:
        assert result.torn is None
    reader = verify(path)
    assert reader.exit_code == ExitCode.OK, [f.to_dict() for f in reader.findings]
    codes = {f.code for f in reader.findings}
    assert "OPEN_HANDLE" not in codes and "TORN_TAIL" not in codes
    if any(e["kind"] == "run.started" for e in events):
        assert "OPEN_RUN" not in codes
    assert ("REPAIRED" in codes) == (bool(plan) or any(e["payload"].get("synthesized") is True for e in events))


@pytest.fixture
def shm_tmp(tmp_path):
    """A scratch directory on tmpfs when there is one: the loops below repair (and fsync) thousands of times."""
    base = Path("/dev/shm")
    if not (base.is_dir() and os.access(base, os.W_OK)):
        yield tmp_path
        return
    d = Path(tempfile.mkdtemp(prefix="ract-repair-test-", dir=base))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def fixture_bytes(name: str) -> bytes:
    return fixture_path(ROOT / "fixtures", name).read_bytes()


def run_dir(tmp: Path, name: str) -> Path:
    d = tmp / fixture_run_id(name)
    d.mkdir(parents=True, exist_ok=True)
    return d / "events.jsonl"


def cut_points(data: bytes) -> list[int]:
    """After each line and mid-line; with CRLF endings also between "\\r" and "\\n"."""
    points, start = {0, len(data)}, 0
    for line in data.splitlines(keepends=True):
        end = start + len(line)
        points.update({start + len(line) // 2, end})
        if line.endswith(b"\r\n"):
            points.add(end - 1)
        start = end
    return sorted(p for p in points if 0 <= p <= len(data))


# --- pure core ----------------------------------------------------------------


def test_repair_id_is_spec_formula():
    src = "3fa85f6417174562b3fc2c963f66afa6"
    assert repair_id(src) == hashlib.sha256(b"ract.repair:" + src.encode()).hexdigest()[:32]


def test_closes_for_events_matches_file_repair_on_interrupted_fixture(tmp_path):
    data = fixture_bytes("interrupted")
    _, events, _ = split_complete(data)
    closes = closes_for_events(events)
    assert [(c["kind"], c["payload"]["source_event_id"]) for c in closes] == expected_close_plan(events)
    path = run_dir(tmp_path, "interrupted")
    path.write_bytes(data)
    repair_file(path)
    assert path.read_bytes().endswith(b"".join(encode_line(c) for c in closes))


def test_closes_for_events_of_a_closed_run_is_empty():
    _, events, _ = split_complete(fixture_bytes("completed"))
    assert closes_for_events(events) == []
    assert closes_for_events([]) == []


def test_synthesized_payloads_copy_only_valid_base_keys():
    _, events, _ = split_complete(fixture_bytes("interrupted"))
    by_kind = {c["kind"]: c["payload"] for c in closes_for_events(events)}
    opens = {e["kind"]: e["payload"] for e in events}
    assert by_kind["handshake.resolved"]["milestone_id"] == opens["handshake.requested"]["milestone_id"]
    assert by_kind["handshake.resolved"]["description"] == opens["handshake.requested"]["description"]
    assert "status" not in by_kind["handshake.resolved"]  # "pending" is not a resolved status
    assert by_kind["tool.result"]["tool"] == opens["tool.called"]["tool"]
    assert "arguments" not in by_kind["tool.result"]
    assert by_kind["response.received"]["provider"] == opens["prompt.sent"]["provider"]
    assert by_kind["response.received"]["intent_id"] == opens["prompt.sent"]["intent_id"]
    assert by_kind["step.rolled_back"]["branch"] == opens["step.started"]["branch"]
    assert by_kind["step.rolled_back"]["parent_snapshot_before"] == opens["step.started"]["parent_snapshot"]
    assert by_kind["run.aborted"] == {
        "synthesized": True,
        "reason": "interrupted",
        "source_event_id": by_kind["run.aborted"]["source_event_id"],
    }


# --- every cut point ------------------------------------------------------------


@pytest.mark.parametrize("name", ["interrupted", "completed", "aborted", "foreign-format"])
def test_every_cut_point_repairs_to_exactly_the_open_handles(shm_tmp, name):
    data = fixture_bytes(name)
    path = run_dir(shm_tmp, name)
    for cut in cut_points(data):
        for leftover in path.parent.iterdir():
            leftover.unlink()
        prefix = data[:cut]
        path.write_bytes(prefix)
        result = repair_file(path, RepairOptions(backup=False))
        check_repaired(prefix, path, result)
        once = path.read_bytes()
        again = repair_file(path, RepairOptions(backup=False))
        assert not again.changed and again.written_to is None, f"cut {cut}: second repair changed something"
        assert path.read_bytes() == once


# --- properties over generated runs -------------------------------------------

TOOLS = ("bash", "grep", "pytest")
PROVIDERS = ("anthropic", "openai")
ACTIONS = (
    "step",
    "end_step",
    "tool",
    "tool_result",
    "prompt",
    "response",
    "handshake",
    "resolve",
    "other",
    "close_run",
)


def write_generated_run(path: Path, actions: list[tuple[str, int, bool]], seed: int) -> None:
    """A run built from ``actions``; closes name their open by parent_id or not (FIFO fallback)."""
    rng = random.Random(seed)
    ids = iter(f"{rng.getrandbits(128):032x}" for _ in range(10_000))
    ts = [1_764_000_000_000_000_000]

    def clock() -> int:
        ts[0] += rng.randint(-5, 1000)  # sometimes backwards: CLOCK_REGRESSION is only a warning
        return ts[0]

    with EventWriter(
        path, run_id=f"{rng.getrandbits(128):032x}", fsync=FsyncPolicy.NEVER, clock=clock, new_id=lambda: next(ids)
    ) as w:
        w.append("run.started", {"intent_id": "i" * 8})
        steps: list[tuple[str, dict]] = []
        tools: list[dict] = []
        prompts: list[dict] = []
        handshakes: list[dict] = []
        for action, pick, by_parent in actions:
            step = steps[-1][0] if steps else None
            if action == "step":
                sid = next(ids)
                ev = w.append(
                    "step.started", {"parent_snapshot": "a" * 40, "branch": f"rootact/step/{sid}"}, step_id=sid
                )
                steps.append((sid, ev))
            elif action == "end_step" and steps:
                sid, ev = steps.pop(pick % len(steps))
                kind = "step.committed" if pick % 2 else "step.rolled_back"
                w.append(kind, {"reason": "done"}, step_id=sid, parent_id=ev["id"] if by_parent else None)
            elif action == "tool":
                tools.append(w.append("tool.called", {"tool": TOOLS[pick % 3], "arguments": {}}, step_id=step))
            elif action == "tool_result" and tools:
                ev = tools.pop(pick % len(tools))
                w.append(
                    "tool.result",
                    {"tool": ev["payload"]["tool"], "ok": True},
                    step_id=ev["step_id"],
                    parent_id=ev["id"] if by_parent else None,
                )
            elif action == "prompt":
                prompts.append(
                    w.append("prompt.sent", {"provider": PROVIDERS[pick % 2], "intent_id": "i" * 8}, step_id=step)
                )
            elif action == "response" and prompts:
                ev = prompts.pop(pick % len(prompts))
                w.append(
                    "response.received",
                    {"provider": ev["payload"]["provider"], "intent_id": "i" * 8},
                    step_id=ev["step_id"],
                    parent_id=ev["id"] if by_parent else None,
                )
            elif action == "handshake":
                handshakes.append(
                    w.append("handshake.requested", {"milestone_id": f"m{pick % 3}", "status": "pending"}, step_id=step)
                )
            elif action == "resolve" and handshakes:
                ev = handshakes.pop(pick % len(handshakes))
                w.append(
                    "handshake.resolved",
                    {"milestone_id": ev["payload"]["milestone_id"], "status": "approved"},
                    step_id=step,
                    parent_id=ev["id"] if by_parent else None,
                )
            elif action == "other":
                w.append("laziness.skipped", {"reason": "docs-only", "diff_summary": "x" * (pick % 50)}, step_id=step)
            elif action == "close_run":
                w.append("run.completed" if pick % 2 else "run.aborted", {}, step_id=None)


run_actions = st.lists(st.tuples(st.sampled_from(ACTIONS), st.integers(0, 99), st.booleans()), max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions=run_actions, seed=st.integers(0, 2**32), cut_fraction=st.floats(0, 1))
def test_any_cut_of_any_run_repairs_verifies_and_is_idempotent(shm_tmp, actions, seed, cut_fraction):
    tmp = Path(tempfile.mkdtemp(dir=shm_tmp))
    full = tmp / "full.jsonl"
    write_generated_run(full, actions, seed)
    data = full.read_bytes()
    prefix = data[: int(len(data) * cut_fraction)]
    a, b = tmp / "a" / "events.jsonl", tmp / "b" / "events.jsonl"
    for p in (a, b):
        p.parent.mkdir()
        p.write_bytes(prefix)
    result = repair_file(a)
    check_repaired(prefix, a, result)
    repair_file(b, RepairOptions(backup=False))
    assert a.read_bytes() == b.read_bytes(), "two copies must repair to identical bytes"
    repaired = a.read_bytes()
    assert not repair_file(a).changed
    assert a.read_bytes() == repaired
    if result.changed:
        assert result.backup is not None and result.backup.read_bytes() == prefix


# --- what it keeps and where it puts things -------------------------------------


def test_interrupted_fixture_torn_bytes_go_to_sidecar_and_original_to_backup(tmp_path):
    data = fixture_bytes("interrupted")
    path = run_dir(tmp_path, "interrupted")
    path.write_bytes(data)
    result = repair_file(path)
    _, _, torn = split_complete(data)
    assert result.torn.sidecar == path.with_name("events.jsonl.torn")
    assert result.torn.sidecar.read_bytes() == torn
    assert result.torn.offset == len(data) - len(torn) and result.torn.length == len(torn)
    assert result.backup == path.with_name("events.jsonl.bak")
    assert result.backup.read_bytes() == data
    assert sorted(p.name for p in path.parent.iterdir()) == ["events.jsonl", "events.jsonl.bak", "events.jsonl.torn"]


def test_existing_sidecar_and_backup_are_never_overwritten(tmp_path):
    data = fixture_bytes("interrupted")
    path = run_dir(tmp_path, "interrupted")
    path.write_bytes(data)
    path.with_name("events.jsonl.torn").write_bytes(b"older torn bytes")
    path.with_name("events.jsonl.bak").write_bytes(b"older backup")
    path.with_name("events.jsonl.bak.1").write_bytes(b"older backup 1")
    result = repair_file(path)
    assert path.with_name("events.jsonl.torn").read_bytes() == b"older torn bytes"
    assert path.with_name("events.jsonl.bak").read_bytes() == b"older backup"
    assert path.with_name("events.jsonl.bak.1").read_bytes() == b"older backup 1"
    assert result.torn.sidecar.name == "events.jsonl.torn.1"
    assert result.backup.name == "events.jsonl.bak.2" and result.backup.read_bytes() == data


def test_no_backup_still_keeps_torn_bytes(tmp_path):
    data = fixture_bytes("interrupted")
    path = run_dir(tmp_path, "interrupted")
    path.write_bytes(data)
    result = repair_file(path, RepairOptions(backup=False))
    assert result.backup is None
    assert sorted(p.name for p in path.parent.iterdir()) == ["events.jsonl", "events.jsonl.torn"]
    assert result.torn.sidecar.read_bytes() == split_complete(data)[2]


def test_output_leaves_source_untouched_and_puts_sidecar_next_to_output(tmp_path):
    data = fixture_bytes("interrupted")
    path = run_dir(tmp_path, "interrupted")
    path.write_bytes(data)
    out = tmp_path / "out" / "repaired.jsonl"
    out.parent.mkdir()
    result = repair_file(path, RepairOptions(output=out))
    assert path.read_bytes() == data
    assert sorted(p.name for p in path.parent.iterdir()) == ["events.jsonl"]
    assert result.written_to == out and result.backup is None
    assert result.torn.sidecar == out.with_name("repaired.jsonl.torn")
    check_repaired(data, out, result)
    in_place = tmp_path / "copy" / "events.jsonl"
    in_place.parent.mkdir()
    in_place.write_bytes(data)
    repair_file(in_place)
    assert in_place.read_bytes() == out.read_bytes()


def test_output_of_a_log_with_nothing_to_repair_is_a_copy(tmp_path):
    data = fixture_bytes("completed")
    path = run_dir(tmp_path, "completed")
    path.write_bytes(data)
    out = tmp_path / "copy.jsonl"
    result = repair_file(path, RepairOptions(output=out))
    assert not result.changed and out.read_bytes() == data


def test_check_changes_nothing(tmp_path):
    data = fixture_bytes("interrupted")
    path = run_dir(tmp_path, "interrupted")
    path.write_bytes(data)
    result = repair_file(path, RepairOptions(check=True))
    plan = expected_close_plan(split_complete(data)[1])
    assert plan and result.changed and result.written_to is None
    assert [(c.close_kind, c.source_event_id) for c in result.closes] == plan
    assert result.torn is not None and result.torn.sidecar is None
    assert path.read_bytes() == data and [p.name for p in path.parent.iterdir()] == ["events.jsonl"]


def test_repair_keeps_file_mode(tmp_path):
    path = run_dir(tmp_path, "interrupted")
    path.write_bytes(fixture_bytes("interrupted"))
    os.chmod(path, 0o640)
    repair_file(path, RepairOptions(backup=False))
    assert (path.stat().st_mode & 0o777) == 0o640


def test_missing_final_newline_is_added_before_the_closes(tmp_path):
    data = fixture_bytes("interrupted")
    kept, _, _ = split_complete(data)
    path = run_dir(tmp_path, "interrupted")
    path.write_bytes(kept[:-1])  # last complete event without its "\n"
    result = repair_file(path)
    assert result.newline_added and result.torn is None
    assert path.read_bytes().startswith(kept)
    check_repaired(kept[:-1], path, result)


def test_missing_final_newline_alone_is_nothing_to_repair(tmp_path):
    data = fixture_bytes("completed")
    path = run_dir(tmp_path, "completed")
    path.write_bytes(data[:-1])
    result = repair_file(path)
    assert not result.changed and path.read_bytes() == data[:-1]


def test_crlf_log_cut_between_cr_and_lf(tmp_path):
    data = fixture_bytes("foreign-format")
    assert b"\r\n" in data
    lines = data.splitlines(keepends=True)
    prefix = b"".join(lines[:5])[:-1]  # "...}\r" with no "\n"
    path = run_dir(tmp_path, "foreign-format")
    path.write_bytes(prefix)
    result = repair_file(path)
    assert result.newline_added and path.read_bytes().startswith(prefix + b"\n")
    check_repaired(prefix, path, result)


def test_empty_and_torn_only_logs(tmp_path):
    path = run_dir(tmp_path, "interrupted")
    path.write_bytes(b"")
    assert not repair_file(path).changed and path.read_bytes() == b""
    path.write_bytes(b'{"hash":"12')
    result = repair_file(path, RepairOptions(backup=False))
    assert result.torn.line == 1 and result.closes == []
    assert path.read_bytes() == b"" and result.torn.sidecar.read_bytes() == b'{"hash":"12'


def test_log_without_run_started_closes_what_it_can(tmp_path):
    data = fixture_bytes("interrupted")
    _kept, events, _ = split_complete(data)
    # re-chain the events after the first (run.started) as a log of their own
    path = run_dir(tmp_path, "interrupted")
    prev, lines = "0" * 64, []
    for ev in events[1:]:
        ev = dict(ev, prev_hash=prev)
        ev["hash"] = event_hash(ev)
        prev = ev["hash"]
        lines.append(encode_line(ev))
    path.write_bytes(b"".join(lines))
    result = repair_file(path)
    assert [c.close_kind for c in result.closes] == [
        "handshake.resolved",
        "tool.result",
        "response.received",
        "step.rolled_back",
    ]
    reader = verify(path)
    assert reader.exit_code == ExitCode.OK and "OPEN_RUN" in {f.code for f in reader.findings}
    assert not repair_file(path).changed


def _chain(events: list[dict]) -> bytes:
    prev, out = "0" * 64, []
    for ev in events:
        ev = dict(ev, prev_hash=prev)
        ev.pop("hash", None)
        ev["hash"] = event_hash(ev)
        prev = ev["hash"]
        out.append(encode_line(ev))
    return b"".join(out)


def _event(n: int, kind: str, payload: dict, *, step_id=None, parent_id=None) -> dict:
    return {
        "id": f"{n:032x}",
        "run_id": "ab" * 16,
        "step_id": step_id,
        "parent_id": parent_id,
        "timestamp_ns": 1000 + n,
        "kind": kind,
        "payload": payload,
    }


def test_second_run_started_is_closed_by_the_one_run_close(tmp_path):
    events = [_event(1, "run.started", {}), _event(2, "run.started", {}), _event(3, "laziness.skipped", {})]
    path = tmp_path / "events.jsonl"
    path.write_bytes(_chain(events))
    result = repair_file(path)
    assert [(c.close_kind, c.source_event_id) for c in result.closes] == [("run.aborted", f"{1:032x}")]
    assert not repair_file(path).changed


def test_torn_tail_found_even_past_the_findings_cap(tmp_path):
    # 80 clock regressions (warnings) come before the torn tail's finding: the reader keeps only
    # the first findings, yet the torn bytes must still be found and moved, not dropped.
    events = [_event(1, "run.started", {})] + [
        dict(_event(n, "laziness.skipped", {"reason": "x"}), timestamp_ns=10_000 - n) for n in range(2, 82)
    ]
    data = _chain(events) + b'{"hash":"deadbeef'
    path = tmp_path / "events.jsonl"
    path.write_bytes(data)
    result = repair_file(path)
    assert result.torn is not None and result.torn.sidecar.read_bytes() == b'{"hash":"deadbeef'
    assert [c.close_kind for c in result.closes] == ["run.aborted"]
    check_repaired(data, path, result)


def test_fifo_fallback_pairing_closes_the_oldest_matching_open(tmp_path):
    s = "5" * 32
    events = [
        _event(1, "run.started", {}),
        _event(2, "step.started", {}, step_id=s),
        _event(3, "tool.called", {"tool": "bash"}, step_id=s),
        _event(4, "tool.called", {"tool": "bash"}, step_id=s),
        _event(5, "tool.called", {"tool": "grep"}, step_id=s),
        _event(6, "tool.result", {"tool": "bash", "ok": True}, step_id=s),  # no parent_id: FIFO -> event 3
        _event(7, "prompt.sent", {"provider": "a", "intent_id": "x"}, step_id=s),
        _event(8, "prompt.sent", {"provider": "a", "intent_id": "y"}, step_id=s),
        _event(9, "response.received", {"provider": "a", "intent_id": "y"}, step_id=s),  # -> event 8
        _event(10, "handshake.requested", {"milestone_id": "m1", "status": "pending"}),
        _event(11, "handshake.requested", {"milestone_id": "m2", "status": "pending"}),
        _event(12, "handshake.resolved", {"milestone_id": "m2", "status": "approved"}),  # -> event 11
        # a close naming a source_event_id without being synthesized pairs by parent_id, not by it
        _event(
            13,
            "tool.result",
            {"tool": "grep", "ok": True, "source_event_id": f"{4:032x}"},
            step_id=s,
            parent_id=f"{5:032x}",
        ),
    ]
    path = tmp_path / "events.jsonl"
    path.write_bytes(_chain(events))
    result = repair_file(path)
    assert [(c.close_kind, int(c.source_event_id, 16)) for c in result.closes] == [
        ("handshake.resolved", 10),
        ("response.received", 7),
        ("tool.result", 4),
        ("step.rolled_back", 2),
        ("run.aborted", 1),
    ]
    assert [(k, int(s, 16)) for k, s in expected_close_plan(events)] == [
        (c.close_kind, int(c.source_event_id, 16)) for c in result.closes
    ]
    assert verify(path).exit_code == ExitCode.OK


# --- refusals -------------------------------------------------------------------


def _lines(name: str) -> list[bytes]:
    return fixture_bytes(name).splitlines(keepends=True)


def _rehash(line: bytes, **changes) -> bytes:
    ev = json.loads(line)
    ev.update(changes)
    ev["hash"] = event_hash(ev)
    return encode_line(ev)


REFUSALS = {
    "hash mismatch (committed tampered fixture)": lambda: fixture_bytes("tampered"),
    "chain break (a middle line deleted)": lambda: b"".join(_lines("interrupted")[:5] + _lines("interrupted")[6:]),
    "malformed middle line": lambda: b"".join([*_lines("interrupted")[:5], b"not json\n", *_lines("interrupted")[5:]]),
    "blank middle line": lambda: b"".join([*_lines("interrupted")[:5], b"\n", *_lines("interrupted")[5:]]),
    "malformed last line with newline": lambda: b"".join(_lines("interrupted")[:-1]) + b'{"hash":"12\n',
    "middle event edited and re-hashed (next link breaks)": lambda: b"".join(
        [*_lines("interrupted")[:4], _rehash(_lines("interrupted")[4], timestamp_ns=1), *_lines("interrupted")[5:]]
    ),
    "schema error (re-hashed invalid payload)": lambda: _chain(
        [dict(json.loads(_lines("completed")[0]), payload={"predicate_count": "four"})]
        + [json.loads(x) for x in _lines("completed")[1:4]]
    ),
    "unknown kind (re-hashed)": lambda: _chain(
        [json.loads(x) for x in _lines("completed")[:3]] + [dict(json.loads(_lines("completed")[3]), kind="x.y")]
    ),
    "foreign run_id (re-chained)": lambda: _chain(
        [json.loads(x) for x in _lines("completed")[:3]] + [dict(json.loads(_lines("completed")[3]), run_id="c" * 32)]
    ),
    "duplicate id (re-chained)": lambda: _chain(
        [json.loads(x) for x in _lines("completed")[:3]]
        + [dict(json.loads(_lines("completed")[3]), id=json.loads(_lines("completed")[1])["id"])]
    ),
    "missing genesis": lambda: b"".join(_lines("interrupted")[1:]),
    "envelope extra key": lambda: _lines("completed")[0].replace(b'{"hash"', b'{"extra":1,"hash"', 1),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_logs_that_fail_verification_are_refused_untouched(tmp_path, case):
    data = REFUSALS[case]()
    path = run_dir(tmp_path, "interrupted")
    path.write_bytes(data)
    pre = verify(path)
    assert pre.exit_code in (ExitCode.TAMPERED, ExitCode.SCHEMA), "the case must fail verification"
    before = os.stat(path)
    for check in (True, False):
        with pytest.raises(RepairRefused) as exc:
            repair_file(path, RepairOptions(check=check))
        assert exc.value.exit_code == ExitCode.TAMPERED
    assert path.read_bytes() == data
    assert os.stat(path).st_mtime_ns == before.st_mtime_ns
    assert [p.name for p in path.parent.iterdir()] == ["events.jsonl"], "no sidecar, no backup, no temp file"


def test_refused_tampered_log_with_torn_tail_writes_no_sidecar(tmp_path):
    data = fixture_bytes("tampered") + b'{"hash":"7'
    path = run_dir(tmp_path, "tampered")
    path.write_bytes(data)
    with pytest.raises(RepairRefused):
        repair_file(path, RepairOptions(backup=False))
    assert path.read_bytes() == data and [p.name for p in path.parent.iterdir()] == ["events.jsonl"]


def test_raxol_journal_is_refused(tmp_path):
    path = tmp_path / "journal.jsonl"
    data = (
        b'{"type":"turn_started","payload":{"turn_id":"t1"}}\n'
        b'{"type":"item_started","payload":{"turn_id":"t1","item_id":"i1"}}\n'
    )
    path.write_bytes(data)
    with pytest.raises(RepairRefused, match="Raxol"):
        repair_file(path)
    assert path.read_bytes() == data and [p.name for p in tmp_path.iterdir()] == ["journal.jsonl"]


def test_locked_log_is_refused_with_exit_5(tmp_path):
    path = run_dir(tmp_path, "interrupted")
    shutil.copyfile(fixture_path(ROOT / "fixtures", "completed"), path)
    data = path.read_bytes()
    with EventWriter(path, fsync=FsyncPolicy.NEVER):
        for check in (False, True):
            with pytest.raises(WriterLockedError) as exc:
                repair_file(path, RepairOptions(check=check))
            assert exc.value.exit_code == ExitCode.IO
    assert path.read_bytes() == data
    assert not repair_file(path).changed  # lock released: repair proceeds


@pytest.mark.parametrize("what", ["missing", "directory", "fifo"])
def test_paths_that_are_not_logs_are_io_errors(tmp_path, what):
    path = tmp_path / "x"
    if what == "directory":
        path.mkdir()
    elif what == "fifo":
        os.mkfifo(path)
    with pytest.raises(LogIOError) as exc:
        repair_file(path)
    assert exc.value.exit_code == ExitCode.IO


def test_symlinked_log_is_repaired_through_the_link(tmp_path):
    real = run_dir(tmp_path, "interrupted")
    real.write_bytes(fixture_bytes("interrupted"))
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    result = repair_file(link, RepairOptions(follow_symlinks=True))  # issue 15 item 18: only when asked
    assert link.is_symlink() and result.written_to == real
    assert result.backup == real.with_name("events.jsonl.bak")
    assert verify(real).exit_code == ExitCode.OK


def test_output_into_a_missing_directory_is_an_io_error(tmp_path):
    path = run_dir(tmp_path, "interrupted")
    data = fixture_bytes("interrupted")
    path.write_bytes(data)
    with pytest.raises(LogIOError):
        repair_file(path, RepairOptions(output=tmp_path / "missing" / "out.jsonl"))
    assert path.read_bytes() == data and names_in(path.parent) == ["events.jsonl"]


def test_output_naming_a_directory_is_a_usage_error(tmp_path):
    path = run_dir(tmp_path, "interrupted")
    path.write_bytes(fixture_bytes("interrupted"))
    with pytest.raises(UsageError):
        repair_file(path, RepairOptions(output=tmp_path))


def test_output_naming_the_log_itself_repairs_in_place(tmp_path):
    path = run_dir(tmp_path, "interrupted")
    path.write_bytes(fixture_bytes("interrupted"))
    result = repair_file(path, RepairOptions(output=path))
    assert result.written_to == path and result.backup is not None


def names_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_run_directory_is_accepted(tmp_path):
    path = run_dir(tmp_path, "interrupted")
    path.write_bytes(fixture_bytes("interrupted"))
    result = repair_file(path.parent)
    assert result.path == path and result.changed


def test_every_fixture_kind_name_is_covered():
    assert set(FIXTURES) >= {"interrupted", "completed", "aborted", "foreign-format", "tampered"}


def test_a_torn_tail_past_many_warnings_is_cut_where_the_last_event_ends(tmp_path):
    """Repair reads as verify does (no event built) and cuts where the reader saw the last event end: not
    where a TORN_TAIL finding says, which is not kept past the reader's 50 findings (here 60 clock warnings)."""
    data = fixture_bytes("interrupted")
    complete, _, torn = split_complete(data)
    events = [json.loads(line) for line in complete.splitlines()]
    for i in range(1, len(events)):  # every other event a nanosecond before the one before it
        if i % 2:
            events[i]["timestamp_ns"] = events[i - 1]["timestamp_ns"] - 1
    last = events[-1]
    for n in range(len(events), 130):  # (more events, each a clock regression: more than 50 warnings in all)
        events.append(dict(last, id=f"{n:032x}", timestamp_ns=last["timestamp_ns"] - n))
    prefix = chain_events(events)
    path = run_dir(tmp_path, "interrupted")
    path.write_bytes(prefix + torn)
    before = ChainReader(path, max_findings=50)
    before.read_all()
    assert before.state.suppressed and "TORN_TAIL" not in {f.code for f in before.findings}
    result = repair_file(path)
    assert result.torn.offset == len(prefix) and result.torn.sidecar.read_bytes() == torn
    assert path.read_bytes().startswith(prefix) and result.closes
    after = ChainReader(path)
    after.read_all()
    assert not [f for f in after.findings if f.severity == "error"]


def test_a_large_log_on_a_free_core_is_read_in_two_threads_with_the_same_repair(tmp_path, monkeypatch):
    """As verify's default (``read.parallel.auto_jobs``): C's helper thread on a large log when a core is
    free; the repaired bytes, sidecar and result are the one-thread ones."""
    from ract_cli.read import parallel
    from ract_cli.repair import repairer

    data = fixture_bytes("interrupted")
    seen: list[int] = []

    class Recording(ChainReader):
        def __init__(self, *args, threads: int = 1, **kwargs) -> None:
            super().__init__(*args, threads=threads, **kwargs)
            seen.append(threads)

    monkeypatch.setattr(repairer, "ChainReader", Recording)
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    repaired = []
    for idle in (False, True):
        monkeypatch.setattr(parallel, "idle_core", lambda n, idle=idle: idle)
        path = run_dir(tmp_path / str(idle), "interrupted")
        path.write_bytes(data)
        result = repair_file(path)
        repaired.append((path.read_bytes(), result.torn.sidecar.read_bytes(), result.closes, result.events))
    assert repaired[0] == repaired[1] and seen == [1, 2]
