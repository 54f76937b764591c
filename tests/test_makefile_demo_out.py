"""Issue 15 item 20: ``make`` makes no temporary directory unless the ``demo`` recipe runs.

``DEMO_OUT := $(shell mktemp -d)`` ran on every ``make`` call (``make test``,
``make lint``...), each time leaving an empty directory behind. The demo's
directory is now made by the recipe itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
@pytest.mark.parametrize("target", ["test", "lint", "demo"])
def test_parsing_the_makefile_makes_no_temporary_directory(tmp_path: Path, target: str) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    # -n: print the recipe without running it; -o: never (re)build the virtualenv stamp
    done = subprocess.run(
        ["make", "-n", "-o", ".venv/.installed", target], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_no_shell_mktemp_outside_a_recipe() -> None:
    for line in (ROOT / "Makefile").read_text("utf-8").splitlines():
        if not line.startswith("\t"):
            assert "mktemp" not in line or line.lstrip().startswith("#"), line
