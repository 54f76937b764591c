"""No log or path can forge a GitHub Actions workflow command (issue 15, item 4).

The Actions runner reads workflow commands from **stdout and stderr**: a line whose first characters after
leading whitespace are ``::`` (``::error file=app.py,line=1::forged``), and the legacy ``##[`` anywhere in a
line. A run directory named like a command, a kind or an enum value quoted in a finding message, and a
newline in a path (which would start a line of its own in ``grep -l``/``-c``) are planted; every command
in every output form runs over them, and no line it prints, on either stream, may be read as a command.
The one neutralising function is ``ract_cli.cli.render.ci_safe``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hardening_support import (
    RACT,
    assert_no_traceback,
    chain_events,
    command_argv,
    log_events,
    read_only_commands,
    run_inprocess,
    write_small_log,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from ract_cli.cli.render import _CI_COMMAND_START, ci_safe, ci_safe_bytes, line_safe_path

FORGED = "::error file=app.py,line=1::forged"
LEGACY = "##[error]forged legacy"
#: the legitimate annotation lines of ``verify --format github``: ract's own, with every property escaped
_OWN_ANNOTATION = r"::(error|warning) file=[^:\n]*(,line=\d+)?::"


def assert_no_workflow_command(text: str, context: object, *, own_annotations: bool = False) -> None:
    """No line of ``text`` starts (after whitespace, as the runner trims it) with ``::`` or holds ``##[``."""
    import re

    assert_no_traceback(text, context)
    for line in text.splitlines():  # splitlines: \r, \v, \f, \x1c-\x1e, NEL, U+2028 all end a line here
        assert "##[" not in line, (context, line)
        if own_annotations and re.match(_OWN_ANNOTATION, line):
            assert "::" not in re.sub(_OWN_ANNOTATION, "", line, count=1).lstrip()[:2], (context, line)
            continue
        assert not line.lstrip().startswith("::"), (context, line)


@pytest.fixture(scope="module")
def forged_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ci")
    runs: dict[str, Path] = {}
    ok = root / FORGED / "events.jsonl"  # the run directory is named like a workflow command
    ok.parent.mkdir(parents=True)
    write_small_log(ok)
    runs["dir-verified"] = ok
    bad = root / "t" / FORGED / "events.jsonl"
    bad.parent.mkdir(parents=True)
    data = write_small_log(bad)
    bad.write_bytes(data.replace(b'"ok":false', b'"ok":true', 1))  # tampered: findings name the path
    runs["dir-tampered"] = bad
    events = log_events(write_small_log(root / "scratch.jsonl"))
    events.insert(2, {**events[1], "id": "f" * 32, "kind": LEGACY, "payload": {LEGACY: FORGED}})
    committed = next(e for e in events if e["kind"] == "step.committed")
    committed["payload"]["outcome"] = "##[warning]" + FORGED  # an enum value a PAYLOAD_INVALID message quotes
    kinds = root / "kinds" / "events.jsonl"
    kinds.parent.mkdir()
    kinds.write_bytes(chain_events(events))
    runs["kind-and-enum"] = kinds
    newline = root / "new\nline" / "events.jsonl"
    newline.parent.mkdir()
    write_small_log(newline)
    runs["newline-dir"] = newline
    return runs


FORMS = {
    "verify": [[], ["--format", "github"], ["--format", "json"]],
    "grep": [[], ["-H"], ["-l"], ["-c"], ["--format", "json"], ["--format", "table"], ["--no-verify", "-H"]],
    "project": [["--format", "text"], ["--format", "markdown"], ["--format", "json"]],
    "replay": [[], ["--format", "jsonl"]],
    "sql": [["--format", "table"], ["--format", "csv"], ["--format", "jsonl"], ["--format", "json"]],
    "diff": [[], ["--format", "json"]],
}


def test_no_workflow_command_from_any_command_or_form(forged_runs: dict[str, Path]) -> None:
    """Every read-only command, every output form, over every forged input: no line is a command."""
    for command in read_only_commands():
        for extra in FORMS.get(command, [[]]):
            for key, path in forged_runs.items():
                argv = command_argv(command, path, *extra)
                if command == "sql":
                    argv = ["trace", "sql", *extra, "SELECT kind, payload FROM events", str(path)]
                code, out, err = run_inprocess(argv)
                context = (command, extra, key, code)
                assert_no_workflow_command(err, (*context, "stderr"))
                assert_no_workflow_command(out, (*context, "stdout"), own_annotations="github" in extra)


