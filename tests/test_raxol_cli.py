"""Raxol journals through every command (SPEC §8): exit codes, --dialect, replay, grep, project, repair."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from raxol_cases import CHAIN_BREAKS, VIOLATIONS, WARNINGS, _chained, valid_journal, write_journal

from ract_cli.cli.app import main

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
    code, out, _err = ract(capsys, "verify", "--format", "json", journal(tmp_path, "grown"))
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


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("accepted", 0),
        ("rejected", 0),
        ("absent", 0),
        ("legacy-refs", 0),
        ("legacy-unknown", 0),
        ("legacy-marker", 0),
        ("grown", 0),
        ("chained", 0),
        ("chained-tampered", 1),
    ],
)
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
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ract_cli",
            "trace",
            "verify",
            str(journal(tmp_path, "chained")),
            str(journal(tmp_path, "chained-tampered")),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "PASS" in proc.stderr and "HASH_MISMATCH" in proc.stderr and "Traceback" not in proc.stderr


# --- --dialect, on every command ------------------------------------------------

COMMANDS = ("verify", "project", "replay", "grep", "repair")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_the_dialect_option(capsys, command: str) -> None:
    code, out, _ = ract(capsys, command, "--help")
    assert code == 0 and "--dialect" in out
    code, _, _err = ract(capsys, command, "--dialect", "elixir", JOURNALS / "accepted.jsonl")
    assert code == 2


def test_forcing_the_wrong_dialect(capsys) -> None:
    code, _, err = ract(capsys, "verify", "--dialect", "ract", JOURNALS / "accepted.jsonl")
    assert code == 1 and "ENVELOPE_ERROR" in err
    code, _, err = ract(capsys, "verify", "--dialect", "raxol", RACT_RUN)
    assert code == 3 and "CONTRACT_VIOLATION" in err
    assert ract(capsys, "verify", "--dialect", "RAXOL", JOURNALS / "accepted.jsonl")[0] == 0


def test_directory_search_takes_jsonl_journals_only_with_dialect_raxol(tmp_path: Path, capsys) -> None:
    for name in ("accepted", "chained", "rejected"):
        journal(tmp_path / "nested" if name == "rejected" else tmp_path, name) if name != "rejected" else None
    (tmp_path / "nested").mkdir()
    journal(tmp_path / "nested", "rejected")
    assert ract(capsys, "verify", tmp_path)[0] == 5  # no events.jsonl under it
    code, out, _err = ract(capsys, "verify", "--dialect", "raxol", "--format", "json", tmp_path)
    assert code == 0
    assert sorted(Path(f["path"]).name for f in json.loads(out)["files"]) == [
        "accepted.jsonl",
        "chained.jsonl",
        "rejected.jsonl",
    ]
    journal(tmp_path, "chained-tampered")
    assert ract(capsys, "verify", "--dialect", "raxol", tmp_path)[0] == 1


# --- project --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "status", "stands_on"),
    [
        ("accepted", "accepted", "only on trust in the journal"),
        ("rejected", "rejected", "only on trust in the journal"),
        ("absent", "absent", "only on trust in the journal"),
        ("legacy-refs", "accepted", "only on trust in the journal"),
        ("legacy-unknown", "unknown", "only on trust in the journal"),
        ("chained", "accepted", "stands on a verified chain"),
    ],
)
def test_project_evidence_line(capsys, name: str, status: str, stands_on: str) -> None:
    path = JOURNALS / f"{name}.jsonl"
    code, out, _ = ract(capsys, "project", "--format", "text", path)
    line = next(ln for ln in out.splitlines() if ln.startswith("evidence"))
    assert status in line and stands_on in line
    code, out, _ = ract(capsys, "project", "--format", "json", path)
    report = json.loads(out)
    assert report["dialect"] == "raxol"
    assert report["evidence"]["status"] == status
    assert stands_on in report["evidence"]["stands_on"]
    assert report["evidence"]["verified_chain"] is (name == "chained")
    assert code == 0 == report["exit_code"]
    code, out, _err = ract(capsys, "project", "--format", "markdown", path)
    assert "| evidence |" in out and status in out


def test_project_a_verdict_after_the_break_is_only_a_claim(capsys) -> None:
    """The tampered journal's final record was edited to 'accepted': project never reports it as the verdict."""
    path = JOURNALS / "chained-tampered.jsonl"
    code, out, _ = ract(capsys, "project", "--format", "text", path)
    line = next(ln for ln in out.splitlines() if ln.startswith("evidence"))
    assert code == 1 and "none verified" in line and "claims accepted" in line and "not counted" in line
    code, out, _ = ract(capsys, "project", "--format", "json", path)
    report = json.loads(out)
    assert (code, report["status"], report["trusted"]) == (1, "open", False)
    ev = report["evidence"]
    assert (ev["status"], ev["line"], ev["stands_on"], ev["verified_chain"]) == (None, None, None, False)
    assert ev["claimed"] == {"status": "accepted", "line": report["untrusted_from_line"] + 1, "rejected": None}
    assert ev["trust"] == "broken-chain"
    code, out, _ = ract(capsys, "project", "--format", "markdown", path)
    assert "claims accepted" in out and "| status | open |" in out


