"""One formatter of event times (issue 13): verify, project, grep and the export show the same second.

``format.text.iso_utc`` truncates to microseconds, never rounds: an event at
1763999999999999500 ns happened in second 15:59:59, not at 16:00:00.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

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


_EPOCH = datetime(1970, 1, 1)
_YEAR_1_NS = (datetime(1, 1, 1) - _EPOCH) // timedelta(microseconds=1) * 1_000
_YEAR_10000_NS = ((datetime(9999, 12, 31) - _EPOCH) // timedelta(microseconds=1) + 86_400_000_000) * 1_000


def _by_datetime(ns: int) -> str:
    """What ``iso_utc`` showed while it added a ``timedelta`` to the epoch (the reference for its arithmetic)."""
    seconds, rest = divmod(ns, 1_000_000_000)
    try:
        t = _EPOCH + timedelta(seconds=seconds)
    except OverflowError:
        return f"{ns}ns"
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}.{rest // 1000:06d}Z"


@settings(max_examples=3000, deadline=None)
@given(st.integers(min_value=_YEAR_1_NS - 10**17, max_value=_YEAR_10000_NS + 10**17) | st.integers())
@example(_YEAR_1_NS)
@example(_YEAR_1_NS - 1)
@example(_YEAR_10000_NS - 1)
@example(_YEAR_10000_NS)
@example(951_782_400 * 10**9)  # 2000-02-29, a leap day of a year divisible by 400
@example(4_107_542_400 * 10**9)  # 2100-03-01, after a February of 28 days
def test_iso_utc_is_the_proleptic_gregorian_calendar(ns: int) -> None:
    assert iso_utc(ns) == _by_datetime(ns)


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
