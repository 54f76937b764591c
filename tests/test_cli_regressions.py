"""Regressions found by reading the CLI as a newcomer would, each named after what it pins."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMPLETED = ROOT / "fixtures" / "runs" / "120d7eae7ee0c9c181816e553722e2fe" / "events.jsonl"


def ract(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ract_cli", *argv], capture_output=True, cwd=cwd, timeout=120)


@pytest.fixture
def bad_line_100(tmp_path: Path) -> Path:
    lines = COMPLETED.read_bytes().splitlines(keepends=True)
    log = tmp_path / "120d7eae7ee0c9c181816e553722e2fe" / "events.jsonl"
    log.parent.mkdir()
    log.write_bytes(b"".join(lines[:99]) + b"garbage\n" + b"".join(lines[99:]))
    return log


@pytest.mark.parametrize("command", ["verify", "replay", "grep", "project"])
def test_a_finding_on_line_100_is_printed_as_line_100_not_an_emoji(bad_line_100: Path, command: str) -> None:
    argv = ["trace", command, str(bad_line_100)]
    if command == "project":
        argv += ["--format", "text"]
    result = ract(*argv, cwd=bad_line_100.parent)
    err = result.stderr.decode()
    assert result.returncode == 1
    expected = "line 100" if command == "project" else f"{bad_line_100}:100:"
    assert expected in err, err[-600:]
    assert "\N{HUNDRED POINTS SYMBOL}" not in err + result.stdout.decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform != "linux", reason="needs a file system that takes non-UTF-8 names")
@pytest.mark.parametrize(
    "argv",
    [
        ["project", "--format", "json"],
        ["grep", "--format", "json", "--kind", "run.started"],
        ["verify", "--format", "json"],
    ],
)
def test_a_non_utf8_directory_name_gives_a_report_not_a_traceback(tmp_path: Path, argv: list[str]) -> None:
    odd = os.fsencode(tmp_path) + b"/run\xff"
    os.makedirs(odd)
    shutil.copyfile(COMPLETED, os.path.join(odd, b"events.jsonl"))
    result = ract("trace", *argv, str(tmp_path))
    assert b"Traceback" not in result.stderr
    assert result.returncode == 0, result.stderr[-600:]
    document = json.loads(result.stdout)  # still one valid JSON document
    assert document
