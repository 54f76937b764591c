"""The replay library (SPEC §5): state after each event, stopping at a break, recorded responses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ract_cli.errors import ExitCode, UsageError
from ract_cli.replay.session import (
    MAX_PACE_SLEEP_S,
    Replayer,
    ReplayOptions,
    ResponsesExhausted,
    find_initial_snapshot,
    format_elapsed,
    pace_delay,
    parse_pace,
    parse_until,
    recorded_responses,
    replay,
    summarize,
)
from ract_cli.testing.synth import FIXTURES, fixture_path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_ROOT = ROOT / "fixtures"
STEP = "5e7e9f00aa11bb22cc33dd44ee55ff66"
STEP2 = "6f8f0a11bb22cc33dd44ee55ff667788"
INTENT_A, INTENT_B = "a" * 32, "b" * 32


def fixture(name: str) -> Path:
    return fixture_path(FIXTURE_ROOT, name)


def file_events(path: Path) -> list[dict]:
    """The complete events of a file, parsed independently of ract (torn last line skipped)."""
    out = []
    for raw in path.read_bytes().split(b"\n"):
        try:
            out.append(json.loads(raw))
        except ValueError:
            continue
    return out


# --- state at each point of the interrupted fixture ----------------------


def snapshots(path: Path) -> dict[int, dict]:
    return {s.index: s.state.to_dict() for s in Replayer(path)}


def ids(items: list[dict]) -> list[str]:
    return [i["event_id"] for i in items]


def test_interrupted_state_at_several_points() -> None:
    path = fixture("interrupted")
    events = file_events(path)
    by_kind = lambda kind: [e["id"] for e in events if e["kind"] == kind]  # noqa: E731
    states = snapshots(path)
    assert sorted(states) == list(range(1, len(events) + 1))  # torn tail: not replayed

    first_step, second_step = by_kind("step.started")
    prompts, tools = by_kind("prompt.sent"), by_kind("tool.called")
    idx = {e["id"]: i + 1 for i, e in enumerate(events)}

    # right after the first prompt: one unanswered prompt, the step open
    s = states[idx[prompts[0]]]
    assert ids(s["open_steps"]) == [first_step] and ids(s["prompts"]) == [prompts[0]]
    assert s["tool_calls"] == [] and s["handshakes"] == [] and s["run"] == "open"
    # its response answers it
    assert states[idx[prompts[0]] + 1]["prompts"] == []
    # a tool call in flight between tool.called and tool.result
    s = states[idx[tools[0]]]
    assert (
        ids(s["tool_calls"]) == [tools[0]]
        and s["tool_calls"][0]["tool"] == events[idx[tools[0]] - 1]["payload"]["tool"]
    )
    assert states[idx[tools[0]] + 1]["tool_calls"] == []
    # the committed step closes: nothing open but the run
    committed = next(i + 1 for i, e in enumerate(events) if e["kind"] == "step.committed")
    s = states[committed]
    assert s["open_steps"] == s["tool_calls"] == s["prompts"] == s["handshakes"] == []
    assert [p["predicate_id"] for p in s["predicates"]] == ["tests-pass", "types-check"]
    # the interrupted step accumulates what the kill left open
    s = states[idx[second_step]]
    assert (
        ids(s["open_steps"]) == [second_step]
        and s["open_steps"][0]["step_id"] == events[idx[second_step] - 1]["step_id"]
    )
    assert s["prompts"] == [] and s["tool_calls"] == []
    s = states[len(events)]
    assert ids(s["open_steps"]) == [second_step]
    assert ids(s["prompts"]) == [prompts[1]] and ids(s["tool_calls"]) == [tools[-1]]
    hs = by_kind("handshake.requested")
    assert ids(s["handshakes"]) == hs and s["handshakes"][0]["milestone_id"] == "m-merge"
    assert s["line"] == len(events) and s["event_id"] == events[-1]["id"]
    assert s["elapsed_ns"] == events[-1]["timestamp_ns"] - events[0]["timestamp_ns"]


def test_completed_fixture_ends_closed() -> None:
    path = fixture("completed")
    steps = list(Replayer(path))
    final = steps[-1].state.to_dict()
    assert final["run"] == "completed" and len(steps) == len(file_events(path))
    assert final["open_steps"] == final["tool_calls"] == final["prompts"] == final["handshakes"] == []
    # the fixture violates one assumption (never proposed) and discharges the one it proposed
    assert len(final["assumptions"]["violated"]) == 1 and final["assumptions"]["live"] == []
    assert final["assumptions"]["discharged"] == 1


def test_assumptions_and_predicates(logs) -> None:
    a1, a2, a3 = "1" * 32, "2" * 32, "3" * 32
    path = logs.write(
        [
            ("run.started", {"intent_id": INTENT_A}, None),
            ("assumption.proposed", {"assumption_id": a1, "digest": "d", "text": "api stable"}, None),
            ("assumption.proposed", {"assumption_id": a2, "digest": "d", "text": "db up"}, None),
            ("assumption.accepted", {"assumption_id": a1, "evidence_digest": "e"}, None),
            (
                "predicate.evaluated",
                {"predicate_id": "tests", "ok": False, "required": True, "reason": "2 failing"},
                None,
            ),
            ("assumption.violated", {"assumption_id": a2, "root_id": a3}, None),
            ("predicate.evaluated", {"predicate_id": "types", "ok": True, "required": False, "reason": "ok"}, None),
            ("predicate.evaluated", {"predicate_id": "tests", "ok": True, "required": True, "reason": "fixed"}, None),
            ("assumption.discharged", {"assumption_id": a1, "digest": "d"}, None),
        ]
    )
    states = snapshots(path)
    live = lambda i: [(a["assumption_id"], a["status"]) for a in states[i]["assumptions"]["live"]]  # noqa: E731
    violated = lambda i: [(a["assumption_id"], a["root_id"]) for a in states[i]["assumptions"]["violated"]]  # noqa: E731
    assert live(3) == [(a1, "proposed"), (a2, "proposed")]
    assert live(4) == [(a1, "accepted"), (a2, "proposed")]
    assert live(6) == [(a1, "accepted")] and violated(6) == [(a2, a3)]
    assert live(9) == [] and violated(9) == [(a2, a3)] and states[9]["assumptions"]["discharged"] == 1
    verdicts = lambda i: [(p["predicate_id"], p["ok"], p["reason"]) for p in states[i]["predicates"]]  # noqa: E731
    assert verdicts(5) == [("tests", False, "2 failing")]
    assert verdicts(8) == [("tests", True, "fixed"), ("types", True, "ok")]


def test_hostile_payload_types_do_not_crash(logs) -> None:
    path = logs.write(
        [
            ("run.started", {}, None),
            ("predicate.evaluated", {"predicate_id": ["not", "a", "string"], "ok": "maybe"}, None),
            ("assumption.violated", {"assumption_id": {"x": 1}}, None),
            ("tool.called", {"tool": None, "arguments": "???"}, STEP),
        ],
        strict=False,
    )
    replayer = Replayer(path)
    final = [s.state.to_dict() for s in replayer][-1]
    assert final["predicates"][0]["predicate_id"] == '["not","a","string"]'
    assert final["assumptions"]["violated"][0]["assumption_id"] == '{"x":1}'
    assert final["tool_calls"][0]["tool"] is None
    assert replayer.exit_code == ExitCode.SCHEMA  # replayed, and the schema findings kept


# --- integrity: stop at the break ---------------------------------------


def test_tampered_fixture_stops_before_the_break() -> None:
    path = fixture("tampered")
    replayer = Replayer(path)
    steps = list(replayer)
    replayer.drain()
    assert replayer.exit_code == ExitCode.TAMPERED
    broken = replayer.reader.broken_at
    assert broken is not None and replayer.stopped_at_break == broken
    assert [s.event.line for s in steps] == list(range(1, broken))
    assert all(s.event.trusted for s in steps)


def test_malformed_line_stops_the_replay(logs) -> None:
    path = logs.five()
    lines = logs.lines(path)
    lines[2] = b"{not json\n"
    path.write_bytes(b"".join(lines))
    replayer = Replayer(path)
    # line 2's hash is confirmed by no clean successor (line 3 is no event): trust ends at line 2
    assert [s.index for s in replayer] == [1]
    assert replayer.stopped_at_break == 2
    replayer.drain()
    assert replayer.exit_code == ExitCode.TAMPERED


def test_broken_last_line_is_reported_as_a_break(logs) -> None:
    path = logs.five()
    lines = logs.lines(path)
    lines[-1] = b"[]\n"
    path.write_bytes(b"".join(lines))
    result = replay(path, ReplayOptions(workspace=None)).finish()
    assert result.stop == "break" and result.broken_at == 4 and result.events == 3
    assert result.exit_code == ExitCode.TAMPERED


def test_torn_tail_replays_everything_before_it() -> None:
    path = fixture("interrupted")
    result = replay(path, ReplayOptions(workspace=None)).finish()
    assert result.events == len(file_events(path)) and result.stop == "end"
    assert result.exit_code == ExitCode.INCOMPLETE and result.broken_at is None


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_session_exit_code_matches_the_reader(name: str) -> None:
    from ract_cli.read.reader import ChainReader

    reader = ChainReader(fixture(name))
    reader.read_all()
    assert replay(fixture(name), ReplayOptions(workspace=None)).finish().exit_code == reader.exit_code


def test_exclude_hook_skips_events_and_their_index(logs) -> None:
    path = logs.five()
    skip = lambda e: e["kind"] == "predicate.evaluated"  # noqa: E731  (as Raxol's item_delta will be)
    steps = list(Replayer(path, exclude=skip))
    assert [s.index for s in steps] == [1, 2, 3, 4]
    assert [s.event.kind for s in steps] == ["run.started", "step.started", "step.committed", "run.completed"]


# --- --until -----------------------------------------------------------


def test_until_index_stops_and_keeps_the_state_there() -> None:
    path = fixture("interrupted")
    session = replay(path, ReplayOptions(until=20, workspace=None))
    shown = [s.index for s in session.steps()]
    result = session.finish()
    assert shown == list(range(1, 21))
    assert result.until_reached and result.stop == "until" and result.state["index"] == 20
    assert result.state["kind"] == "prompt.sent" and len(result.state["prompts"]) == 1
    assert result.exit_code == ExitCode.INCOMPLETE  # the rest of the file was still verified


def test_until_event_id() -> None:
    path = fixture("aborted")
    target = file_events(path)[9]["id"]
    session = replay(path, ReplayOptions(until=target, workspace=None))
    steps = list(session.steps())
    assert steps[-1].event.event["id"] == target and len(steps) == 10
    assert session.finish().until_reached is True


def test_until_past_the_end_is_a_usage_error() -> None:
    path = fixture("aborted")
    result = replay(path, ReplayOptions(until=10_000, workspace=None)).finish()
    assert result.until_reached is False and result.exit_code == ExitCode.USAGE
    assert result.state["index"] == len(file_events(path))


def test_until_past_the_break_keeps_exit_1() -> None:
    result = replay(fixture("tampered"), ReplayOptions(until=10_000, workspace=None)).finish()
    assert result.until_reached is False and result.stop == "break" and result.exit_code == ExitCode.TAMPERED


def test_until_an_event_after_the_break_is_not_reached() -> None:
    path = fixture("tampered")
    late_id = file_events(path)[-1]["id"]
    result = replay(path, ReplayOptions(until=late_id, workspace=None)).finish()
    assert result.until_reached is False and result.exit_code == ExitCode.TAMPERED


def test_parse_until() -> None:
    assert parse_until("1") == 1 and parse_until("40") == 40
    assert parse_until("AB" * 16) == "ab" * 16
    assert parse_until("1" * 32) == "1" * 32  # 32 hex characters: an id, even if all digits
    for bad in ("0", "-1", "x", "", "1.5", "ab" * 15, "٣"):
        with pytest.raises(UsageError):
            parse_until(bad)


# --- pacing and formatting ---------------------------------------------


def test_parse_pace() -> None:
    assert parse_pace("realtime") == 1.0 and parse_pace("2x") == 2.0 and parse_pace("0.5x") == 0.5
    assert parse_pace("1000X") == 1000.0
    for bad in ("0x", "-2x", "x", "fast", "2", "infx", "nanx"):
        with pytest.raises(UsageError):
            parse_pace(bad)


def test_pace_delay_scales_caps_and_never_goes_negative() -> None:
    s = 1_000_000_000
    assert pace_delay(None, 5 * s, 1.0) == 0.0
    assert pace_delay(0, s, 1.0) == 1.0
    assert pace_delay(0, s, 4.0) == 0.25
    assert pace_delay(0, 3600 * s, 1.0) == MAX_PACE_SLEEP_S
    assert pace_delay(0, 10 * s, 1.0, cap=5.0) == 5.0
    assert pace_delay(5 * s, s, 1.0) == 0.0  # clock regression


def test_format_elapsed() -> None:
    assert format_elapsed(0) == "+0.000s"
    assert format_elapsed(12_345_678_901) == "+12.345s"
    assert format_elapsed(999_999) == "+0.000s"
    assert format_elapsed(-1_500_000_000) == "-1.500s"


def test_summarize() -> None:
    ev = {
        "kind": "tool.result",
        "step_id": STEP,
        "payload": {"tool": "pytest", "ok": False, "duration_ns": 12, "status": "unknown", "synthesized": True},
    }
    assert summarize(ev) == "[synthesized] tool=pytest ok=false status=unknown duration_ns=12"
    ev = {"kind": "step.started", "step_id": STEP, "payload": {"parent_snapshot": "c" * 40}}
    assert summarize(ev) == f"step={STEP[:12]} parent_snapshot={'c' * 12}"
    ev = {"kind": "laziness.skipped", "step_id": None, "payload": {"reason": "docs only", "n": [1], "x": 1.5}}
    assert summarize(ev) == 'reason="docs only" x=1.5'
    long = {"kind": "memory.cascade_error", "step_id": None, "payload": {f"k{i}": "v" * 50 for i in range(9)}}
    assert len(summarize(long)) <= 160


# --- the initial snapshot and recorded responses ---------------------------


def test_initial_snapshot_is_the_first_step_started() -> None:
    path = fixture("completed")
    first = next(e for e in file_events(path) if e["kind"] == "step.started")
    snap = find_initial_snapshot(path)
    assert snap.value == first["payload"]["parent_snapshot"] and snap.event_id == first["id"]


def test_initial_snapshot_absent(logs) -> None:
    path = logs.write([("run.started", {}, None), ("run.completed", {}, None)])
    assert find_initial_snapshot(path).value is None


def test_initial_snapshot_after_a_break_is_not_used(logs) -> None:
    path = logs.five()
    lines = logs.lines(path)
    lines[0] = lines[0].replace(b'"predicate_count":1', b'"predicate_count":2')
    path.write_bytes(b"".join(lines))
    assert find_initial_snapshot(path).value is None


def test_recorded_responses_in_order_per_intent(logs) -> None:
    events = [("run.started", {"intent_id": INTENT_A}, None)]
    for n, intent in enumerate([INTENT_A, INTENT_B, INTENT_A, INTENT_A, INTENT_B]):
        events.append(("prompt.sent", {"provider": "p", "intent_id": intent, "prompt_chars": n}, STEP))
        events.append(
            (
                "response.received",
                {"provider": "p", "intent_id": intent, "response_type": "text", "preview": f"answer {n}"},
                STEP,
            )
        )
    events.append(
        (
            "response.received",
            {
                "provider": "p",
                "intent_id": INTENT_B,
                "status": "timed_out",
                "synthesized": True,
                "reason": "interrupted",
                "source_event_id": "9" * 32,
            },
            STEP,
        )
    )
    path = logs.write(events)
    responses = recorded_responses(path)
    assert [r.preview for r in responses.by_intent[INTENT_A]] == ["answer 0", "answer 2", "answer 3"]
    assert [r.preview for r in responses.by_intent[INTENT_B]] == ["answer 1", "answer 4", None]
    assert responses.by_intent[INTENT_B][-1].synthesized and len(responses) == 6
    assert responses.exit_code == ExitCode.OK
    assert [responses.next(INTENT_A).preview for _ in range(3)] == ["answer 0", "answer 2", "answer 3"]
    with pytest.raises(ResponsesExhausted):
        responses.next(INTENT_A)
    with pytest.raises(ResponsesExhausted):
        responses.next("c" * 32)
    real = recorded_responses(path, include_synthesized=False)
    assert [r.preview for r in real.by_intent[INTENT_B]] == ["answer 1", "answer 4"]


def test_recorded_responses_carry_their_prompt() -> None:
    path = fixture("aborted")
    events = file_events(path)
    received = [e for e in events if e["kind"] == "response.received"]
    responses = recorded_responses(path)
    flat = [r for rs in responses.by_intent.values() for r in rs]
    assert [r.event_id for r in flat] == [e["id"] for e in received]
    assert [r.prompt_event_id for r in flat] == [e["parent_id"] for e in received]


def test_recorded_responses_stop_at_the_break() -> None:
    path = fixture("tampered")
    responses = recorded_responses(path)
    broken = next(f.line for f in responses.findings if f.code == "HASH_MISMATCH")
    assert responses.exit_code == ExitCode.TAMPERED
    assert all(r.line < broken for rs in responses.by_intent.values() for r in rs)
    assert len(responses) == sum(1 for e in file_events(path)[: broken - 1] if e["kind"] == "response.received")


def test_summarize_survives_nesting_deeper_than_the_encoders() -> None:
    deep: object = "x"
    for _ in range(5000):
        deep = [deep]
    text = summarize({"kind": "tool.called", "step_id": None, "payload": {"tool": "t", "arguments": deep}})
    assert text.startswith("tool=t arguments=") and len(text) <= 160


def test_deeply_nested_payload_replays(logs) -> None:
    deep: object = 1
    for _ in range(400):  # deeper than orjson writes (255), shallower than the reader's limit
        deep = {"d": deep}
    event = logs.rehash(
        {
            "id": "f" * 32,
            "run_id": "1a2b3c4d5e6f708192a3b4c5d6e7f809",
            "step_id": None,
            "parent_id": None,
            "timestamp_ns": 5,
            "kind": "laziness.skipped",
            "payload": {"reason": "deep", "nested": deep},
            "prev_hash": "0" * 64,
        }
    )
    path = logs.path()
    path.write_bytes(logs.line_of(event))
    steps = list(Replayer(path))
    assert len(steps) == 1 and steps[0].event.trusted
    assert summarize(steps[0].event.event) == "reason=deep"


def test_current_step_follows_opens_and_closes(logs) -> None:
    s1, s2 = "1" * 32, "2" * 32
    path = logs.write(
        [
            ("run.started", {}, None),
            ("step.started", {}, s1),
            ("step.started", {}, s2),
            ("step.committed", {}, s2),
            ("tool.called", {"tool": "x"}, s1),
            ("step.rolled_back", {}, s1),
        ]
    )
    assert [s.state.current_step_id for s in Replayer(path)] == [None, s1, s2, s1, s1, None]


def test_replay_detects_a_raxol_journal() -> None:
    from ract_cli.replay.journal import JournalReplaySession

    journal = ROOT / "fixtures" / "journals" / "accepted.jsonl"
    session = replay(journal, ReplayOptions(workspace=None))
    assert isinstance(session, JournalReplaySession)
    kinds = [s.event.kind for s in session.steps()]
    assert kinds and "item_delta" not in kinds and session.finish().exit_code == ExitCode.OK
    # the RACT replayer itself reads the ract dialect only: a journal is no RACT log
    replayer = Replayer(journal)
    assert list(replayer) == [] and replayer.stopped_at_break == 1


def test_result_to_dict_is_json(logs, tmp_path: Path) -> None:
    import orjson

    path = logs.five()
    session = replay(path, ReplayOptions(until=3, workspace=str(tmp_path), check_commits=True))
    list(session.steps())
    data = orjson.loads(orjson.dumps(session.finish().to_dict()))
    assert data["stop"] == "until" and data["state"]["index"] == 3 and data["exit_code"] == 0
    assert data["workspace"]["checked"] is False
    assert {f["code"] for f in data["findings"]} == {"PRECONDITION_UNCHECKED"}


# --- property: nothing after an unverified point is ever replayed ----------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_ABORTED = fixture("aborted").read_bytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, len(_ABORTED) - 1), st.integers(1, 255), st.booleans())
def test_any_flip_or_cut_replays_only_a_verified_prefix(tmp_path_factory, pos: int, xor: int, cut: bool) -> None:
    data = _ABORTED[:pos] if cut else _ABORTED[:pos] + bytes([_ABORTED[pos] ^ xor]) + _ABORTED[pos + 1 :]
    path = tmp_path_factory.mktemp("flip") / "events.jsonl"
    path.write_bytes(data)
    session = replay(path, ReplayOptions(workspace=None))
    steps = list(session.steps())
    result = session.finish()
    raw = b"".join(s.event.raw for s in steps)
    assert data.startswith(raw)  # the replayed lines are the file's first lines, byte for byte
    assert all(s.event.trusted for s in steps)
    if result.broken_at is not None:
        assert result.exit_code == ExitCode.TAMPERED
        assert all(s.event.line < result.broken_at for s in steps)
    if steps and result.exit_code == ExitCode.OK:
        assert raw == data  # a clean verdict means every line was replayed
