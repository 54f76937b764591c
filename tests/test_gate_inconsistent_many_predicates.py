"""Issue 15 item 2: bounded memory never changes the gate verdict of ``project``.

Predicates are keyed by their full id (not a 200-character prefix), and past
1,000 predicates the required ones' latest verdicts still count; the display
table says what it elides (``predicates.omitted_evaluations``).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from ract_cli.project.options import MAX_KEYS, MAX_TEXT
from ract_cli.project.predicates import identity
from ract_cli.project.projector import Projector
from ract_cli.project.report import project_file
from ract_cli.writer.event_writer import EventWriter

ROOT = Path(__file__).resolve().parent.parent
VALIDATOR = jsonschema.Draft202012Validator(
    json.loads((ROOT / "docs" / "schemas" / "project-report.json").read_text("utf-8"))
)
RUN_ID = "cd" * 16


def _write(path: Path, predicates: list[tuple[str, bool, bool]]) -> None:
    """A completed run evaluating ``(predicate_id, required, ok)`` in order."""
    counter = itertools.count(1)
    ts = itertools.count(1_764_000_000_000_000_000, 1000)
    with EventWriter(path, run_id=RUN_ID, fsync="never", new_id=lambda: f"{next(counter):032x}") as w:
        w.append("run.started", {"intent_id": "1" * 32}, timestamp_ns=next(ts))
        for pid, required, ok in predicates:
            payload = {"predicate_id": pid, "kind": "test", "required": required, "ok": ok, "reason": "r"}
            w.append("predicate.evaluated", payload, timestamp_ns=next(ts))
        w.append("run.completed", {"final_decision": "accept"}, timestamp_ns=next(ts))


def _valid(report: dict) -> dict:
    errors = list(VALIDATOR.iter_errors(report))
    assert not errors, [e.message[:200] for e in errors[:3]]
    return report


def test_two_predicates_sharing_a_200_char_prefix_stay_two(tmp_path: Path) -> None:
    prefix = "p" * MAX_TEXT
    failing, passing = prefix + "-required", prefix + "-optional"
    path = tmp_path / RUN_ID / "events.jsonl"
    # the failing required one first, then a passing optional one with the same prefix
    _write(path, [(failing, True, False), (passing, False, True)])
    report = _valid(project_file(path))
    preds = report["predicates"]
    assert preds["gate_inconsistent"] is True
    assert len(preds["failing_required"]) == 1 and preds["failing_required"][0].startswith(prefix + "…#")
    assert "GATE_INCONSISTENT" in [f["code"] for f in report["audit_flags"]["items"]]
    assert len(preds["latest"]) == 2  # two rows, two display names
    assert "omitted_evaluations" not in preds


def test_past_1000_predicates_a_failing_required_one_is_still_flagged(tmp_path: Path) -> None:
    many = [(f"opt-{i:05d}", False, True) for i in range(MAX_KEYS + 500)]
    # a required predicate first seen past the display cap fails, and stays failing
    path = tmp_path / RUN_ID / "events.jsonl"
    _write(path, [*many, ("late-required", True, False), ("opt-01400", False, True)])
    report = _valid(project_file(path))
    preds = report["predicates"]
    assert preds["gate_inconsistent"] is True
    assert preds["failing_required_at_completion"] == ["late-required"]
    assert len(preds["latest"]) == MAX_KEYS and "(other)" not in preds["latest"]
    assert preds["omitted_evaluations"] == 500 + 2  # opt-01000..01499, late-required, opt-01400 again
    assert preds["evaluations"] == MAX_KEYS + 502


def test_past_1000_predicates_a_later_pass_clears_a_required_failure(tmp_path: Path) -> None:
    many = [(f"opt-{i:05d}", False, True) for i in range(MAX_KEYS + 10)]
    path = tmp_path / RUN_ID / "events.jsonl"
    _write(path, [*many, ("late", True, False), ("late", True, True)])
    preds = _valid(project_file(path))["predicates"]
    assert preds["gate_inconsistent"] is False and preds["failing_required"] == []
    assert preds["omitted_evaluations"] == 12


def test_a_failing_required_predicate_shown_in_the_table_is_not_overwritten_by_other_ids(tmp_path: Path) -> None:
    many = [(f"opt-{i:05d}", False, True) for i in range(MAX_KEYS + 50)]
    path = tmp_path / RUN_ID / "events.jsonl"
    _write(path, [("gate", True, False), *many])
    preds = _valid(project_file(path))["predicates"]
    assert preds["latest"]["gate"]["ok"] is False and preds["latest"]["gate"]["evaluations"] == 1
    assert preds["failing_required_at_completion"] == ["gate"]


# --- many completions: the gate against a plain model -------------------------------------------

_PIDS = ["a", "b", "c", "d", "z" * (MAX_TEXT + 5) + "1", "z" * (MAX_TEXT + 5) + "2", 7, None]


class _PlainGate:
    """The gate written plainly: the failing set copied and sorted at every real run.completed."""

    def __init__(self) -> None:
        self.failing: dict[object, str] = {}
        self.at_completion: list[str] | None = None
        self.messages: list[str] = []

    def evaluated(self, pid: object, required: bool, ok: bool) -> None:
        key, name = identity(pid)
        if required and not ok:
            self.failing[key] = name
        else:
            self.failing.pop(key, None)

    def completed(self) -> None:
        failing = self.at_completion = sorted(self.failing.values())
        if failing:
            more = f" and {len(failing) - 10} more" if len(failing) > 10 else ""
            self.messages.append(f"run completed while required predicate(s) failed: {', '.join(failing[:10])}{more}")


_STEPS = st.lists(
    st.tuples(st.sampled_from(_PIDS), st.booleans(), st.booleans()) | st.just("completed"),
    max_size=80,
)


@settings(max_examples=200, deadline=None)
@given(steps=_STEPS, max_items=st.sampled_from([2, 1000]))
def test_the_gate_over_many_completions_is_the_plain_model_s(steps: list[object], max_items: int) -> None:
    projector, model = Projector(max_items=max_items), _PlainGate()
    ids = itertools.count(1)
    for step in steps:
        n = next(ids)
        if step == "completed":
            event = _bare("run.completed", {"final_decision": "accept"}, n)
            model.completed()
        else:
            pid, required, ok = step  # type: ignore[misc]
            payload = {"predicate_id": pid, "kind": "test", "required": required, "ok": ok}
            event = _bare("predicate.evaluated", payload, n)
            model.evaluated(pid, required, ok)
        projector.feed(event, n)
    report = projector.report()
    predicates = report["predicates"]
    assert predicates["failing_required_at_completion"] == model.at_completion
    assert predicates["gate_inconsistent"] == bool(model.at_completion)
    gates = [f["message"] for f in report["audit_flags"]["items"] if f["code"] == "GATE_INCONSISTENT"]
    assert gates == model.messages[: len(gates)]
    assert projector.flags.count == len(model.messages)  # (the only flag these events raise; kept or not)


def _bare(kind: str, payload: dict[str, object], n: int) -> dict[str, object]:
    return {
        "id": f"{n:032x}",
        "run_id": RUN_ID,
        "step_id": None,
        "parent_id": None,
        "timestamp_ns": n,
        "kind": kind,
        "payload": payload,
        "prev_hash": "0" * 64,
        "hash": f"{n:064x}",
    }


def test_many_completions_each_after_a_new_failure_cost_no_sort_each() -> None:
    """n failing predicates, each followed by a run.completed: no completion copies or sorts the failing set."""
    projector = Projector()
    n = 3000
    for i in range(n):
        payload = {"predicate_id": f"p{i:05d}", "kind": "t", "required": True, "ok": False}
        projector.feed(_bare("predicate.evaluated", payload, 2 * i + 1), 2 * i + 1)
        projector.feed(_bare("run.completed", {}, 2 * i + 2), 2 * i + 2)
    table = projector.predicates
    assert len(table._names.entries) <= 2 * len(table.failing) + 16  # the heap stays within its bound
    assert not table._undo  # (nothing changed since the last completion)
    report = projector.report()
    assert report["predicates"]["failing_required_at_completion"] == [f"p{i:05d}" for i in range(n)]
    flags = report["audit_flags"]
    assert flags["count"] >= n and flags["items"][0]["message"].endswith(": p00000")
    assert len(flags["items"]) == 1000 and flags["items"][-1]["message"].endswith(" and 990 more")