def test_project_journal_counts(capsys) -> None:
    code, out, _ = ract(capsys, "project", "--format", "json", JOURNALS / "rejected.jsonl")
    report = json.loads(out)
    j = report["journal"]
    assert code == 0 and report["status"] == "completed" and report["trusted"] is True
    assert j["turns"] == 2 and j["iterations"] == 2 and j["errors"]["count"] == 1
    assert set(j["items_by_type"]) == {"message", "reasoning", "tool_result", "tool_use"}
    assert j["usage"]["input_tokens"] > 0 and j["deltas"] > 0
    assert report["evidence"]["rejected"]["reason"] == "stale_evidence"
    assert report["chain"] == {
        "chained": False,
        "verified": False,
        "head": None,
        "events": 32,
        "durable_events": 32 - j["deltas"],
    }


def test_project_tampered_journal_is_untrusted(capsys) -> None:
    code, out, err = ract(capsys, "project", "--format", "text", JOURNALS / "chained-tampered.jsonl")
    assert code == 1 and "UNTRUSTED" in out and "HASH_MISMATCH" in err


def test_project_fleet_of_journals(tmp_path: Path, capsys) -> None:
    for name in ("accepted", "chained", "legacy-unknown"):
        journal(tmp_path, name)
    code, out, _ = ract(capsys, "project", "--dialect", "raxol", "--format", "json", tmp_path)
    report = json.loads(out)
    assert code == 0 and report["totals"]["runs"] == 3
    assert sorted(r["evidence"]["status"] for r in report["runs"]) == ["accepted", "accepted", "unknown"]
    code, out, _ = ract(capsys, "project", "--dialect", "raxol", "--format", "text", tmp_path)
    assert code == 0 and "(journal)" in out
    code, out, _ = ract(capsys, "project", "--dialect", "raxol", "--format", "markdown", tmp_path)
    assert code == 0 and "(journal)" in out


# --- replay ---------------------------------------------------------------------


def test_replay_skips_deltas(capsys) -> None:
    path = JOURNALS / "accepted.jsonl"
    code, out, err = ract(capsys, "replay", path)
    assert code == 0, err
    assert "item_delta" not in out and "turn_started" in out and "evidence=accepted" in out
    lines = path.read_bytes().splitlines(keepends=True)
    durable = [ln for ln in lines if b'"type":"item_delta"' not in ln]
    assert len(durable) < len(lines)
    assert len(out.splitlines()) == len(durable)


def test_replay_jsonl_is_the_durable_lines_byte_for_byte(tmp_path: Path) -> None:
    path = JOURNALS / "rejected.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "ract_cli", "trace", "replay", "--format", "jsonl", str(path)],
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    durable = [ln for ln in path.read_bytes().splitlines(keepends=True) if b'"type":"item_delta"' not in ln]
    assert proc.stdout == b"".join(durable)
    assert b"item_delta" not in proc.stdout


def test_replay_until_shows_the_journal_state(capsys) -> None:
    code, out, _err = ract(capsys, "replay", "--until", "4", JOURNALS / "accepted.jsonl")
    assert code == 0
    assert "== state after record #4" in out and "open items (1)" in out


