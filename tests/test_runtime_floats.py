"""Logs whose floats a Python runtime wrote (repr's 16-17 digits, whole floats as ``2.0``, ``json.dumps``
defaults): every line is proven on a fast path by both cores, and every command says the same thing with
either core (SPEC §11), as subprocesses, the way a user runs them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from ract_cli.project.fold import project_folded
from ract_cli.read import core, fastpath
from ract_cli.read.reader import ChainReader
from ract_cli.testing.synth import write_benchmark_log, write_runtime_floats

CORES = ["python", "native"] if core.NATIVE is not None else ["python"]
#: a float of 16 or 17 significant digits, as repr writes random.random()'s
LONG_FLOAT = re.compile(rb"(?<=[:\[,] )0\.\d{15,17}(?=[,}\]])")


@pytest.fixture(scope="module")
def floats_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("floats")
    written = root / "ours.jsonl"
    write_benchmark_log(written, events=600, seed=3)
    log = root / "runs" / "f" / "events.jsonl"
    log.parent.mkdir(parents=True)
    write_runtime_floats(written, log, seed=5)
    return log


def _ract(core_name: str, *args: object) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "RACT_CORE": core_name}
    return subprocess.run(
        [sys.executable, "-m", "ract_cli", *map(str, args)], capture_output=True, env=env, timeout=120, check=False
    )


def test_the_log_holds_what_a_runtime_writes(floats_log: Path) -> None:
    data = floats_log.read_bytes()
    assert len(LONG_FLOAT.findall(data)) > 100
    assert re.search(rb": (0|1)\.0[,}\]]", data)  # whole floats, spelled as json.dumps spells them
    assert re.search(rb"[:,\[] \d\.\d+e-05[,}\]]", data)  # below 1e-4: an exponent (JCS: 0.0000...)
    assert b'", "' in data and data.isascii()


@pytest.mark.parametrize("core_name", CORES)
def test_every_line_is_proven_on_a_fast_path(floats_log: Path, core_name: str) -> None:
    prove = core.native_analyze if core_name == "native" else fastpath.fast_analyze
    for number, line in enumerate(floats_log.read_bytes().splitlines(), 1):
        proven = prove(line, 9)
        assert proven is not None, (number, line[:200])
        assert proven[0] == orjson.loads(line)  # the event, floats kept as floats


@pytest.mark.parametrize("core_name", CORES)
def test_project_folds_the_whole_log(floats_log: Path, core_name: str) -> None:
    """Not given up part way (then the log would be read again, event by event)."""
    before = os.environ.get("RACT_CORE")
    os.environ["RACT_CORE"] = core_name
    core.use_core(core_name)
    try:
        assert project_folded(ChainReader(floats_log), max_items=1000) is not None
    finally:
        if before is None:
            del os.environ["RACT_CORE"]
        else:
            os.environ["RACT_CORE"] = before
        core.use_core(core.core_name())


def test_verify_project_and_grep_agree_across_cores(floats_log: Path) -> None:
    runs = floats_log.parent.parent
    commands = [
        ("verify", floats_log),
        ("verify", "--format", "json", floats_log),
        ("project", "--format", "json", floats_log),
        ("grep", "--kind", "tool.*", runs),
    ]
    for command in commands:
        results = {c: _ract(c, "trace", *command) for c in CORES}
        outputs = {(r.returncode, r.stdout, r.stderr) for r in results.values()}
        assert len(outputs) == 1, command
        assert results["python"].returncode == 0, (command, results["python"].stderr)
    grep = _ract("python", "trace", "grep", "--kind", "tool.*", runs).stdout.splitlines()
    assert grep == [line for line in floats_log.read_bytes().splitlines() if b'"kind": "tool.' in line]


def test_a_changed_digit_of_a_long_float_is_caught_by_both_cores(floats_log: Path, tmp_path: Path) -> None:
    data = floats_log.read_bytes()
    found = LONG_FLOAT.search(data, len(data) // 2)
    assert found is not None
    at = found.end() - 1  # its last digit: the value changes, the hash no longer matches
    changed = data[:at] + (b"1" if data[at : at + 1] != b"1" else b"2") + data[at + 1 :]
    tampered = tmp_path / "events.jsonl"
    tampered.write_bytes(changed)
    results = {c: _ract(c, "trace", "verify", "--format", "json", tampered) for c in CORES}
    assert {(r.returncode, r.stdout) for r in results.values()} == {(1, results["python"].stdout)}
    findings = orjson.loads(results["python"].stdout)["files"][0]["findings"]
    line = data.count(b"\n", 0, at) + 1
    assert ("HASH_MISMATCH", line) in {(f["code"], f["line"]) for f in findings}
