"""One formatter of event times (issue 13): verify, project, grep and the export show the same second.

``format.text.iso_utc`` truncates to microseconds, never rounds: an event at
1763999999999999500 ns happened in second 15:59:59, not at 16:00:00.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ract_cli.format.text import iso_utc
from ract_cli.writer.event_writer import EventWriter

EDGE_NS = 1763999999999999500
SHOWN = "2025-11-24T15:59:59.999999Z"


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (EDGE_NS, SHOWN),
        (0, "1970-01-01T00:00:00.000000Z"),
        (999, "1970-01-01T00:00:00.000000Z"),
        (1_000, "1970-01-01T00:00:00.000001Z"),
        (1764000000261966999, "2025-11-24T16:00:00.261966Z"),
        (2**63 - 1, "2262-04-11T23:47:16.854775Z"),
    ],
)
def test_iso_utc_truncates_to_microseconds(ns: int, text: str) -> None:
    assert iso_utc(ns) == text


@pytest.fixture
def edge_log(tmp_path: Path) -> Path:
    log = tmp_path / "events.jsonl"
    with EventWriter(log) as w:
        w.append("run.started", {}, timestamp_ns=EDGE_NS)
        w.append("run.completed", {"final_decision": "accept"}, timestamp_ns=EDGE_NS)
    return log


def _ract(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "ract_cli", "trace", *args], capture_output=True, text=True, timeout=60, env=env
    )


def test_verify_project_and_grep_show_the_same_second(edge_log: Path) -> None:
    verify = _ract("verify", str(edge_log))
    assert verify.returncode == 0 and f"{SHOWN} .. {SHOWN}" in verify.stderr
    report = json.loads(_ract("project", "--format", "json", str(edge_log)).stdout)
    run = report["runs"][0] if "runs" in report else report
    assert SHOWN in json.dumps(run) and "16:00:00.000000Z" not in json.dumps(run)
    markdown = _ract("project", "--format", "markdown", str(edge_log)).stdout
    assert SHOWN in markdown and "16:00:00.000000" not in markdown
    table = _ract("grep", "--format", "table", "--kind", "run.started", str(edge_log)).stdout
    assert SHOWN in table
