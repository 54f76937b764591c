"""Any text given to any option of any command is a usage error with a message or a normal run (issue 15, item 13).

``--max-line-bytes 9223372036854775807`` once raised ``OverflowError`` (exit 1, a traceback) in every
command, and ``grep --since ²`` a ``ValueError`` (``²`` passes ``str.isdigit``, ``int`` refuses it). Both
are pinned, and hypothesis feeds any text (numbers of every size, Unicode digits, signs, exponents, empty)
to every value-taking option of every ``ract trace`` command, in-process (``ract_cli.cli.app.main``):
the result is exit 2 with a message on stderr, or an exit code of SPEC §3 — never an exception.
Derandomized and bounded (``RACT_LONG=1`` / the ``fuzz`` profile run more examples).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import typer.main
from hardening_support import LONG, ROOT, run_inprocess, write_small_log
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ract_cli.cli import app as app_module

FUZZ = os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" or LONG
EXIT_CODES = {0, 1, 2, 3, 4, 5, 6, 7, 8, 141}  # docs/exit-codes.md (7: grep found nothing, 8: diff), 141: stdout gone
PROOFS = ROOT / "tests" / "data" / "proofs"
#: options naming a file to write or read: fuzzed as a name inside the test's directory, never an absolute path
PATH_OPTIONS = {"-o", "--output", "--workspace", "--key", "--vkey", "--checkpoint", "--from-checkpoint"}


def _options() -> list[tuple[str, str]]:
    """Every (command, option) that takes a value, from the CLI itself."""
    app_module._register_commands()
    trace = typer.main.get_command(app_module.app).commands["trace"]  # type: ignore[attr-defined]
    found = []
    for name, command in sorted(trace.commands.items()):
        for param in command.params:
            if param.param_type_name == "option" and not param.is_flag:
                found.append((name, param.opts[0]))
    return found


OPTIONS = _options()


def _base(command: str, log: Path) -> list[str]:
    """A run of ``command`` on ``log`` that succeeds without the fuzzed option."""
    return {
        "verify": ["trace", "verify", str(log)],
        "repair": ["trace", "repair", str(log)],
        "replay": ["trace", "replay", str(log)],
        "grep": ["trace", "grep", str(log)],
        "project": ["trace", "project", str(log)],
        "diff": ["trace", "diff", str(log), str(log)],
        "export": ["trace", "export", "--format", "otlp-json", "--output", "-", str(log)],
        "sql": ["trace", "sql", "SELECT count(*) AS n FROM events", str(log)],
        "keygen": ["trace", "keygen", "fuzz-key"],
        "checkpoint": ["trace", "checkpoint", "--key", str(PROOFS / "PeterNeumann.skey"), "--origin", "o/x", str(log)],
        "prove": ["trace", "prove", "--line", "1", "--checkpoint", str(PROOFS / "one-event.checkpoint"), str(log)],
        "verify-proof": ["trace", "verify-proof", "--vkey", str(PROOFS / "PeterNeumann.vkey"), str(log)],
    }[command]


@contextmanager
def _scratch(tmp: Path) -> Iterator[Path]:
    """A fresh directory holding a fresh log, as the current directory (whatever a command writes lands here)."""
    work = tmp / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    log = work / "events.jsonl"
    write_small_log(log)
    old = os.getcwd()
    os.chdir(work)
    try:
        yield log
    finally:
        os.chdir(old)


def _value(option: str, text: str) -> str:
    if option in PATH_OPTIONS and text != "-":
        return "f_" + text.replace("/", "_")  # a name in the scratch directory
    return text


def run_with(command: str, option: str, value: str, tmp: Path) -> tuple[int, str]:
    with _scratch(tmp) as log:
        argv = [*_base(command, log)]
        argv[2:2] = [option, _value(option, value)]  # before the positionals: the last occurrence wins
        code, _out, err = run_inprocess(argv)
    return code, err


def assert_usage_or_run(command: str, option: str, value: str, code: int, err: str) -> None:
    context = (command, option, value, code)
    assert "Traceback" not in err, (context, err[-2000:])
    assert code in EXIT_CODES, (context, err[-2000:])
    if code == 2:
        assert err.strip(), (context, "exit 2 without a message")


NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(
        ["9223372036854775807", "9223372036854775808", "18446744073709551616", "1" + "0" * 40, "-1", "0", "+5"]
    ),
)
WEIRD = st.sampled_from(
    ["", " ", "²", "¹²", "١٢٣", "٣", "𝟗", "Ⅻ", "½", "1e9", "1_000", "0x10", "nan", "inf", "-", "--", "\u200b1"]
)
VALUES = st.one_of(NUMBERS, WEIRD, st.text(max_size=40).filter(lambda t: "\x00" not in t))


@pytest.fixture(autouse=True)
def _no_pacing(monkeypatch: pytest.MonkeyPatch) -> None:
    """``replay --pace`` sleeps between events: not while fuzzing the parser."""
    import time

    from ract_cli.cli import replay

    monkeypatch.setattr(replay.time, "sleep", lambda _s: None)
    assert time.sleep is not None


@pytest.mark.parametrize("value", ["9223372036854775807", "9223372036854775808", str(2**64)])
def test_huge_max_line_bytes_is_a_usage_error_in_every_command(value: str, tmp_path: Path) -> None:
    """``--max-line-bytes 2^63-1`` (or more): exit 2 with the range, in every command that takes it."""
    commands = sorted({c for c, o in OPTIONS if o == "--max-line-bytes"})
    assert {"verify", "grep", "project", "replay", "repair"} <= set(commands)
    for command in commands:
        code, err = run_with(command, "--max-line-bytes", value, tmp_path)
        assert code == 2, (command, err)
        assert "--max-line-bytes" in err and "not in the range" in err, (command, err)


@pytest.mark.parametrize("option", ["--since", "--until"])
@pytest.mark.parametrize("value", ["²", "١٢٣", "2025-11-2٤", "𝟗"])
def test_grep_time_with_a_unicode_digit_is_a_usage_error(option: str, value: str, tmp_path: Path) -> None:
    """A digit ``str.isdigit`` accepts but is not 0-9: exit 2, the value named, no traceback."""
    code, err = run_with("grep", option, value, tmp_path)
    assert code == 2, err
    assert option in err and "not a digit 0-9" in err, err


def test_every_value_option_is_fuzzed() -> None:
    names = {o for _, o in OPTIONS}
    assert {"--max-line-bytes", "--since", "--until", "--max-findings", "--jobs", "--pace"} <= names


@settings(
    max_examples=3000 if FUZZ else 250,
    deadline=None,
    derandomize=not FUZZ,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(target=st.sampled_from(OPTIONS), value=VALUES)
def test_any_text_to_any_option_is_a_usage_error_or_a_run(
    target: tuple[str, str], value: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    command, option = target
    tmp = tmp_path_factory.getbasetemp() / "option-fuzz"
    tmp.mkdir(exist_ok=True)
    code, err = run_with(command, option, value, tmp)
    assert_usage_or_run(command, option, value, code, err)


def test_every_option_with_every_odd_value(tmp_path: Path) -> None:
    """Not left to chance: each value-taking option once with each of the odd values and the int64 edges."""
    odd = ["", "²", "١٢٣", "9223372036854775807", "-9223372036854775809", "1e400", "nan", "\u202e1"]
    for command, option in OPTIONS:
        for value in odd:
            code, err = run_with(command, option, value, tmp_path)
            assert_usage_or_run(command, option, value, code, err)
