"""A file that is not a log at all is ``NOT_A_LOG``, exit 5 (issue 15, item 3).

A non-empty file in which no line is a JSON object of either dialect's shape
(no record with ``kind`` or ``type``) -- a README, ``/etc/passwd``, a binary,
a gzip file -- is one ``NOT_A_LOG`` finding, never TAMPERED or INCOMPLETE,
whatever ``--dialect`` says, sequentially and with ``--jobs``; repair, which
follows the reader's verdict, refuses it and leaves it untouched. A log with
even one such record stays a log: a garbage first line in front of valid
events is tampering (exit 1).
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ract_cli.dialects import ChainReader
from ract_cli.read import parallel
from ract_cli.read.chain import ChainState
from ract_cli.verify.verifier import VerifyOptions, verify_file

ROOT = Path(__file__).resolve().parent.parent

README = (ROOT / "README.md").read_bytes()
NOT_LOGS = {
    "readme": README,
    "passwd": b"root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "binary": bytes(range(256)) * 64,
    "gzip": gzip.compress(README, mtime=0),
    "json-without-kind": b'{"name": "ract", "version": 1}\n[1, 2]\n"x"\n{"id": 1, "hash": 2}\n',
    "blank-lines": b"\n" * 1000,
    "no-newline-text": b"just some text without a newline",
}


def ract(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "ract_cli", *args], capture_output=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize("dialect", ["auto", "ract", "raxol"])
@pytest.mark.parametrize("name", sorted(NOT_LOGS))
def test_not_a_log_is_one_not_a_log_finding(tmp_path: Path, name: str, dialect: str) -> None:
    path = tmp_path / name
    path.write_bytes(NOT_LOGS[name])
    reader = ChainReader(path, dialect=dialect, max_findings=5)
    reader.read_all()
    assert [(f.code, f.severity) for f in reader.findings] == [("NOT_A_LOG", "error")]
    assert reader.exit_code == 5
    assert reader.state.suppressed == 0 and reader.broken_at is None


@pytest.mark.parametrize(
    "command",
    [["verify"], ["grep", "--kind", "run.*"], ["grep", "--no-verify", "--kind", "run.*"], ["project"], ["repair"]],
)
def test_not_a_log_exits_5_in_every_command(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "README.md"
    path.write_bytes(README)
    done = ract("trace", *command, str(path))
    assert done.returncode == 5, done.stderr
    assert b"Traceback" not in done.stderr


def test_repair_refuses_not_a_log_untouched(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    path = run / "events.jsonl"
    path.write_bytes(README)
    before = sorted(os.listdir(run))
    done = ract("trace", "repair", str(path))
    assert done.returncode == 5, done.stderr
    assert path.read_bytes() == README
    assert sorted(os.listdir(run)) == before  # no .bak, no .torn
    after = ract("trace", "verify", str(path))
    assert after.returncode == 5 and b"NOT_A_LOG" in after.stdout + after.stderr


def test_garbage_first_line_before_valid_events_is_tampering(logs) -> None:  # type: ignore[no-untyped-def]
    path = logs.five()
    path.write_bytes(b"this is not json\n" + path.read_bytes())
    verdict = logs.read(path)
    assert verdict.exit_code == 1
    assert "NOT_A_LOG" not in [f.code for f in verdict.findings]


@pytest.mark.parametrize(
    "line",
    [
        b'{"kind": "run.started", "payload": {}}\n',  # a bad envelope
        b'{"type": "turn_started"}\n' + README,  # one journal-shaped record is enough
        b'{"kind": "a", "kind": "b"}\n',  # a duplicate key
        b'{"kind": "x", "n": 18446744073709551616}\n',  # an integer past 64 bits
        b'{"\\u006bind": "x"}\n',  # the key spelt with an escape
        b'{"id": "0123", "kind": "run.sta',  # a torn first write
        b'{"hash":"ab',  # a torn first write, as the writer orders keys
        b"{",  # a writer killed after its first byte
        b'  {"ha',
    ],
)
def test_one_record_shaped_line_keeps_it_a_log(tmp_path: Path, line: bytes) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(line)
    for dialect in ("auto", "ract", "raxol"):
        reader = ChainReader(path, dialect=dialect)
        reader.read_all()
        assert "NOT_A_LOG" not in [f.code for f in reader.findings], dialect
        assert reader.exit_code in (1, 3, 4), dialect


def test_empty_file_is_still_empty_log(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"")
    reader = ChainReader(path)
    reader.read_all()
    assert [f.code for f in reader.findings] == ["EMPTY_LOG"]


def test_not_a_log_with_jobs_gives_the_same_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(README * 40)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1)
    state = ChainState(str(path))
    parallel.scan_file(path, state, None, jobs=2, schema_version=9, max_line_bytes=1 << 20, chunk_bytes=4096)
    assert [f.code for f in state.findings] == ["NOT_A_LOG"]
    seq = verify_file(path, VerifyOptions())
    par = verify_file(path, VerifyOptions(jobs=2))
    assert [f.to_dict() for f in par.findings] == [f.to_dict() for f in seq.findings]
    assert seq.exit_code == par.exit_code == 5


def test_expect_head_on_not_a_log_stays_5(tmp_path: Path) -> None:
    path = tmp_path / "README.md"
    path.write_bytes(README)
    report = verify_file(path, VerifyOptions(expect_head="0" * 64))
    assert [f.code for f in report.findings] == ["NOT_A_LOG"] and report.exit_code == 5


def test_every_prefix_of_a_first_line_is_a_torn_tail_not_a_non_log(logs) -> None:  # type: ignore[no-untyped-def]
    first = logs.five().read_bytes().split(b"\n")[0]
    path = logs.root / "cut.jsonl"
    for cut in range(1, len(first) + 1):
        path.write_bytes(first[:cut])
        reader = ChainReader(path)
        reader.read_all()
        assert reader.exit_code in (0, 4), (cut, [f.code for f in reader.findings])


def test_grep_no_verify_says_not_a_log_only_when_no_line_is_a_record(logs, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    readme = tmp_path / "README.md"
    readme.write_bytes(README)
    done = ract("trace", "grep", "--no-verify", "--kind", "x", str(readme))
    assert done.returncode == 5 and b"NOT_A_LOG" in done.stderr
    log = logs.five()  # a log with one garbage line: the prefilter never parses its events, still a log
    log.write_bytes(b"garbage run.started\n" + log.read_bytes())
    done = ract("trace", "grep", "--no-verify", "--kind", "no.such.kind", str(log))
    assert done.returncode == 7 and b"NOT_A_LOG" not in done.stderr  # no line parsed: no match
    done = ract("trace", "grep", "--no-verify", "--kind", "run.*", str(log))
    assert done.returncode == 1 and b"NOT_A_LOG" not in done.stderr
