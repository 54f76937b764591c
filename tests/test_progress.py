"""The progress bar of the long commands (issue 20, item 2), on a real pseudo-terminal.

Every command that reads logs (grep in all its reading modes, repair,
replay, diff, verify) draws the same transient bar on stderr, and only when
stderr is a terminal, the logs total at least 32 MB, there is no ``-q`` and
no JSON output form was asked for. The bar never changes stdout.

Real subprocesses of the CLI: stderr is the slave of a pseudo-terminal
(``os.openpty``), stdout a pipe, unless a test puts both on the terminal. The
large logs are built once per module with the repo's seeded generators. The
last section holds what repair refuses (standard input, gzip archives).
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hardening_support import on_pty

from ract_cli.cli.app import main
from ract_cli.cli.render import PROGRESS_MIN_BYTES
from ract_cli.errors import UsageError
from ract_cli.repair.repairer import repair_file
from ract_cli.testing.synth import fixture_run_id, write_benchmark_log, write_completed, write_interrupted

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 120  # seconds for one command (they take about one to three on an idle machine)
#: the rate column of the bar (rich's TransferSpeedColumn, decimal units)
RATE = re.compile(rb"\d+(\.\d+)? [kMG]?B/s")
#: how the bar is drawn and taken away: back to the line's start, erase it
ERASE = b"\r\x1b[2K"


@dataclass(frozen=True)
class Data:
    big: Path  # one log of ~36 MB
    torn: Path  # the same, its last line cut: a torn tail and an open run (repair's case)
    parts: tuple[Path, ...]  # five logs of ~7.5 MB (each below the size --jobs greps in this process)
    tiny: Path  # a small completed run
    root: Path


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Data:
    root = tmp_path_factory.mktemp("progress")
    big = root / "big.jsonl"
    write_benchmark_log(big, events=70_000)
    torn = root / "torn.jsonl"
    torn.write_bytes(big.read_bytes()[:-100])
    part = root / "part.jsonl"
    write_benchmark_log(part, events=14_500, seed=9)
    parts = [part]
    for i in range(1, 5):  # the same bytes under other names: grep reads each of them
        os.link(part, root / f"part{i}.jsonl")
        parts.append(root / f"part{i}.jsonl")
    tiny = root / "tiny.jsonl"
    write_completed(tiny, "ab" * 16)
    assert big.stat().st_size >= PROGRESS_MIN_BYTES
    assert sum(p.stat().st_size for p in parts) >= PROGRESS_MIN_BYTES
    assert all(p.stat().st_size < 8 << 20 for p in parts)  # read.parallel.PARALLEL_MIN_BYTES: to the workers
    return Data(big, torn, tuple(parts), tiny, root)


# --- running the CLI -----------------------------------------------------------------------


@dataclass
class Run:
    code: int
    stdout: bytes  # the pipe (empty when stdout was the terminal too)
    stderr: bytes  # everything the terminal showed (or the pipe of stderr)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM", "COLUMNS", "LINES")}
    env.update(TERM="xterm-256color", COLUMNS="120", LINES="40")
    return env


def on_terminal(argv: list[str], *, cwd: Path, stdout_too: bool = False) -> Run:
    """``ract argv`` with stderr (and, with ``stdout_too``, stdout) on a 120x40 pseudo-terminal.

    The terminal's bytes are read until every writer of it is gone; stdout (a pipe) is read alongside.
    """
    code, out, shown = on_pty(
        [sys.executable, "-m", "ract_cli", *argv],
        stdout=stdout_too,
        size=(120, 40),
        raw=False,
        env=_env(),
        cwd=cwd,
        timeout=TIMEOUT,
    )
    return Run(code, out, shown)


def on_pipes(argv: list[str], *, cwd: Path) -> Run:
    proc = subprocess.run(
        [sys.executable, "-m", "ract_cli", *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=_env(),
        cwd=cwd,
        timeout=TIMEOUT,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def has_bar(stderr: bytes, label: str) -> bool:
    return label.encode() in stderr and RATE.search(stderr) is not None


def no_bar(stderr: bytes, label: str) -> bool:
    return label.encode() not in stderr and RATE.search(stderr) is None and ERASE not in stderr


def erased_at_the_end(stderr: bytes, label: str) -> bool:
    """The bar drawn last is taken away (what the command says after it comes on a clean line)."""
    return ERASE in stderr[stderr.rfind(label.encode()) :]


# --- the commands ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    label: str
    argv: Callable[[Data, str], list[str]]  # (data, a tag naming this run: repair's output file)
    json: tuple[str, ...] | None = None  # the option asking for JSON output, if the command has one


CASES: dict[str, Case] = {
    "grep": Case("grepping", lambda d, _: ["grep", "--kind", "process.reaped", str(d.big)], ("--format", "json")),
    "grep-c": Case("grepping", lambda d, _: ["grep", "-c", "--kind", "tool.*", str(d.big)]),
    "grep-no-verify": Case(
        "grepping",
        lambda d, _: ["grep", "--no-verify", "--kind", "process.reaped", str(d.big)],
        ("--format", "jsonl"),
    ),
    "grep-jobs": Case(
        "grepping",
        lambda d, _: ["grep", "--jobs", "2", "--kind", "process.reaped", *map(str, d.parts)],
        ("--format", "json"),
    ),
    "repair": Case("repairing", lambda d, tag: ["repair", "-o", str(d.root / f"repaired-{tag}.jsonl"), str(d.torn)]),
    "replay": Case("replaying", lambda d, _: ["replay", str(d.big)], ("--format", "jsonl")),
    "diff": Case("comparing", lambda d, _: ["diff", str(d.big), str(d.tiny)], ("--format", "json")),
    "verify": Case("verifying", lambda d, _: ["verify", str(d.big)], ("--format", "json")),
}


def argv_of(case: Case, data: Data, tag: str, *extra: str) -> list[str]:
    args = case.argv(data, tag)
    return ["trace", args[0], *extra, *args[1:]]


@pytest.mark.parametrize("name", list(CASES))
def test_the_bar_shows_on_a_terminal_and_leaves_stdout_alone(data: Data, name: str) -> None:
    case = CASES[name]
    shown = on_terminal(argv_of(case, data, "pty"), cwd=data.root)
    piped = on_pipes(argv_of(case, data, "pipe"), cwd=data.root)
    assert "Traceback" not in shown.stderr.decode("utf-8", "replace")
    assert has_bar(shown.stderr, case.label), shown.stderr[-2000:]
    assert erased_at_the_end(shown.stderr, case.label)
    assert no_bar(piped.stderr, case.label), piped.stderr[-2000:]  # stderr a pipe: no bar
    assert shown.code == piped.code
    assert shown.stdout == piped.stdout
    if name == "repair":
        written = (data.root / "repaired-pty.jsonl").read_bytes()
        assert written == (data.root / "repaired-pipe.jsonl").read_bytes()
        torn = data.torn.read_bytes()
        complete = torn[: torn.rindex(b"\n") + 1]
        assert written.startswith(complete) and len(written) > len(complete)  # the torn line aside, closes added


@pytest.mark.parametrize("name", list(CASES))
def test_no_bar_under_quiet(data: Data, name: str) -> None:
    case = CASES[name]
    run = on_terminal(argv_of(case, data, "quiet", "-q"), cwd=data.root)
    assert no_bar(run.stderr, case.label), run.stderr[-2000:]


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.json is not None])
def test_no_bar_in_json_output(data: Data, name: str) -> None:
    case = CASES[name]
    assert case.json is not None
    run = on_terminal(argv_of(case, data, "json", *case.json), cwd=data.root)
    assert no_bar(run.stderr, case.label), run.stderr[-2000:]
    assert run.stdout  # the JSON itself


def test_no_bar_for_small_logs(data: Data) -> None:
    run = on_terminal(["trace", "grep", "-c", str(data.tiny)], cwd=data.root)
    assert run.code == 0 and run.stdout.strip().isdigit()
    assert no_bar(run.stderr, "grepping")


def test_grep_count_names_the_files_and_still_shows_the_bar(data: Data) -> None:
    """-c over several files prints as each file ends: the lines go above the bar, whole."""
    run = on_terminal(["trace", "grep", "-c", "--kind", "tool.called", *map(str, data.parts)], cwd=data.root)
    assert has_bar(run.stderr, "grepping")
    lines = run.stdout.decode().splitlines()
    assert [line.rsplit(":", 1)[0] for line in lines] == [str(p) for p in data.parts]


@pytest.mark.parametrize(
    ("argv", "label", "last_line"),
    [
        (["grep", "--kind", "process.reaped"], "grepping", re.compile(rb"\d+ matches in 1 of 1 file\(s\)")),
        (["replay", "--until", "40000"], "replaying", re.compile(rb"== state after event #40000 ")),
    ],
    ids=["grep-table", "replay-timeline"],
)
def test_stdout_on_the_same_terminal_goes_above_the_bar(
    data: Data, argv: list[str], label: str, last_line: re.Pattern[bytes]
) -> None:
    """stdout on the terminal of the bar: each write erases the bar first and draws it again after,
    so no line of data is glued to the bar's text."""
    run = on_terminal(["trace", *argv, str(data.big)], cwd=data.root, stdout_too=True)
    assert has_bar(run.stderr, label)
    assert last_line.search(run.stderr)
    for piece in run.stderr.split(ERASE)[1:]:  # what follows each erase: a bar, or data lines
        if piece.startswith(label.encode()):
            assert b"\n" not in piece, piece[:300]  # a bar is never followed by data on its line
    assert erased_at_the_end(run.stderr, label)


