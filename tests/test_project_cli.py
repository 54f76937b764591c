"""``ract trace project``: goldens, formats, exit codes, escaping of hostile log strings."""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from ract_cli.cli.app import main
from ract_cli.testing.synth import FIXTURES, fixture_path
from ract_cli.writer.event_writer import EventWriter

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "project"
SCHEMA = json.loads((ROOT / "docs" / "schemas" / "project-report.json").read_text("utf-8"))
RACT = [sys.executable, "-m", "ract_cli"]
EXIT = {"completed": 0, "aborted": 0, "interrupted": 4, "tampered": 1, "foreign-format": 0}
#: the tampered fixture's first integrity failure (pinned by tests/test_project.py)
BROKEN = json.loads((GOLDEN / "tampered.json").read_text("utf-8"))["untrusted_from_line"]
STALE = "tests/golden/project/ is stale: run `python scripts/gen_goldens_project.py` and commit the result"


def rel(name: str) -> str:
    return fixture_path(Path("fixtures"), name).as_posix()


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


# --- goldens ----------------------------------------------------------------------


def test_committed_goldens_match_a_fresh_build(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_goldens_project.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    fresh = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    committed = {p.name: p.read_bytes() for p in GOLDEN.iterdir()}
    expected = {f"{n}.{ext}" for n in [*FIXTURES, "fleet"] for ext in ("json", "md")}
    assert set(fresh) == expected, STALE
    assert set(committed) == expected, STALE
    for name in sorted(expected):
        assert committed[name] == fresh[name], f"{name}: {STALE}"


@pytest.mark.parametrize("name", list(FIXTURES))
def test_cli_prints_the_golden_json_and_markdown(name: str, at_root: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["trace", "project", rel(name), "--format", "json"], capsys)
    assert code == EXIT[name]
    assert out == (GOLDEN / f"{name}.json").read_text("utf-8")
    code, out, _ = run(["trace", "project", rel(name), "--format", "markdown"], capsys)
    assert code == EXIT[name]
    assert out == (GOLDEN / f"{name}.md").read_text("utf-8")


def test_cli_fleet_over_the_fixtures_directory(at_root: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["trace", "project", "fixtures/runs", "--format", "json"], capsys)
    assert code == 1  # lowest non-zero of 0, 0, 4, 1, 0
    assert out == (GOLDEN / "fleet.json").read_text("utf-8")
    data = json.loads(out)
    assert len(data["runs"]) == len(FIXTURES)
    assert sorted(r["status"] for r in data["runs"]) == ["aborted", "aborted", "completed", "open", "open"]
    assert f"UNTRUSTED from line {BROKEN}" in err and "TORN_TAIL" in err
    code, out, _ = run(["trace", "project", "fixtures/runs", "--format", "markdown"], capsys)
    assert out == (GOLDEN / "fleet.md").read_text("utf-8")
    rows = [line for line in out.splitlines() if line.startswith("| ") and "fixtures/runs/" in line]
    assert len(rows) == len(FIXTURES)


def test_several_files_give_the_fleet_shape(at_root: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["trace", "project", rel("completed"), rel("aborted"), "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert [r["status"] for r in data["runs"]] == ["completed", "aborted"]
    assert data["totals"]["runs"] == 2


def test_golden_json_is_stable_sorted_and_indented() -> None:
    text = (GOLDEN / "completed.json").read_text("utf-8")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# --- formats and exit codes --------------------------------------------------------


def test_piped_default_is_json() -> None:
    done = subprocess.run([*RACT, "trace", "project", rel("aborted")], cwd=ROOT, capture_output=True, timeout=60)
    assert done.returncode == 0
    assert json.loads(done.stdout)["status"] == "aborted"
    assert done.stdout.decode() == (GOLDEN / "aborted.json").read_text("utf-8")


def test_text_format(at_root: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["trace", "project", rel("completed"), "--format", "text"], capsys)
    assert code == 0 and err == ""
    assert "ract run report" in out and "completed" in out
    assert "GATE_INCONSISTENT" in out and "tests-pass" in out
    assert "\x1b" not in out  # not a terminal: no colour codes
    code, out, _ = run(["trace", "project", "fixtures/runs", "--format", "text"], capsys)
    assert code == 1 and "ract run summary: 5 run(s)" in out


def test_tampered_log_is_marked_untrusted_with_exit_1(at_root: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["trace", "project", rel("tampered"), "--format", "text"], capsys)
    assert code == 1
    assert f"UNTRUSTED from line {BROKEN}" in out and f"UNTRUSTED from line {BROKEN}" in err
    assert "HASH_MISMATCH" in err
    code, out, _ = run(["trace", "project", rel("tampered"), "--format", "json"], capsys)
    data = json.loads(out)
    assert code == 1 and data["trusted"] is False and data["untrusted_from_line"] == BROKEN and data["exit_code"] == 1
    code, out, _ = run(["trace", "project", rel("tampered"), "--format", "markdown"], capsys)
    assert code == 1 and f"**UNTRUSTED from line {BROKEN}**" in out


def test_usage_and_io_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["trace", "project", str(tmp_path), "--format", "yaml"], capsys)
    assert code == 2
    code, out, err = run(["trace", "project", str(tmp_path / "missing.jsonl"), "--format", "text"], capsys)
    assert code == 5 and "missing.jsonl" in err and out == ""
    code, out, err = run(["trace", "project", str(tmp_path / "missing.jsonl"), "--format", "json"], capsys)
    assert code == 5 and json.loads(out)["findings"][0]["code"] == "IO_ERROR"


def test_require_closed_makes_an_open_run_exit_4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / ("c" * 32) / "events.jsonl"
    with EventWriter(path, run_id="c" * 32, fsync="never") as w:
        w.append("run.started", {"intent_id": "1" * 32})
    assert run(["trace", "project", str(path), "--format", "json"], capsys)[0] == 0
    code, out, _ = run(["trace", "project", str(path), "--format", "json", "--require-closed"], capsys)
    assert code == 4 and json.loads(out)["status"] == "open"


# --- hostile strings ---------------------------------------------------------------

EVIL_TOOL = "[bold red]PASS[/bold red]\x1b[2J|evil\nline<script>alert(1)</script>"
EVIL_REASON = "\x1b]0;pwned\x07 [link=http://x]click[/link] | a\nb \u202eexe.txt `code` *bold*"


@pytest.fixture
def hostile_log(tmp_path: Path) -> Path:
    run_id = "e" * 32
    path = tmp_path / run_id / "events.jsonl"
    with EventWriter(path, run_id=run_id, fsync="never") as w:
        w.append("run.started", {"intent_id": "1" * 32})
        call = w.append("tool.called", {"tool": EVIL_TOOL, "arguments": {}})
        w.append("tool.result", {"tool": EVIL_TOOL, "ok": False, "duration_ns": 10}, parent_id=call["id"])
        w.append("sandbox.unenforced", {"manifest_digest": "d", "reason": EVIL_REASON, "details": {}})
        w.append("laziness.gate_error", {"error_kind": "[red]X[/red]", "message": EVIL_REASON})
        w.append("run.aborted", {"termination_cause": EVIL_TOOL, "reason": EVIL_REASON})
    return path


def test_hostile_strings_are_escaped_in_text(hostile_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["trace", "project", str(hostile_log), "--format", "text"], capsys)
    assert code == 0
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in out
    assert "\\x1b" in out and "\\u202e" in out and "\\x0a" in out
    # rich markup in the log is printed literally, never interpreted
    assert "[bold red]PASS[/bold red]" in out
    assert "[link=http://x]click[/link]" in out


def test_hostile_strings_are_escaped_in_markdown(hostile_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["trace", "project", str(hostile_log), "--format", "markdown"], capsys)
    assert code == 0
    for raw in ("\x1b", "\x07", "\u202e", "<script>", "`code`"):
        assert raw not in out
    assert "\\|evil" in out and "\\<script\\>" in out
    for line in out.splitlines():
        if line.startswith("|"):
            assert line.endswith("|")
    table_rows = [line for line in out.splitlines() if line.startswith("| ") and "evil" in line]
    assert table_rows, out
    # an escaped pipe never splits a cell: the row has exactly as many cell separators as its header
    lines = out.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("| tool |")))
    header, row = lines[at], lines[at + 2]
    assert "evil" in row and _separators(row) == _separators(header) == 13


