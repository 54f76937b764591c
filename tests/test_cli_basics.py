"""The command skeleton: entry points, help, the exit-code epilog, usage errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ract_cli.cli.app import main
from ract_cli.errors import EXIT_CODE_MEANINGS, ExitCode

ENV = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*args], capture_output=True, text=True, env=ENV, timeout=120)


def _ract() -> list[str]:
    """The installed console script when there is one, else ``python -m ract_cli``."""
    script = Path(sys.executable).with_name("ract")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ract_cli"]


def test_python_dash_m_help() -> None:
    result = _run(sys.executable, "-m", "ract_cli", "--help")
    assert result.returncode == 0, result.stderr
    assert "trace" in result.stdout


def test_console_script_trace_help() -> None:
    result = _run(*_ract(), "trace", "--help")
    assert result.returncode == 0, result.stderr
    assert "verify" in result.stdout


def test_help_epilog_lists_every_exit_code() -> None:
    result = _run(sys.executable, "-m", "ract_cli", "--help")
    assert result.returncode == 0
    assert len(ExitCode) == 8
    for code in ExitCode:
        assert f"{int(code)} {code.name}" in result.stdout, code
        assert EXIT_CODE_MEANINGS[code].split(":")[0] in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--no-such-option"],
        ["trace", "--no-such-option"],
        ["trace", "verify", "--no-such-option", "x"],
        ["trace", "no-such-command"],
    ],
)
def test_unknown_option_is_usage_error(args: list[str]) -> None:
    result = _run(sys.executable, "-m", "ract_cli", *args)
    assert result.returncode == ExitCode.USAGE == 2, result.stderr
    assert result.stdout == ""


def test_main_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "Exit codes" in capsys.readouterr().out
    assert main(["--no-such-option"]) == 2
    assert main(["trace", "--help"]) == 0


def test_no_arguments_shows_help() -> None:
    result = _run(sys.executable, "-m", "ract_cli")
    assert result.returncode in (0, 2)  # click: help on no args
    assert "Usage" in result.stdout + result.stderr
