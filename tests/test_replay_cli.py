"""``ract trace replay`` end to end: real logs, real temporary git repositories, real subprocesses."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from git_support import GitRepo

from ract_cli.cli.app import main
from ract_cli.testing.synth import FIXTURES, fixture_path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "replay"
STEP = "5e7e9f00aa11bb22cc33dd44ee55ff66"
DIVERGE = "may diverge on the first worktree-shaped operation"


def fixture(name: str) -> Path:
    return fixture_path(ROOT / "fixtures", name)


def run(*argv: str) -> tuple[int, bytes, str]:
    """``ract`` in-process: exit code, stdout bytes, stderr text."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", newline="")
    err = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["trace", "replay", *argv])
    out.flush()
    return code, raw.getvalue(), err.getvalue()


def timeline_indexes(stdout: bytes) -> list[int]:
    return [int(m.group(1)) for m in re.finditer(rb"^ *(\d+) +[+-]\d+\.\d{3}s  ", stdout, re.M)]


@pytest.fixture
def plain_dir(tmp_path: Path) -> Path:
    d = tmp_path / "not-a-repo"
    d.mkdir()
    return d


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    r = GitRepo(tmp_path / "ws")
    r.commit("a.txt")
    return r


def run_log(logs, before: str, after: str, *, steps: list[tuple[str, str]] | None = None) -> Path:
    """A small completed run whose snapshots are the given commit shas."""
    events = [("run.started", {"intent_id": "a" * 32}, None)]
    for i, (b, a) in enumerate(steps or [(before, after)]):
        sid = f"{i + 1:032x}"
        events += [
            ("step.started", {"parent_snapshot": b, "branch": f"rootact/step/{sid}", "timeout_seconds": 60}, sid),
            ("tool.called", {"tool": "bash", "arguments": {"argv": ["make"]}}, sid),
            ("tool.result", {"tool": "bash", "ok": True, "duration_ns": 5}, sid),
            (
                "step.committed",
                {"outcome": "COMMITTED", "parent_snapshot_before": b, "parent_snapshot_after": a, "reason": "ok"},
                sid,
            ),
        ]
    events.append(("run.completed", {"final_decision": "accept"}, None))
    return logs.write(events)


# --- the determinism precondition against real repositories -----------------


def test_head_at_snapshot_no_warning(logs, repo: GitRepo) -> None:
    first = repo.head()
    log = run_log(logs, first, repo.commit("b.txt"))
    repo.checkout(first, detach=True)
    code, out, err = run(str(log), "--workspace", str(repo.root), "--strict-head")
    assert code == 0 and "HEAD_DIVERGED" not in err and DIVERGE not in err
    assert len(timeline_indexes(out)) == 6


def test_head_at_other_commit_warns_naming_both(logs, repo: GitRepo) -> None:
    first = repo.head()
    second = repo.commit("b.txt")
    log = run_log(logs, first, second)
    code, out, err = run(str(log), "--workspace", str(repo.root))
    assert code == 0
    warning = next(line for line in err.splitlines() if "HEAD_DIVERGED" in line)
    assert first in warning and second in warning and DIVERGE in warning and "warning" in warning
    assert len(timeline_indexes(out)) == 6  # the timeline is still rendered
    code, _, err = run(str(log), "--workspace", str(repo.root), "--strict-head")
    assert code == 6 and "error HEAD_DIVERGED" in err


def test_detached_head_elsewhere(logs, repo: GitRepo) -> None:
    first = repo.head()
    second = repo.commit("b.txt")
    log = run_log(logs, second, second)
    repo.checkout(first, detach=True)
    code, _, err = run(str(log), "--workspace", str(repo.root))
    assert code == 0 and "detached HEAD" in err and first in err and second in err


def test_dirty_tree_warns_but_exits_0(logs, repo: GitRepo) -> None:
    first = repo.head()
    log = run_log(logs, first, first)
    (repo.root / "a.txt").write_text("edited\n")
    code, _, err = run(str(log), "--workspace", str(repo.root), "--strict-head")
    assert code == 0 and "WORKTREE_DIRTY" in err and "HEAD_DIVERGED" not in err