def _separators(row: str) -> int:
    count, i = 0, 0
    while i < len(row):
        if row[i] == "\\":
            i += 2
            continue
        count += row[i] == "|"
        i += 1
    return count


def test_hostile_strings_round_trip_in_json(hostile_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _code, out, _ = run(["trace", "project", str(hostile_log), "--format", "json"], capsys)
    data = json.loads(out)
    assert EVIL_TOOL in data["tools"]["by_tool"]  # JSON keeps the data exact (it is escaped by JSON itself)
    assert data["outcome"]["termination_cause"] == EVIL_TOOL
    assert "\x1b" not in out  # JSON escapes control characters


@pytest.mark.skipif(os.name != "posix", reason="pty is POSIX-only")
def test_terminal_default_is_text() -> None:
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # child: stdout is a terminal
        os.chdir(ROOT)
        os.environ["COLUMNS"] = "160"
        os.execv(sys.executable, [*RACT, "trace", "project", rel("aborted")])
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    out = b"".join(chunks).decode("utf-8", "replace")
    assert os.waitstatus_to_exitcode(status) == 0
    assert "ract run report" in out and not out.lstrip().startswith("{")


# --- Raxol journals (SPEC §8): project delegates to the journal report ---------------

JOURNALS = sorted((ROOT / "fixtures" / "journals").glob("*.jsonl"))


@pytest.mark.parametrize("journal", JOURNALS, ids=lambda p: p.name)
def test_journals_get_a_journal_report(journal: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verify_code = main(["trace", "verify", "-q", str(journal)])
    capsys.readouterr()
    code, out, _ = run(["trace", "project", str(journal), "--format", "json"], capsys)
    assert code == verify_code  # the same reader, the same verdict
    data = json.loads(out)
    assert not list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(data))
    assert data["dialect"] == "raxol" and data["trusted"] is (data["untrusted_from_line"] is None)
    for fmt in ("text", "markdown"):
        code, out, _ = run(["trace", "project", str(journal), "--format", fmt], capsys)
        assert code == verify_code and "evidence" in out


def test_tampered_chained_journal_evidence_does_not_stand(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        ["trace", "project", str(ROOT / "fixtures" / "journals" / "chained-tampered.jsonl"), "--format", "json"], capsys
    )
    data = json.loads(out)
    assert code == 1 and data["trusted"] is False and data["evidence"]["trust"] == "broken-chain"
    assert "not to be believed" in err


def test_fleet_mixes_runs_and_journals(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        [
            "trace",
            "project",
            str(ROOT / "fixtures" / "journals" / "accepted.jsonl"),
            str(fixture_path(ROOT / "fixtures", "aborted")),
            "--format",
            "markdown",
        ],
        capsys,
    )
    assert code == 0
    assert "(journal)" in out and "| aborted |" in out


class _ClosedPipe(io.TextIOBase):
    """A stdout whose reader went away: every write fails with EPIPE."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


@pytest.mark.parametrize("fmt", ["json", "markdown", "text"])
def test_a_closed_stdout_keeps_the_verdict(fmt: str, at_root: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(["trace", "project", rel("aborted"), "--format", fmt]) == 0
    assert main(["trace", "project", rel("tampered"), "--format", fmt]) == 1


def test_a_closed_pipe_is_not_a_traceback(tmp_path: Path) -> None:
    # (on kernels that report EPIPE to the writer; the in-process test above always does)
    src = fixture_path(ROOT / "fixtures", "completed").read_bytes()
    for i in range(40):  # ~700 KB of JSON: more than a pipe buffer
        (tmp_path / f"r{i}").mkdir()
        (tmp_path / f"r{i}" / "events.jsonl").write_bytes(src)
    proc = subprocess.Popen(
        [*RACT, "trace", "project", str(tmp_path), "--format", "json"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(1) == b"{"
    proc.stdout.close()  # like `| head -c 1`
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    assert b"Traceback" not in err
