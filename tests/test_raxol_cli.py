"""Raxol journals through every command (SPEC §8): exit codes, --dialect, replay, grep, project, repair."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ract_cli.cli.app import main
from raxol_cases import CHAIN_BREAKS, VIOLATIONS, WARNINGS, _chained, valid_journal, write_journal

ROOT = Path(__file__).resolve().parent.parent
JOURNALS = ROOT / "fixtures" / "journals"
RACT_RUN = ROOT / "fixtures" / "runs" / "120d7eae7ee0c9c181816e553722e2fe" / "events.jsonl"


def ract(capsys, *args: object) -> tuple[int, str, str]:
    code = main(["trace", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def journal(tmp_path: Path, name: str) -> Path:
    """A copy of a committed journal fixture (commands never touch the committed file)."""
    target = tmp_path / f"{name}.jsonl"
    shutil.copyfile(JOURNALS / f"{name}.jsonl", target)
    return target


# --- verify -------------------------------------------------------------------

@pytest.mark.parametrize("mutate", [pytest.param(m, id=i) for i, m, _ in VIOLATIONS])
def test_verify_contract_violation_exits_3(tmp_path: Path, capsys, mutate) -> None:
    records = valid_journal()
    mutate(records)
    path = write_journal(tmp_path / "j.jsonl", records)
    code, out, err = ract(capsys, "verify", path)
    assert code == 3, err
    assert "CONTRACT_VIOLATION" in err and "FAIL" in err and "SCHEMA" in err
    code, out, _ = ract(capsys, "verify", "--format", "json", path)
    report = json.loads(out)
    assert code == 3 and report["exit_code"] == 3
    assert "CONTRACT_VIOLATION" in {f["code"] for f in report["files"][0]["findings"]}


@pytest.mark.parametrize(("mutate", "warning"), [pytest.param(m, c, id=i) for i, m, c in WARNINGS])
def test_verify_contract_warning_exits_0(tmp_path: Path, capsys, mutate, warning: str) -> None:
    records = valid_journal()
    mutate(records)
    code, _, err = ract(capsys, "verify", write_journal(tmp_path / "j.jsonl", records))
    assert code == 0, err
    assert warning in err and "PASS" in err


def test_verify_unknown_type_is_a_warning(tmp_path: Path, capsys) -> None:
    code, out, err = ract(capsys, "verify", "--format", "json", journal(tmp_path, "grown"))
    findings = json.loads(out)["files"][0]["findings"]
    assert code == 0
    assert [(f["code"], f["severity"]) for f in findings] == [("UNKNOWN_TYPE", "warning")]


@pytest.mark.parametrize(("mutate", "code_name"), [pytest.param(m, c, id=i) for i, m, c, _ in CHAIN_BREAKS])
def test_verify_chain_break_exits_1(tmp_path: Path, capsys, mutate, code_name: str) -> None:
    records = _chained()
    mutate(records)
    code, _, err = ract(capsys, "verify", write_journal(tmp_path / "c.jsonl", records))
    assert code == 1 and code_name in err and "FAIL" in err and "TAMPERED" in err


def test_verify_chained_and_tampered_fixtures(tmp_path: Path, capsys) -> None:
    chained = journal(tmp_path, "chained")
    code, out, err = ract(capsys, "verify", "--format", "json", chained)
    head = json.loads(out)["files"][0]["head"]
    assert code == 0 and len(head) == 64
    assert ract(capsys, "verify", "--expect-head", head, chained)[0] == 0
    assert ract(capsys, "verify", "--expect-head", "0" * 64, chained)[0] == 1
    code, _, err = ract(capsys, "verify", journal(tmp_path, "chained-tampered"))
    assert code == 1 and "HASH_MISMATCH" in err and ":29:" in err


@pytest.mark.parametrize(("name", "expected"), [
    ("accepted", 0), ("rejected", 0), ("absent", 0), ("legacy-refs", 0), ("legacy-unknown", 0),
    ("legacy-marker", 0), ("grown", 0), ("chained", 0), ("chained-tampered", 1),
])
def test_verify_every_journal_fixture(capsys, name: str, expected: int) -> None:
    assert ract(capsys, "verify", JOURNALS / f"{name}.jsonl")[0] == expected


def test_verify_legacy_marker_warns(capsys) -> None:
    code, _, err = ract(capsys, "verify", JOURNALS / "legacy-marker.jsonl")
    assert code == 0 and "CONTRACT_WARNING" in err and "1.0.0" in err


def test_verify_journal_framing_codes(tmp_path: Path, capsys) -> None:
    body = (JOURNALS / "accepted.jsonl").read_bytes()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(body + b'{"type":"item_del')
    assert ract(capsys, "verify", torn)[0] == 4
    open_journal = tmp_path / "open.jsonl"
    open_journal.write_bytes(b"".join(body.splitlines(keepends=True)[:-1]))
    assert ract(capsys, "verify", open_journal)[0] == 0
    assert ract(capsys, "verify", "--require-closed", open_journal)[0] == 4
    assert ract(capsys, "verify", tmp_path / "missing.jsonl")[0] == 5


def test_verify_a_real_subprocess(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "ract_cli", "trace", "verify", str(journal(tmp_path, "chained")),
                           str(journal(tmp_path, "chained-tampered"))], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "PASS" in proc.stderr and "HASH_MISMATCH" in proc.stderr and "Traceback" not in proc.stderr