def test_not_a_repository(logs, plain_dir: Path) -> None:
    log = run_log(logs, "a" * 40, "b" * 40)
    code, out, err = run(str(log), "--workspace", str(plain_dir), "--strict-head")
    assert code == 0 and "PRECONDITION_UNCHECKED" in err and "cannot be checked" in err
    assert "not a git repository" in err and len(timeline_indexes(out)) == 6


def test_run_without_snapshot(logs, repo: GitRepo) -> None:
    log = logs.write([("run.started", {}, None), ("run.completed", {}, None)])
    code, _, err = run(str(log), "--workspace", str(repo.root), "--strict-head")
    assert code == 0 and "cannot be checked" in err and "no snapshot" in err


def test_default_workspace_is_the_current_directory(logs, repo: GitRepo) -> None:
    first = repo.head()
    second = repo.commit("b.txt")
    log = run_log(logs, first, second)
    done = subprocess.run(
        [sys.executable, "-m", "ract_cli", "trace", "replay", str(log), "--strict-head"],
        cwd=repo.root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 6 and first in done.stderr and second in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_workspace_is_a_usage_error(logs, tmp_path: Path) -> None:
    log = run_log(logs, "a" * 40, "b" * 40)
    code, _, _ = run(str(log), "--workspace", str(tmp_path / "nope"))
    assert code == 2


# --- --check-commits -----------------------------------------------------


def test_check_commits_descending(logs, repo: GitRepo) -> None:
    c1 = repo.head()
    c2 = repo.commit("b.txt")
    c3 = repo.commit("c.txt")
    log = run_log(logs, "", "", steps=[(c1, c2), (c2, c3)])
    repo.checkout(c1, detach=True)
    code, _, err = run(str(log), "--workspace", str(repo.root), "--check-commits")
    assert code == 0 and "COMMIT_" not in err


def test_check_commits_missing(logs, repo: GitRepo) -> None:
    c1 = repo.head()
    ghost = "0123456789abcdef0123456789abcdef01234567"
    log = run_log(logs, c1, ghost)
    code, _, err = run(str(log), "--workspace", str(repo.root), "--check-commits")
    assert code == 6 and "COMMIT_MISSING" in err and ghost in err
    code, _, _ = run(str(log), "--workspace", str(repo.root))
    assert code == 0  # without the flag the commits are not checked


def test_check_commits_unrelated(logs, repo: GitRepo) -> None:
    c1 = repo.head()
    other = repo.orphan_commit("z.txt")
    log = run_log(logs, c1, other)
    code, _, err = run(str(log), "--workspace", str(repo.root), "--check-commits")
    assert code == 6 and "COMMIT_UNRELATED" in err and c1 in err and other in err


def test_check_commits_beyond_until_are_checked_too(logs, repo: GitRepo) -> None:
    c1 = repo.head()
    c2 = repo.commit("b.txt")
    log = run_log(logs, "", "", steps=[(c1, c2), (c2, "f" * 40)])
    code, out, err = run(str(log), "--workspace", str(repo.root), "--check-commits", "--until", "2")
    assert code == 6 and "COMMIT_MISSING" in err and timeline_indexes(out) == [1, 2]


def test_tampered_log_lowest_code_wins_over_6(logs, repo: GitRepo) -> None:
    c1 = repo.head()
    log = run_log(logs, c1, "f" * 40)
    with logs.writer(log) as w:  # one more event, so the tampered line is not step.committed's successor
        w.append("laziness.skipped", {"reason": "docs-only", "diff_summary": "accept"})
    lines = logs.lines(log)
    lines[-1] = lines[-1].replace(b"accept", b"reject")
    log.write_bytes(b"".join(lines))
    code, _, err = run(str(log), "--workspace", str(repo.root), "--check-commits", "--strict-head")
    assert code == 1 and "COMMIT_MISSING" in err and "HASH_MISMATCH" in err


# --- integrity while walking ---------------------------------------------


def test_tampered_fixture_stops_at_the_break(plain_dir: Path) -> None:
    path = fixture("tampered")
    code, out, err = run(str(path), "--workspace", str(plain_dir))
    assert code == 1
    mismatch = int(re.search(r":(\d+): error HASH_MISMATCH", err).group(1))
    broken = mismatch - 1  # trust ends at the event before: no clean successor confirms its hash
    assert timeline_indexes(out) == list(range(1, broken))
    # issue 15 item 14: the line trust ends on, and the line the failure is on (not "broken at" the line before)
    assert (
        out.rstrip(b"\n")
        .splitlines()[-1]
        .startswith(b"!! chain not verified from line %d (HASH_MISMATCH at line %d)" % (broken, mismatch))
    )
    assert "nothing after it is trustworthy" in err


def test_torn_tail_exits_4_after_rendering_what_verified(plain_dir: Path) -> None:
    path = fixture("interrupted")
    complete = path.read_bytes().count(b"\n")
    code, out, err = run(str(path), "--workspace", str(plain_dir))
    assert code == 4 and timeline_indexes(out) == list(range(1, complete + 1)) and "TORN_TAIL" in err


def test_missing_log_exits_5(plain_dir: Path) -> None:
    code, out, err = run(str(plain_dir / "events.jsonl"), "--workspace", str(plain_dir))
    assert code == 5 and out == b"" and "IO_ERROR" in err


def test_run_directory_is_accepted(plain_dir: Path) -> None:
    code, out, _ = run(str(fixture("aborted").parent), "--workspace", str(plain_dir))
    assert code == 0 and len(timeline_indexes(out)) == 37


def test_schema_violation_replays_and_exits_3(logs, plain_dir: Path) -> None:
    log = logs.write([("run.started", {"predicate_count": "four"}, None), ("run.completed", {}, None)], strict=False)
    code, out, err = run(str(log), "--workspace", str(plain_dir))
    assert code == 3 and timeline_indexes(out) == [1, 2] and "PAYLOAD_INVALID" in err


def test_hostile_strings_are_escaped(logs, plain_dir: Path) -> None:
    evil = "\x1b[31mPASS\x1b[0m [bold red]ok[/] \u202e\r\n\x07"
    log = logs.write(
        [
            ("run.started", {"intent_id": evil}, None),
            ("tool.called", {"tool": evil, "arguments": {"x": evil}}, STEP),
            ("laziness.skipped", {"reason": evil, "diff_summary": evil}, None),
            ("run.completed", {"final_decision": evil}, None),
        ]
    )
    code, out, err = run(str(log), "--workspace", str(plain_dir), "--until", "2")
    assert code == 0
    text = out.decode()
    for bad in ("\x1b", "\u202e", "\r", "\x07"):
        assert bad not in text and bad not in err
    assert "[bold red]ok[/]" in text  # shown literally, not interpreted
    assert timeline_indexes(out) == [1, 2] and "tool calls in flight (1):" in text


# --- --until -------------------------------------------------------------


def state_block(stdout: bytes) -> dict[str, list[str]]:
    """Parse the state block into {section title: item lines}."""
    text = stdout.decode()
    block = text[text.index("== state after") :].splitlines()
    sections: dict[str, list[str]] = {"header": [block[0]], "run": [block[1]]}
    current = None
    for line in block[2:]:
        if line.startswith("  "):
            sections[current].append(line.strip())
        else:
            current = re.match(r"([a-z ]+?)(?: \(\d+\))?:", line).group(1)
            sections[current] = []
    return sections


def fixture_events(name: str) -> list[dict]:
    out = []
    for raw in fixture(name).read_bytes().split(b"\n"):
        try:
            out.append(json.loads(raw))
        except ValueError:
            pass
    return out


@pytest.mark.parametrize("index", [18, 19, 20, 21, 22])
def test_state_at_until_on_the_interrupted_fixture(index: int, plain_dir: Path) -> None:
    events = fixture_events("interrupted")
    upto = events[:index]
    # expected open items, computed here from the raw events (parent_id pairing of the fixture)
    closed = {e["parent_id"] for e in upto if e["parent_id"]}
    open_of = lambda kind: [e for e in upto if e["kind"] == kind and e["id"] not in closed]  # noqa: E731
    code, out, _ = run(str(fixture("interrupted")), "--workspace", str(plain_dir), "--until", str(index))
    assert code == 4 and timeline_indexes(out) == list(range(1, index + 1))
    s = state_block(out)
    assert s["header"][0].startswith(f"== state after event #{index} (line {index},")
    assert events[index - 1]["id"] in s["header"][0]
    assert s["run"] == ["run: open"]

    def listed(section: str) -> list[str]:
        return [re.search(r"\bid ([0-9a-f]{32})$", item).group(1) for item in s.get(section, [])]

    assert listed("open steps") == [e["id"] for e in open_of("step.started")]
    assert listed("tool calls in flight") == [e["id"] for e in open_of("tool.called")]
    assert listed("unanswered prompts") == [
        e["id"]
        for e in upto
        if e["kind"] == "prompt.sent"
        and not any(r["kind"] == "response.received" and r["parent_id"] == e["id"] for r in upto)
    ]
    assert listed("pending handshakes") == [e["id"] for e in open_of("handshake.requested")]
    assert len(s["latest predicate verdicts"]) == 2


def test_state_at_until_exact_for_the_kill_point(plain_dir: Path) -> None:
    events = fixture_events("interrupted")
    _code, out, _ = run(str(fixture("interrupted")), "--workspace", str(plain_dir), "--until", "22")
    s = state_block(out)
    step, prompt, tool, hs = events[18], events[19], events[20], events[21]
    assert s["open steps"] == [
        f"step {step['step_id']}  line 19  snapshot {step['payload']['parent_snapshot']}  "
        f"branch {step['payload']['branch']}  id {step['id']}"
    ]
    assert s["tool calls in flight"] == [f"pytest  step {step['step_id']}  line 21  id {tool['id']}"]
    assert s["unanswered prompts"] == [
        f"anthropic  intent {prompt['payload']['intent_id']}  step {step['step_id']}  line 20  id {prompt['id']}"
    ]
    assert s["pending handshakes"] == [f'm-merge  "merge to main"  line 22  id {hs["id"]}']
    assert s["live assumptions"] == [] and s["violated assumptions"] == []


def test_until_by_event_id(plain_dir: Path) -> None:
    target = fixture_events("completed")[71]["id"]  # the handshake.requested
    code, out, _ = run(str(fixture("completed")), "--workspace", str(plain_dir), "--until", target.upper())
    assert code == 0 and timeline_indexes(out)[-1] == 72
    assert len(state_block(out)["pending handshakes"]) == 1


@pytest.mark.parametrize("bad", ["0", "abc", "-3", "12x"])
def test_until_bad_value_is_usage(bad: str, plain_dir: Path) -> None:
    code, out, err = run(str(fixture("aborted")), "--workspace", str(plain_dir), "--until", bad)
    assert code == 2 and out == b"" and "--until" in err


def test_until_past_the_end(plain_dir: Path) -> None:
    code, out, err = run(str(fixture("aborted")), "--workspace", str(plain_dir), "--until", "500")
    assert code == 2 and "== state" not in out.decode() and "no such event" in err
    assert len(timeline_indexes(out)) == 37


def test_until_past_the_break_exits_1_without_state(plain_dir: Path) -> None:
    code, out, err = run(str(fixture("tampered")), "--workspace", str(plain_dir), "--until", "90")
    assert code == 1 and "== state" not in out.decode() and "before the chain break" in err


# --- --format jsonl ------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_jsonl_is_the_original_lines_byte_for_byte(name: str, plain_dir: Path) -> None:
    path = fixture(name)
    lines = path.read_bytes().splitlines(keepends=True)
    code, out, err = run(str(path), "--workspace", str(plain_dir), "--format", "jsonl")
    if name == "tampered":
        mismatch = int(re.search(r":(\d+): error HASH_MISMATCH", err).group(1))
        assert code == 1 and out == b"".join(lines[: mismatch - 2])  # trust ends at the event before it
    elif name == "interrupted":
        assert code == 4 and out == b"".join(lines[:-1])  # everything but the torn tail
    else:
        assert code == 0 and out == path.read_bytes()


def test_jsonl_with_until(plain_dir: Path) -> None:
    path = fixture("completed")
    code, out, _ = run(str(path), "--workspace", str(plain_dir), "--format", "jsonl", "--until", "5")
    assert code == 0 and out == b"".join(path.read_bytes().splitlines(keepends=True)[:5])


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq not installed")
def test_jsonl_pipes_into_jq(plain_dir: Path) -> None:
    path = fixture("foreign-format")
    cmd = f"{sys.executable} -m ract_cli trace replay {path} --format jsonl --workspace {plain_dir} | jq -c .kind"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    kinds = [json.loads(line) for line in done.stdout.splitlines()]
    assert kinds == [e["kind"] for e in fixture_events("foreign-format")]


# --- --pace --------------------------------------------------------------


def test_pace_fast_gives_the_same_timeline(plain_dir: Path) -> None:
    path = fixture("aborted")
    assert (
        run(str(path), "--workspace", str(plain_dir), "--pace", "1000x")[:2]
        == run(str(path), "--workspace", str(plain_dir))[:2]
    )


def test_pace_waits_for_the_scaled_gap(logs, plain_dir: Path) -> None:
    with logs.writer(clock=iter([10**18, 10**18 + 3 * 10**9]).__next__) as w:
        w.append("run.started", {})
        w.append("run.completed", {})
    start = time.monotonic()
    code, out, _ = run(str(w.path), "--workspace", str(plain_dir), "--pace", "10x")
    assert code == 0 and time.monotonic() - start >= 0.3  # 3 s recorded gap at 10x
    assert b"+3.000s" in out


@pytest.mark.parametrize("bad", ["0x", "fast", "-1x"])
def test_pace_bad_value_is_usage(bad: str, plain_dir: Path) -> None:
    assert run(str(fixture("aborted")), "--workspace", str(plain_dir), "--pace", bad)[0] == 2


# --- golden timelines ------------------------------------------------------


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_goldens_replay", ROOT / "scripts" / "gen_goldens_replay.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_golden_timelines_match_the_committed_files() -> None:
    fresh = _load_generator().build(ROOT)
    committed = {p.name: p.read_bytes() for p in GOLDEN.iterdir() if p.is_file()}
    assert sorted(committed) == sorted(fresh), "run: python scripts/gen_goldens_replay.py"
    for name, data in fresh.items():
        assert committed[name] == data, f"{name} is stale: run python scripts/gen_goldens_replay.py"


def test_goldens_cover_every_fixture() -> None:
    cases = _load_generator().CASES
    assert {fixture_name for fixture_name, _ in cases.values()} == set(FIXTURES)
    codes = json.loads((GOLDEN / "exit_codes.json").read_text())
    assert codes["tampered.txt"] == 1 and codes["interrupted.txt"] == 4 and codes["completed.txt"] == 0


def test_real_subprocess_no_traceback_and_stdout_only_data(plain_dir: Path) -> None:
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run(
        [sys.executable, "-m", "ract_cli", "trace", "replay", str(fixture("completed")), "--workspace", str(plain_dir)],
        capture_output=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    assert done.stdout == (GOLDEN / "completed.txt").read_bytes()  # no wrapping, no warnings on stdout
    assert b"PRECONDITION_UNCHECKED" in done.stderr


def test_interleaved_steps_are_tagged(logs, plain_dir: Path) -> None:
    s1, s2 = "1" * 32, "2" * 32
    log = logs.write(
        [
            ("run.started", {}, None),
            ("step.started", {}, s1),
            ("tool.called", {"tool": "one"}, s1),
            ("step.started", {}, s2),
            ("tool.called", {"tool": "two"}, s2),
            ("tool.result", {"tool": "one", "ok": True}, s1),
            ("step.committed", {}, s2),
            ("step.committed", {}, s1),
            ("run.completed", {}, None),
        ]
    )
    code, out, _ = run(str(log), "--workspace", str(plain_dir))
    lines = out.decode().splitlines()
    assert code == 0 and len(lines) == 9
    assert re.search(r"\+\d\.\d{3}s    tool\.called  tool=one$", lines[2])  # nested under its step
    assert re.search(r"\+\d\.\d{3}s    tool\.called  tool=two$", lines[4])
    assert f"    [step {s1[:12]}] tool.result  tool=one" in lines[5]  # not the innermost open step
    assert re.search(r"\+\d\.\d{3}s  step\.committed", lines[6]) and re.search(
        r"\+\d\.\d{3}s  run\.completed", lines[8]
    )


def test_broken_pipe_is_quiet(plain_dir: Path) -> None:
    cmd = (
        f"{sys.executable} -m ract_cli trace replay {fixture('completed')} --format jsonl "
        f"--workspace {plain_dir} | head -c 10"
    )
    done = subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=60)
    assert len(done.stdout) == 10 and b"Traceback" not in done.stderr and b"BrokenPipe" not in done.stderr


# --- Raxol agent journals (SPEC §8): the same command, deltas never replayed ----

JOURNALS = ROOT / "fixtures" / "journals"


def test_journal_jsonl_is_its_durable_lines_byte_for_byte(plain_dir: Path) -> None:
    path = JOURNALS / "accepted.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    durable = [ln for ln in lines if json.loads(ln).get("type") != "item_delta"]
    assert len(durable) < len(lines)  # the fixture does hold deltas
    code, out, err = run(str(path), "--workspace", str(plain_dir), "--format", "jsonl")
    assert code == 0 and out == b"".join(durable)
    assert "PRECONDITION_UNCHECKED" in err and "journal" in err


def test_journal_timeline_and_until(plain_dir: Path) -> None:
    path = JOURNALS / "accepted.jsonl"
    code, out, _ = run(str(path), "--workspace", str(plain_dir), "--until", "3")
    text = out.decode()
    assert code == 0 and "item_delta" not in text and "== state after record #3" in text


def test_tampered_journal_stops_at_its_break(plain_dir: Path) -> None:
    path = JOURNALS / "chained-tampered.jsonl"
    code, out, err = run(str(path), "--workspace", str(plain_dir), "--format", "jsonl")
    mismatch = int(re.search(r":(\d+): error HASH_MISMATCH", err).group(1))
    assert code == 1
    kept = [
        ln
        for ln in path.read_bytes().splitlines(keepends=True)[: mismatch - 2]  # the record before is unconfirmed
        if json.loads(ln).get("type") != "item_delta"
    ]
    assert out == b"".join(kept)


def test_findings_are_capped_but_still_count(logs, plain_dir: Path) -> None:
    events = [("run.started", {}, None)] + [("tool.called", {"tool": f"t{i}"}, STEP) for i in range(1100)]
    log = logs.write(events)
    lines = logs.lines(log)
    lines.append(b'{"torn')  # a torn tail found after the cap: exit 4 all the same
    log.write_bytes(b"".join(lines))
    code, out, err = run(str(log), "--workspace", str(plain_dir))
    assert code == 4 and len(timeline_indexes(out)) == 1101
    assert err.count("OPEN_HANDLE") + err.count("TORN_TAIL") == 1000 and "TORN_TAIL" in err
    assert "102 more finding(s) not shown" in err  # 1100 open tool calls + the open run + the torn tail
