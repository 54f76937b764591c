"""Regenerate docs/cli.md from the CLI's own --help: python scripts/gen_cli_docs.py [docs/cli.md].

The reference cannot drift from the code: ``tests/test_docs.py`` renders
it again and compares. Help is rendered in-process at a fixed width (100
columns) so the file does not depend on the terminal it was made in.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

WIDTH = "100"
HEADER = """# CLI reference

Generated from `--help` by `python scripts/gen_cli_docs.py`; do not edit by
hand (`tests/test_docs.py` checks it is current). Exit codes:
[exit-codes.md](exit-codes.md). Each command has its own page too
(`docs/<command>.md`).
"""


def help_text(argv: list[str]) -> str:
    from ract_cli.cli.app import main

    out = io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        with contextlib.redirect_stdout(out):
            main([*argv, "--help"])
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return out.getvalue().rstrip() + "\n"


def commands() -> list[str]:
    from ract_cli.cli.app import _register_commands, trace_app

    _register_commands()
    return [c.name or c.callback.__name__ for c in trace_app.registered_commands]


def render() -> str:
    parts = [HEADER]
    sections = [("ract", []), ("ract trace", ["trace"])] + [(f"ract trace {c}", ["trace", c]) for c in commands()]
    for title, argv in sections:
        parts.append(f"\n## `{title}`\n\n```\n{help_text(argv)}```\n")
    return "".join(parts)


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "docs" / "cli.md")
    target.write_text(render(), encoding="utf-8")
    print(f"wrote {target}")
