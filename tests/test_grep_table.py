"""``ract trace grep``'s table: where a match is (path:line) stays visible at every width.

The expected rows are computed here from the fixture files (``json.loads``
per line), never by ract's grep code. Widths come from ``COLUMNS`` in
process (stdout is then a file, which the table fits to ``COLUMNS`` when it
is set) or from a real pseudo-terminal's window size in a subprocess, the
way an operator's terminal gives it.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest
from hardening_support import ROOT, run_on_pty

from ract_cli.cli.app import main
from ract_cli.format.canonical import jcs_exact
from ract_cli.writer.event_writer import EventWriter, FsyncPolicy, event_hash

RUNS = ["120d7eae7ee0c9c181816e553722e2fe", "410d1cc7be160683b49c268f18a6ff49", "450e154f62c2d870c077f0b9edeee9d7"]
FIXTURES = [f"fixtures/runs/{run}/events.jsonl" for run in RUNS]  # relative to ROOT: paths as an auditor types them
ELLIPSIS = "\u2026"
LOCATION = re.compile(r"^(\u2026)?(\S*events\.jsonl):(\d+)(?=\s|$)", re.M)
TIME = re.compile(r"^(\d{4}-\d\d-\d\dT[0-9:.]*Z?|[0-9:.]*Z|-)$")  # a time cell, possibly folded
SUMMARY = re.compile(r"^\d+ match(es)? in \d+ of \d+ file")
_SGR = re.compile(r"\x1b\[[0-9;]*m")
_UNSAFE_SHOWN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")
HOSTILE_DIR = "run\x1b[31mRED\u202e[bold]x[/bold]"
HOSTILE_DIR_SHOWN = "run\\x1b[31mRED\\u202e[bold]x[/bold]"


# --- independent expectations ---------------------------------------------------------


def _escape(text: str) -> str:
    """The documented display rule: controls, DEL, C1, bidi and separators become visible escapes."""
    return _UNSAFE_SHOWN.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text
    )


def _summary(payload: object) -> str:
    text = _escape(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
    return text if len(text) <= 160 else text[:157] + "..."


def expected_rows(paths: list[str], kind: str | None = None) -> list[tuple[str, int, str]]:
    """(path, line, payload summary) of every event of kind ``kind`` (all when None), in file order."""
    rows = []
    for path in paths:
        for number, raw in enumerate((ROOT / path).read_bytes().splitlines(), 1):
            event = json.loads(raw)
            if kind is None or event["kind"] == kind:
                rows.append((path, number, _summary(event["payload"])))
    assert rows, "the case must select something"
    return rows


def cells(text: str) -> int:
    """Terminal cells of ``text`` (wide East Asian characters and emoji take two)."""
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def locations(shown: str) -> list[tuple[str, str, int]]:
    """(ellipsis or "", path or its tail, line) of every location cell, in order."""
    return [(m.group(1) or "", m.group(2), int(m.group(3))) for m in LOCATION.finditer(shown)]


def assert_locations(shown: str, rows: list[tuple[str, int, str]], *, full: bool) -> None:
    """Every match's path:line is shown, in order; a shortened path is the true path's tail and names
    exactly one of the searched files."""
    found = locations(shown)
    assert len(found) == len(rows), (len(found), len(rows), shown[:2000])
    paths = {p for p, _, _ in rows}
    for (ellipsis, text, line), (path, number, _) in zip(found, rows, strict=False):
        assert line == number
        if full or not ellipsis:
            assert text == path, (text, path)
        else:
            assert path.endswith(text) and len(text) >= 12, (text, path)
            assert [p for p in paths if p.endswith(text)] == [path], f"{text!r} names more than one file"


def first_column(shown: str) -> str:
    """The first column's text, its folded pieces joined (time cells of the two-line layout left out)."""
    lines = shown.splitlines()
    header = lines[0]
    start = min(header.index(h) for h in ("time (UTC)", "kind") if h in header)
    pieces = []
    for line in lines[1:]:
        if SUMMARY.match(line):
            break
        piece = line[:start].strip()
        if piece in ("time (UTC)", "") or TIME.match(piece):
            continue
        pieces.append(piece)
    return "".join(pieces)


