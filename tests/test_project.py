"""The projection library (ract_cli.project): SPEC §7 content, trust, status precedence.

Logs are real files written by EventWriter (or the seeded fixtures); nothing is mocked.
"""

from __future__ import annotations

import itertools
import json
import shutil
from array import array
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ract_cli.errors import ExitCode
from ract_cli.format.kinds import KINDS
from ract_cli.project.report import (
    FLAG_CODES,
    ProjectOptions,
    Projector,
    percentiles,
    project_events,
    project_file,
    project_paths,
)
from ract_cli.testing.synth import fixture_path, fixture_run_id, write_aborted
from ract_cli.writer.event_writer import EventWriter

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SCHEMA = json.loads((ROOT / "docs" / "schemas" / "project-report.json").read_text("utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
RUN_ID = "ab" * 16
T0 = 1_764_000_000_000_000_000


def fixture(name: str) -> Path:
    return fixture_path(FIXTURES, name)


FIXTURE_LINES = {"completed": fixture("completed").read_bytes().count(b"\n")}


def _first_hash_mismatch(path: Path) -> int:
    """Line of the first event whose stored hash is not the hash of its content (plain json + writer hash)."""
    from ract_cli.writer.event_writer import event_hash

    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        event = json.loads(line)
        if event_hash(event) != event["hash"]:
            return number
    raise AssertionError("no tampered line")


def codes(report: dict) -> list[str]:
    return [f["code"] for f in report["audit_flags"]["items"]]


def assert_valid(report: dict) -> None:
    errors = sorted(VALIDATOR.iter_errors(report), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors[:5]]


class Log:
    """A log written event by event with a deterministic clock and ids."""

    def __init__(self, path: Path, run_id: str = RUN_ID) -> None:
        counter = itertools.count(1)
        self.ts = T0
        self.writer = EventWriter(path, run_id=run_id, fsync="never", new_id=lambda: f"{next(counter):032x}")
        self.path = path

    def add(
        self,
        kind: str,
        payload: dict | None = None,
        *,
        step_id: str | None = None,
        parent_id: str | None = None,
        dt: int = 1_000_000,
    ) -> dict:
        self.ts += dt
        return self.writer.append(kind, payload or {}, step_id=step_id, parent_id=parent_id, timestamp_ns=self.ts)

    def close(self) -> None:
        self.writer.close()


STEP = "5" * 32


def started_run(log: Log) -> dict:
    return log.add("run.started", {"intent_id": "1" * 32, "predicate_count": 2, "required_count": 1})


def predicate(log: Log, pid: str, *, ok: bool, required: bool = True) -> dict:
    return log.add(
        "predicate.evaluated",
        {
            "predicate_id": pid,
            "kind": "test",
            "required": required,
            "ok": ok,
            "reason": "ok" if ok else "failing",
            "duration_ns": 5,
        },
    )


# --- fixtures ---------------------------------------------------------------


def test_completed_fixture_counts_agree_with_the_events() -> None:
    report = project_file(fixture("completed"))
    assert_valid(report)
    assert report["status"] == "completed" and report["exit_code"] == 0 and report["trusted"] is True
    assert report["outcome"]["closed_by"] == "run.completed"
    assert report["outcome"]["final_decision"] == "accept"
    kinds = report["events_by_kind"]
    lines = FIXTURE_LINES["completed"]
    assert sum(kinds.values()) == report["events"] == report["chain"]["events"] == lines
    assert set(kinds) >= {k.name for k in KINDS} - {"run.aborted"}  # the fixture uses (nearly) every kind
    totals = report["tools"]["totals"]
    assert totals["ok"] + totals["failed"] + totals["unknown"] == kinds["tool.result"]
    assert totals["called"] == kinds["tool.called"]
    assert totals["refused"] == kinds["tool.refused"] + kinds["tool.invocation.refused"]
    steps = report["steps"]
    assert steps["started"] == kinds["step.started"] == len(steps["items"])
    assert steps["committed"] == kinds["step.committed"] and steps["rolled_back"] == kinds["step.rolled_back"]
    assert steps["duration"]["count"] == steps["started"]
    assert all(item["duration_ns"] > 0 for item in steps["items"])
    # latency percentiles come from tool.result.duration_ns when present
    bash = report["tools"]["by_tool"]["bash"]
    assert bash["latency"]["source"] == "tool.result.duration_ns"
    assert (
        bash["latency"]["p50_ms"] <= bash["latency"]["p90_ms"] <= bash["latency"]["p99_ms"] <= bash["latency"]["max_ms"]
    )
    assert report["tools"]["by_tool"]["curl"]["refused_by"] == {"sandbox": 1}
    assert report["tools"]["by_tool"]["rm"]["refused_by_gate"] == {"manifest": 1}
    assert report["sandbox"]["unenforced"]["count"] == 1
    assert report["sandbox"]["never_passthrough_denied"]["total"] == 1
    assert report["errors"]["count"] == 5 == sum(report["errors"]["by_kind"].values())
    assert report["handshakes"]["by_status"] == {"approved": 1}
    assert report["process_reaps"]["by_reason"] == {"dispose_unsuccessful": 1, "postcondition_failed": 2}
    assert report["chain"]["head"] == report["chain"]["verified_head"]
    for code in (
        "SANDBOX_UNENFORCED",
        "NEVER_PASSTHROUGH_DENIED",
        "ASSUMPTION_VIOLATED",
        "BUDGET_EXCEEDED",
        "ERROR_EVENT",
    ):
        assert code in codes(report)
    assert set(codes(report)) <= set(FLAG_CODES)
    lines = [f["line"] for f in report["audit_flags"]["items"]]
    assert lines == sorted(lines)


def test_completed_fixture_is_flagged_gate_inconsistent() -> None:
    # Its last step's required predicates failed, then the run completed anyway.
    report = project_file(fixture("completed"))
    assert report["predicates"]["gate_inconsistent"] is True
    assert report["predicates"]["failing_required_at_completion"] == ["tests-pass", "types-check"]
    flag = next(f for f in report["audit_flags"]["items"] if f["code"] == "GATE_INCONSISTENT")
    assert flag["kind"] == "run.completed" and flag["line"] == report["outcome"]["line"] == FIXTURE_LINES["completed"]


def test_aborted_fixture() -> None:
    report = project_file(fixture("aborted"))
    assert_valid(report)
    assert report["status"] == "aborted"
    assert report["outcome"]["termination_cause"] == "BUDGET_EXHAUSTED"
    assert report["steps"]["committed"] == 1 and report["steps"]["rolled_back"] == 1
    assert report["process_reaps"]["count"] == 1
    assert report["process_reaps"]["items"][0]["reason"] == "postcondition_failed"
    assert report["predicates"]["gate_inconsistent"] is False
    assert report["audit_flags"]["count"] == 0


def test_interrupted_fixture_reports_what_is_open() -> None:
    report = project_file(fixture("interrupted"))
    assert_valid(report)
    assert report["status"] == "open" and report["exit_code"] == ExitCode.INCOMPLETE
    assert report["trusted"] is True  # a torn tail is incomplete, not tampered
    assert report["steps"]["open"] == 1
    assert report["tools"]["by_tool"]["pytest"]["open"] == 1
    assert report["providers"]["by_provider"]["anthropic"]["open"] == 1
    assert report["handshakes"]["by_status"]["pending"] == 1
    assert report["handshakes"]["pending"][0]["milestone_id"] == "m-merge"
    assert codes(report).count("OPEN_HANDLE") == 4
    assert "OPEN_RUN" in codes(report) and "TORN_TAIL" in codes(report)
    assert report["timing"]["end_ns"] == report["chain"]["last_ns"]  # open run: ends at its last event


def test_tampered_fixture_is_untrusted_from_the_break_and_counts_only_the_verified_prefix() -> None:
    report = project_file(fixture("tampered"))
    assert_valid(report)
    assert report["trusted"] is False and report["exit_code"] == ExitCode.TAMPERED
    # computed independently of the reader; trust ends at the event before the mismatch (nothing confirms it)
    broken = _first_hash_mismatch(fixture("tampered")) - 1
    assert report["untrusted_from_line"] == broken
    assert report["events"] == report["chain"]["verified_events"] == broken - 1
    assert sum(report["events_by_kind"].values()) == broken - 1
    assert report["untrusted"]["events"] == report["chain"]["events"] - (broken - 1)
    assert sum(report["untrusted"]["events_by_kind"].values()) == report["untrusted"]["events"]
    # the close lies in the unverified tail: claimed, not believed
    assert report["status"] == "open"
    assert report["untrusted"]["claimed_close"]["closed_by"] == "run.completed"
    assert report["chain"]["verified_head"] != report["chain"]["head"]
    first = report["audit_flags"]["items"][0]
    assert first["code"] == "UNTRUSTED" and first["line"] == broken and "HASH_MISMATCH" in first["message"]
    assert "OPEN_RUN" not in codes(report)  # an artifact of the cut, not a finding


def test_foreign_format_projects_like_the_canonical_log(tmp_path: Path) -> None:
    # The foreign-format fixture is write_aborted(seed=5) re-serialized: same values, same hashes.
    run_id = fixture_run_id("foreign-format")
    canonical = tmp_path / run_id / "events.jsonl"
    canonical.parent.mkdir()
    write_aborted(canonical, run_id, seed=5)
    foreign = project_file(fixture("foreign-format"))
    ours = project_file(canonical)
    for report in (foreign, ours):
        report.pop("path")
        for f in report["findings"]:
            f.pop("path")
    assert foreign.pop("findings") == [] and ours.pop("findings") == []
    assert foreign == ours


# --- built logs ---------------------------------------------------------------


def test_gate_inconsistency_flag(tmp_path: Path) -> None:
    log = Log(tmp_path / RUN_ID / "events.jsonl")
    started_run(log)
    predicate(log, "tests-pass", ok=True)
    predicate(log, "tests-pass", ok=False)  # latest verdict: failed
    predicate(log, "lint", ok=False, required=False)  # not required: no flag of its own
    done = log.add("run.completed", {"final_decision": "accept", "duration_ns": 4, "event_count": 5})
    log.close()
    report = project_file(log.path)
    assert_valid(report)
    assert report["status"] == "completed"
    assert report["predicates"]["gate_inconsistent"] is True
    assert report["predicates"]["failing_required_at_completion"] == ["tests-pass"]
    assert report["predicates"]["latest"]["tests-pass"]["evaluations"] == 2
    assert report["predicates"]["latest"]["tests-pass"]["ok"] is False
    flags = [f for f in report["audit_flags"]["items"] if f["code"] == "GATE_INCONSISTENT"]
    assert len(flags) == 1 and flags[0]["event_id"] == done["id"] and "tests-pass" in flags[0]["message"]
    assert "lint" not in flags[0]["message"]
    assert report["exit_code"] == 0  # a content flag, not a verification failure


def test_no_gate_flag_when_the_latest_verdict_passed_or_the_run_aborted(tmp_path: Path) -> None:
    log = Log(tmp_path / "a" / RUN_ID / "events.jsonl")
    started_run(log)
    predicate(log, "tests-pass", ok=False)
    predicate(log, "tests-pass", ok=True)  # latest verdict: passed
    log.add("run.completed", {"final_decision": "accept"})
    log.close()
    report = project_file(log.path)
    assert report["predicates"]["gate_inconsistent"] is False
    assert "GATE_INCONSISTENT" not in codes(report)

    log = Log(tmp_path / "b" / RUN_ID / "events.jsonl")
    started_run(log)
    predicate(log, "tests-pass", ok=False)
    log.add("run.aborted", {"termination_cause": "GATE_FAILED", "reason": "tests fail"})
    log.close()
    report = project_file(log.path)
    assert report["status"] == "aborted" and report["predicates"]["failing_required"] == ["tests-pass"]
    assert report["predicates"]["gate_inconsistent"] is False  # aborting on a failed gate is consistent


def _interrupted_then_repaired(path: Path) -> tuple[dict, dict, dict]:
    log = Log(path)
    run = started_run(log)
    step = log.add("step.started", {"parent_snapshot": "a" * 40, "timeout_seconds": 60}, step_id=STEP)
    call = log.add("tool.called", {"tool": "pytest", "arguments": {}}, step_id=STEP)
    synth = {"synthesized": True, "reason": "interrupted"}
    log.add(
        "tool.result",
        {"tool": "pytest", "status": "unknown", "source_event_id": call["id"], **synth},
        step_id=STEP,
        parent_id=call["id"],
    )
    log.add("step.rolled_back", {"source_event_id": step["id"], **synth}, step_id=STEP, parent_id=step["id"])
    log.add("run.aborted", {"source_event_id": run["id"], **synth}, parent_id=run["id"])
    log.close()
    return run, step, call


def test_repaired_status_wins_over_the_close(tmp_path: Path) -> None:
    _interrupted_then_repaired(tmp_path / RUN_ID / "events.jsonl")
    report = project_file(tmp_path / RUN_ID / "events.jsonl")
    assert_valid(report)
    assert report["status"] == "repaired"
    assert report["exit_code"] == 0 and report["trusted"] is True
    assert any(f["code"] == "REPAIRED" for f in report["findings"])  # the reader's warning, carried
    assert report["outcome"]["closed_by"] == "run.aborted" and report["outcome"]["synthesized"] is True
    assert report["synthesized_closes"]["count"] == 3
    assert [i["kind"] for i in report["synthesized_closes"]["items"]] == [
        "tool.result",
        "step.rolled_back",
        "run.aborted",
    ]
    assert codes(report).count("SYNTHESIZED_CLOSE") == 3
    assert report["tools"]["by_tool"]["pytest"]["unknown"] == 1
    assert report["steps"]["rolled_back"] == 1 and report["steps"]["open"] == 0
    assert report["steps"]["items"][0]["synthesized"] is True
    assert "OPEN_RUN" not in codes(report) and "OPEN_HANDLE" not in codes(report)


def test_a_log_repaired_by_ract_trace_repair_is_repaired(tmp_path: Path) -> None:
    from ract_cli.cli.app import main

    run_dir = tmp_path / "9ae2021ae4d2af95ab864b9bac116475"
    run_dir.mkdir()
    shutil.copy(fixture("interrupted"), run_dir / "events.jsonl")
    assert main(["trace", "repair", "-q", "--no-backup", str(run_dir / "events.jsonl")]) == 0
    report = project_file(run_dir / "events.jsonl")
    assert report["status"] == "repaired" and report["exit_code"] == 0
    assert report["synthesized_closes"]["count"] == 5  # handshake, tool, prompt, step, run
    assert report["handshakes"]["by_status"].get("interrupted") == 1
    assert report["providers"]["by_provider"]["anthropic"]["timed_out"] == 1


def test_sandbox_signals_every_unenforced_and_nonzero_counters(tmp_path: Path) -> None:
    log = Log(tmp_path / RUN_ID / "events.jsonl")
    started_run(log)
    for i in range(3):
        log.add("sandbox.unenforced", {"manifest_digest": f"d{i}", "reason": f"stub {i}", "details": {}})
    log.add(
        "sandbox.env_scrubbed",
        {"backend": "stub", "never_passthrough_denied": 0, "credential_shaped_unblocked_count": 0, "scrubbed_count": 4},
    )
    log.add(
        "sandbox.env_scrubbed",
        {
            "backend": "linux-bwrap",
            "never_passthrough_denied": 0,
            "credential_shaped_unblocked_count": 2,
            "scrubbed_count": 1,
        },
    )
    log.add("run.completed", {"final_decision": "accept"})
    log.close()
    report = project_file(log.path)
    assert_valid(report)
    sandbox = report["sandbox"]
    assert [i["reason"] for i in sandbox["unenforced"]["items"]] == ["stub 0", "stub 1", "stub 2"]
    assert sandbox["env_scrubbed"] == 2 and sandbox["scrubbed_total"] == 5
    assert sandbox["never_passthrough_denied"] == {"count": 0, "items": [], "omitted": 0, "total": 0}
    assert sandbox["credential_shaped_unblocked"]["total"] == 2
    assert sandbox["credential_shaped_unblocked"]["items"][0]["line"] == 6
    assert codes(report) == ["SANDBOX_UNENFORCED"] * 3 + ["CREDENTIAL_SHAPED_UNBLOCKED"]


def test_lists_are_capped_but_counted(tmp_path: Path) -> None:
    log = Log(tmp_path / RUN_ID / "events.jsonl")
    started_run(log)
    for i in range(5):
        log.add("process.reaped", {"pid": 100 + i, "argv0": "node", "argv_len": 1, "reason": "commit_failed"})
    log.close()
    report = project_file(log.path, ProjectOptions(max_items=2))
    assert_valid(report)
    reaps = report["process_reaps"]
    assert reaps["count"] == 5 and len(reaps["items"]) == 2 and reaps["omitted"] == 3
    assert reaps["by_reason"] == {"commit_failed": 5}


def test_latency_falls_back_to_gate_latency(tmp_path: Path) -> None:
    log = Log(tmp_path / RUN_ID / "events.jsonl")
    started_run(log)
    for ms in (1.0, 2.0, 3.0, 4.0):
        log.add("tool.invocation.post", {"tool_id": "grep", "ok": True, "latency_ms": ms})
    log.add("tool.invocation.refused", {"tool_id": "grep", "gate": "budget", "reason": "over budget"})
    log.add("tool.invocation.bypassed", {"tool_id": "grep", "reason": "dry-run"})
    log.close()
    grep = project_file(log.path)["tools"]["by_tool"]["grep"]
    assert grep["latency"] == {
        "source": "tool.invocation.post.latency_ms",
        "count": 4,
        "p50_ms": 2.0,
        "p90_ms": 4.0,
        "p99_ms": 4.0,
        "max_ms": 4.0,
    }
    assert grep["refused"] == 1 and grep["refused_by_gate"] == {"budget": 1} and grep["bypassed"] == 1


def test_percentiles_are_nearest_rank() -> None:
    assert percentiles([]) is None
    assert percentiles([7.0]) == {"count": 1, "p50_ms": 7.0, "p90_ms": 7.0, "p99_ms": 7.0, "max_ms": 7.0}
    block = percentiles([float(v) for v in range(100, 0, -1)])
    assert block == {"count": 100, "p50_ms": 50.0, "p90_ms": 90.0, "p99_ms": 99.0, "max_ms": 100.0}


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 2**63 - 1) | st.integers(0, 10**7) | st.integers(2**60, 2**60 + 4096), max_size=60))
def test_percentiles_of_nanoseconds_are_those_of_the_milliseconds(samples: list[int]) -> None:
    """``per_ms`` divides only the picked samples, after sorting: the same block as dividing each first, and as
    picking from the integers sorted (nanoseconds are sorted as floats; past 2^53 several integers are one
    float: the third strategy)."""
    block = percentiles(array("q", samples), 1e6)
    assert block == percentiles([ns / 1e6 for ns in samples])
    if samples:
        ordered, n = sorted(samples), len(samples)
        pick = {p: round(ordered[max(0, -(-p * n // 100) - 1)] / 1e6, 3) for p in (50, 90, 99)}
        assert block == {"count": n, **{f"p{p}_ms": v for p, v in pick.items()}, "max_ms": round(ordered[-1] / 1e6, 3)}


def test_hostile_payload_types_do_not_crash_the_projection(tmp_path: Path) -> None:
    log = Log(tmp_path / RUN_ID / "events.jsonl")
    log.writer.strict = False  # write payloads that violate the schema (exit 3 on reading)
    started_run(log)
    log.add("tool.called", {"tool": 42})
    log.add("tool.result", {"tool": 42, "ok": "yes", "duration_ns": "slow"})
    log.add("predicate.evaluated", {"predicate_id": ["x"], "required": 1, "ok": None})
    log.add("sandbox.env_scrubbed", {"never_passthrough_denied": True, "credential_shaped_unblocked_count": 1.5})
    log.add("run.completed", {"final_decision": {"nested": True}, "duration_ns": 2**62})
    log.add("not.a.kind", {"x": 1})
    log.close()
    report = project_file(log.path)
    assert_valid(report)
    assert report["exit_code"] == ExitCode.SCHEMA and report["trusted"] is True
    assert report["tools"]["by_tool"]["(invalid int)"]["unknown"] == 1
    assert report["tools"]["by_tool"]["(invalid int)"]["latency"] is None
    assert report["predicates"]["latest"]["(invalid list)"]["required"] is None
    assert report["sandbox"]["never_passthrough_denied"]["total"] == 0
    assert report["outcome"]["final_decision"] is None
    assert report["events_by_kind"]["not.a.kind"] == 1
    assert {"PAYLOAD_INVALID", "UNKNOWN_KIND"} <= set(codes(report))


def test_an_empty_or_unreadable_log_has_status_unknown(tmp_path: Path) -> None:
    empty = tmp_path / RUN_ID / "events.jsonl"
    empty.parent.mkdir()
    empty.write_bytes(b"")
    report = project_file(empty)
    assert_valid(report)
    assert report["status"] == "unknown" and report["events"] == 0 and report["run_id"] is None
    report = project_file(tmp_path / "missing.jsonl")
    assert report["status"] == "unknown" and report["exit_code"] == ExitCode.IO


def test_project_events_is_the_pure_core() -> None:
    # replay can project any prefix of the events with the same function
    from ract_cli.read.reader import ChainReader

    events = [ev.event for ev in ChainReader(fixture("aborted"))]
    full = project_file(fixture("aborted"))
    pure = project_events(events)
    for key in pure:
        if key not in ("audit_flags",):
            assert pure[key] == full[key], key
    projector = Projector()
    for line, event in enumerate(events[:5], start=1):
        projector.feed(event, line)
    assert projector.report()["events"] == 5 and projector.status == "open"


def test_fleet_over_a_directory(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name in ("completed", "aborted", "tampered"):
        src = fixture(name)
        (runs / src.parent.name).mkdir(parents=True)
        shutil.copy(src, runs / src.parent.name / "events.jsonl")
    result = project_paths([runs])
    assert result.detailed is False
    data = result.to_dict()
    assert_valid(data)
    assert [r["path"] for r in data["runs"]] == [str(p / "events.jsonl") for p in sorted(runs.iterdir())]
    assert data["totals"]["runs"] == 3 and data["totals"]["untrusted"] == 1
    assert data["totals"]["by_status"] == {"aborted": 1, "completed": 1, "open": 1}
    assert data["exit_code"] == result.exit_code == ExitCode.TAMPERED
    # one file given: the detailed report itself
    single = project_paths([fixture("aborted")])
    assert single.detailed is True and single.to_dict()["status"] == "aborted"


def test_missing_path_is_an_io_finding(tmp_path: Path) -> None:
    result = project_paths([tmp_path / "nope"])
    assert result.runs == [] and result.exit_code == ExitCode.IO
    assert_valid(result.to_dict())


@pytest.mark.parametrize("name", ["completed", "aborted", "interrupted", "tampered", "foreign-format"])
def test_projection_is_deterministic(name: str) -> None:
    assert project_file(fixture(name)) == project_file(fixture(name))


def test_huge_and_negative_counters_stay_json_int64(tmp_path: Path) -> None:
    import orjson

    log = Log(tmp_path / RUN_ID / "events.jsonl")
    log.writer.strict = False  # a negative count violates the schema (exit 3); the projection must cope
    started_run(log)
    big = 2**63 - 1
    for _ in range(3):
        log.add("prompt.sent", {"provider": "p", "prompt_chars": big})
        log.add(
            "sandbox.env_scrubbed",
            {"scrubbed_count": big, "never_passthrough_denied": big, "credential_shaped_unblocked_count": -5},
        )
    log.close()
    report = project_file(log.path)
    orjson.dumps(report)  # raises on an integer outside 64 bits
    assert report["providers"]["by_provider"]["p"]["prompt_chars"] == big
    assert report["sandbox"]["never_passthrough_denied"]["total"] == big
    assert report["sandbox"]["credential_shaped_unblocked"] == {"count": 0, "items": [], "omitted": 0, "total": 0}


def test_the_markdown_form_is_imported_when_asked_for() -> None:
    """``ract_cli.project.to_markdown`` is there (and listed) though the package does not import it up front."""
    import ract_cli.project
    from ract_cli.project.markdown import to_markdown

    assert ract_cli.project.to_markdown is to_markdown and "to_markdown" in dir(ract_cli.project)
    with pytest.raises(AttributeError):
        ract_cli.project.no_such_name  # noqa: B018
