"""Shell completion (Typer's): the scripts, and what they complete — commands, kinds, choices.

Real subprocesses of ``ract``, driven through the environment variables the
installed completion scripts set (``_RACT_COMPLETE``, ``COMP_WORDS``...).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ract_cli.format.kinds import KINDS

RACT = [sys.executable, "-m", "ract_cli"]


def complete(words: str, shell: str = "bash", home: Path | None = None) -> list[str]:
    """What the completion script of ``shell`` offers after ``words`` (the last word being completed)."""
    env = {**os.environ, "_RACT_COMPLETE": f"complete_{shell}"}
    if shell == "bash":
        env |= {"COMP_WORDS": words, "COMP_CWORD": str(len(words.split(" ")) - 1)}
    else:
        env |= {"_TYPER_COMPLETE_ARGS": words}
    proc = subprocess.run(RACT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    if shell == "bash":
        return proc.stdout.split()
    return re.findall(r'"([^"]*)"', proc.stdout)  # zsh: _arguments '*: :(("a"\n"b"...))'


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_show_completion_prints_a_script(shell: str) -> None:
    proc = subprocess.run([*RACT, "--show-completion", shell], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "_RACT_COMPLETE" in proc.stdout and f"complete_{shell}" in proc.stdout


def test_an_unknown_shell_is_a_usage_error() -> None:
    proc = subprocess.run([*RACT, "--show-completion", "tcsh"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "bash" in proc.stderr and not proc.stdout


def test_install_completion_writes_the_shells_startup_file(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "SHELL": "/bin/bash"}
    proc = subprocess.run([*RACT, "--install-completion", "bash"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "_RACT_COMPLETE" in (tmp_path / ".bash_completions" / "ract.sh").read_text()
    assert "ract.sh" in (tmp_path / ".bashrc").read_text()


def test_commands_complete() -> None:
    assert complete("ract trace gr") == ["grep"]
    assert set(complete("ract trace ")) >= {"verify", "grep", "project", "repair", "replay", "diff", "export"}


def test_kind_completes_every_kind_and_family() -> None:
    offered = complete("ract trace grep --kind ")
    assert {k.name for k in KINDS} <= set(offered)
    assert {"process.*", "tool.*", "run.*"} <= set(offered)
    assert complete("ract trace grep --kind process.r") == ["process.reaped"]
    assert set(complete("ract trace grep -k tool.", shell="zsh")) >= {"tool.called", "tool.result", "tool.*"}


@pytest.mark.parametrize(
    ("words", "wanted"),
    [
        ("ract trace project x --format ", {"text", "json", "markdown", "html"}),
        ("ract trace verify --dialect ", {"auto", "ract", "raxol"}),
        ("ract trace grep --format ", {"jsonl", "table", "json"}),
    ],
)
def test_choices_complete(words: str, wanted: set[str]) -> None:
    assert wanted <= set(complete(words))
