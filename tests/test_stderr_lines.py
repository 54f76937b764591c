"""``render.write_stderr_lines``: into a pipe or a file, the bytes rich's stderr console prints, without rich.

Every command's verdict lines are ``clean``ed (no control or format character left) before they are
printed; for such lines the plain writer must give what ``stderr_console().print(..., markup=False)``
gave (``print_lines``), however the text looks: rich markup, emoji codes, wide and combining characters,
long lines, workflow commands (``ci_safe``). Real rich, real consoles, stderr swapped for a buffer.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from ract_cli.cli.render import clean, print_lines, stderr_console, write_stderr_lines

#: pieces a verdict line is made of: log-derived text (cleaned), and what rich could read as markup or emoji
PIECES = st.one_of(
    st.text(max_size=40).map(clean),
    st.sampled_from(
        [
            "[bold]x[/bold]",
            "[/]",
            ":100:",
            ":smile:",
            "::error file=a::forged",
            "##[group]",
            "  ::warning::x",
            "\\",
            "表示幅",
            "e\u0301",
            "x" * 200,
            " ",
            "",
        ]
    ),
)
LINES = st.lists(st.lists(PIECES, max_size=6).map("".join), max_size=12)


def _rich(lines: list[str], chunk: int) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer):
        print_lines(stderr_console(), lines, chunk=chunk)
    return buffer.getvalue()


def _plain(lines: list[str], chunk: int) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer):
        write_stderr_lines(lines, chunk=chunk)
    return buffer.getvalue()


@settings(max_examples=300, deadline=None)
@given(LINES, st.integers(1, 4))
def test_plain_lines_are_what_rich_prints_into_a_pipe(lines: list[str], chunk: int) -> None:
    assert _plain(lines, chunk) == _rich(lines, chunk)


def test_workflow_commands_are_neutralised_either_way() -> None:
    lines = ["::error file=x::forged", "ok ##[group] end"]
    out = _plain(lines, 1000)
    assert out == "\\x3a:error file=x::forged\nok ##\\x5bgroup] end\n" == _rich(lines, 1000)


def test_a_reader_that_went_away_ends_in_silence() -> None:
    """stderr's reader gone: no traceback, and what comes after is not written (as rich's console)."""
    script = (
        "import sys\n"
        "from ract_cli.cli.render import write_stderr_lines\n"
        "write_stderr_lines(('line %d' % i for i in range(100000)), chunk=10)\n"
        "print('done')\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stderr is not None and proc.stdout is not None
    assert proc.stderr.read(10) == b"line 0\nlin"
    proc.stderr.close()  # the reader goes away after 10 bytes
    out = proc.stdout.read()
    assert proc.wait(timeout=60) == 0 and out == b"done\n"
