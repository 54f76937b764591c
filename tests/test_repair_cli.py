"""``ract trace repair`` on the command line: exit codes, options, messages (SPEC §3-4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ract_cli.cli.app import main
from ract_cli.testing.synth import fixture_path, fixture_run_id
from ract_cli.writer.event_writer import EventWriter, FsyncPolicy, encode_line, event_hash

ROOT = Path(__file__).resolve().parents[1]
RACT = Path(sys.executable).with_name("ract")


def fixture_bytes(name: str) -> bytes:
    return fixture_path(ROOT / "fixtures", name).read_bytes()


def log(tmp_path: Path, name: str, data: bytes | None = None) -> Path:
    path = tmp_path / fixture_run_id(name) / "events.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(fixture_bytes(name) if data is None else data)
    return path


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["trace", "repair", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def verify_json(capsys, path: Path) -> tuple[int, dict]:
    code = main(["trace", "verify", "--format", "json", str(path)])
    return code, json.loads(capsys.readouterr().out)


def test_repair_interrupted_then_nothing_to_repair(tmp_path, capsys):
    path = log(tmp_path, "interrupted")
    original = path.read_bytes()
    code, out, err = run(capsys, path)
    assert code == 0 and out == ""
    assert "repaired" in err and "events.jsonl.torn" in err and "events.jsonl.bak" in err
    kept = original[: original.rindex(b"\n") + 1]
    assert path.read_bytes().startswith(kept)
    closes = [json.loads(line) for line in path.read_bytes()[len(kept) :].splitlines()]
    assert closes and closes[-1]["kind"] == "run.aborted"
    for close in closes:  # each synthesized close is reported with its source event
        assert f"{close['payload']['source_event_id']} " in err and close["kind"] in err
    assert names(path.parent) == ["events.jsonl", "events.jsonl.bak", "events.jsonl.torn"]
    repaired = path.read_bytes()

    code, out, err = run(capsys, path)
    assert code == 0 and "nothing to repair" in err
    assert path.read_bytes() == repaired
    assert names(path.parent) == ["events.jsonl", "events.jsonl.bak", "events.jsonl.torn"]

    code, report = verify_json(capsys, path)
    assert code == 0
    codes = [f["code"] for f in report["files"][0]["findings"]]
    assert "REPAIRED" in codes and "OPEN_HANDLE" not in codes and "OPEN_RUN" not in codes


def test_check_exits_4_when_repair_would_change_something_and_changes_nothing(tmp_path, capsys):
    path = log(tmp_path, "interrupted")
    original = path.read_bytes()
    code, _, err = run(capsys, "--check", path)
    assert code == 4 and "would" in err
    assert path.read_bytes() == original and names(path.parent) == ["events.jsonl"]
    assert run(capsys, "--no-backup", path)[0] == 0
    code, _, err = run(capsys, "--check", path)
    assert code == 0 and "nothing to repair" in err


@pytest.mark.parametrize("name", ["completed", "aborted", "foreign-format"])
def test_check_exits_0_on_closed_runs(tmp_path, capsys, name):
    path = log(tmp_path, name)
    code, _, err = run(capsys, "--check", path)
    assert code == 0 and "nothing to repair" in err
    code, _, err = run(capsys, path)
    assert code == 0 and "nothing to repair" in err
    assert path.read_bytes() == fixture_bytes(name) and names(path.parent) == ["events.jsonl"]


def test_open_run_without_torn_tail(tmp_path, capsys):
    data = fixture_bytes("completed")
    data = data[: data.rstrip(b"\n").rindex(b"\n") + 1]  # drop the final run.completed
    path = log(tmp_path, "completed", data)
    assert run(capsys, "--check", path)[0] == 4
    code, _, err = run(capsys, path)
    assert code == 0 and "run.aborted" in err and "torn tail" not in err
    assert names(path.parent) == ["events.jsonl", "events.jsonl.bak"]
    assert verify_json(capsys, path)[0] == 0


def test_no_backup(tmp_path, capsys):
    path = log(tmp_path, "interrupted")
    code, _, err = run(capsys, "--no-backup", path)
    assert code == 0 and ".bak" not in err
    assert names(path.parent) == ["events.jsonl", "events.jsonl.torn"]


@pytest.mark.parametrize("flag", ["-o", "--output"])
def test_output_writes_elsewhere_and_leaves_source_alone(tmp_path, capsys, flag):
    path = log(tmp_path, "interrupted")
    original = path.read_bytes()
    out = tmp_path / "elsewhere.jsonl"
    code, _, err = run(capsys, path, flag, out)
    assert code == 0 and "elsewhere.jsonl" in err
    assert path.read_bytes() == original and names(path.parent) == ["events.jsonl"]
    assert out.exists() and (tmp_path / "elsewhere.jsonl.torn").exists()
    assert verify_json(capsys, out)[0] == 0
    in_place = log(tmp_path / "b", "interrupted")
    assert run(capsys, in_place)[0] == 0
    assert in_place.read_bytes() == out.read_bytes()


def test_check_with_output_is_a_usage_error(tmp_path, capsys):
    path = log(tmp_path, "interrupted")
    code, _, err = run(capsys, "--check", "--output", tmp_path / "x.jsonl", path)
    assert code == 2 and "--check" in err
    assert not (tmp_path / "x.jsonl").exists()


def test_tampered_log_is_refused_untouched(tmp_path, capsys):
    data = fixture_bytes("tampered") + b'{"hash":"0'  # even with a torn tail: no sidecar
    path = log(tmp_path, "tampered", data)
    for args in ([path], ["--check", path], ["--no-backup", path], ["-o", tmp_path / "o.jsonl", path]):
        code, _out, err = run(capsys, *args)
        assert code == 1 and "refused" in err and "HASH_MISMATCH" in err and "untouched" in err
        assert path.read_bytes() == data and names(path.parent) == ["events.jsonl"]
    assert not (tmp_path / "o.jsonl").exists()


def test_schema_invalid_log_is_refused_with_exit_1(tmp_path, capsys):
    events = [json.loads(line) for line in fixture_bytes("interrupted").splitlines()[:-1]]
    events[0]["payload"]["predicate_count"] = "four"
    prev, lines = "0" * 64, []
    for ev in events:
        ev["prev_hash"] = prev
        ev.pop("hash")
        ev["hash"] = prev = event_hash(ev)
        lines.append(encode_line(ev))
    path = log(tmp_path, "interrupted", b"".join(lines))
    assert main(["trace", "verify", "-q", str(path)]) == 3
    code, _, err = run(capsys, path)
    assert code == 1 and "PAYLOAD_INVALID" in err
    assert path.read_bytes() == b"".join(lines) and names(path.parent) == ["events.jsonl"]


def test_raxol_journal_is_refused(tmp_path, capsys):
    data = b'{"type":"turn_started","payload":{"turn_id":"t1"}}\n{"type":"turn_completed","payload":{"final":true}}\n'
    path = tmp_path / "journal.jsonl"
    path.write_bytes(data)
    code, _, err = run(capsys, path)
    assert code == 1 and "Raxol" in err and "journal" in err
    assert path.read_bytes() == data and names(tmp_path) == ["journal.jsonl"]


def test_missing_path_is_exit_5(tmp_path, capsys):
    code, _, err = run(capsys, tmp_path / "nope" / "events.jsonl")
    assert code == 5 and "no such file" in err


def test_locked_log_is_exit_5_in_process(tmp_path, capsys):
    path = log(tmp_path, "completed")
    data = path.read_bytes()[:-200]  # an open run whose writer is still running
    path.write_bytes(data[: data.rindex(b"\n") + 1])
    before = path.read_bytes()
    with EventWriter(path, fsync=FsyncPolicy.NEVER):
        for args in ([path], ["--check", path], ["-o", tmp_path / "o.jsonl", path]):
            code, _, err = run(capsys, *args)
            assert code == 5 and "lock" in err
        assert path.read_bytes() == before and names(path.parent) == ["events.jsonl"]
    assert run(capsys, path)[0] == 0  # writer gone: repair proceeds


HOLD_LOCK = """
import sys
from ract_cli.writer.event_writer import EventWriter, FsyncPolicy
with EventWriter(sys.argv[1], fsync=FsyncPolicy.NEVER):
    print("locked", flush=True)
    sys.stdin.readline()