def test_github_annotations_escape_a_command_shaped_path(forged_runs: dict[str, Path]) -> None:
    """``verify --format github`` over a tampered run named ``::error ...``: one annotation per finding, real
    subprocess, stdout and stderr both checked; the path's colons are ``%3A`` in the ``file=`` property."""
    proc = subprocess.run(
        [RACT, "trace", "verify", "--format", "github", str(forged_runs["dir-tampered"])],
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 1
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert out.strip() and all(line.startswith(("::error file=", "::warning file=")) for line in out.splitlines()), out
    assert "%3A%3Aerror file=app.py%2Cline=1%3A%3Aforged" in out
    assert_no_workflow_command(out, "stdout", own_annotations=True)
    assert_no_workflow_command(err, "stderr")
    assert "\\x3a:error file=app.py" in err or "FAIL" in err  # the path shown, defused


def test_finding_quoting_a_legacy_command_kind_is_neutralised(forged_runs: dict[str, Path]) -> None:
    """A kind ``##[error]...`` and an enum value ``##[warning]...`` quoted by findings (text and github)."""
    for extra in ([], ["--format", "github"]):
        code, out, err = run_inprocess(["trace", "verify", *extra, str(forged_runs["kind-and-enum"])])
        assert code != 0
        assert "##\\x5berror]forged legacy" in err  # shown, visibly defused
        assert_no_workflow_command(err, extra)
        assert_no_workflow_command(out, extra, own_annotations=bool(extra))


def test_grep_json_output_keeps_the_value_of_a_legacy_command_string(forged_runs: dict[str, Path]) -> None:
    """In JSON, ``##[`` is written ``##\\u005b``: the same string, so the data is unchanged for a parser."""
    _code, out, _ = run_inprocess(["trace", "grep", "--no-verify", "--kind", "*", str(forged_runs["kind-and-enum"])])
    assert "##[" not in out
    kinds = [json.loads(line)["kind"] for line in out.split("\n") if line.startswith("{")]
    assert LEGACY in kinds


@pytest.mark.parametrize("flag", ["-l", "-c"])
def test_grep_path_per_line_output_never_splits_a_path_with_a_newline(forged_runs: dict[str, Path], flag: str) -> None:
    """``grep -l``/``-c`` (piped, a real subprocess): one line per file even when a path holds a newline."""
    paths = [forged_runs["newline-dir"], forged_runs["dir-verified"]]
    proc = subprocess.run([RACT, "trace", "grep", flag, *map(str, paths)], capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(str(forged_runs["newline-dir"].parent.parent).encode() + b"/new\\x0aline/")
    assert not lines[1].lstrip().startswith(b"::")


def test_ci_safe_rules() -> None:
    """The one neutralising function: leading ``::`` after any whitespace on any line, ``##[`` anywhere."""
    assert ci_safe(FORGED) == "\\x3a:error file=app.py,line=1::forged"
    assert ci_safe("  \u00a0::x") == "  \u00a0\\x3a:x"
    assert ci_safe("a\n\t::b\r::c") == "a\n\t\\x3a:b\r\\x3a:c"
    assert ci_safe("ok :: fine") == "ok :: fine"
    assert ci_safe("\x1b[1m::x") == "\x1b[1m\\x3a:x"  # behind rich's colour codes too
    assert ci_safe("x ###[y") == "x ###\\x5by"
    assert ci_safe('{"k":"##[x"}', json=True) == '{"k":"##\\u005bx"}'
    assert json.loads(ci_safe('{"k":"##[x"}', json=True)) == {"k": "##[x"}
    assert ci_safe_bytes(b"\xff##[") == b"\xff##\\x5b"  # other bytes (not UTF-8) unchanged
    assert line_safe_path("/a/\udcff/b") == b"/a/\xff/b"  # a plain path keeps its own bytes
    assert line_safe_path("/a\nb") == b"/a\\x0ab"


@settings(max_examples=500, deadline=None)
@given(text=st.text(alphabet=":#[]\n\r \t\x1bm0;a\u00e9", max_size=30), as_json=st.booleans())
def test_ci_safe_without_a_colon_pair_or_legacy_marker_is_the_text(text: str, as_json: bool) -> None:
    """The quick return (no "::", no "##[") gives what the full rewrite gives, for str and bytes alike."""
    full = _CI_COMMAND_START.sub(r"\1\2\\x3a", text)
    full = full.replace("##[", "##\\u005b" if as_json else "##\\x5b")
    assert ci_safe(text, json=as_json) == full
    raw = text.encode()
    assert ci_safe_bytes(raw, json=as_json) == (raw if full == text else full.encode())