# --- repair refuses what it cannot rewrite (issue 20, items 4 and 5) -------------------------


def test_repair_refuses_standard_input(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError, match="standard input"):
        repair_file("-")
    code = main(["trace", "repair", "-"])
    err = capsys.readouterr().err
    assert code == 2
    assert "cannot read standard input (-)" in err and "Traceback" not in err


@pytest.mark.parametrize("given", ["file", "run-directory"])
def test_repair_refuses_a_gzip_log_and_leaves_it_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    run_id = fixture_run_id("interrupted")
    plain = tmp_path / "plain.jsonl"
    write_interrupted(plain, run_id)
    packed = tmp_path / run_id / "events.jsonl.gz"
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(plain.read_bytes(), mtime=0))
    before = packed.read_bytes(), packed.stat().st_mtime_ns
    target = packed if given == "file" else packed.parent
    with pytest.raises(UsageError, match="gzip-compressed"):
        repair_file(target)
    code = main(["trace", "repair", str(target)])
    err = capsys.readouterr().err
    assert code == 2
    assert "gzip-compressed" in err and "gunzip -k" in err and "untouched" in err
    assert (packed.read_bytes(), packed.stat().st_mtime_ns) == before
    assert sorted(p.name for p in packed.parent.iterdir()) == ["events.jsonl.gz"]  # no .bak, .torn, temp


def test_repair_still_repairs_a_plain_copy(tmp_path: Path, data: Data) -> None:
    """The refusals are about the source, not the content: the same bytes as a plain file repair."""
    copy = tmp_path / "torn.jsonl"
    shutil.copyfile(data.torn, copy)
    result = repair_file(copy)
    assert result.torn is not None and result.closes
