"""A payload nested near and past the parser's depth limit (``MAX_NESTING``, 512 levels).

The same verdict from every command and every ``--jobs``, whatever the
Python stack depth of the process, and never a traceback: ``--no-verify``
shows what it can and calls the rest ``MALFORMED_LINE``. Real CLI
subprocesses over real files; the deep lines are written as text (their
canonical form by hand), so this process never parses the nesting itself.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from ract_cli import EventWriter

RUN_ID = "a" * 32


def ract(*args: str, stdout=subprocess.PIPE, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m ract_cli ARGS`` as a user runs it (its own process, its own stack), stderr piped."""
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


def test_deep_payload_verdict_does_not_depend_on_jobs_or_command(tmp_path: Path) -> None:
    """Regression (review of session 2's commits 7e6c4a0..63e83a1, bug 1): the verdict
    on a deeply nested line depended on the Python stack depth, so grep --jobs 1,
    grep --jobs 2 and verify disagreed on the same file.
    """
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


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_no_verify_deep_payload_is_not_a_traceback(tmp_path: Path, fmt: str) -> None:
    """Regression (review of session 2's commits 7e6c4a0..63e83a1, bug 2): grep
    --no-verify crashed the table and JSON output on a payload nested past ~985 levels.
    """
    log = tmp_path / "events.jsonl"
    # 510 levels inside the line's object: at MAX_NESTING (512), shown; 1000: MALFORMED_LINE (exit 1), no traceback
    log.write_text(
        '{"kind":"k","payload":' + "[" * 510 + "]" * 510 + '}\n{"kind":"k","payload":' + "[" * 1000 + "]" * 1000 + "}\n"
    )
    proc = ract("trace", "grep", "--no-verify", "--format", fmt, str(log))
    assert b"Traceback" not in proc.stderr
    assert proc.returncode == 1 and b"MALFORMED_LINE" in proc.stderr
    assert proc.stdout.count(b"[[[[") >= 1  # the shallower one was rendered
