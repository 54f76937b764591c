"""``ract_cli.diff``: normalisation, alignment, causality, journals, verification (SPEC §15)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from difflib import SequenceMatcher
from pathlib import Path

import pytest
from diff_support import Ev, base_run, journal_records, kind_blocks, rerun, with_payload, write_journal, write_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ract_cli import ExitCode, UsageError
from ract_cli.diff import DiffOptions, align, diff_logs, rules_markdown, sides
from ract_cli.diff.pairing import PAIRING_CELLS, Pairing, budget, match_kinds, pair_kinds

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
COMPLETED = FIXTURES / "runs" / "120d7eae7ee0c9c181816e553722e2fe" / "events.jsonl"
TAMPERED = FIXTURES / "runs" / "8686994841309902af40ce3e190711e7" / "events.jsonl"
FOREIGN = FIXTURES / "runs" / "450e154f62c2d870c077f0b9edeee9d7" / "events.jsonl"
ACCEPTED = FIXTURES / "journals" / "accepted.jsonl"

Spec = list[Ev]


def _index(spec: Spec, kind: str, nth: int = 0) -> int:
    return [i for i, ev in enumerate(spec) if ev.kind == kind][nth]


def _replace(spec: Spec, index: int, ev: Ev) -> Spec:
    return [*spec[:index], ev, *spec[index + 1 :]]


def _flip_ok(spec: Spec) -> Spec:
    i = _index(spec, "tool.result", 1)
    return _replace(spec, i, with_payload(spec[i], ok=True))


def _insert_predicate(spec: Spec) -> Spec:
    i = _index(spec, "predicate.evaluated")
    extra = Ev(
        "predicate.evaluated",
        {"predicate_id": "types-check", "kind": "type", "required": False, "ok": True},
        step="s1",
    )
    return [*spec[:i], extra, *spec[i:]]


def _delete_reap(spec: Spec) -> Spec:
    i = _index(spec, "process.reaped")
    return [*spec[:i], *spec[i + 1 :]]


def _result_closes_other_call(spec: Spec) -> Spec:
    i = _index(spec, "tool.result", 1)
    return _replace(spec, i, Ev(spec[i].kind, spec[i].payload, step="s1", parent="c1"))


def _times_and_pids(spec: Spec) -> Spec:
    out = []
    for ev in spec:
        changes = {k: ev.payload[k] * 7 + 3 for k in ("duration_ns", "reap_latency_ms", "pid") if k in ev.payload}
        out.append(with_payload(ev, **changes) if changes else ev)
    return out


def _preview(spec: Spec) -> Spec:
    i = _index(spec, "response.received")
    return _replace(spec, i, with_payload(spec[i], preview="plan: something else"))


def _snapshot(spec: Spec) -> Spec:
    i = _index(spec, "step.started")
    return _replace(spec, i, with_payload(spec[i], parent_snapshot="c" * 40))


def _env(spec: Spec) -> Spec:
    i = _index(spec, "tool.called")
    args = {**spec[i].payload["arguments"], "env": {"LANG": "C.UTF-8"}}
    return _replace(spec, i, with_payload(spec[i], arguments=args))


def _other_step(spec: Spec) -> Spec:
    i = _index(spec, "process.reaped")
    return _replace(spec, i, Ev(spec[i].kind, spec[i].payload, step="s2"))


def _foreign_run_id(spec: Spec) -> Spec:
    i = _index(spec, "tool.invocation.pre")
    return _replace(spec, i, with_payload(spec[i], run_id="f" * 32))


CALL = {"tool": "pytest", "arguments": {"argv": ["pytest", "-x"]}}
FAIL = {"tool": "pytest", "ok": False, "duration_ns": 5}
PASS = {"tool": "pytest", "ok": True, "duration_ns": 5}


def _retries(failures: int) -> Spec:
    """A step that calls pytest until it passes: ``failures`` failed attempts first."""
    spec = [
        Ev("run.started", {"intent_id": "0" * 32}),
        Ev("step.started", {"parent_snapshot": "a" * 40}, step="s", name="st"),
    ]
    for k in range(failures + 1):
        spec.append(Ev("tool.called", CALL, step="s", name=f"c{k}"))
        spec.append(Ev("tool.result", FAIL if k < failures else PASS, step="s", parent=f"c{k}"))
    spec.append(Ev("run.completed", {"final_decision": "accept"}))
    return spec


def _two_calls(swap: bool) -> Spec:
    first, second = ("c2", "c1") if swap else ("c1", "c2")
    return [
        Ev("run.started", {"intent_id": "0" * 32}),
        Ev("tool.called", CALL, name="c1"),
        Ev("tool.called", CALL, name="c2"),
        Ev("tool.result", PASS, parent=first),
        Ev("tool.result", PASS, parent=second),
        Ev("run.completed", {"final_decision": "accept"}),
    ]


# (name, A spec, B spec, options, exit code, (changed, inserted, deleted), first op, first divergence's fields)
CASES: list[tuple[str, Spec, Spec, DiffOptions, int, tuple[int, int, int], str | None, set[tuple[str, str]]]] = [
    ("identical", base_run(), base_run(), DiffOptions(), 0, (0, 0, 0), None, set()),
    ("one insertion", base_run(), _insert_predicate(base_run()), DiffOptions(), 8, (0, 1, 0), "inserted", set()),
    ("one deletion", base_run(), _delete_reap(base_run()), DiffOptions(), 8, (0, 0, 1), "deleted", set()),
    ("changed field", base_run(), _flip_ok(base_run()), DiffOptions(), 8, (1, 0, 0), "changed", {("payload", "ok")}),
    (
        "changed causality",
        base_run(),
        _result_closes_other_call(base_run()),
        DiffOptions(),
        8,
        (1, 0, 0),
        "changed",
        {("envelope", "parent_id")},
    ),
    ("times and pids ignored", base_run(), _times_and_pids(base_run()), DiffOptions(), 0, (0, 0, 0), None, set()),
    (
        "preview differs",
        base_run(),
        _preview(base_run()),
        DiffOptions(),
        8,
        (1, 0, 0),
        "changed",
        {("payload", "preview")},
    ),
    ("--ignore preview", base_run(), _preview(base_run()), DiffOptions(ignore=("preview",)), 0, (0, 0, 0), None, set()),
    (
        "--compare duration_ns",
        base_run(),
        _times_and_pids(base_run()),
        DiffOptions(compare=("duration_ns",)),
        8,
        (4, 0, 0),  # two tool results, the predicate, run.completed
        "changed",
        {("payload", "duration_ns")},
    ),
    (
        "snapshot differs",
        base_run(),
        _snapshot(base_run()),
        DiffOptions(),
        8,
        (1, 0, 0),
        "changed",
        {("payload", "parent_snapshot")},
    ),
    (
        "--ignore-snapshots",
        base_run(),
        _snapshot(base_run()),
        DiffOptions(ignore_snapshots=True),
        0,
        (0, 0, 0),
        None,
        set(),
    ),
    (
        "--ignore-snapshots --compare parent_snapshot",
        base_run(),
        _snapshot(base_run()),
        DiffOptions(ignore_snapshots=True, compare=("parent_snapshot",)),
        8,
        (1, 0, 0),
        "changed",
        {("payload", "parent_snapshot")},
    ),
    (
        "nested field differs",
        base_run(),
        _env(base_run()),
        DiffOptions(),
        8,
        (1, 0, 0),
        "changed",
        {("payload", "arguments.env.LANG")},
    ),
    (
        "--ignore a dotted path",
        base_run(),
        _env(base_run()),
        DiffOptions(ignore=("arguments.env",)),
        0,
        (0, 0, 0),
        None,
        set(),
    ),
    (
        "event of another step",
        base_run(),
        _other_step(base_run()),
        DiffOptions(),
        8,
        (1, 0, 0),
        "changed",
        {("envelope", "step_id")},
    ),
    (
        "--ignore step_id",
        base_run(),
        _other_step(base_run()),
        DiffOptions(ignore=("step_id",)),
        0,
        (0, 0, 0),
        None,
        set(),
    ),
    (
        "payload run_id of another run",
        base_run(),
        _foreign_run_id(base_run()),
        DiffOptions(),
        8,
        (1, 0, 0),
        "changed",
        {("payload", "run_id")},
    ),
    (
        "--compare timestamp_ns",
        base_run(),
        base_run(),
        DiffOptions(compare=("timestamp_ns",)),
        8,
        (15, 0, 0),
        "changed",
        {("envelope", "timestamp_ns")},
    ),
    ("one more retry is two insertions", _retries(1), _retries(2), DiffOptions(), 8, (0, 2, 0), "inserted", set()),
    ("one retry fewer is two deletions", _retries(2), _retries(1), DiffOptions(), 8, (0, 0, 2), "deleted", set()),
    ("same retries", _retries(3), _retries(3), DiffOptions(), 0, (0, 0, 0), None, set()),
    (
        "an event of a step inserted before the step starts",
        base_run(),
        [base_run()[0], Ev("budget.declared", {"budget_max": 16}, step="s1"), *base_run()[1:]],
        DiffOptions(),
        8,
        (0, 1, 0),
        "inserted",
        set(),
    ),
    (
        "a duplicate result of another step next to its twin",
        _retries(0),
        [*_retries(0)[:3], Ev("tool.result", PASS, step="other", parent="c0"), *_retries(0)[3:]],
        DiffOptions(),
        8,
        (0, 1, 0),
        "inserted",
        set(),
    ),
    (
        "identical calls, results swapped",
        _two_calls(False),
        _two_calls(True),
        DiffOptions(),
        8,
        (2, 0, 0),
        "changed",
        {("envelope", "parent_id")},
    ),
]


@pytest.mark.parametrize(
    ("name", "spec_a", "spec_b", "options", "code", "counts", "op", "fields"), CASES, ids=[c[0] for c in CASES]
)
def test_diff_cases(
    tmp_path: Path,
    name: str,
    spec_a: Spec,
    spec_b: Spec,
    options: DiffOptions,
    code: int,
    counts: tuple[int, int, int],
    op: str | None,
    fields: set[tuple[str, str]],
) -> None:
    a = write_run(tmp_path / "a" / "events.jsonl", spec_a, seed=1)
    b = write_run(tmp_path / "b" / "events.jsonl", spec_b, seed=2)
    result = diff_logs(a, b, options)
    assert result.a.verified and result.b.verified
    assert int(result.exit_code) == code
    assert (result.counts["changed"], result.counts["inserted"], result.counts["deleted"]) == counts
    assert result.equal + result.counts["changed"] + result.counts["deleted"] == len(spec_a)
    assert result.equal + result.counts["changed"] + result.counts["inserted"] == len(spec_b)
    if op is None:
        assert result.first is None
        assert result.verdict == "equivalent"
        return
    assert result.first is not None and result.first.op == op
    assert result.verdict == "different"
    if op == "changed":
        assert {(f.where, f.field) for f in result.first.fields} == fields


def test_first_divergence_names_both_events_and_values(tmp_path: Path) -> None:
    spec = base_run()
    a = write_run(tmp_path / "a.jsonl", spec, seed=1)
    b = write_run(tmp_path / "b.jsonl", _flip_ok(spec), seed=2)
    result = diff_logs(a, b)
    first = result.first
    assert first is not None and first.a is not None and first.b is not None
    line = _index(spec, "tool.result", 1) + 1
    assert (first.a_index, first.b_index, first.a.line, first.b.line) == (line, line, line, line)
    assert first.a.kind == first.b.kind == "tool.result"
    assert first.a.event["payload"]["ok"] is False and first.b.event["payload"]["ok"] is True
    [ok] = first.fields
    assert (ok.a, ok.b) == (False, True)
    assert [e.to_dict()["op"] for e in result.entries] == ["changed"]
    assert result.by_kind == {"tool.result": {"changed": 1, "inserted": 0, "deleted": 0}}


def test_a_reference_says_where_each_side_points(tmp_path: Path) -> None:
    spec = base_run()
    result = diff_logs(
        write_run(tmp_path / "a.jsonl", spec, seed=1),
        write_run(tmp_path / "b.jsonl", _result_closes_other_call(spec), seed=2),
    )
    assert result.first is not None
    [parent] = result.first.fields
    c1, c2 = _index(spec, "tool.called", 0) + 1, _index(spec, "tool.called", 1) + 1
    assert parent.a_target is not None and parent.b_target is not None
    assert (parent.a_target.index, parent.a_target.aligned_with) == (c2, c2)
    assert parent.b_target.index == c1
    assert parent.to_dict()["reference"] == {
        "a": {"index": c2, "line": c2, "aligned_with": c2},
        "b": {"index": c1, "line": c1},
    }


def test_insertion_is_one_insertion_not_every_later_event(tmp_path: Path) -> None:
    spec = base_run()
    early = [spec[0], Ev("budget.declared", {"budget_max": 16}), *spec[1:]]
    result = diff_logs(write_run(tmp_path / "a.jsonl", spec, seed=1), write_run(tmp_path / "b.jsonl", early, seed=2))
    assert (result.counts, result.equal) == ({"changed": 0, "inserted": 1, "deleted": 0}, len(spec))
    assert result.first is not None and result.first.op == "inserted"
    assert (result.first.a_index, result.first.b_index) == (2, 2)
    assert result.first.b is not None and result.first.b.kind == "budget.declared"
    assert result.first.a is not None and result.first.a.kind == "step.started"  # what A has there


# --- fixtures and faithful re-runs -------------------------------------------------------


@pytest.mark.parametrize(
    ("payload_ids", "jitter"),
    [(False, False), (True, False), (True, True)],
    ids=["same-payloads", "payload-ids", "jitter"],
)
def test_faithful_rerun_of_the_completed_fixture_is_equivalent(tmp_path: Path, payload_ids: bool, jitter: bool) -> None:
    b = rerun(COMPLETED, tmp_path / "b" / "events.jsonl", payload_ids=payload_ids, jitter=jitter)
    result = diff_logs(COMPLETED, b)
    assert (result.exit_code, result.verdict, result.equal) == (ExitCode.OK, "equivalent", 156)


def test_foreign_format_fixture_and_its_rerun_are_equivalent(tmp_path: Path) -> None:
    result = diff_logs(FOREIGN, rerun(FOREIGN, tmp_path / "b.jsonl", payload_ids=True))
    assert result.exit_code == ExitCode.OK


def test_rerun_diverging_at_one_tool_result(tmp_path: Path) -> None:
    events = [json.loads(line) for line in COMPLETED.read_bytes().splitlines()]
    target = next(i for i, e in enumerate(events) if e["kind"] == "tool.result" and e["payload"]["ok"] is True)

    def flip(index: int, kind: str, payload: dict) -> dict | None:
        return {**payload, "ok": False} if index == target else None

    b = rerun(COMPLETED, tmp_path / "b.jsonl", payload_ids=True, edit=flip)
    result = diff_logs(COMPLETED, b)
    assert result.exit_code == ExitCode.DIFFERENT
    assert result.first is not None and result.first.a is not None and result.first.b is not None
    assert result.first.a.line == result.first.b.line == target + 1
    assert [(f.where, f.field, f.a, f.b) for f in result.first.fields] == [("payload", "ok", True, False)]
    assert result.counts == {"changed": 1, "inserted": 0, "deleted": 0}


def test_tampered_side_exits_1_and_compares_trusted_events_only(tmp_path: Path) -> None:
    result = diff_logs(COMPLETED, TAMPERED)
    assert result.exit_code == ExitCode.TAMPERED
    assert result.verdict == "unverified" and not result.b.verified and result.a.verified
    assert result.b.untrusted > 0 and result.b.untrusted_from_line is not None
    assert result.b.events + result.b.untrusted == 104
    assert any(f.code == "HASH_MISMATCH" for f in result.b.findings)
    # the same run, tampered, against itself: still 1, never 0 or 8
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(TAMPERED, copy)
    assert diff_logs(TAMPERED, copy).exit_code == ExitCode.TAMPERED


def test_missing_side_is_io_and_nothing_is_compared(tmp_path: Path) -> None:
    result = diff_logs(COMPLETED, tmp_path / "nope.jsonl")
    assert result.exit_code == ExitCode.IO and not result.compared and result.first is None
    assert result.to_dict()["different"] is None


def test_lowest_code_wins(tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(COMPLETED.read_bytes()[:-40])  # a torn tail: 4
    assert diff_logs(torn, COMPLETED).exit_code == ExitCode.INCOMPLETE
    assert diff_logs(torn, TAMPERED).exit_code == ExitCode.TAMPERED


def test_a_run_directory_is_its_events_jsonl() -> None:
    assert diff_logs(COMPLETED.parent, COMPLETED).exit_code == ExitCode.OK


# --- Raxol journals -------------------------------------------------------------------------


def _journal_case(tmp_path: Path, change: Callable[[list[dict]], list[dict]]) -> tuple[int, object]:
    records = change(journal_records(ACCEPTED))
    b = write_journal(tmp_path / "b.jsonl", records)
    result = diff_logs(ACCEPTED, b)
    return int(result.exit_code), result


def _shift_times(records: list[dict]) -> list[dict]:
    return [{**r, "at_ms": r["at_ms"] + 5000, "seq": r["seq"] + 100} for r in records]


def _other_deltas(records: list[dict]) -> list[dict]:
    out = []
    for r in records:
        if r["type"] == "item_delta":
            out.append({**r, "payload": {**r["payload"], "chunk": "different chunking"}})
            out.append(r)
        else:
            out.append(r)
    return out


def _rename_items(records: list[dict]) -> list[dict]:
    """Item ids renamed consistently inside each turn (i1 -> item-a1...): the same items."""

    def ren(p: dict) -> dict:
        return {k: (f"item-{v}" if k in ("item_id", "tool_use_id") else v) for k, v in p.items()}

    return [{**r, "payload": ren(r["payload"])} for r in records]


def _tool_use_elsewhere(records: list[dict]) -> list[dict]:
    out, done = [], False
    for r in records:
        p = r["payload"]
        if not done and r["type"] == "item_completed" and "tool_use_id" in p:
            r = {**r, "payload": {**p, "tool_use_id": "i1"}}
            done = True
        out.append(r)
    return out


def _text_changed(records: list[dict]) -> list[dict]:
    i = next(i for i, r in enumerate(records) if r["type"] == "item_completed" and "text" in r["payload"])
    return [
        *records[:i],
        {**records[i], "payload": {**records[i]["payload"], "text": "another answer"}},
        *records[i + 1 :],
    ]


@pytest.mark.parametrize(
    ("change", "code", "fields"),
    [
        (lambda r: r, 0, None),
        (_shift_times, 0, None),
        (_other_deltas, 0, None),
        (_rename_items, 0, None),
        (_tool_use_elsewhere, 8, {("payload", "tool_use_id")}),
        (_text_changed, 8, {("payload", "text")}),
    ],
    ids=["copy", "times-and-seq", "item-delta-never-compared", "item-ids-renamed", "tool-use-elsewhere", "text"],
)
def test_journals(tmp_path: Path, change: Callable[[list[dict]], list[dict]], code: int, fields: set | None) -> None:
    got, result = _journal_case(tmp_path, change)
    assert got == code
    assert result.a.dialect == result.b.dialect == "raxol"  # type: ignore[attr-defined]
    assert result.a.excluded > 0  # type: ignore[attr-defined]
    if fields is not None:
        assert {(f.where, f.field) for f in result.first.fields} == fields  # type: ignore[attr-defined]


def _turn(n: int, use: str, result: str, final: bool) -> list[dict]:
    done: dict = {"final": final, "iteration": n, "usage": {"input_tokens": 10}}
    if final:
        done["evidence"] = "absent"
    return [
        {"type": "turn_started", "payload": {"prompt": f"turn {n}"}, "schema_version": "1.1.0"},
        {"type": "item_started", "payload": {"item_id": use, "item_type": "tool_use"}},
        {"type": "item_completed", "payload": {"item_id": use, "item_type": "tool_use", "name": "bash"}},
        {"type": "item_started", "payload": {"item_id": result, "item_type": "tool_result"}},
        {
            "type": "item_completed",
            "payload": {"item_id": result, "item_type": "tool_result", "tool_use_id": use, "output": "ok"},
        },
        {"type": "turn_completed", "payload": done},
    ]


def test_journal_item_ids_are_turn_scoped(tmp_path: Path) -> None:
    """Each turn numbers its items afresh (i1, i2...): i1 of turn 2 is a new item, not turn 1's i1."""
    a = write_journal(tmp_path / "a.jsonl", _turn(1, "i1", "i2", False) + _turn(2, "i1", "i2", True))
    renamed = write_journal(tmp_path / "b.jsonl", _turn(1, "i1", "i2", False) + _turn(2, "i7", "i8", True))
    assert diff_logs(a, renamed).exit_code == ExitCode.OK
    # turn 2's result naming an item of turn 1 is another item: a divergence
    records = _turn(1, "i1", "i2", False) + _turn(2, "i7", "i8", True)
    records[10]["payload"]["tool_use_id"] = "i1"
    result = diff_logs(a, write_journal(tmp_path / "c.jsonl", records))
    assert result.exit_code == ExitCode.DIFFERENT
    assert result.first is not None and [(f.where, f.field) for f in result.first.fields] == [
        ("payload", "tool_use_id")
    ]
    assert result.first.a is not None and result.first.a.line == 11


