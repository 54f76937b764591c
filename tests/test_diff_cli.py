"""``ract trace diff A B`` end to end: real subprocesses on fixture copies and EventWriter logs (SPEC §15)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from diff_support import Ev, base_run, journal_records, rerun, with_payload, write_journal, write_run
from hardening_support import RACT, assert_no_traceback, run_inprocess, run_on_pty, run_subprocess

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "fixtures" / "runs"
COMPLETED_ID = "120d7eae7ee0c9c181816e553722e2fe"
TAMPERED_ID = "8686994841309902af40ce3e190711e7"


@pytest.fixture
def completed(tmp_path: Path) -> Path:
    """A copy of the completed fixture, in its own run directory."""
    dst = tmp_path / "runs" / COMPLETED_ID / "events.jsonl"
    dst.parent.mkdir(parents=True)
    shutil.copyfile(RUNS / COMPLETED_ID / "events.jsonl", dst)
    return dst


def _events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def _diff(*argv: str | Path) -> tuple[int, str, str]:
    done = run_subprocess(["trace", "diff", *map(str, argv)])
    err = done.stderr.decode("utf-8", "replace")
    assert_no_traceback(err, argv)
    return done.returncode, done.stdout.decode("utf-8", "replace"), err


def test_faithful_replay_with_new_ids_times_and_hashes_exits_0(completed: Path, tmp_path: Path) -> None:
    replay = rerun(completed, tmp_path / "replay" / "events.jsonl", payload_ids=True, jitter=True)
    a, b = _events(completed), _events(replay)
    assert [e["kind"] for e in a] == [e["kind"] for e in b]
    assert not {e["id"] for e in a} & {e["id"] for e in b} and a[0]["run_id"] != b[0]["run_id"]
    code, out, err = _diff(completed, replay)
    assert code == 0, err
    assert "no divergence: 156 event(s) compared" in out
    verdict = err.strip().splitlines()[-1]
    assert verdict.startswith("equivalent: 156 and 156 event(s)") and verdict.endswith("exit 0 (OK)")


def test_replay_with_one_tool_result_flipped_exits_8_naming_line_and_field(completed: Path, tmp_path: Path) -> None:
    events = _events(completed)
    target = next(i for i, e in enumerate(events) if e["kind"] == "tool.result" and e["payload"]["ok"] is False)

    def flip(index: int, kind: str, payload: dict) -> dict | None:
        return {**payload, "ok": True} if index == target else None

    replay = rerun(completed, tmp_path / "replay.jsonl", edit=flip)
    line = target + 1
    code, out, err = _diff(completed, replay)
    assert code == 8
    assert f"first divergence at A #{line} (line {line}), B #{line} (line {line}): tool.result changed" in out
    assert "  payload ok: A false; B true" in out
    assert f"different: first divergence at A line {line}, B line {line} (tool.result changed: ok)" in err
    assert "1 changed, 0 inserted, 0 deleted; exit 8 (DIFFERENT)" in err

    code, out, _ = _diff(completed, replay, "--format", "json")
    data = json.loads(out)
    assert code == data["exit_code"] == 8
    first = data["first_divergence"]
    assert (first["op"], first["a"]["line"], first["b"]["line"]) == ("changed", line, line)
    assert first["fields"] == [{"where": "payload", "field": "ok", "path": ["ok"], "a": False, "b": True}]
    assert first["a"]["event"]["payload"]["ok"] is False and first["b"]["event"]["payload"]["ok"] is True
    assert data["summary"]["by_kind"]["tool.result"] == {"changed": 1, "inserted": 0, "deleted": 0}


def test_tampered_side_exits_1(completed: Path, tmp_path: Path) -> None:
    tampered = tmp_path / "runs" / TAMPERED_ID / "events.jsonl"
    tampered.parent.mkdir(parents=True)
    shutil.copyfile(RUNS / TAMPERED_ID / "events.jsonl", tampered)
    code, out, err = _diff(completed, tampered)
    assert code == 1
    assert "HASH_MISMATCH" in err and err.strip().endswith("exit 1 (TAMPERED)")
    assert "DOES NOT VERIFY: exit 1 (TAMPERED)" in out
    # a faithful replay edited in place afterwards (hash kept): 1, never 0 or 8
    replay = rerun(completed, tmp_path / "replay.jsonl")
    lines = replay.read_bytes().splitlines(keepends=True)
    k = next(i for i, raw in enumerate(lines) if b'"ok":true' in raw)
    lines[k] = lines[k].replace(b'"ok":true', b'"ok":false')
    replay.write_bytes(b"".join(lines))
    assert _diff(completed, replay)[0] == 1
    assert _diff(replay, completed, "--format", "json")[0] == 1
    assert _diff(replay, replay, "-q")[0] == 1


def test_insertion_in_an_eventwriter_log(tmp_path: Path) -> None:
    spec = base_run()
    at = next(i for i, ev in enumerate(spec) if ev.kind == "process.reaped")
    retried = [
        *spec[:at],
        Ev("tool.called", {"tool": "ruff", "arguments": {"argv": ["ruff", "check"]}}, step="s1"),
        *spec[at:],
    ]
    a = write_run(tmp_path / "a" / "events.jsonl", spec, seed=1)
    b = write_run(tmp_path / "b" / "events.jsonl", retried, seed=2)
    code, out, err = _diff(a, b)
    assert code == 8
    assert f"first divergence at A #{at + 1} (line {at + 1}), B #{at + 1} (line {at + 1}): tool.called only in B" in out
    assert "summary: 15 equal, 0 changed, 1 inserted (only in B), 0 deleted (only in A)" in out
    assert "  + A -" in out and "tool.called" in out
    code, out, err = _diff(b, a)
    assert code == 8 and "0 changed, 0 inserted, 1 deleted" in err


def test_options_change_the_verdict(tmp_path: Path) -> None:
    spec = base_run()
    i = next(i for i, ev in enumerate(spec) if ev.kind == "step.started")
    j = next(i for i, ev in enumerate(spec) if ev.kind == "response.received")
    other = list(spec)
    other[i] = with_payload(spec[i], parent_snapshot="c" * 40)
    other[j] = with_payload(spec[j], preview="plan: another plan")
    a = write_run(tmp_path / "a.jsonl", spec, seed=1)
    b = write_run(tmp_path / "b.jsonl", other, seed=2)
    assert _diff(a, b, "-q")[0] == 8
    assert _diff(a, b, "-q", "--ignore-snapshots")[0] == 8
    assert _diff(a, b, "-q", "--ignore-snapshots", "--ignore", "preview")[0] == 0
    assert _diff(a, b, "-q", "--ignore-snapshots", "--ignore", "preview", "--compare", "timestamp_ns")[0] == 8
    assert _diff(a, a, "-q", "--compare", "duration_ns", "--compare", "step_id")[0] == 0


def test_quiet_prints_nothing_but_a_usage_error(completed: Path, tmp_path: Path) -> None:
    code, out, err = _diff(completed, completed, "-q")
    assert (code, out, err) == (0, "", "")
    code, out, err = _diff(completed, tmp_path / "missing.jsonl", "-q")
    assert (code, out, err) == (5, "", "")
    code, out, err = _diff(completed, completed, "-q", "--compare", "preview")
    assert code == 2 and out == "" and "--compare 'preview'" in err
    code, _, err = _diff(completed, completed, "--ignore", "duration_ns", "--compare", "duration_ns")
    assert code == 2 and "both name duration_ns" in err
    code, _, err = _diff(completed)
    assert code == 2 and "Missing argument" in err


def test_missing_and_mixed_inputs(completed: Path, tmp_path: Path) -> None:
    code, out, err = _diff(completed, tmp_path / "nope" / "events.jsonl")
    assert code == 5 and "IO_ERROR" in err and "not compared: a log could not be read" in out
    journal = ROOT / "fixtures" / "journals" / "accepted.jsonl"
    code, _, err = _diff(completed, journal)
    assert code == 2 and "cannot diff a ract log against a raxol log" in err
    assert _diff(completed.parent, completed)[0] == 0  # a run directory is its events.jsonl


def test_journals_by_type_and_payload(tmp_path: Path) -> None:
    journal = ROOT / "fixtures" / "journals" / "accepted.jsonl"
    records = journal_records(journal)
    shifted = [{**r, "at_ms": r["at_ms"] + 60_000, "seq": r["seq"] + 3} for r in records if r["type"] != "item_delta"]
    b = write_journal(tmp_path / "b.jsonl", shifted)
    code, out, err = _diff(journal, b, "--dialect", "raxol")
    assert code == 0, out + err
    assert "item_delta record(s) left out" in out
    k = next(
        i for i, r in enumerate(shifted) if r["type"] == "item_completed" and r["payload"].get("is_error") is False
    )
    shifted[k] = {**shifted[k], "payload": {**shifted[k]["payload"], "is_error": True}}
    code, out, err = _diff(journal, write_journal(tmp_path / "c.jsonl", shifted))
    assert code == 8 and "payload is_error: A false; B true" in out


def test_stdout_closed_keeps_the_verdict(completed: Path, tmp_path: Path) -> None:
    replay = rerun(
        completed, tmp_path / "replay.jsonl", edit=lambda i, k, p: {**p, "tool": "x"} if k == "tool.result" else None
    )
    done = subprocess.run(
        ["bash", "-c", f'"{RACT}" trace diff "{completed}" "{replay}" >&-'], capture_output=True, timeout=60
    )
    assert done.returncode == 8
    assert b"stdout is closed" in done.stderr and b"Traceback" not in done.stderr
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f'"{RACT}" trace diff "{completed}" "{replay}" | head -c 1'],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 8 and b"Traceback" not in done.stderr


def test_in_process_main_agrees(completed: Path, tmp_path: Path) -> None:
    replay = rerun(completed, tmp_path / "replay.jsonl", payload_ids=True)
    code, out, err = run_inprocess(["trace", "diff", str(completed), str(replay)])
    assert code == 0 and "no divergence" in out and "equivalent" in err


HOSTILE = "\x1b[31mPASS\x1b[0m \u202eevil\u202c [bold]x[/bold] \x9b2J"


def test_hostile_strings_are_escaped_on_a_terminal(tmp_path: Path) -> None:
    spec = base_run()
    j = next(i for i, ev in enumerate(spec) if ev.kind == "response.received")
    other = list(spec)
    other[j] = with_payload(spec[j], preview=HOSTILE)
    a = write_run(tmp_path / "a\x1b[2Jdir" / "events.jsonl", spec, seed=1)
    b = write_run(tmp_path / "b" / "events.jsonl", other, seed=2)
    for extra in ([], ["--format", "json"]):
        code, shown = run_on_pty(["trace", "diff", str(a), str(b), *extra])
        assert code == 8, shown[-2000:]
        for raw in (b"\x1b[31m", b"\x1b[2J", "\u202e".encode(), "\u202c".encode(), "\x9b".encode()):
            assert raw not in shown, (extra, raw)
        # values are shown as JSON (ESC is JSON's \u001b); what JSON leaves raw, clean escapes (\u202e)
        assert b"\\u001b[31mPASS" in shown and b"\\u202eevil" in shown and b"\\x9b2J" in shown
        assert b"[bold]x[/bold]" in shown  # rich markup printed literally, never interpreted


def test_doc_names_every_option_of_the_command() -> None:
    import re

    code, help_text, _ = run_inprocess(["trace", "diff", "--help"])
    assert code == 0
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", help_text)) - {"--help"}
    text = (ROOT / "docs" / "diff.md").read_text(encoding="utf-8")
    assert options and {o for o in options if f"`{o}" not in text} == set()
    assert "| 8 | DIFFERENT |" in (ROOT / "docs" / "exit-codes.md").read_text(encoding="utf-8")