def grep_in_process(capfdbinary, monkeypatch, columns: int | None, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(ROOT)
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", str(columns))
    code = main(["trace", "grep", *args])
    out, err = capfdbinary.readouterr()
    return code, out.decode("utf-8"), err.decode("utf-8", "replace")


def on_a_terminal(argv: list[str], columns: int, cwd: Path = ROOT, timeout: float = 60) -> tuple[int, str]:
    """Run ``ract argv`` on a pseudo-terminal ``columns`` wide (no COLUMNS in the environment: the width
    is the terminal's); return (exit code, what the terminal received)."""
    code, shown = run_on_pty(argv, columns=columns, rows=50, columns_env=False, timeout=timeout, cwd=cwd)
    return code, shown.decode("utf-8")


def assert_terminal_safe(raw: str) -> str:
    """Only rich's own colour codes may reach the terminal; return the text without them."""
    assert "Traceback" not in raw
    shown = _SGR.sub("", raw)
    assert "\x1b" not in shown and "\r" not in shown and "\x07" not in shown
    assert not _UNSAFE_SHOWN.search(shown.replace("\n", "")), "a control or bidi character reached the terminal"
    return shown


def assert_fits(shown: str, columns: int) -> None:
    wide = [line for line in shown.splitlines() if cells(line.rstrip()) > columns]
    assert not wide, wide[:3]


# --- in process, COLUMNS -----------------------------------------------------------------

WIDTHS = [40, 60, 80, 100, 120, 160, 200]


@pytest.mark.parametrize("columns", WIDTHS)
def test_every_match_shows_its_path_and_line(capfdbinary, monkeypatch, columns):
    """230 matches over three runs (two batches of the table): each row names its file and line, in order,
    and no line is wider than the console."""
    rows = expected_rows(FIXTURES)
    code, out, err = grep_in_process(capfdbinary, monkeypatch, columns, "--format", "table", "--kind", "*", *FIXTURES)
    assert code == 0, err
    assert_locations(out, rows, full=False)
    assert_fits(out, columns)
    assert out.count("path:line") == 1, "one header for the whole table, batches included"
    time_at = {
        re.search(r"\d{4}-\d\d-\d\dT", line).start()
        for line in out.splitlines()
        if re.search(r"\d{4}-\d\d-\d\dT", line)
    }
    assert len(time_at) == 1, f"the time column moved between rows or batches: {time_at}"
    assert out.rstrip().endswith(f"{len(rows)} matches in 3 of 3 file(s)")


@pytest.mark.parametrize("columns", WIDTHS)
def test_payload_summary_is_cut_not_the_location(capfdbinary, monkeypatch, columns):
    """The payload gives way: what is shown of it is its start, ellipsized, on the match's own row."""
    rows = expected_rows(FIXTURES[1:], kind="tool.called")
    code, out, _ = grep_in_process(
        capfdbinary, monkeypatch, columns, "--format", "table", "--kind", "tool.called", *FIXTURES[1:]
    )
    assert code == 0
    starts = [m.start() for m in LOCATION.finditer(out)] + [len(out)]
    assert len(starts) == len(rows) + 1
    for (_, _, summary), begin, end in zip(rows, starts, starts[1:], strict=False):
        block = out[begin:end]
        assert summary[:12] in block, (summary[:12], block)
        if len(summary) > 40:
            assert ELLIPSIS in block or summary in block


def test_wide_console_shows_whole_paths_and_payloads(capfdbinary, monkeypatch):
    rows = expected_rows(FIXTURES[2:], kind="tool.result")
    code, out, _ = grep_in_process(
        capfdbinary, monkeypatch, 400, "--format", "table", "--kind", "tool.result", FIXTURES[2]
    )
    assert code == 0
    assert_locations(out, rows, full=True)
    for path, line, summary in rows:
        assert re.search(rf"^{re.escape(path)}:{line}\s.*{re.escape(summary)}", out, re.M), summary


@pytest.mark.parametrize("columns", [40, 60, 80, 120, 200])
def test_with_filename_shows_the_whole_path(capfdbinary, monkeypatch, columns):
    """-H in a table: the path is never shortened; a long one folds onto more lines."""
    rows = expected_rows(FIXTURES, kind="run.started")
    code, out, _ = grep_in_process(
        capfdbinary, monkeypatch, columns, "-H", "--format", "table", "--kind", "run.started", *FIXTURES
    )
    assert code == 0 and ELLIPSIS not in first_column(out)
    joined = first_column(out)
    for path, line, _ in rows:
        assert re.search(re.escape(f"{path}:{line}") + r"(?!\d)", joined), (path, joined)
    assert_fits(out, columns)


@pytest.mark.parametrize("columns", [60, 80, 200])
def test_single_file_table_shows_the_path_too(capfdbinary, monkeypatch, columns):
    rows = expected_rows(FIXTURES[:1], kind="tool.called")
    code, out, _ = grep_in_process(
        capfdbinary, monkeypatch, columns, "--format", "table", "--kind", "tool.called", FIXTURES[0]
    )
    assert code == 0
    assert_locations(out, rows, full=False)


@pytest.mark.parametrize("columns", [1, 5, 12, 25, 39])
def test_tiny_widths_are_laid_out_as_40_columns(capfdbinary, monkeypatch, columns):
    rows = expected_rows(FIXTURES[1:2], kind="tool.called")
    code, out, err = grep_in_process(
        capfdbinary, monkeypatch, columns, "--format", "table", "--kind", "tool.called", FIXTURES[1]
    )
    assert code == 0 and "Traceback" not in err
    assert_locations(out, rows, full=False)
    assert_fits(out, 40)


def test_not_a_terminal_without_columns_is_not_fitted(capfdbinary, monkeypatch):
    """``--format table`` into a file or pipe: rich's default 80 columns would cut paths; nothing is cut but
    the payload summary (at 160 characters)."""
    rows = expected_rows(FIXTURES)
    code, out, _ = grep_in_process(capfdbinary, monkeypatch, None, "--format", "table", "--kind", "*", *FIXTURES)
    assert code == 0
    assert_locations(out, rows, full=True)
    assert ELLIPSIS not in out
    body = [line for line in out.splitlines()[1:] if LOCATION.match(line)]
    for line, (path, number, summary) in zip(body, rows, strict=True):
        assert line.startswith(f"{path}:{number} ") and line.rstrip().endswith(summary), (line, summary)
    assert any(len(s) == 160 for _, _, s in rows), "the case must include a payload cut at 160"


@pytest.mark.parametrize("args", [["-c", "-H"], ["-c"], ["-l"]], ids=" ".join)
@pytest.mark.parametrize("columns", [None, 20, 40, 200])
def test_count_and_list_are_never_cut(capfdbinary, monkeypatch, columns, args):
    """-c and -l print plain lines whatever the width: the whole path, as given."""
    code, out, _ = grep_in_process(capfdbinary, monkeypatch, columns, *args, "--kind", "tool.called", *FIXTURES)
    assert code == 0
    counts = {
        p: sum(1 for raw in (ROOT / p).read_bytes().splitlines() if json.loads(raw)["kind"] == "tool.called")
        for p in FIXTURES
    }
    if "-l" in args:
        expected = [p for p in FIXTURES if counts[p]]
    else:
        expected = [f"{p}:{counts[p]}" for p in FIXTURES]
    assert out.splitlines() == expected


def test_deeply_nested_payload_does_not_crash_the_table(capfdbinary, monkeypatch, tmp_path):
    """A payload nested deeper than orjson writes verifies (the reader reads it exactly); the table shows it."""
    run = "ab" * 16
    event = {
        "id": "c0" * 16,
        "kind": "run.started",
        "parent_id": None,
        "prev_hash": "0" * 64,
        "run_id": run,
        "step_id": None,
        "timestamp_ns": 1_764_000_000_000_000_000,
        "payload": {"intent_id": "ab" * 16, "deep": json.loads("[" * 300 + "]" * 300)},
    }
    event["hash"] = event_hash(event)
    path = tmp_path / run / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(jcs_exact(event) + b"\n")
    code, out, err = grep_in_process(capfdbinary, monkeypatch, 120, "--format", "table", "--kind", "*", str(path))
    assert code == 0 and "Traceback" not in err, err
    assert [(str(path).endswith(text), line) for _, text, line in locations(out)] == [(True, 1)]
    assert '{"deep":[[[[' in out


# --- on a real terminal ----------------------------------------------------------------


def _hostile_tree(root: Path) -> Path:
    """A run directory and a payload that try to paint the terminal."""
    path = root / HOSTILE_DIR / "events.jsonl"
    with EventWriter(path, run_id="5a" * 16, fsync=FsyncPolicy.NEVER, strict=False) as w:
        w.append("run.started", {"intent_id": "ab" * 16})
        w.append(
            "laziness.skipped",
            {"reason": "\x1b[2J\x1b[31mFAKE PASS [bold]x[/bold]\r\u202e", "diff_summary": "\u2028" * 3},
        )
        w.append("run.completed", {"status": "ok"})
    return path


@pytest.mark.parametrize("columns", [40, 60, 80, 120])
def test_terminal_table_keeps_locations_at_the_terminal_width(columns):
    rows = expected_rows(FIXTURES, kind="tool.result")
    code, raw = on_a_terminal(["trace", "grep", "--kind", "tool.result", *FIXTURES], columns)
    shown = assert_terminal_safe(raw)
    assert code == 0
    assert_locations(shown, rows, full=False)
    assert_fits(shown, columns)


@pytest.mark.parametrize("columns", [60, 80, 200])
@pytest.mark.parametrize("with_filename", [False, True], ids=["short", "-H"])
def test_terminal_table_escapes_hostile_paths_at_every_width(tmp_path, columns, with_filename):
    path = _hostile_tree(tmp_path)
    code, raw = on_a_terminal(
        ["trace", "grep", *(["-H"] if with_filename else []), "--kind", "*", str(path.relative_to(tmp_path))],
        columns,
        cwd=tmp_path,
    )
    shown = assert_terminal_safe(raw)
    assert code == 0, shown
    if columns >= 200:  # wide enough for the hostile payload's start: shown escaped
        assert '"reason":"\\u001b[2J\\u001b[31mFAKE' in shown
    full = f"{HOSTILE_DIR_SHOWN}/events.jsonl"
    if with_filename:  # the whole path, folded onto more lines when it does not fit
        joined = first_column(shown)
        assert ELLIPSIS not in joined
        for line in (1, 2, 3):
            assert f"{full}:{line}" in joined, joined
        if columns >= 200:
            assert [(text, line) for _, text, line in locations(shown)] == [(full, 1), (full, 2), (full, 3)]
    else:
        found = locations(shown)
        assert [line for _, _, line in found] == [1, 2, 3]
        assert all(full.endswith(text) for _, text, _ in found)
    assert_fits(shown, columns)


@pytest.mark.parametrize("args", [["-l"], ["-c", "-H"]], ids=" ".join)
def test_terminal_count_and_list_print_whole_paths_on_a_narrow_terminal(tmp_path, args):
    path = _hostile_tree(tmp_path)
    code, raw = on_a_terminal(
        ["trace", "grep", *args, "--kind", "*", str(path.relative_to(tmp_path))], 30, cwd=tmp_path
    )
    shown = assert_terminal_safe(raw)
    assert code == 0
    suffix = ":3" if "-c" in args else ""
    assert shown.splitlines() == [f"{HOSTILE_DIR_SHOWN}/events.jsonl{suffix}"]


def test_pty_width_is_what_rich_sees():
    """The harness is sound: a 60-column pty makes a 60-column table, a 200-column one does not."""
    _, narrow = on_a_terminal(["trace", "grep", "--kind", "run.started", FIXTURES[0]], 60)
    _, wide = on_a_terminal(["trace", "grep", "--kind", "run.started", FIXTURES[0]], 200)
    narrow, wide = _SGR.sub("", narrow), _SGR.sub("", wide)
    assert max(cells(line.rstrip()) for line in narrow.splitlines()) <= 60
    assert max(cells(line.rstrip()) for line in wide.splitlines()) > 60
    assert [line for _, _, line in locations(narrow)] == [line for _, _, line in locations(wide)] == [1]