def test_journal_against_run_log_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="raxol"):
        diff_logs(COMPLETED, ACCEPTED)


# --- options ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (DiffOptions(compare=("preview",)), "not a field the normalisation table leaves out"),
        (DiffOptions(ignore=("ok",), compare=("ok",)), "not a field"),
        (DiffOptions(ignore=("duration_ns",), compare=("duration_ns",)), "both name duration_ns"),
        (DiffOptions(ignore=("payload",)), "--ignore payload"),
        (DiffOptions(ignore=("a..b",)), "dotted path"),
    ],
)
def test_bad_options_are_usage_errors(options: DiffOptions, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        diff_logs(COMPLETED, COMPLETED, options)


def test_json_shape_is_stable(tmp_path: Path) -> None:
    b = write_run(tmp_path / "b.jsonl", _flip_ok(base_run()), seed=2)
    data = diff_logs(write_run(tmp_path / "a.jsonl", base_run(), seed=1), b).to_dict()
    assert list(data) == [
        "format",
        "version",
        "verdict",
        "exit_code",
        "exit_name",
        "compared",
        "different",
        "a",
        "b",
        "options",
        "alignment",
        "first_divergence",
        "summary",
        "entries",
        "entries_not_shown",
    ]
    assert (data["format"], data["version"], data["verdict"], data["exit_code"]) == ("ract.diff", 1, "different", 8)
    assert set(data["a"]) == {
        "path", "dialect", "run_id", "verified", "exit_code", "exit_name", "events", "excluded", "untrusted",
        "untrusted_from_line", "findings", "findings_not_shown",
    }  # fmt: skip
    assert set(data["first_divergence"]) == {"op", "a_index", "b_index", "a", "b", "fields"}
    assert data["first_divergence"]["fields"] == [
        {"where": "payload", "field": "ok", "path": ["ok"], "a": False, "b": True}
    ]
    assert set(data["summary"]) == {"equal", "changed", "inserted", "deleted", "by_kind"}
    assert data["entries"][0]["fields"] == [{"where": "payload", "field": "ok"}]
    json.dumps(data)  # plain JSON all the way down


def test_docs_hold_the_normalisation_table() -> None:
    assert rules_markdown() in (ROOT / "docs" / "diff.md").read_text(encoding="utf-8")


# --- alignment bounds -------------------------------------------------------------------------


def test_bounded_alignment_still_accounts_for_every_event(tmp_path: Path) -> None:
    spec = base_run()
    other = _delete_reap(_insert_predicate(_flip_ok(spec)))
    result = diff_logs(
        write_run(tmp_path / "a.jsonl", spec, seed=1),
        write_run(tmp_path / "b.jsonl", other, seed=2),
        DiffOptions(max_edits=1),
    )
    assert result.alignment is not None and result.alignment["exact"] is False
    assert result.equal + result.counts["changed"] + result.counts["deleted"] == len(spec)
    assert result.equal + result.counts["changed"] + result.counts["inserted"] == len(other)


def test_align_large_sequences_quickly() -> None:
    a = list(range(200_000))
    b = [*a[:1000], -1, *a[1000:150_000], *a[150_001:]]
    result = align(a, b)
    assert result.exact and result.edits == 2


# --- pairing by kind inside a hunk: bounded work ----------------------------------------------

X, Y = "sandbox.granted", "sandbox.denied"
CALLED, RESULT, REAPED = "tool.called", "tool.result", "process.reaped"

# (name, A's blocks, B's blocks, changed): each block is one hunk (no event of A equals one of B in it),
# paired by kind alone; ``changed`` is the longest common subsequence of the kinds, summed over the hunks.
# Few kinds, repeated: the old pairing (difflib's longest match first, unbounded) took cubic steps on each.
HOSTILE_HUNKS: list[tuple[str, list[list[str]], list[list[str]], int]] = [
    ("one hunk, A all X, B alternating Y and X", [[X] * 300], [[Y, X] * 150], 150),
    ("four such hunks", [[X] * 200] * 4, [[Y, X] * 100] * 4, 400),
    ("call and result against call, result and reap", [[CALLED, RESULT] * 200], [[CALLED, RESULT, REAPED] * 200], 400),
]


def _allowed(n: int, m: int) -> int:
    """The work a hunk of n by m events may take: 10 steps a cell (the old pairing took over 3x this here)."""
    return 10 * n * m + 50_000


def _kinds(path: Path) -> list[str]:
    return [json.loads(line)["kind"] for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(("name", "blocks_a", "blocks_b", "changed"), HOSTILE_HUNKS, ids=[c[0] for c in HOSTILE_HUNKS])
def test_hostile_hunks_pair_in_bounded_work(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    blocks_a: list[list[str]],
    blocks_b: list[list[str]],
    changed: int,
) -> None:
    calls: list[tuple[int, int, Pairing]] = []

    def counted(ka: Sequence[int], kb: Sequence[int]) -> Pairing:
        pairing = pair_kinds(ka, kb)
        calls.append((len(ka), len(kb), pairing))
        return pairing

    monkeypatch.setattr(sides, "pair_kinds", counted)
    spec_a, spec_b = kind_blocks(blocks_a, "a"), kind_blocks(blocks_b, "b")
    a = write_run(tmp_path / "a" / "events.jsonl", spec_a, seed=1)
    b = write_run(tmp_path / "b" / "events.jsonl", spec_b, seed=2)
    result = diff_logs(a, b, DiffOptions(max_entries=100_000))

    # one pairing per hunk (not one per pass over it), each past the matcher's budget and within the bound
    assert [(n, m) for n, m, _ in calls] == [(len(x), len(y)) for x, y in zip(blocks_a, blocks_b, strict=True)]
    for n, m, pairing in calls:
        assert pairing.method != "matcher"
        assert pairing.work <= _allowed(n, m), (n, m, pairing.method, pairing.work)

    # still a complete diff: every event of each side is equal, changed, deleted or inserted, exactly once
    assert result.alignment is not None and result.alignment["exact"]
    assert result.equal == len(spec_a) - sum(map(len, blocks_a)) == len(spec_b) - sum(map(len, blocks_b))
    assert result.equal + result.counts["changed"] + result.counts["deleted"] == len(spec_a)
    assert result.equal + result.counts["changed"] + result.counts["inserted"] == len(spec_b)
    assert result.entries_not_shown == 0 and len(result.entries) == sum(result.counts.values())
    in_a = [e.a_index for e in result.entries if e.a_index is not None]
    in_b = [e.b_index for e in result.entries if e.b_index is not None]
    assert len(set(in_a)) == len(in_a) == len(spec_a) - result.equal
    assert len(set(in_b)) == len(in_b) == len(spec_b) - result.equal
    # and a good one: changed events pair events of one kind, as many as the kinds allow
    kinds_a, kinds_b = _kinds(a), _kinds(b)
    for e in result.entries:
        if e.op == "changed":
            assert e.a_index is not None and e.b_index is not None
            assert kinds_a[e.a_index - 1] == kinds_b[e.b_index - 1] == e.kind
    assert result.counts["changed"] == changed


@settings(max_examples=300, deadline=None)
@given(a=st.lists(st.integers(0, 3), max_size=40), b=st.lists(st.integers(0, 3), max_size=40))
def test_property_kind_matcher_is_sequence_matchers_alignment(a: list[int], b: list[int]) -> None:
    groups, work = match_kinds(a, b, budget(len(a), len(b)))
    assert groups == SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    assert work <= budget(len(a), len(b))


def test_kind_matcher_stops_at_its_limit() -> None:
    a, b = [0] * 300, [1, 0] * 150
    groups, work = match_kinds(a, b, 10**9)
    assert groups == SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    assert work > 1_000_000  # cubic: the shape the budget is for
    stopped, spent = match_kinds(a, b, 100_000)
    assert stopped is None and 100_000 < spent <= 100_000 + len(b) + 1


@pytest.mark.parametrize(
    ("ka", "kb", "method"),
    [
        ([], [1, 2], "trivial"),
        ([0, 0], [], "trivial"),
        ([0, 1, 2, 1], [1, 0, 2], "matcher"),
        ([0, 1] * 40, [2, 0, 1] * 30, "matcher"),
        ([0] * 300, [1, 0] * 150, "myers"),
        ([0] * (PAIRING_CELLS // 1000 + 1), [1, 0] * 500, "positional"),
    ],
    ids=["insert only", "delete only", "small", "small, repeated kinds", "hostile", "too large"],
)
def test_pairing_method_and_groups(ka: list[int], kb: list[int], method: str) -> None:
    pairing = pair_kinds(ka, kb)
    assert pairing.method == method
    if method == "matcher":
        assert pairing.groups == SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes()
    assert pairing.work <= _allowed(len(ka), len(kb))
    i = j = 0  # the groups cover both sequences in order, and "equal" groups pair equal kinds
    for tag, i1, i2, j1, j2 in pairing.groups:
        assert (i1, j1) == (i, j) and i1 <= i2 and j1 <= j2
        if tag == "equal":
            assert ka[i1:i2] == kb[j1:j2]
        i, j = i2, j2
    assert (i, j) == (len(ka), len(kb))


# --- properties --------------------------------------------------------------------------------

_KINDS = [
    ("tool.called", {"tool": "pytest", "arguments": {"argv": ["pytest"]}}),
    ("tool.called", {"tool": "ruff", "arguments": {}}),
    ("tool.result", {"tool": "pytest", "ok": True, "duration_ns": 3}),
    ("tool.result", {"tool": "pytest", "ok": False, "duration_ns": 4}),
    ("predicate.evaluated", {"predicate_id": "p", "kind": "test", "ok": True, "duration_ns": 1}),
    ("budget.declared", {"budget_max": 16}),
    ("process.reaped", {"pid": 7, "argv0": "x", "reason": "exited", "reap_latency_ms": 2}),
    ("retrieval.requested", {"budget": 10, "call_id": "@gen:q"}),
    ("retrieval.satisfied", {"call_id": "@gen:q", "step_id": "@step:s1"}),
    ("response.validated", {"step_id": "@step:s2", "kind": "edit"}),
    ("tool.invocation.pre", {"run_id": "@run", "tool_id": "pytest"}),
]

_event = st.tuples(st.integers(0, len(_KINDS) - 1), st.integers(0, 3), st.booleans())


@st.composite
def _specs(draw: st.DrawFn) -> Spec:
    """Random runs: kinds from a small alphabet (so identical events repeat), steps, parents."""
    spec = [Ev("run.started", {"intent_id": "0" * 32}, name="e0")]
    for n, (k, step, parented) in enumerate(draw(st.lists(_event, max_size=25)), start=1):
        kind, payload = _KINDS[k]
        parent = f"e{draw(st.integers(0, n - 1))}" if parented else None
        spec.append(Ev(kind, payload, step=f"s{step}" if step else None, parent=parent, name=f"e{n}"))
    return spec


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=_specs(), seed=st.integers(2, 10**6))
def test_property_fresh_ids_and_times_are_always_equivalent(tmp_path: Path, spec: Spec, seed: int) -> None:
    a = write_run(tmp_path / "pa.jsonl", spec, seed=1)
    b = write_run(tmp_path / "pb.jsonl", spec, seed=seed, step_ms=37)
    try:
        result = diff_logs(a, b)
        assert result.exit_code == ExitCode.OK, result.to_dict()["entries"]
    finally:
        a.unlink()
        b.unlink()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=_specs(), data=st.data())
def test_property_one_inserted_event_is_exactly_one_insertion(tmp_path: Path, spec: Spec, data: st.DataObject) -> None:
    at = data.draw(st.integers(1, len(spec)))
    kind, payload = _KINDS[data.draw(st.integers(0, len(_KINDS) - 1))]
    step = data.draw(st.sampled_from([None, "s1", "s2", "s3"]))  # even a step that starts later
    parent = data.draw(st.sampled_from([None, *[ev.name for ev in spec[:at]]]))
    inserted = [*spec[:at], Ev(kind, payload, step=step, parent=parent, name="new"), *spec[at:]]
    a = write_run(tmp_path / "ia.jsonl", spec, seed=1)
    b = write_run(tmp_path / "ib.jsonl", inserted, seed=2)
    try:
        result = diff_logs(a, b)
        assert result.exit_code == ExitCode.DIFFERENT
        assert result.counts == {"changed": 0, "inserted": 1, "deleted": 0}, result.to_dict()["entries"]
        assert result.first is not None and result.first.op == "inserted"
        backwards = diff_logs(b, a)  # and the other way round: one deletion
        assert backwards.counts == {"changed": 0, "inserted": 0, "deleted": 1}, backwards.to_dict()["entries"]
    finally:
        a.unlink()
        b.unlink()
