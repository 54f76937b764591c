"""Regression tests for bugs found in the review of session 2's commits (7e6c4a0..63e83a1).

Every test here reproduced a bug confirmed by running the real CLI in a subprocess
(real files, real pipes, a real git repository); each was written failing (marked
``xfail(strict=True)``) and unmarked when its fix landed. All are fixed now: the
tests guard against their return.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ract_cli import EventWriter

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "120d7eae7ee0c9c181816e553722e2fe"
RUN_ID = "a" * 32
STEP_ID = "b" * 32


def ract(*args: str, stdout=subprocess.PIPE, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m ract_cli ARGS`` as a user runs it (its own process, its own stack)."""
    return subprocess.run(
        [sys.executable, "-m", "ract_cli", *args], stdout=stdout, stderr=subprocess.PIPE, cwd=cwd, timeout=120
    )


def write_log(path: Path, deep: int | None = None) -> Path:
    """A verifying log; with ``deep``, a last event whose payload nests ``deep`` arrays (hash valid).

    The deep line is built as text (its canonical form by hand: sorted keys, no spaces), so this
    process never parses or encodes the nesting itself.
    """
    with EventWriter(path, run_id=RUN_ID, redaction=None) as w:
        w.append("run.started", {"intent_id": "x", "predicate_count": 1})
        head = w.head
    if deep is not None:
        body = (
            '{"id":"'
            + "c" * 32
            + '","kind":"tool.result","parent_id":null,"payload":{"deep":'
            + "[" * deep
            + "]" * deep
            + ',"ok":true,"tool":"x"},"prev_hash":"'
            + head
            + '","run_id":"'
            + RUN_ID
            + '","step_id":null,"timestamp_ns":5}'
        ).encode()
        digest = hashlib.sha256(body).hexdigest()
        with open(path, "ab") as f:
            f.write(b'{"hash":"' + digest.encode() + b'",' + body[1:] + b"\n")
    return path


# --- 1. the verdict on a deeply nested line depends on the Python stack depth --------------


def test_deep_payload_verdict_does_not_depend_on_jobs_or_command(tmp_path: Path) -> None:
    disagreements = []
    for depth in range(940, 990, 4):
        tree = tmp_path / str(depth)
        for name in ("a", "b"):  # two files: --jobs 2 really uses workers
            write_log(tree / name / "events.jsonl", deep=depth)
        one = ract("trace", "grep", "-c", "--kind", "tool.result", "--jobs", "1", str(tree))
        two = ract("trace", "grep", "-c", "--kind", "tool.result", "--jobs", "2", str(tree))
        verify = ract("trace", "verify", "-q", str(tree / "a" / "events.jsonl"))
        verify_two = ract("trace", "verify", "-q", "--jobs", "2", str(tree))
        verdicts = (
            one.returncode,
            two.returncode,
            0 if verify.returncode == 0 else 1,
            0 if verify_two.returncode == 0 else 1,
        )
        if len(set(verdicts)) > 1 or one.stdout != two.stdout:
            disagreements.append((depth, verdicts))
    assert disagreements == []


# --- 2. grep --no-verify: a payload nested past ~985 levels crashes the table and JSON ------


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_no_verify_deep_payload_is_not_a_traceback(tmp_path: Path, fmt: str) -> None:
    log = tmp_path / "events.jsonl"
    # 510 levels inside the line's object: at MAX_NESTING (512), shown; 1000: MALFORMED_LINE (exit 1), no traceback
    log.write_text(
        '{"kind":"k","payload":' + "[" * 510 + "]" * 510 + '}\n{"kind":"k","payload":' + "[" * 1000 + "]" * 1000 + "}\n"
    )
    proc = ract("trace", "grep", "--no-verify", "--format", fmt, str(log))
    assert b"Traceback" not in proc.stderr
    assert proc.returncode == 1 and b"MALFORMED_LINE" in proc.stderr
    assert proc.stdout.count(b"[[[[") >= 1  # the shallower one was rendered


# --- 3. -q with stdout closed: a traceback, exit 1 (verify -q exits 0) ----------------------


@pytest.mark.parametrize("command", [["grep"], ["project"], ["replay"]])
def test_quiet_needs_no_stdout(command: list[str]) -> None:
    args = ["trace", *command, "-q", str(FIXTURE / "events.jsonl")]
    expected = ract(*args).returncode
    closed = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "ract_cli", *args],
        stderr=subprocess.PIPE,
        timeout=120,
    )
    assert b"Traceback" not in closed.stderr
    assert closed.returncode == expected


# --- 4. grep --format table into a closed pipe exits 1 (TAMPERED), not 141 -------------------


@pytest.mark.parametrize("fmt", ["table", "jsonl", "json"])
def test_broken_pipe_exit_code_is_141_for_every_format(fmt: str) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write: EPIPE, deterministically
    try:
        proc = ract("trace", "grep", "--format", fmt, str(FIXTURE), stdout=write_end)
    finally:
        os.close(write_end)
    assert proc.returncode == 141, proc.stderr.decode(errors="replace")


# --- 5. replay: a second repair's .bak.1 / .torn.1 count as WORKTREE_DIRTY ------------------


def test_second_repair_is_not_worktree_dirt(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git not installed")

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.email=r@e.v", "-c", "user.name=rev", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    git("init", "-q")
    (tmp_path / "f").write_text("x\n")
    git("add", "f")
    git("commit", "-qm", "init")
    sha = git("rev-parse", "HEAD")
    log = tmp_path / "evals" / "runs" / RUN_ID / "events.jsonl"
    with EventWriter(log, run_id=RUN_ID, redaction=None) as w:
        w.append("run.started", {"intent_id": "x", "predicate_count": 1})
        w.append("step.started", {"parent_snapshot": sha}, step_id=STEP_ID)
        w.append("tool.called", {"tool": "t"}, step_id=STEP_ID)
    rel = str(log.relative_to(tmp_path))
    assert ract("trace", "repair", "-q", rel, cwd=tmp_path).returncode == 0
    with open(log, "ab") as f:
        f.write(b'{"torn')
    assert ract("trace", "repair", "-q", rel, cwd=tmp_path).returncode == 0
    assert (log.parent / "events.jsonl.bak.1").exists()
    proc = ract("trace", "replay", rel, cwd=tmp_path)
    assert b"WORKTREE_DIRTY" not in proc.stderr


# --- 6. usage errors: a value holding a quote keeps click's wording --------------------------


@pytest.mark.parametrize("value", ["it's", "'" + "x" * 200])
def test_bad_integer_with_a_quote_is_reworded(value: str) -> None:
    proc = ract("trace", "grep", "--jobs", value, str(FIXTURE))
    message = proc.stderr.decode()
    assert proc.returncode == 2
    assert "is not a valid integer." in message
    assert "int range" not in message
    assert "x" * 100 not in message  # a long value is cut, as a single-quoted one is
