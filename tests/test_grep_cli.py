"""``ract trace grep`` end to end: output compared byte for byte with an independent filter.

The expected lines are computed here by plain Python over the fixture files
(``json.loads`` per line, a lambda per filter), never by ract's grep code.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hardening_support import on_pty

from ract_cli.cli.app import main
from ract_cli.format.canonical import jcs_exact
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.read.core import core_name
from ract_cli.testing.synth import fixture_path, fixture_run_id, write_aborted, write_completed, write_fixtures
from ract_cli.writer.event_writer import EventWriter, FsyncPolicy

RACT = [sys.executable, "-m", "ract_cli"]
ROOT = Path(__file__).resolve().parents[1]
SYNTH_RUN = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"


# --- corpus -------------------------------------------------------------------


def _lines(path: Path) -> list[bytes]:
    """Split on \\n only, endings kept (the framing of SPEC §2.1)."""
    parts = path.read_bytes().split(b"\n")
    return [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _write_repaired_like(path: Path) -> None:
    """A run whose closes were synthesized (payload.synthesized = true), written through the writer."""
    ids = iter(f"{i:032x}" for i in range(1, 100))
    ts = iter(range(1_764_100_000_000_000_000, 1_764_200_000_000_000_000, 1_000_000_007))
    step = "77" * 16
    with EventWriter(
        path, run_id=SYNTH_RUN, fsync=FsyncPolicy.NEVER, new_id=lambda: next(ids), clock=lambda: next(ts)
    ) as w:
        run = w.append("run.started", {"intent_id": "ab" * 16, "predicate_count": 1})
        started = w.append("step.started", {"parent_snapshot": "c" * 40, "timeout_seconds": 60}, step_id=step)
        call = w.append("tool.called", {"tool": "bash", "arguments": {"argv": ["sleep", "9"]}}, step_id=step)
        w.append(
            "tool.result",
            {
                "tool": "bash",
                "ok": False,
                "status": "unknown",
                "synthesized": True,
                "reason": "interrupted",
                "source_event_id": call["id"],
            },
            step_id=step,
            parent_id=call["id"],
        )
        w.append(
            "step.rolled_back",
            {"synthesized": True, "reason": "interrupted", "source_event_id": started["id"]},
            step_id=step,
            parent_id=started["id"],
        )
        w.append(
            "run.aborted",
            {"synthesized": True, "reason": "interrupted", "source_event_id": run["id"]},
            parent_id=run["id"],
        )


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Valid logs only, in several run directories: completed, aborted, foreign-format, repaired-like."""
    root = tmp_path_factory.mktemp("grep-corpus")
    written = write_fixtures(root)
    for name in ("interrupted", "tampered"):
        shutil.rmtree(written[name].parent)
    synth = root / "runs" / SYNTH_RUN / "events.jsonl"
    synth.parent.mkdir(parents=True)
    _write_repaired_like(synth)
    return root


@pytest.fixture(scope="session")
def corpus_files(corpus: Path) -> list[Path]:
    return sorted(corpus.rglob("events.jsonl"))


@pytest.fixture(scope="session")
def bad(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("grep-bad")
    return write_fixtures(root)


def expected(files: list[Path], pred: Callable[[dict], bool]) -> bytes:
    out = []
    for f in files:
        for raw in _lines(f):
            if pred(json.loads(raw)):
                out.append(raw)
    return b"".join(out)


def grep(capfdbinary: pytest.CaptureFixture[bytes], *args: str) -> tuple[int, bytes, str]:
    """Run ``ract trace grep`` in-process; return (exit code, stdout bytes, stderr text)."""
    code = main(["trace", "grep", *args])
    out, err = capfdbinary.readouterr()
    return code, out, err.decode()


def ract(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*RACT, "trace", "grep", *args], capture_output=True, input=stdin, timeout=120)


# --- every filter type, byte for byte --------------------------------------------

ABORTED_RUN = fixture_run_id("aborted")
COMPLETED_RUN = fixture_run_id("completed")


def _ts_of(files: list[Path], kind: str) -> int:
    """The timestamp of the first event of ``kind`` in the completed run (a boundary for the range tests)."""
    for f in files:
        if COMPLETED_RUN in str(f):
            for raw in _lines(f):
                ev = json.loads(raw)
                if ev["kind"] == kind:
                    return ev["timestamp_ns"]
    raise AssertionError(kind)