def test_replay_tampered_journal_stops_at_the_break(capsys) -> None:
    code, out, err = ract(capsys, "replay", JOURNALS / "chained-tampered.jsonl")
    assert code == 1 and "line 28" in out and "HASH_MISMATCH" in err
    assert "evidence=" not in out  # the forged final verdict is never replayed


# --- grep -----------------------------------------------------------------------


@pytest.mark.parametrize("verify", [True, False])
def test_grep_kind_matches_type(tmp_path: Path, verify: bool) -> None:
    path = JOURNALS / "accepted.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    args = [sys.executable, "-m", "ract_cli", "trace", "grep", "--kind", "turn_*", str(path)]
    if not verify:
        args.insert(5, "--no-verify")
    proc = subprocess.run(args, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"".join(ln for ln in lines if b'"type":"turn_' in ln)
    assert b"matches no kind" not in proc.stderr


def test_grep_journal_exit_codes(capsys) -> None:
    code, out, _ = ract(capsys, "grep", "-c", "--kind", "item_completed", JOURNALS / "chained.jsonl")
    assert code == 0 and int(out) == 10
    code, _, _ = ract(capsys, "grep", "--kind", "run.started", JOURNALS / "chained.jsonl")
    assert code == 7
    code, out, _ = ract(capsys, "grep", "--kind", "turn_completed", JOURNALS / "chained-tampered.jsonl")
    assert code == 1 and out.count('"type":"turn_completed"') == 1  # the forged final record is withheld
    code, out, _err = ract(capsys, "grep", "--format", "table", "--kind", "error", JOURNALS / "rejected.jsonl")
    assert code == 0 and "error" in out and "None" not in out


def test_grep_journal_directory_with_dialect_raxol(tmp_path: Path, capsys) -> None:
    for name in ("accepted", "absent"):
        journal(tmp_path, name)
    code, out, _ = ract(capsys, "grep", "--dialect", "raxol", "-c", "--kind", "turn_completed", tmp_path)
    assert code == 0 and sorted(out.split()) == sorted(f"{tmp_path / n}.jsonl:2" for n in ("absent", "accepted"))


# --- repair ---------------------------------------------------------------------


@pytest.mark.parametrize("args", [(), ("--check",), ("--dialect", "raxol"), ("--dialect", "auto", "--no-backup")])
def test_repair_refuses_journals(tmp_path: Path, capsys, args: tuple[str, ...]) -> None:
    path = journal(tmp_path, "accepted")
    torn = path.read_bytes()[:-20]  # even a torn, open journal: a close would invent a done verdict
    path.write_bytes(torn)
    code, _out, err = ract(capsys, "repair", *args, path)
    assert code != 0 and "journal" in err and "done verdict" in err
    assert path.read_bytes() == torn
    assert sorted(p.name for p in tmp_path.iterdir()) == ["accepted.jsonl"]


# --- hostile strings never reach a terminal raw ---------------------------------

HOSTILE = "\x1b[31mPASS\x1b[0m [bold green]verified[/] \u202eevil\r\n"


def test_journal_strings_are_escaped_on_terminals(tmp_path: Path, capsys) -> None:
    records = valid_journal()
    records[0]["payload"]["prompt"] = HOSTILE
    records[1]["payload"]["item_type"] = records[2]["payload"]["item_type"] = HOSTILE
    records.insert(6, {"schema_version": "1.1.0", "type": "error", "payload": {"reason": HOSTILE}})
    records.insert(7, {"schema_version": "1.1.0", "type": HOSTILE, "payload": {"x": HOSTILE}})
    path = write_journal(tmp_path / "hostile.jsonl", records)
    for args in (
        ("verify",),
        ("project", "--format", "text"),
        ("project", "--format", "markdown"),
        ("replay",),
        ("replay", "--until", "3"),
        ("grep", "--format", "table", "--kind", "*"),
    ):
        code, out, err = ract(capsys, *args, path)
        for stream in (out, err):
            assert "\x1b" not in stream and "\u202e" not in stream and "\r" not in stream, args
        assert "[bold green]" in out + err or "\\[bold green\\]" in out + err or args[0] == "verify", args
        assert code == 0, (args, err)
