"""SPEC §3: findings, warnings, the lowest non-zero exit code; the verify report (issue 3).

Black-box: logs built with the independent oracles (``builders``; ``scratch``),
run through the CLI in-process and as a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from independent_jcs import chain, line

from . import scratch_builders as scratch
from .builders import (
    RUN,
    closed_run,
    codes,
    ev,
    good_lines,
    logpath,
    ract,
    sub,
    verify_json,
    write,
)

# --- §3 what a finding carries --------------------------------------------------------------------


def test_finding_fields(tmp_path, capsys):
    evs = closed_run()
    evs[2]["payload"]["reason"] = "edited"
    p = write(logpath(tmp_path), evs)
    _rc, rep = verify_json(capsys, p)
    f = next(f for f in rep["files"][0]["findings"] if f["line"] == 3)
    offset = sum(len(line(e)) for e in evs[:2])
    for key in ("code", "severity", "line", "message"):
        assert key in f
    assert f.get("offset", f.get("byte_offset")) == offset
    assert f.get("event_id") == evs[2]["id"]
    assert Path(f.get("file", rep["files"][0]["path"])).name == "events.jsonl"


# --- §3 warnings (exit 0) -------------------------------------------------------------------------


def test_clock_regression_warning(tmp_path, capsys):
    evs = closed_run()
    evs[2]["timestamp_ns"] = evs[1]["timestamp_ns"] - 5
    chain(evs)
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 0 and "CLOCK_REGRESSION" in codes(rep)


def test_equal_timestamps_no_clock_regression(tmp_path, capsys):
    evs = closed_run()
    evs[2]["timestamp_ns"] = evs[1]["timestamp_ns"]
    chain(evs)
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs))
    assert rc == 0 and "CLOCK_REGRESSION" not in codes(rep)


def test_run_dir_mismatch_warning(tmp_path, capsys):
    p = write(tmp_path / "evals" / "runs" / ("cd" * 16) / "events.jsonl", closed_run())
    rc, rep = verify_json(capsys, p)
    assert rc == 0 and "RUN_DIR_MISMATCH" in codes(rep)


def test_open_run_warning_and_require_closed(tmp_path, capsys):
    p = write(logpath(tmp_path), closed_run()[:-1])
    rc, rep = verify_json(capsys, p)
    assert rc == 0 and "OPEN_RUN" in codes(rep)
    rc, rep = verify_json(capsys, p, "--require-closed")
    assert rc == 4 and "OPEN_RUN" in codes(rep)
    rc, rep = verify_json(capsys, write(tmp_path / "c" / RUN / "events.jsonl", closed_run()), "--require-closed")
    assert rc == 0


def test_repaired_warning(tmp_path, capsys):
    p = write(logpath(tmp_path), closed_run()[:-1])
    assert ract(capsys, "repair", "-q", p)[0] == 0
    rc, rep = verify_json(capsys, p)
    assert rc == 0 and "REPAIRED" in codes(rep)


def test_warnings_have_warning_severity(tmp_path, capsys):
    raw = b"".join(good_lines()).rstrip(b"\n")
    _rc, rep = verify_json(capsys, write(logpath(tmp_path), None, raw=raw))
    f = next(f for f in rep["files"][0]["findings"] if f["code"] == "MISSING_FINAL_NEWLINE")
    assert f["severity"].lower().startswith("warn")


# --- §3 the lowest non-zero code, --max-findings --------------------------------------------------


def test_lowest_nonzero_across_files(tmp_path, capsys):
    ok = write(tmp_path / "a" / RUN / "events.jsonl", closed_run())
    schema = write(
        tmp_path / "b" / RUN / "events.jsonl",
        chain([ev("run.started", {}), ev("no.such", {}), ev("run.completed", {})]),
    )
    good = good_lines()
    torn = write(tmp_path / "c" / RUN / "events.jsonl", None, raw=b"".join(good) + good[0][:30])
    bad = closed_run()
    bad[1]["payload"]["x"] = 1
    tampered = write(tmp_path / "d" / RUN / "events.jsonl", bad)
    assert ract(capsys, "verify", "-q", ok, schema, torn)[0] == 3
    assert ract(capsys, "verify", "-q", torn, ok)[0] == 4
    assert ract(capsys, "verify", "-q", torn, schema, tampered)[0] == 1
    r = sub("verify", "-q", torn, schema, tampered, ok)
    assert r.returncode == 1
    assert ract(capsys, "verify", "-q", ok, tmp_path / "missing.jsonl")[0] == 5
    assert ract(capsys, "verify", "-q", tampered, tmp_path / "missing.jsonl")[0] == 1


def test_lowest_nonzero_code_within_one_file_and_across_files(tmp_path, capsys):
    torn = scratch.write(
        scratch.logpath(tmp_path, "torn"), raw=b"".join(scratch.line(e) for e in scratch.closed_run()) + b'{"i'
    )
    schema = scratch.write(
        scratch.logpath(tmp_path, "schema"),
        scratch.chain([scratch.ev("run.started", {}), scratch.ev("no.such", {}), scratch.ev("run.completed", {})]),
    )
    opened = scratch.write(scratch.logpath(tmp_path, "open"), scratch.chain([scratch.ev("run.started", {})]))
    bad = scratch.closed_run()
    scratch.edit(bad[1], x=1)
    tampered = scratch.write(scratch.logpath(tmp_path, "tampered"), bad)
    missing = tmp_path / "missing" / "events.jsonl"
    cases = [
        ([opened], [], 0),
        ([opened], ["--require-closed"], 4),
        ([opened, missing], ["--require-closed"], 4),
        ([missing, schema], [], 3),
        ([torn, schema, opened], ["--require-closed"], 3),
        ([missing, torn], [], 4),
        ([missing, torn, schema, tampered], [], 1),
    ]
    for paths, opts, want in cases:
        rc, rep = scratch.verify_json(capsys, *opts, *paths)
        assert rc == want and rep["exit_code"] == want, (paths, opts, rc)
        assert want == min((f["exit_code"] for f in rep["files"] if f["exit_code"]), default=0)


def test_max_findings_cap_still_decides_exit(tmp_path, capsys):
    evs = chain([ev("run.started", {}), ev("no.such", {}), ev("no.such2", {}), ev("run.completed", {})])
    evs[3]["payload"]["x"] = 1  # tampered after the schema errors
    rc, rep = verify_json(capsys, write(logpath(tmp_path), evs), "--max-findings", "1")
    assert rc == 1
    assert len(rep["files"][0]["findings"]) == 1


def test_max_findings_caps_the_list_per_file_not_the_verdict(tmp_path, capsys):
    evs = scratch.closed_run(n_reaped=6)
    for i in (2, 4, 6):
        scratch.edit(evs[i], reason=f"e{i}")
    a = scratch.write(scratch.logpath(tmp_path, "a"), evs)
    b = scratch.write(scratch.logpath(tmp_path, "b"), evs)
    rc, rep = scratch.verify_json(capsys, "--max-findings", 2, a, b)
    assert rc == 1
    for f in rep["files"]:
        assert [x["line"] for x in f["findings"]] == [3, 5] and f["exit_code"] == 1


# --- §3 usage (2) and IO (5) ----------------------------------------------------------------------


def test_usage_exit_2(capsys, tmp_path):
    assert ract(capsys, "verify", "--no-such-option", tmp_path)[0] == 2
    assert ract(capsys, "verify", "--schema-version", "10", tmp_path)[0] == 2
    assert sub("verify", "--bogus").returncode == 2


USAGE = [
    ["verify", "--schema-version", "0"],
    ["verify", "--schema-version", "10"],
    ["verify", "--schema-version", "x"],
    ["verify", "--max-findings", "0"],
    ["verify", "--format", "xml"],
    ["verify", "--jobs", "0"],
    ["verify"],
    ["grep", "--where", "payload.reason~("],
    ["grep", "--where", "payload.pid>[1]"],
    ["grep", "--where", "=1"],
    ["grep", "--since", "yesterday"],
    ["grep", "--since", str(scratch.T0 + 5), "--until", str(scratch.T0)],
    ["grep", "--run", "xyz"],
    ["grep", "-c", "-l"],
    ["grep", "--format", "xml"],
    ["grep", "--schema-version", "10"],
]


@pytest.mark.parametrize("args", USAGE, ids=[" ".join(a) for a in USAGE])
def test_bad_command_lines_exit_2_before_reading(tmp_path, capsys, args):
    p = scratch.write(scratch.logpath(tmp_path), scratch.closed_run())
    target = [] if args == ["verify"] else [p]
    rc, out, err = scratch.ract(capsys, *args, *target)
    assert rc == 2 and out == "" and err.strip(), (rc, out, err)


def test_io_exit_5(tmp_path, capsys):
    assert ract(capsys, "verify", tmp_path / "nope.jsonl")[0] == 5
    assert sub("verify", tmp_path / "nope.jsonl").returncode == 5


def test_cli_surface(tmp_path):
    assert subprocess.run([sys.executable, "-m", "ract_cli", "--help"], capture_output=True).returncode == 0
    assert sub("verify").returncode == 2  # a path is required
    assert sub("no-such-command").returncode == 2


# --- issue 3: the verify report (JSON, text, -q, GitHub annotations) ------------------------------


def test_json_report_shape(tmp_path, capsys):
    evs = scratch.closed_run(n_reaped=2)
    scratch.edit(evs[3], reason="edited")
    p = scratch.write(scratch.logpath(tmp_path), evs)
    missing = tmp_path / "nope.jsonl"
    rc, rep = scratch.verify_json(capsys, p, missing)
    assert rc == 1
    assert set(rep) == {"exit_code", "files"} and rep["exit_code"] == 1
    by_path = {f["path"]: f for f in rep["files"]}
    assert set(by_path) == {str(p), str(missing)}
    must = {"path", "ok", "exit_code", "events", "head", "first_ts", "last_ts", "findings"}
    for f in rep["files"]:
        assert must <= set(f), set(f)
        assert f["ok"] is (f["exit_code"] == 0)
        for x in f["findings"]:
            assert {"code", "severity", "line", "offset", "event_id", "message"} <= set(x)
            assert x["severity"] in ("error", "warning") and isinstance(x["message"], str) and x["message"]
    f = by_path[str(p)]
    assert (f["ok"], f["exit_code"], f["events"], f["head"]) == (False, 1, len(evs), evs[-1]["hash"])
    assert (f["first_ts"], f["last_ts"]) == (evs[0]["timestamp_ns"], evs[-1]["timestamp_ns"])
    assert type(f["first_ts"]) is int  # exact, not a double
    [x] = f["findings"]
    offset = sum(len(scratch.line(e)) for e in evs[:3])
    assert (x["code"], x["severity"], x["line"], x["offset"], x["event_id"]) == (
        "HASH_MISMATCH",
        "error",
        4,
        offset,
        evs[3]["id"],
    )
    assert x["actual"] == evs[3]["hash"] and x["expected"] == scratch.ehash(evs[3])
    m = by_path[str(missing)]
    assert (m["ok"], m["exit_code"], m["events"], m["head"]) == (False, 5, 0, None)
    assert [(x["code"], x["line"], x["offset"]) for x in m["findings"]] == [("IO_ERROR", None, None)]


def test_text_mode_keeps_stdout_empty_and_prints_path_line_code(tmp_path):
    evs = scratch.closed_run(n_reaped=2)
    scratch.edit(evs[3], reason="edited")
    p = scratch.write(scratch.logpath(tmp_path), evs)
    r = scratch.sub("verify", p)
    assert r.returncode == 1 and r.stdout == b""
    err = r.stderr.decode()
    assert err.startswith("FAIL ") and f"{p}:4: HASH_MISMATCH " in err
    r = scratch.sub("verify", "--format", "json", p)
    assert r.stderr == b"" and json.loads(r.stdout)["exit_code"] == 1


def test_quiet_prints_nothing_and_github_annotations(tmp_path):
    evs = closed_run()
    evs[1]["payload"]["x"] = 1
    p = write(logpath(tmp_path), evs)
    for cmd in (["verify", "-q"], ["grep", "-q", "--kind", "*"], ["repair", "-q"]):
        r = sub(*cmd, p)
        assert r.returncode == 1 and r.stdout == b"" and r.stderr == b"", cmd
    r = sub("verify", "--format", "github", p)
    assert r.returncode == 1
    assert r.stdout.decode().startswith("::error ") and "line=2" in r.stdout.decode()
