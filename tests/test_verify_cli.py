"""``ract trace verify`` in-process: exact exit codes and messages for every finding class.

Every bad log is built in ``tmp_path`` with ``EventWriter`` (the ``logs``
fixture) plus byte edits, then verified through ``ract_cli.cli.app.main``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from ract_cli.cli.app import main
from ract_cli.findings import FINDING_CODES
from ract_cli.format.canonical import jcs_exact
from ract_cli.testing.synth import FIXTURES, fixture_path

ROOT = Path(__file__).resolve().parent.parent
RUN_ID = "1a2b3c4d5e6f708192a3b4c5d6e7f809"  # the logs fixture's run id (tests/conftest.py)


def ract(capsys, *args: object) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["trace", "verify", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def rechain(events: list[dict]) -> list[dict]:
    """Recompute prev_hash/hash down the list, so only the planted fault remains."""
    prev = "0" * 64
    out = []
    for event in events:
        body = {k: v for k, v in event.items() if k != "hash"}
        body["prev_hash"] = prev
        prev = hashlib.sha256(jcs_exact(body)).hexdigest()
        out.append({**body, "hash": prev})
    return out


def write_events(path: Path, events: list[dict]) -> Path:
    path.write_bytes(b"".join(jcs_exact(e) + b"\n" for e in events))
    return path


# --- one builder per finding class: (path, extra args) -------------------------------


def edit_line(logs, line: int, edit: Callable[[bytes], bytes]) -> Path:
    path = logs.five()
    lines = logs.lines(path)
    lines[line - 1] = edit(lines[line - 1])
    path.write_bytes(b"".join(lines))
    return path


def edit_event(logs, line: int, edit: Callable[[dict], None]) -> Path:
    path = logs.five()
    events = logs.events(path)
    edit(events[line - 1])
    return write_events(path, rechain(events))


def b_malformed(logs):
    return edit_line(logs, 3, lambda _: b"this is not json\n"), []


def b_duplicate_key(logs):
    return edit_line(logs, 3, lambda line: line.replace(b'{"hash"', b'{"kind":"x","hash"', 1)), []


def b_line_too_long(logs):
    return edit_line(logs, 3, lambda _: b'{"pad":"' + b"a" * 5000 + b'"}\n'), ["--max-line-bytes", "1000"]


def b_envelope(logs):
    return edit_event(logs, 3, lambda e: e.update(extra=1)), []


def b_hash_mismatch(logs):
    return edit_line(logs, 3, lambda line: line.replace(b'"ok":true', b'"ok":false')), []


def b_chain_break(logs):
    path = logs.five()
    lines = logs.lines(path)
    path.write_bytes(b"".join(lines[:2] + lines[3:]))
    return path, []


def b_missing_genesis(logs):
    path = logs.five()
    path.write_bytes(b"".join(logs.lines(path)[1:]))
    return path, []


def b_foreign_run_id(logs):
    return edit_event(logs, 3, lambda e: e.update(run_id="f" * 32)), []


def b_duplicate_id(logs):
    path = logs.five()
    events = logs.events(path)
    events[2]["id"] = events[1]["id"]
    return write_events(path, rechain(events)), []


def b_head_mismatch(logs):
    return logs.five(), ["--expect-head", "ab" * 32]


def b_unknown_kind(logs):
    return edit_event(logs, 3, lambda e: e.update(kind="no.such.kind")), []


def b_unknown_kind_for_version(logs):
    return edit_event(logs, 3, lambda e: e.update(kind="subagent.disposed", payload={})), ["--schema-version", "7"]


def b_payload_invalid(logs):
    return edit_event(logs, 3, lambda e: e["payload"].update(ok="yes")), []


def b_torn_tail(logs):
    path = logs.five()
    with open(path, "ab") as f:
        f.write(b'{"hash":"0123')
    return path, []


def b_open_run(logs):
    path = logs.five()
    path.write_bytes(b"".join(logs.lines(path)[:-1]))
    return path, []


def b_open_run_required(logs):
    return b_open_run(logs)[0], ["--require-closed"]


def b_empty(logs):
    path = logs.path()
    path.write_bytes(b"")
    return path, []


def b_empty_required(logs):
    return b_empty(logs)[0], ["--require-closed"]


def b_io_missing(logs):
    return logs.root / "no" / "such" / "events.jsonl", []


def b_io_directory_without_logs(logs):
    (logs.root / "empty-dir").mkdir()
    return logs.root / "empty-dir", []


def b_io_fifo(logs):
    path = logs.root / "fifo.jsonl"
    os.mkfifo(path)
    return path, []


def b_missing_final_newline(logs):
    path = logs.five()
    path.write_bytes(path.read_bytes()[:-1])
    return path, []


def b_clock_regression(logs):
    path = logs.five()
    events = logs.events(path)
    events[2]["timestamp_ns"] = events[0]["timestamp_ns"] - 1
    return write_events(path, rechain(events)), []


def b_run_dir_mismatch(logs):
    path = logs.five()
    other = logs.root / "not-the-run-id" / "events.jsonl"
    other.parent.mkdir()
    path.rename(other)
    return other, []


def b_open_handle(logs):
    path = logs.five()
    events = logs.events(path)
    del events[3]  # step.committed: the step stays open
    return write_events(path, rechain(events)), []


def b_repaired(logs):
    path = logs.five()
    events = logs.events(path)
    started = events[1]
    events[3] = {
        **events[3],
        "kind": "step.rolled_back",
        "parent_id": started["id"],
        "payload": {"synthesized": True, "reason": "interrupted", "source_event_id": started["id"]},
    }
    return write_events(path, rechain(events)), []


# (builder, exit code, finding code, severity, line, words the message must hold)
CASES = {
    "MALFORMED_LINE": (b_malformed, 1, "MALFORMED_LINE", "error", 3, "not valid JSON"),
    "DUPLICATE_KEY": (b_duplicate_key, 1, "DUPLICATE_KEY", "error", 3, "duplicate key 'kind'"),
    "LINE_TOO_LONG": (b_line_too_long, 1, "LINE_TOO_LONG", "error", 3, "longer than --max-line-bytes (1000 bytes)"),
    "ENVELOPE_ERROR": (b_envelope, 1, "ENVELOPE_ERROR", "error", 3, "extra key(s) not covered by the schema: extra"),
    "HASH_MISMATCH": (b_hash_mismatch, 1, "HASH_MISMATCH", "error", 3, "stored hash differs from the canonical hash"),
    "CHAIN_BREAK": (b_chain_break, 1, "CHAIN_BREAK", "error", 3, "prev_hash does not equal the previous event's hash"),
    "MISSING_GENESIS": (b_missing_genesis, 1, "MISSING_GENESIS", "error", 1, "not the genesis hash"),
    "FOREIGN_RUN_ID": (b_foreign_run_id, 1, "FOREIGN_RUN_ID", "error", 3, "run_id differs from the log's run_id"),
    "DUPLICATE_ID": (b_duplicate_id, 1, "DUPLICATE_ID", "error", 3, "already appears earlier in this file"),
    "HEAD_MISMATCH": (b_head_mismatch, 1, "HEAD_MISMATCH", "error", None, "chain head differs from --expect-head"),
    "UNKNOWN_KIND": (b_unknown_kind, 3, "UNKNOWN_KIND", "error", 3, "'no.such.kind' is not in the vocabulary"),
    "UNKNOWN_KIND for --schema-version": (
        b_unknown_kind_for_version,
        3,
        "UNKNOWN_KIND",
        "error",
        3,
        "added in schema version 8 (schema version 7)",
    ),
    "PAYLOAD_INVALID": (b_payload_invalid, 3, "PAYLOAD_INVALID", "error", 3, "predicate.evaluated: ok must be boolean"),
    "TORN_TAIL": (b_torn_tail, 4, "TORN_TAIL", "error", 6, "torn tail"),
    "OPEN_RUN": (b_open_run, 0, "OPEN_RUN", "warning", 1, "run was never closed"),
    "OPEN_RUN --require-closed": (b_open_run_required, 4, "OPEN_RUN", "error", 1, "run was never closed"),
    "EMPTY_LOG": (b_empty, 0, "EMPTY_LOG", "warning", None, "log holds no event"),
    "EMPTY_LOG --require-closed": (b_empty_required, 4, "EMPTY_LOG", "error", None, "log holds no event"),
    "IO_ERROR missing": (b_io_missing, 5, "IO_ERROR", "error", None, "no such file or directory"),
    "IO_ERROR empty directory": (b_io_directory_without_logs, 5, "IO_ERROR", "error", None, "no events.jsonl file"),
    "IO_ERROR fifo": (b_io_fifo, 5, "IO_ERROR", "error", None, "not a regular file"),
    "MISSING_FINAL_NEWLINE": (b_missing_final_newline, 0, "MISSING_FINAL_NEWLINE", "warning", 5, "final newline"),
    "CLOCK_REGRESSION": (b_clock_regression, 0, "CLOCK_REGRESSION", "warning", 3, "timestamp goes backwards"),
    "RUN_DIR_MISMATCH": (
        b_run_dir_mismatch,
        0,
        "RUN_DIR_MISMATCH",
        "warning",
        None,
        f"directory name 'not-the-run-id' differs from run_id {RUN_ID}",
    ),
    "OPEN_HANDLE": (b_open_handle, 0, "OPEN_HANDLE", "warning", 2, "step.started was never closed"),
    "REPAIRED": (b_repaired, 0, "REPAIRED", "warning", None, "1 synthesized close(s) written by repair"),
}

#: finding codes verify never emits on RACT logs, and where they are tested instead
ELSEWHERE = {
    "CONTRACT_VIOLATION": "tests/test_raxol_cli.py (journal dialect)",
    "UNKNOWN_TYPE": "tests/test_raxol_cli.py (journal dialect)",
    "CONTRACT_WARNING": "tests/test_raxol_cli.py (journal dialect)",
    "HEAD_DIVERGED": "replay only",
    "COMMIT_MISSING": "replay only",
    "COMMIT_UNRELATED": "replay only",
    "WORKTREE_DIRTY": "replay only",
    "PRECONDITION_UNCHECKED": "replay only",
    "NOT_A_LOG": "tests/test_not_a_log.py (a file with no record of either dialect)",
    "CHECKPOINT_SIGNATURE": "tests/test_checkpoint_cli.py (verify --checkpoint)",
    "CHECKPOINT_TRUNCATED": "tests/test_checkpoint_cli.py (verify --checkpoint)",
    "CHECKPOINT_MISMATCH": "tests/test_checkpoint_cli.py (verify --checkpoint)",
    "CHECKPOINT_ORIGIN": "tests/test_checkpoint_cli.py (verify --checkpoint --origin)",
    "CHECKPOINT_TORN": "tests/test_seal.py (a sealing sidecar cut short)",
    "PROOF_MALFORMED": "tests/test_tlog_proof.py (verify-proof)",
    "PROOF_EVENT": "tests/test_tlog_proof.py (verify-proof)",
    "PROOF_INCLUSION": "tests/test_tlog_proof.py (verify-proof)",
    "PROOF_CONSISTENCY": "tests/test_tlog_proof.py (verify-proof)",
}


def test_every_finding_code_has_a_case_or_a_reason() -> None:
    covered = {case[2] for case in CASES.values()}
    assert set(FINDING_CODES) - covered == set(ELSEWHERE) - covered, "a finding code with no verify case"


@pytest.mark.parametrize("name", sorted(CASES))
def test_finding_class(name: str, logs, capsys) -> None:
    build, exit_code, code, severity, line, words = CASES[name]
    path, extra = build(logs)
    assert FINDING_CODES[code][0] == exit_code or severity == "warning"

    got, out, err = ract(capsys, *extra, path)
    assert got == exit_code, err
    assert out == ""
    verdict = "PASS" if exit_code == 0 else "FAIL"
    assert err.startswith(f"{verdict} "), err
    where = f"{path}:{line}" if line is not None else f"{path}"
    matching = [ln for ln in err.splitlines() if ln.startswith(f"{where}: {code} ")]
    assert matching and words in matching[0], err

    got, out, _ = ract(capsys, "--format", "json", *extra, path)
    assert got == exit_code
    report = json.loads(out)
    assert report["exit_code"] == exit_code
    findings = [f for f in report["files"][0]["findings"] if f["code"] == code]
    assert findings and findings[0]["severity"] == severity and findings[0]["line"] == line
    assert words in findings[0]["message"]
    # issue 15 item 14: HEAD_MISMATCH's text form also names the expected head and the actual one
    compared = (
        f" (expected {findings[0]['expected']}, actual {findings[0]['actual']})" if code == "HEAD_MISMATCH" else ""
    )
    assert matching[0] == f"{where}: {code} {findings[0]['message']}{compared}"

    got, out, _ = ract(capsys, "--format", "github", *extra, path)
    level = "error" if severity == "error" else "warning"
    props = f"file={path}" + (f",line={line}" if line is not None else "")
    assert got == exit_code
    assert f"::{level} {props}::{code} {findings[0]['message']}{compared}" in out.splitlines()

    assert ract(capsys, "-q", *extra, path) == (exit_code, "", "")
    assert ract(capsys, "-q", "--jobs", "2", *extra, path)[0] == exit_code


def test_error_findings_carry_offset_and_event_id(logs, capsys) -> None:
    path, _ = b_hash_mismatch(logs)
    _code, out, _ = ract(capsys, "--format", "json", path)
    finding = json.loads(out)["files"][0]["findings"][0]
    assert finding["offset"] == logs.offset(path, 3)
    assert finding["event_id"] == logs.events(path)[2]["id"]
    assert re.fullmatch("[0-9a-f]{64}", finding["expected"]) and finding["actual"] == logs.events(path)[2]["hash"]


def test_every_independent_break_is_reported(logs, capsys) -> None:
    path = logs.five()
    lines = logs.lines(path)
    lines[1] = lines[1].replace(b'"timeout_seconds":600', b'"timeout_seconds":601')
    lines[4] = lines[4].replace(b'"duration_ns":9000000', b'"duration_ns":9000001')
    path.write_bytes(b"".join(lines))
    code, out, _ = ract(capsys, "--format", "json", path)
    assert code == 1
    assert [(f["code"], f["line"]) for f in json.loads(out)["files"][0]["findings"]] == [
        ("HASH_MISMATCH", 2),
        ("HASH_MISMATCH", 5),
    ]


def test_lowest_nonzero_code_wins_across_files(logs, capsys) -> None:
    schema = logs.root / "other" / RUN_ID / "events.jsonl"
    schema.parent.mkdir(parents=True)
    logs.write(path=schema)
    write_events(
        schema, rechain([{**e, "kind": "no.such.kind"} if i == 2 else e for i, e in enumerate(logs.events(schema))])
    )
    torn, _ = b_torn_tail(logs)
    missing = logs.root / "missing.jsonl"
    assert ract(capsys, torn, missing)[0] == 4
    assert ract(capsys, torn, schema, missing)[0] == 3
    assert ract(capsys, missing)[0] == 5
    tampered = fixture_path(ROOT / "fixtures", "tampered")
    assert ract(capsys, missing, torn, schema, tampered)[0] == 1


def test_max_findings_keeps_n_and_counts_the_rest(logs, capsys) -> None:
    path = logs.five()
    lines = logs.lines(path)
    path.write_bytes(b"".join([*lines[:1], b"bad\n", b"bad\n", b"bad\n", *lines[1:]]))
    code, out, _ = ract(capsys, "--format", "json", "--max-findings", "2", path)
    file = json.loads(out)["files"][0]
    assert code == 1 and len(file["findings"]) == 2 and file["suppressed_findings"] == 1
    code, _, err = ract(capsys, "--max-findings", "2", path)
    assert f"{path}: {file['suppressed_findings']} more finding(s) not shown (--max-findings)" in err
    # the suppressed findings still decide the exit code
    torn = logs.root / "t" / RUN_ID / "events.jsonl"
    torn.parent.mkdir(parents=True)
    torn.write_bytes(path.read_bytes() + b'{"tor')
    assert ract(capsys, "--max-findings", "1", torn)[0] == 1


# --- the JSON report -----------------------------------------------------------------

FILE_KEYS = {"path", "ok", "exit_code", "events", "head", "first_ts", "last_ts", "findings", "suppressed_findings"}
FINDING_KEYS = {"code", "severity", "path", "line", "offset", "event_id", "message"}


def test_json_report_shape(capsys) -> None:
    paths = [fixture_path(ROOT / "fixtures", n) for n in ("completed", "tampered")]
    code, out, err = ract(capsys, "--format", "json", *paths, "nowhere")
    assert err == ""
    report = json.loads(out)
    assert set(report) == {"exit_code", "files"} and report["exit_code"] == code == 1
    assert [f["path"] for f in report["files"]] == [*map(str, paths), "nowhere"]
    for file in report["files"]:
        assert set(file) == FILE_KEYS
        assert type(file["ok"]) is bool and file["ok"] == (file["exit_code"] == 0)
        for finding in file["findings"]:
            assert FINDING_KEYS <= set(finding) <= FINDING_KEYS | {"expected", "actual"}
            assert finding["severity"] in ("error", "warning")
    completed, tampered, missing = report["files"]
    assert completed["events"] == 156 and completed["findings"] == [] and completed["exit_code"] == 0
    assert re.fullmatch("[0-9a-f]{64}", completed["head"])
    assert completed["first_ts"] <= completed["last_ts"]
    assert tampered["exit_code"] == 1 and tampered["findings"][0]["code"] == "HASH_MISMATCH"
    assert missing == {
        "path": "nowhere",
        "ok": False,
        "exit_code": 5,
        "events": 0,
        "head": None,
        "first_ts": None,
        "last_ts": None,
        "suppressed_findings": 0,
        "findings": [
            {
                "code": "IO_ERROR",
                "severity": "error",
                "path": "nowhere",
                "line": None,
                "offset": None,
                "event_id": None,
                "message": "no such file or directory: nowhere",
            }
        ],
    }


# --- fixtures, directories, several paths -------------------------------------------

FIXTURE_EXIT = {"completed": 0, "aborted": 0, "interrupted": 4, "tampered": 1, "foreign-format": 0}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_verdicts(name: str, capsys) -> None:
    assert f"exit {FIXTURE_EXIT[name]}" in FIXTURES[name][1]  # the documented verdict
    path = fixture_path(ROOT / "fixtures", name)
    code, _, err = ract(capsys, path)
    assert code == FIXTURE_EXIT[name]
    assert err.startswith(("PASS " if code == 0 else "FAIL ") + str(path))
    assert ract(capsys, "--jobs", "2", path)[0] == code


def test_fixture_interrupted_under_require_closed(capsys) -> None:
    code, out, _ = ract(capsys, "--format", "json", "--require-closed", fixture_path(ROOT / "fixtures", "interrupted"))
    codes = [(f["code"], f["severity"]) for f in json.loads(out)["files"][0]["findings"]]
    assert code == 4 and ("TORN_TAIL", "error") in codes and ("OPEN_RUN", "error") in codes


def test_directory_is_searched_recursively(capsys) -> None:
    code, out, _err = ract(capsys, "--format", "json", ROOT / "fixtures")
    report = json.loads(out)
    assert code == 1
    assert sorted(f["path"] for f in report["files"]) == sorted(
        str(fixture_path(ROOT / "fixtures", n)) for n in FIXTURES
    )
    assert ract(capsys, "--jobs", "2", "--format", "json", ROOT / "fixtures")[1] == out


def test_several_paths_and_duplicates(logs, capsys) -> None:
    five = logs.five()
    code, out, _ = ract(capsys, "--format", "json", five, logs.root, five)
    assert code == 0 and [f["path"] for f in json.loads(out)["files"]] == [str(five)]


def test_text_verdict_line(logs, capsys) -> None:
    five = logs.five()
    events = logs.events(five)
    code, _, err = ract(capsys, five)
    assert code == 0
    assert err == (
        f"PASS {five}  5 events  2025-11-24T16:00:00.000000Z .. 2025-11-24T16:00:00.004000Z  "
        f"head {events[-1]['hash']}\n"
    )


# --- --expect-head and usage errors ----------------------------------------------------


def test_expect_head(logs, capsys) -> None:
    five = logs.five()
    head = logs.events(five)[-1]["hash"]
    assert ract(capsys, "--expect-head", head, five)[0] == 0
    # a whole last line cut off verifies as a chain, but not against the pinned head
    five.write_bytes(b"".join(logs.lines(five)[:-1]))
    code, _, err = ract(capsys, "--expect-head", head, five)
    assert code == 1 and f"{five}: HEAD_MISMATCH chain head differs from --expect-head" in err


@pytest.mark.parametrize(
    "args",
    [
        ["--expect-head", "ab" * 32, "A", "B"],
        ["--expect-head", "AB" * 32, "A"],
        ["--expect-head", "ab", "A"],
        ["--schema-version", "10", "A"],
        ["--schema-version", "0", "A"],
        ["--jobs", "0", "A"],
        ["--max-findings", "0", "A"],
        ["--format", "xml", "A"],
        [],
    ],
)
def test_usage_errors_exit_2(args: list[str], logs, capsys) -> None:
    a = logs.five()
    b = logs.root / "b" / RUN_ID / "events.jsonl"
    b.parent.mkdir(parents=True)
    b.write_bytes(a.read_bytes())
    argv = [str(a) if x == "A" else str(b) if x == "B" else x for x in args]
    code, out, err = ract(capsys, *argv)
    assert code == 2 and out == "" and "Traceback" not in err


def test_expect_head_with_a_directory_of_several_logs_is_usage(capsys) -> None:
    code, _, err = ract(capsys, "--expect-head", "ab" * 32, ROOT / "fixtures")
    assert code == 2 and "--expect-head applies to a single log" in err


# --- hostile text never reaches the terminal raw -----------------------------------------


def test_log_derived_text_is_escaped(logs, capsys) -> None:
    path = edit_event(logs, 3, lambda e: e.update(kind="\x1b[32mPASS\x1b[0m\u202e"))
    code, _, err = ract(capsys, path)
    assert code == 3 and "\x1b" not in err and "\u202e" not in err and "\\x1b[32mPASS" in err
    code, out, _ = ract(capsys, "--format", "github", path)
    assert "\x1b" not in out and "\u202e" not in out
    assert out.splitlines() and all(line.startswith("::error ") for line in out.splitlines())


def test_github_escapes_percent_and_property_separators(tmp_path: Path, logs, capsys) -> None:
    src = logs.five()
    odd = tmp_path / "a,b:c%d" / RUN_ID / "events.jsonl"
    odd.parent.mkdir(parents=True)
    odd.write_bytes(src.read_bytes()[:-1])  # MISSING_FINAL_NEWLINE on line 5
    code, out, _ = ract(capsys, "--format", "github", odd)
    escaped = str(odd).replace("%", "%25").replace(":", "%3A").replace(",", "%2C")
    assert code == 0
    assert out.splitlines() == [
        f"::warning file={escaped},line=5::MISSING_FINAL_NEWLINE last event lacks its final newline"
    ]