"""


def test_locked_by_another_process_is_exit_5(tmp_path, capsys):
    path = log(tmp_path, "completed")
    data = path.read_bytes()
    path.write_bytes(data[: data.rstrip(b"\n").rindex(b"\n") + 1])
    before = path.read_bytes()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert run(capsys, path)[0] == 5
        cli = subprocess.run([str(RACT), "trace", "repair", str(path)], capture_output=True, text=True, timeout=60)
        assert cli.returncode == 5 and "lock" in cli.stderr and "Traceback" not in cli.stderr
        assert path.read_bytes() == before and names(path.parent) == ["events.jsonl"]
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert holder.returncode == 0
    assert run(capsys, path)[0] == 0


def test_log_derived_and_path_strings_are_escaped(tmp_path, capsys):
    evil = tmp_path / "run\x1b[31mRED\u202e"
    evil.mkdir()
    path = evil / "events.jsonl"
    path.write_bytes(fixture_bytes("interrupted"))
    code, _, err = run(capsys, path)
    assert code == 0
    assert "\x1b" not in err and "\u202e" not in err
    assert "\\x1b" in err and "\\u202e" in err


def test_help_names_the_options(capsys):
    assert main(["trace", "repair", "--help"]) == 0
    text = capsys.readouterr().out
    for option in ("--output", "-o", "--no-backup", "--check"):
        assert option in text


def test_subprocess_cli_repairs_and_prints_nothing_on_stdout(tmp_path):
    path = log(tmp_path, "interrupted")
    proc = subprocess.run(
        [str(RACT), "trace", "repair", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0 and proc.stdout == "" and "repaired" in proc.stderr
    verify = subprocess.run([str(RACT), "trace", "verify", str(path)], capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0 and "REPAIRED" in verify.stderr