def _iso(ns: int) -> str:
    seconds, frac = divmod(ns, 10**9)
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def _get(ev: dict, *path: str | int) -> object:
    value: object = ev
    for p in path:
        if isinstance(value, dict) and p in value:
            value = value[p]
        elif isinstance(value, list) and isinstance(p, int) and p < len(value):
            value = value[p]
        else:
            return KeyError
    return value


def _num(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


FILTER_CASES: list[tuple[str, list[str] | Callable[[list[Path]], list[str]], Callable]] = [
    ("kind exact", ["--kind", "process.reaped"], lambda e: e["kind"] == "process.reaped"),
    ("kind glob prefix", ["--kind", "tool.*"], lambda e: e["kind"].startswith("tool.")),
    ("kind glob suffix", ["--kind", "*.refused"], lambda e: e["kind"].endswith(".refused")),
    ("kind glob ?", ["--kind", "run.?????ed"], lambda e: e["kind"] in ("run.started", "run.aborted")),
    ("kind every", ["--kind", "*"], lambda e: True),
    (
        "kind repeated ORs",
        ["-k", "run.started", "-k", "run.completed", "-k", "sandbox.*"],
        lambda e: e["kind"] in ("run.started", "run.completed") or e["kind"].startswith("sandbox."),
    ),
    ("no filter at all", [], lambda e: True),
    ("run", ["--run", ABORTED_RUN], lambda e: e["run_id"] == ABORTED_RUN),
    (
        "run repeated ORs",
        ["--run", ABORTED_RUN, "--run", SYNTH_RUN.upper()],
        lambda e: e["run_id"] in (ABORTED_RUN, SYNTH_RUN),
    ),
    ("step", ["--step", "77" * 16], lambda e: e["step_id"] == "77" * 16),
    ("since ns inclusive", lambda files: ["--since", str(_ts_of(files, "process.reaped"))], "since:process.reaped"),
    ("until ns inclusive", lambda files: ["--until", str(_ts_of(files, "process.reaped"))], "until:process.reaped"),
    ("since iso with ns", lambda files: ["--since", _iso(_ts_of(files, "tool.refused"))], "since:tool.refused"),
    ("until iso date = whole day", ["--until", "2025-11-24"], lambda e: e["timestamp_ns"] <= 1_764_028_799_999_999_999),
    ("since date", ["--since", "2025-11-25"], lambda e: e["timestamp_ns"] >= 1_764_028_800_000_000_000),
    ("synthesized", ["--synthesized"], lambda e: e["payload"].get("synthesized") is True),
    (
        "no-synthesized",
        ["--no-synthesized", "--kind", "run.*"],
        lambda e: e["payload"].get("synthesized") is not True and e["kind"].startswith("run."),
    ),
    ("where bool =", ["--where", "payload.ok=false"], lambda e: e["payload"].get("ok") is False),
    (
        "where string != (absent matches)",
        ["--where", "payload.tool!=bash"],
        lambda e: e["payload"].get("tool", KeyError) != "bash",
    ),
    (
        "where >",
        ["-w", "payload.reap_latency_ms>1000"],
        lambda e: _num(_get(e, "payload", "reap_latency_ms")) and _get(e, "payload", "reap_latency_ms") > 1000,
    ),
    (
        "where <",
        ["-w", "payload.reap_latency_ms<1830"],
        lambda e: _num(_get(e, "payload", "reap_latency_ms")) and _get(e, "payload", "reap_latency_ms") < 1830,
    ),
    (
        "where >= boundary",
        ["-w", "payload.reap_latency_ms>=1830"],
        lambda e: _num(_get(e, "payload", "reap_latency_ms")) and _get(e, "payload", "reap_latency_ms") >= 1830,
    ),
    (
        "where <= float",
        ["-w", "payload.latency_ms<=818.575"],
        lambda e: _num(_get(e, "payload", "latency_ms")) and _get(e, "payload", "latency_ms") <= 818.575,
    ),
    (
        "where regex search",
        ["-w", "payload.reason~^dispose"],
        lambda e: isinstance(_get(e, "payload", "reason"), str) and _get(e, "payload", "reason").startswith("dispose"),
    ),
    (
        "where regex unanchored",
        ["-w", "payload.preview~caf"],
        lambda e: isinstance(_get(e, "payload", "preview"), str) and "caf" in _get(e, "payload", "preview"),
    ),
    ("where presence", ["-w", "payload.step_id?"], lambda e: "step_id" in e["payload"]),
    ("where presence of a null value", ["-w", "payload.manifest_digest?"], lambda e: "manifest_digest" in e["payload"]),
    (
        "where = null",
        ["-w", "payload.manifest_digest=null"],
        lambda e: "manifest_digest" in e["payload"] and e["payload"]["manifest_digest"] is None,
    ),
    (
        "where nested dotted path",
        ["-w", "payload.arguments.limits.mem_mb=512.5"],
        lambda e: _get(e, "payload", "arguments", "limits", "mem_mb") == 512.5,
    ),
    ("where array index", ["-w", "payload.pids.1=4244"], lambda e: _get(e, "payload", "pids", 1) == 4244),
    (
        "where envelope key",
        ["-w", "parent_id!=null", "--kind", "tool.result"],
        lambda e: e["parent_id"] is not None and e["kind"] == "tool.result",
    ),
    (
        "where string that looks like JSON",
        ["-w", 'payload.tool="pytest"'],
        lambda e: e["payload"].get("tool") == "pytest",
    ),
    ("where int vs bool never equal", ["-w", "payload.ok=1"], lambda e: False),
    (
        "where repeated ANDs + kind",
        ["--kind", "tool.result", "-w", "payload.ok=true", "-w", "payload.tool!=bash"],
        lambda e: e["kind"] == "tool.result" and e["payload"]["ok"] is True and e["payload"]["tool"] != "bash",
    ),
    ("where matches nothing", ["-w", "payload.reason~^no-such-reason$"], lambda e: False),
]


def _resolve_case(files: list[Path], args, pred) -> tuple[list[str], Callable[[dict], bool]]:
    if callable(args):
        args = args(files)
    if isinstance(pred, str):
        side, kind = pred.split(":")
        boundary = _ts_of(files, kind)
        pred = (
            (lambda e: e["timestamp_ns"] >= boundary) if side == "since" else (lambda e: e["timestamp_ns"] <= boundary)
        )
    return args, pred


@pytest.mark.parametrize("verify", [True, False], ids=["verified", "no-verify"])
@pytest.mark.parametrize(("name", "args", "pred"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_output_is_the_matching_lines_byte_for_byte(capfdbinary, corpus, corpus_files, verify, name, args, pred):
    args, pred = _resolve_case(corpus_files, args, pred)
    want = expected(corpus_files, pred)
    code, out, err = grep(capfdbinary, *args, *([] if verify else ["--no-verify"]), str(corpus))
    assert out == want
    assert code == (0 if want else 7), err
    assert ("NOT checked" in err) is (not verify)


def test_filter_table_covers_matches_and_non_matches(corpus_files):
    """Each case must select a proper, non-empty subset (else the comparison proves little) -- except the two
    cases that are about matching nothing."""
    total = sum(len(_lines(f)) for f in corpus_files)
    for name, args, pred in FILTER_CASES:
        _, pred = _resolve_case(corpus_files, args, pred)
        n = len(expected(corpus_files, pred).splitlines())
        if name in ("where int vs bool never equal", "where matches nothing"):
            assert n == 0, name
        elif name in ("kind every", "no filter at all"):
            assert n == total, name
        else:
            assert 0 < n < total, name


def test_the_corpus_spans_several_runs_and_formats(corpus_files):
    assert len(corpus_files) == 4
    assert any(b"\r\n" in f.read_bytes() for f in corpus_files)  # foreign-format: CRLF kept byte for byte


# --- output modes --------------------------------------------------------------------


def test_with_filename_prefixes_path_and_line(capfdbinary, corpus, corpus_files):
    want = b"".join(
        os.fsencode(str(f)) + b":" + str(i).encode() + b":" + raw
        for f in corpus_files
        for i, raw in enumerate(_lines(f), 1)
        if json.loads(raw)["kind"] == "process.reaped"
    )
    code, out, _ = grep(capfdbinary, "-H", "--kind", "process.reaped", str(corpus))
    assert (code, out) == (0, want)


def test_count_per_file_when_several(capfdbinary, corpus, corpus_files):
    want = "".join(f"{f}:{sum(json.loads(r)['kind'].startswith('tool.') for r in _lines(f))}\n" for f in corpus_files)
    code, out, _ = grep(capfdbinary, "-c", "--kind", "tool.*", str(corpus))
    assert (code, out.decode()) == (0, want)


def test_count_of_one_file_is_a_bare_number(capfdbinary, corpus_files):
    f = corpus_files[0]
    n = sum(json.loads(r)["kind"] == "process.reaped" for r in _lines(f))
    assert grep(capfdbinary, "-c", "-k", "process.reaped", str(f))[:2] == (0, f"{n}\n".encode())
    assert grep(capfdbinary, "-c", "-k", "no.such", str(f))[:2] == (7, b"0\n")
    assert grep(capfdbinary, "-c", "-H", "-k", "no.such", str(f))[:2] == (7, f"{f}:0\n".encode())


def test_files_with_matches(capfdbinary, corpus, corpus_files):
    want = "".join(f"{f}\n" for f in corpus_files if any(json.loads(r)["kind"] == "tool.refused" for r in _lines(f)))
    assert want.count("\n") == 1
    assert grep(capfdbinary, "-l", "--kind", "tool.refused", str(corpus))[:2] == (0, want.encode())


def test_json_format_documented_shape(capfdbinary, corpus, corpus_files):
    code, out, _ = grep(capfdbinary, "--format", "json", "--kind", "process.reaped", str(corpus))
    doc = json.loads(out)
    assert code == doc["exit_code"] == 0
    want = [
        (str(f), i, json.loads(raw))
        for f in corpus_files
        for i, raw in enumerate(_lines(f), 1)
        if json.loads(raw)["kind"] == "process.reaped"
    ]
    assert [(m["path"], m["line"], m["event"]) for m in doc["matches"]] == want
    for m in doc["matches"]:  # offset points at the line's first byte
        assert Path(m["path"]).read_bytes()[m["offset"] :].startswith(_lines(Path(m["path"]))[m["line"] - 1])
    assert [f["path"] for f in doc["files"]] == [str(f) for f in corpus_files]
    assert sum(f["matches"] for f in doc["files"]) == doc["total_matches"] == len(want)
    assert doc["verified"] is True


def test_json_format_with_no_match_is_still_valid_json(capfdbinary, corpus):
    code, out, _ = grep(capfdbinary, "--format", "json", "--kind", "no.such", str(corpus))
    doc = json.loads(out)
    assert (code, doc["matches"], doc["exit_code"]) == (7, [], 7)


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq not installed")
def test_output_composes_with_jq(corpus, corpus_files):
    proc = subprocess.run(
        f"{sys.executable} -m ract_cli trace grep --kind 'tool.*' {corpus} | jq -c .",
        shell=True,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    got = [json.loads(line) for line in proc.stdout.splitlines()]
    want = [json.loads(r) for f in corpus_files for r in _lines(f) if json.loads(r)["kind"].startswith("tool.")]
    # (jq may round timestamp_ns through a double: compare what it cannot round)
    assert [(e["id"], e["kind"], e["hash"]) for e in got] == [(e["id"], e["kind"], e["hash"]) for e in want]
    assert len(got) > 10


def test_subprocess_output_is_byte_exact_including_crlf(corpus, corpus_files):
    proc = ract("--kind", "step.*", str(corpus))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected(corpus_files, lambda e: e["kind"].startswith("step."))
    assert b"\r\n" in proc.stdout


def test_a_closed_pipe_ends_quietly(corpus):
    proc = subprocess.run(
        f"{sys.executable} -m ract_cli trace grep --kind '*' {corpus} {corpus} {corpus} | head -n 1",
        shell=True,
        capture_output=True,
        timeout=120,
    )
    assert proc.stdout.count(b"\n") == 1
    assert b"Traceback" not in proc.stderr and b"Error" not in proc.stderr


def _hostile_log(tmp_path: Path) -> Path:
    path = tmp_path / SYNTH_RUN / "events.jsonl"
    with EventWriter(path, run_id=SYNTH_RUN, fsync=FsyncPolicy.NEVER, strict=False) as w:
        w.append("run.started", {"intent_id": "ab" * 16})
        w.append("laziness.skipped", {"reason": "\x1b[2J\x1b[31mFAKE PASS [bold]x[/bold]", "diff_summary": "\u202e"})
        w.append("evil.\x1b[32mPASS\u202e[red]kind", {})  # an unknown kind (exit 3) that tries to paint
    return path


def _on_a_terminal(*args: str) -> tuple[int, str]:
    """Run ract with stdout on a pseudo-terminal; return (exit code, what the terminal received)."""
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm"}
    code, _, shown = on_pty([*RACT, *args], stderr=False, size=None, raw=False, env=env)
    return code, shown.decode("utf-8", "replace")


def _painted(shown: str) -> bool:
    return any(seq in shown for seq in ("\x1b[2J", "\x1b[31m", "\x1b[32m", "\u202e"))


def test_terminal_table_escapes_log_strings(tmp_path):
    """On a terminal the default is a table; a hostile payload's escape sequences are shown, not obeyed."""
    code, shown = _on_a_terminal("trace", "grep", "--kind", "*", str(_hostile_log(tmp_path)))
    assert code == 3  # the unknown kind
    assert "laziness.skipped" in shown and "3 matches" in shown
    assert not _painted(shown)
    assert "\\u001b[2J" in shown and "[bold]x[/bold]" in shown  # payload: JSON-escaped, markup not interpreted
    assert "evil.\\x1b[32mPASS\\u202e[red]kind" in shown  # kind: escaped by clean()


@pytest.mark.parametrize(
    "fmt", [["--format", "jsonl", "-H"], ["--format", "json"], ["-c", "-H"], ["-l"]], ids=lambda a: " ".join(a)
)
def test_every_terminal_output_escapes_log_strings(tmp_path, fmt):
    path = _hostile_log(tmp_path)
    code, shown = _on_a_terminal("trace", "grep", *fmt, "--kind", "*", str(path))
    assert code == 3 and not _painted(shown)
    assert SYNTH_RUN in shown


def test_table_format_when_piped_is_plain_text(capfdbinary, tmp_path):
    path = _hostile_log(tmp_path)
    code, out, _ = grep(capfdbinary, "--format", "table", "--kind", "*", str(path))
    text = out.decode()
    assert code == 3 and "\x1b" not in text and "\u202e" not in text
    assert "laziness.skipped" in text and "3 matches in 1 of 1 file(s)" in text


# --- verification and exit codes ----------------------------------------------------


def test_tampered_file_stops_at_the_break_and_exits_1(capfdbinary, bad):
    path = bad["tampered"]
    lines = _lines(path)
    broken = next(
        i
        for i, raw in enumerate(lines, 1)
        if hashlib.sha256(jcs_exact({k: v for k, v in json.loads(raw).items() if k != "hash"})).hexdigest()
        != json.loads(raw)["hash"]
    )
    code, out, err = grep(capfdbinary, "--kind", "*", str(path))
    assert code == 1
    # the event just before the break is held back too (a recomputed hash is only caught one line later)
    assert out == b"".join(lines[: broken - 2])
    assert f":{broken}:" in err and "HASH_MISMATCH" in err and "stopped" in err


def test_recomputed_hash_edit_is_caught_one_line_later_and_the_edited_line_is_never_printed(capfdbinary, tmp_path):
    path = tmp_path / "runs" / fixture_run_id("completed") / "events.jsonl"
    path.parent.mkdir(parents=True)
    write_completed(path, fixture_run_id("completed"))
    lines = _lines(path)
    k = next(i for i, raw in enumerate(lines, 1) if json.loads(raw)["kind"] == "process.reaped")
    ev = json.loads(lines[k - 1])
    ev["payload"]["reason"] = "forged_reason"
    body = {key: v for key, v in ev.items() if key != "hash"}
    ev["hash"] = hashlib.sha256(jcs_exact(body)).hexdigest()  # a careful forger recomputes the line's own hash
    lines[k - 1] = jcs_exact(ev) + b"\n"
    path.write_bytes(b"".join(lines))

    for extra in ([], ["-w", "payload.reason=forged_reason"]):
        code, out, err = grep(capfdbinary, "--kind", "process.reaped", *extra, str(path))
        assert code == 1
        assert b"forged_reason" not in out
        assert out == b""  # k is the first process.reaped line: nothing before the break matched
        assert f":{k + 1}: CHAIN_BREAK" in err and f"nothing at or after line {k}" in err
    # matches before the edited line are printed
    code, out, _ = grep(capfdbinary, "--kind", "*", str(path))
    assert code == 1 and out == b"".join(lines[: k - 1])
    # --no-verify does not see it (and says so)
    code, out, err = grep(capfdbinary, "--no-verify", "--kind", "process.reaped", str(path))
    assert code == 0 and b"forged_reason" in out and "NOT checked" in err


def test_torn_tail_prints_matches_before_it_and_exits_4(capfdbinary, bad):
    path = bad["interrupted"]
    complete = _lines(path)[:-1]
    code, out, err = grep(capfdbinary, "--kind", "*", str(path))
    assert code == 4 and out == b"".join(complete)
    assert "TORN_TAIL" in err
    code, out, _ = grep(capfdbinary, "--no-verify", "--kind", "*", str(path))
    assert code == 4 and out == b"".join(complete)


def test_exit_codes_over_several_files(capfdbinary, bad, corpus):
    root = bad["completed"].parent.parent
    # 1 dominates even though matches were found elsewhere
    code, out, _ = grep(capfdbinary, "--kind", "process.reaped", str(root))
    assert code == 1 and out.count(b"\n") >= 2
    assert grep(capfdbinary, "--kind", "process.reaped", str(bad["completed"]), str(bad["interrupted"]))[0] == 4
    assert grep(capfdbinary, "--kind", "process.reaped", str(corpus), str(corpus / "missing"))[0] == 5
    assert grep(capfdbinary, "--kind", "no.such", str(corpus))[0] == 7
    assert grep(capfdbinary, "--kind", "no.such", str(corpus), str(bad["tampered"]))[0] == 1


def test_schema_error_is_exit_3_and_its_matches_are_printed(capfdbinary, tmp_path):
    path = tmp_path / SYNTH_RUN / "events.jsonl"
    with EventWriter(path, run_id=SYNTH_RUN, fsync=FsyncPolicy.NEVER, strict=False) as w:
        w.append("run.started", {"intent_id": "ab" * 16})
        w.append("process.reaped", {"pid": "not-an-int", "reason": "commit_failed"})
        w.append("run.completed", {"final_decision": "accept"})
    code, out, err = grep(capfdbinary, "--kind", "process.reaped", str(path))
    assert code == 3 and out == _lines(path)[1] and "PAYLOAD_INVALID" in err


def test_missing_path_is_5_and_said_on_stderr(capfdbinary, tmp_path):
    code, out, err = grep(capfdbinary, "--kind", "*", str(tmp_path / "nope"))
    assert (code, out) == (5, b"") and "nope" in err


@pytest.mark.parametrize(
    "args",
    [
        ["--where", "payload.ok"],
        ["--where", "ok=false"],
        ["--where", "payload..ok=1"],
        ["--where", "payload.reason~("],
        ["--where", "payload.x!1"],
        ["--where", "payload.x<"],
        ["--where", "payload.x>[1]"],
        ["--since", "yesterday"],
        ["--until", "2025-13-01"],
        ["--since", "2025-11-25", "--until", "2025-11-24"],
        ["--run", "xyz"],
        ["--step", "12"],
        ["--kind", ""],
        ["-c", "-l"],
        ["-c", "--format", "json"],
        ["--format", "xml"],
        [],  # no path
    ],
    ids=lambda a: " ".join(a) or "no-path",
)
def test_bad_command_lines_exit_2_with_a_message(capfdbinary, corpus, args):
    tail = [] if args == [] else [str(corpus)]
    code, out, err = grep(capfdbinary, *args, *tail)
    assert code == 2 and out == b""
    assert err.strip() and "Traceback" not in err


def test_bad_regex_message_names_the_expression(capfdbinary, corpus):
    code, _, err = grep(capfdbinary, "-w", "payload.reason~[a-", str(corpus))
    assert code == 2 and "payload.reason~[a-" in err and "regular expression" in err


def test_recursion_over_run_directories(capfdbinary, tmp_path):
    runs = tmp_path / "evals" / "runs"
    made = []
    for seed in range(3):
        rid = f"{seed + 1:032x}"
        p = runs / rid / "events.jsonl"
        p.parent.mkdir(parents=True)
        write_aborted(p, rid, seed=seed + 10)
        made.append(p)
    (runs / "notes.txt").write_text("not a log")
    nested = tmp_path / "evals" / "archive" / "2025-11" / f"{9:032x}" / "events.jsonl"
    nested.parent.mkdir(parents=True)
    write_aborted(nested, f"{9:032x}", seed=99)
    made.append(nested)
    code, out, _ = grep(capfdbinary, "--kind", "process.reaped", str(tmp_path / "evals"))
    assert code == 0
    assert out == expected(sorted(made), lambda e: e["kind"] == "process.reaped")
    assert out.count(b"\n") == 4


def test_unknown_kind_pattern_warns(capfdbinary, corpus):
    code, _, err = grep(capfdbinary, "--kind", "process.reap", str(corpus))
    assert code == 7 and "matches no RACT event kind" in err


def test_quiet_prints_nothing(capfdbinary, corpus):
    assert grep(capfdbinary, "-q", "--kind", "process.reaped", str(corpus)) == (0, b"", "")


def test_module_entry_and_fixture_path_agree(corpus):
    # the grep command is registered on the real CLI
    proc = subprocess.run([*RACT, "trace", "grep", "--help"], capture_output=True, timeout=60)
    assert proc.returncode == 0 and b"--no-verify" in proc.stdout and b"--where" in proc.stdout
    assert fixture_path(corpus, "completed").exists()


# --- Raxol journals (SPEC §8): detected per file; a record's kind is its type ------------------


def test_journal_records_are_grepped_by_type(capfdbinary):
    journal = ROOT / "fixtures" / "journals" / "chained.jsonl"
    want = expected([journal], lambda r: r.get("type") == "item_completed")
    assert want
    code, out, err = grep(capfdbinary, "--kind", "item_completed", str(journal))
    assert (code, out) == (0, want), err
    code, out, _ = grep(capfdbinary, "--dialect", "raxol", "-w", "payload.item_type=tool_use", str(journal))
    assert (code, out) == (0, expected([journal], lambda r: r["payload"].get("item_type") == "tool_use"))


def test_tampered_journal_stops_at_its_break(capfdbinary):
    journal = ROOT / "fixtures" / "journals" / "chained-tampered.jsonl"
    code, out, err = grep(capfdbinary, "--kind", "*", str(journal))
    assert code == 1 and "stopped" in err
    lines = _lines(journal)
    printed = out.splitlines(keepends=True)
    assert printed == lines[: len(printed)] and len(printed) < len(lines) - 1


@pytest.mark.parametrize("mode", [[], ["--no-verify"]], ids=["verified", "no-verify"])
def test_a_fifo_is_an_io_error_not_a_hang(capfdbinary, tmp_path, mode):
    fifo = tmp_path / "run" / "events.jsonl"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    code, out, err = grep(capfdbinary, *mode, "--kind", "*", str(tmp_path))
    assert (code, out) == (5, b"") and "FIFO" in err


def test_a_hostile_path_is_escaped_on_a_terminal_and_raw_in_a_pipe(tmp_path, capfdbinary):
    src = _hostile_log(tmp_path)
    evil_dir = tmp_path / "runs" / "x\x1b[31mRED\u202e"
    evil_dir.mkdir(parents=True)
    evil = evil_dir / "events.jsonl"
    evil.write_bytes(src.read_bytes())
    for args in (["-l"], ["-c", "-H"], ["-H", "--format", "jsonl"]):
        code, shown = _on_a_terminal("trace", "grep", *args, "--kind", "laziness.*", str(tmp_path / "runs"))
        assert code == 3 and "\x1b[31m" not in shown and "\u202e" not in shown and "x\\x1b[31mRED\\u202e" in shown
    code, out, _ = grep(capfdbinary, "-l", "--kind", "laziness.*", str(tmp_path / "runs"))
    assert (code, out) == (3, os.fsencode(str(evil)) + b"\n")  # data: the path's own bytes


@pytest.mark.parametrize("with_filename", [False, True])
def test_a_last_line_without_newline_does_not_run_into_the_next_file(tmp_path, capfdbinary, with_filename):
    """Two logs, the first ending without its final newline: every match is still its own line."""
    first, second = tmp_path / ("a" * 32) / "events.jsonl", tmp_path / ("b" * 32) / "events.jsonl"
    write_completed(first, "a" * 32)
    write_completed(second, "b" * 32, seed=2)
    body = first.read_bytes()
    first.write_bytes(body[:-1])  # drop the last "\n": MISSING_FINAL_NEWLINE, still an event
    args = ["--kind", "run.*", *(["-H"] if with_filename else []), str(first), str(second)]
    code, out, _ = grep(capfdbinary, *args)
    assert code == 0
    lines = out.split(b"\n")
    assert lines[-1] == b"" and len(lines) - 1 == 4  # run.started + run.completed from each file
    for line in lines[:-1]:
        text = line.split(b":", 2)[2] if with_filename else line
        assert json.loads(text)["kind"] in ("run.started", "run.completed")
    last_of_first = body[:-1].rsplit(b"\n", 1)[1]
    assert last_of_first + b"\n" in out  # the unterminated line, given its newline, otherwise byte for byte


# --- ``trace grep --kind ... PATH...`` into a pipe, answered before the CLI is imported (cli/launch.py) ---------


def _quick_grep_targets(tmp_path: Path) -> list[list[str]]:
    """Every fixture run and journal, the fleet of them, and what is not a log or not there."""
    runs = sorted(str(p) for p in (ROOT / "fixtures" / "runs").glob("*/events.jsonl"))
    journals = sorted(str(p) for p in (ROOT / "fixtures" / "journals").glob("*.jsonl"))
    (tmp_path / "readme.txt").write_text("not a log\n")
    (tmp_path / "empty").mkdir()
    return [
        *([r] for r in runs),
        *([j] for j in journals),
        [str(ROOT / "fixtures" / "runs")],
        [str(tmp_path / "readme.txt"), runs[0]],
        [str(tmp_path / "empty")],
        [str(tmp_path / "missing" / "events.jsonl")],
    ]


QUICK_GREP_KINDS = [
    ["--kind", "process.reaped"],
    ["-k", "tool.*", "--kind", "run.*"],
    ["--kind", "*"],
    ["--kind", "no.such.kind"],  # a warning on stderr
    ["--kind", "tool.called", "--kind", "tool.called"],
]


@pytest.mark.parametrize("env", [{}, {"RACT_CORE": "python"}, {"RACT_CORE": "bogus"}], ids=["native", "python", "bad"])
def test_piped_grep_before_the_cli_prints_what_the_cli_prints(tmp_path: Path, env: dict[str, str]) -> None:
    """The quick path's stdout, stderr and exit code are the CLI's, byte for byte: ``--format jsonl`` (the form
    a pipe gets anyway) sends the same search through typer."""
    from hardening_support import run_subprocess

    targets = _quick_grep_targets(tmp_path)
    fleet = [str(ROOT / "fixtures" / "runs")]
    cases = [(paths, kinds, []) for paths, kinds in zip(targets, itertools.cycle(QUICK_GREP_KINDS))]
    cases += [(fleet, kinds, ["--jobs", "2"]) for kinds in QUICK_GREP_KINDS]  # every kind form, the pool too
    cases += [(fleet, ["--kind", "tool.*"], ["--no-verify"]), (targets[0], ["-k", "run.*"], ["--no-verify", "-j", "2"])]
    seen_stderr = seen_stdout = False
    for paths, kinds, jobs in cases:
        quick = run_subprocess(["trace", "grep", *kinds, *jobs, *paths], env=env)
        full = run_subprocess(["trace", "grep", "--format", "jsonl", *kinds, *jobs, *paths], env=env)
        assert (quick.returncode, quick.stdout, quick.stderr) == (full.returncode, full.stdout, full.stderr), paths
        seen_stdout |= bool(quick.stdout)
        seen_stderr |= bool(quick.stderr)
    assert seen_stderr and (seen_stdout or env.get("RACT_CORE") == "bogus")  # (matches and findings compared)


def _piped_grep(options: list[str], modules: tuple[str, ...]) -> tuple[list[str], int, str]:
    """``ract trace grep OPTIONS <the completed fixture>`` run by ``launch.main`` in a subprocess, stdout and
    stderr pipes: the lines said on stderr, the number of lines printed, and the exit code followed by
    which of ``modules`` were imported (stderr's last line)."""
    script = (
        "import sys\n"
        "from ract_cli.cli.launch import main\n"
        f"code = main({['trace', 'grep', *options]!r} + [sys.argv[1]])\n"
        f"print(code, sorted(m for m in {modules!r} if m in sys.modules), file=sys.stderr)\n"
    )
    log = str(fixture_path(ROOT / "fixtures", "completed"))
    proc = subprocess.run([sys.executable, "-c", script, log], capture_output=True, text=True, timeout=60)
    said = proc.stderr.splitlines()
    return said[:-1], proc.stdout.count("\n"), said[-1] if said else proc.stderr


def test_what_grep_says_on_a_piped_stderr_is_written_without_rich() -> None:
    """``--no-verify`` always says what it gives up, and an unknown kind is warned of: into a pipe, the lines
    rich would write there (``render.write_stderr_lines``), without importing it (~40 ms of start-up)."""
    said, printed, last = _piped_grep(["--no-verify", "--kind", "tool.called", "--kind", "no.such"], ("rich",))
    assert said == [
        f"ract trace grep: warning: --kind 'no.such' matches no RACT event kind (schema version {LATEST_SCHEMA_VERSION})",
        "ract trace grep: --no-verify: hash chains are NOT checked; matches are printed without a verdict on "
        "their logs",
    ]
    assert (last, printed >= 1) == ("0 []", True)


def test_a_piped_grep_of_a_clean_log_imports_neither_typer_nor_rich() -> None:
    """Start-up: typer and rich cost ~0.1 s; a clean log's matches need neither (stderr says nothing)."""
    said, printed, last = _piped_grep(["--kind", "tool.called"], ("typer", "click", "rich"))
    assert (said, last, printed >= 1) == ([], "0 []", True)
    if core_name() == "native":  # nor a JSON library (~14 ms for orjson): the lines are printed as read
        said, printed, last = _piped_grep(["--kind", "tool.called"], ("orjson", "json", "ract_cli.read.line"))
        assert (said, last, printed >= 1) == ([], "0 []", True)
