"""Terminal safety (issue 9): a forged log cannot paint on the operator's terminal.

Log strings carrying rich markup (``[bold red]PASS[/]``), ANSI/OSC escape
sequences, carriage returns, backspaces, other C0/C1 controls and bidi
overrides are planted in payload values, in kinds and in file and directory
names. Every command runs as a real subprocess on a real pseudo-terminal
(``os.openpty``; output post-processing off, so a bare ``\\r`` stays
visible), with ``TERM=xterm-256color``, ``FORCE_COLOR=1`` and a fixed width,
so rich renders exactly as for an operator. The output may hold rich's own
colour codes (SGR, ``ESC [ ... m``) and nothing else: no other escape byte,
no BEL, no carriage return, no C1 control, no bidi control, and none of the
log's own sequences, and for a failing log no "PASS" that is not visibly
the log's escaped text.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hardening_support import RACT, ROOT, assert_no_traceback, on_pty, run_on_pty, trace_commands, write_small_log

from ract_cli.writer.event_writer import EventWriter, FsyncPolicy

HOSTILE = [
    "[bold red]PASS[/]",
    "[bold green]PASS[/bold green]",
    "[link=https://evil.example]click[/link]",
    "\x1b[2J\x1b[H",
    "\x1b]0;pwned-title\x07",
    "\x1b[38;5;201mPASS\x1b[0m",
    "\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\",
    "FAIL\rPASS",
    "line\nPASS forged line",
    "FAIL\x08\x08\x08\x08PASS",
    "\x9b2J",
    "\u009d0;c1-title\u009c",
    "\u202eSSAP\u202c",
    "\u2066isolate\u2069",
    "del\x7f",
    "nul\x00byte",
    "nel\u0085x",
    "ls\u2028x",
]
PAYLOAD_TEXT = "".join(HOSTILE)

# What may legitimately reach the terminal: rich's own SGR colour codes.
_SGR = re.compile(rb"\x1b\[[0-9;]*m")
_FORBIDDEN_BYTES = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")  # \t and \n allowed
_FORBIDDEN_CHARS = re.compile("[\u0080-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
LOG_SEQUENCES = [
    b"\x1b[2J",
    b"\x1b[H",
    b"\x1b]0;",
    b"\x07",
    b"\x1b[38;5;201m",
    b"\x1b]8;",
    b"\xc2\x9b",
    b"\xc2\x9d",
    b"\r",
    b"\x08",
]


def assert_terminal_safe(shown: bytes, context: object, *, failing: bool) -> None:
    assert_no_traceback(shown, context)
    for seq in LOG_SEQUENCES:
        assert seq not in shown, f"{context}: log sequence {seq!r} reached the terminal:\n{shown[-2000:]!r}"
    plain = _SGR.sub(b"", shown)
    bad = _FORBIDDEN_BYTES.search(plain)
    assert bad is None, (
        f"{context}: control byte {bad.group()!r} reached the terminal near {plain[max(0, bad.start() - 80) : bad.end() + 80]!r}"
    )
    text = plain.decode("utf-8", "replace")
    bad_char = _FORBIDDEN_CHARS.search(text)
    assert bad_char is None, f"{context}: control character U+{ord(bad_char.group()):04X} reached the terminal"
    if failing:
        for m in re.finditer("PASS", text):
            before = text[max(0, m.start() - 16) : m.start()]
            line_start = text.rfind("\n", 0, m.start()) + 1
            assert text[line_start : m.start()].strip() != "", f"{context}: a line starts with PASS for a failing log"
            # the log's own text, visibly escaped: a backslash escape or the literal markup before it
            assert "\\" in before or "]" in before, (
                f"{context}: 'PASS' shown without visible escaping: {text[max(0, m.start() - 60) : m.end() + 20]!r}"
            )


def write_hostile_log(path: Path, *, kind_text: bool = False) -> None:
    """A run whose displayed strings are all hostile; it verifies clean."""
    step = "7" * 32
    with EventWriter(path, run_id="ab" * 16, fsync=FsyncPolicy.NEVER) as w:
        run = w.append("run.started", {"intent_id": "1" * 32, "compiler_version": PAYLOAD_TEXT})
        started = w.append(
            "step.started", {"parent_snapshot": "c" * 40, "branch": PAYLOAD_TEXT, "timeout_seconds": 60}, step_id=step
        )
        prompt = w.append(
            "prompt.sent",
            {"provider": PAYLOAD_TEXT, "response_shape": PAYLOAD_TEXT, "intent_id": "1" * 32},
            step_id=step,
        )
        w.append(
            "response.received",
            {"provider": PAYLOAD_TEXT, "intent_id": "1" * 32, "response_type": "x", "preview": PAYLOAD_TEXT[:200]},
            step_id=step,
            parent_id=prompt["id"],
        )
        call = w.append("tool.called", {"tool": PAYLOAD_TEXT, "arguments": {PAYLOAD_TEXT: PAYLOAD_TEXT}}, step_id=step)
        w.append(
            "tool.result", {"tool": PAYLOAD_TEXT, "ok": False, "duration_ns": 5}, step_id=step, parent_id=call["id"]
        )
        w.append(
            "predicate.evaluated",
            {"predicate_id": PAYLOAD_TEXT, "kind": "test", "required": True, "ok": False, "reason": PAYLOAD_TEXT},
            step_id=step,
        )
        w.append(
            "step.rolled_back",
            {
                "outcome": "ROLLED_BACK",
                "parent_snapshot_before": "c" * 40,
                "parent_snapshot_after": "c" * 40,
                "reason": PAYLOAD_TEXT,
            },
            step_id=step,
            parent_id=started["id"],
        )
        w.append("run.aborted", {"termination_cause": PAYLOAD_TEXT, "reason": PAYLOAD_TEXT}, parent_id=run["id"])
    if kind_text:  # hostile kinds: re-chained by a foreign writer, unknown to the vocabulary (exit 3)
        from hardening_support import chain_events, log_events

        events = log_events(path.read_bytes())
        for i, text in enumerate(HOSTILE[:6]):
            events.insert(2 + i, {**events[1], "id": f"{0xF0 + i:032x}", "kind": text, "payload": {text: text}})
        path.write_bytes(chain_events(events))


def tamper(path: Path) -> None:
    """Change a displayed value without re-hashing: a forged log (exit 1)."""
    data = path.read_bytes()
    forged = data.replace(b'"ok":false', b'"ok":true', 1)
    assert forged != data
    path.write_bytes(forged)


def _argv(command: str, path: Path) -> list[str]:
    if command == "repair":
        return ["trace", "repair", "--check", str(path)]
    return ["trace", command, str(path)]


@pytest.fixture(scope="module")
def hostile_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, bool]]:
    root = tmp_path_factory.mktemp("terminal")
    logs: dict[str, tuple[Path, bool]] = {}
    ok = root / "ok" / ("ab" * 16) / "events.jsonl"
    ok.parent.mkdir(parents=True)
    write_hostile_log(ok)
    logs["hostile-values-verified"] = (ok, False)
    forged = root / "forged" / ("ab" * 16) / "events.jsonl"
    forged.parent.mkdir(parents=True)
    write_hostile_log(forged)
    tamper(forged)
    logs["hostile-values-forged"] = (forged, True)
    kinds = root / "kinds" / ("ab" * 16) / "events.jsonl"
    kinds.parent.mkdir(parents=True)
    write_hostile_log(kinds, kind_text=True)
    logs["hostile-kinds"] = (kinds, True)
    # hostile directory and file names ('/' and NUL are the only bytes a name cannot hold)
    name = "run\x1b[2J\x1b]0;t\x07[bold green]PASS [blink]\rPASS\nPASS \u202eSSAP\x9b"
    odd_dir = root / "names" / name
    odd_dir.mkdir(parents=True)
    write_small_log(odd_dir / "events.jsonl")
    tamper_small = (odd_dir / "events.jsonl").read_bytes().replace(b'"ok":false', b'"ok":true', 1)
    (odd_dir / "events.jsonl").write_bytes(tamper_small)
    logs["hostile-dirname-forged"] = (odd_dir / "events.jsonl", True)
    odd_file = root / "names2" / (name + ".jsonl")
    odd_file.parent.mkdir()
    write_small_log(odd_file)
    logs["hostile-filename-verified"] = (odd_file, False)
    journal = ROOT / "fixtures" / "journals" / "accepted.jsonl"
    if journal.exists():  # a Raxol journal (SPEC §8) whose strings are hostile: records are not hashed
        import json

        records = [json.loads(line) for line in journal.read_bytes().splitlines()]
        for record in records:
            payload = record.get("payload", {})
            for key, value in list(payload.items()):
                if isinstance(value, str) and key not in ("item_id", "item_type", "evidence", "tool_use_id"):
                    payload[key] = PAYLOAD_TEXT
        records.insert(1, {**records[1], "type": HOSTILE[0] + HOSTILE[3] + HOSTILE[7]})  # unknown type: warning
        out = root / "journal" / "journal.jsonl"
        out.parent.mkdir()
        out.write_bytes(b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records))
        logs["hostile-journal"] = (out, False)
    return logs


CASES = [
    "hostile-values-verified",
    "hostile-values-forged",
    "hostile-kinds",
    "hostile-dirname-forged",
    "hostile-filename-verified",
    "hostile-journal",
]
MULTI_PATH = {"verify", "grep", "project"}  # take many paths: one run per group of logs


@pytest.mark.parametrize("failing", [True, False], ids=["failing-logs", "verified-logs"])
def test_every_command_on_a_terminal(failing: bool, hostile_logs: dict) -> None:
    paths = [hostile_logs[c][0] for c in CASES if c in hostile_logs and hostile_logs[c][1] is failing]
    for command in trace_commands():
        groups = [paths] if command in MULTI_PATH else [[p] for p in paths]
        for group in groups:
            argv = _argv(command, group[0])[:-1] + [str(p) for p in group]
            code, shown = run_on_pty(argv)
            context = (command, [p.parent.name[:20] for p in group], code)
            assert shown, (context, "nothing shown")
            assert_terminal_safe(shown, context, failing=failing)
            if failing and command in ("verify", "grep", "project", "replay"):
                assert code != 0, context


def test_directory_argument_and_human_formats(hostile_logs: dict) -> None:
    """Directories as arguments (every run found), and the explicitly human formats."""
    root = hostile_logs["hostile-values-verified"][0].parent.parent.parent
    forged = hostile_logs["hostile-values-forged"][0]
    commands = trace_commands()
    argvs = [(["trace", "verify", str(root)], False)]
    if "grep" in commands:
        argvs += [
            (["trace", "grep", "--format", "table", str(root)], False),
            (["trace", "grep", "--count", "-H", str(root)], False),
        ]
    if "project" in commands:
        argvs += [(["trace", "project", "--format", "text", str(forged)], True)]
    if "replay" in commands:
        argvs += [(["trace", "replay", "--until", "3", str(forged)], True)]
    for argv, failing in argvs:
        code, shown = run_on_pty(argv)
        assert_terminal_safe(shown, (argv[1:3], code), failing=failing)


def test_github_annotations_cannot_be_forged(hostile_logs: dict) -> None:
    """``--format github``: one workflow command per finding; a newline in log text cannot start another."""
    path, _ = hostile_logs["hostile-kinds"]
    proc = subprocess.run([RACT, "trace", "verify", "--format", "github", str(path)], capture_output=True, timeout=60)
    lines = proc.stdout.decode().splitlines()
    assert lines and all(re.match(r"^::(error|warning) file=", ln) for ln in lines), lines
    assert not _FORBIDDEN_BYTES.search(proc.stdout)


def test_pty_harness_sees_raw_bytes(tmp_path: Path) -> None:
    """The harness itself: a program that does print escapes is caught (the checks are not vacuous)."""
    script = tmp_path / "evil.py"
    script.write_text("import sys; sys.stdout.write('\\x1b[2JPASS\\rFAIL\\n')")
    _, _, shown = on_pty([sys.executable, str(script)], size=None)
    assert shown == b"\x1b[2JPASS\rFAIL\n"
    with pytest.raises(AssertionError):
        assert_terminal_safe(shown, "evil", failing=True)


def test_markdown_report_cannot_be_forged(tmp_path: Path) -> None:
    """``project --format markdown`` (CI job summaries): log text cannot add rows, headings or HTML."""
    if "project" not in trace_commands():
        pytest.skip("no project command yet")
    from hardening_support import run_inprocess

    evil = "ok\n\n| run | **PASS** |\n|---|---|\n# All checks passed <img src=x onerror=alert(1)> `x` |"
    path = tmp_path / ("ab" * 16) / "events.jsonl"
    path.parent.mkdir()
    with EventWriter(path, run_id="ab" * 16, fsync=FsyncPolicy.NEVER) as w:
        w.append("run.started", {"intent_id": "1" * 32})
        w.append("tool.called", {"tool": evil, "arguments": {}})
        w.append("tool.result", {"tool": evil, "ok": False})
        w.append("run.aborted", {"termination_cause": evil, "reason": evil})
    code, out, _err = run_inprocess(["trace", "project", "--format", "markdown", str(path)])
    assert code == 0
    assert not re.search(r"(?<!\\)<img", out), "raw HTML from the log"  # \< renders as a literal <
    assert "\n# All checks" not in out and "\n| run | **PASS**" not in out
    hostile_rows = [line for line in out.splitlines() if "All checks" in line]
    assert hostile_rows and all(line.startswith("| ") for line in hostile_rows)  # only ever inside a cell
