"""Invisible format characters never reach a terminal raw (issue 15, item 6).

``render.clean`` (and the Markdown report's ``md``, which shares its set) must escape every character of
Unicode category Cf (soft hyphen, Arabic letter mark U+061C, zero-width space and joiners U+200B-U+200D,
word joiner and invisible operators U+2060-U+2064, BOM, the tag characters U+E0000-U+E007F...) and the
bidi controls, besides C0/C1 controls and the line/paragraph separators. Checked against every code point
``unicodedata`` knows, and end to end: a log and a path carrying them, every command on a real pty.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path

from hardening_support import RACT, read_only_commands, run_on_pty, write_small_log

from ract_cli.cli.render import clean, clean_json
from ract_cli.project.markdown import md

CF = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
BIDI = [*"\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"]
NAMED = [*"\u061c\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\u00ad\ufeff", "\U000e0000"]
TAGS = [chr(c) for c in range(0xE0000, 0xE0080)]
SHOWN_RAW = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\U000e0000-\U000e007f]"
)


def test_clean_escapes_every_format_character() -> None:
    """Every Cf code point of this Python's Unicode, every bidi control, the whole tag block: escaped."""
    for ch in [*CF, *BIDI, *NAMED, *TAGS]:
        shown = clean(f"a{ch}b")
        assert ch not in shown, f"U+{ord(ch):04X} {unicodedata.name(ch, '?')} passes clean"
        code = ord(ch)
        escape = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
        assert shown == f"a{escape}b"


def test_markdown_cells_escape_the_same_format_characters() -> None:
    """The Markdown report's ``md`` uses the same set (the library cannot import the CLI's)."""
    for ch in [*CF, *BIDI, *TAGS]:
        assert ch not in md(f"a{ch}b"), f"U+{ord(ch):04X} passes md"


def test_clean_json_keeps_json_valid_for_astral_format_characters() -> None:
    """On a terminal, JSON output escapes them as ``\\u`` escapes (a surrogate pair past U+FFFF)."""
    import json

    text = json.dumps({"k": "x\U000e0041\u200by\u061c"}, ensure_ascii=False)
    shown = clean_json(text)
    assert not SHOWN_RAW.search(shown)
    assert json.loads(shown) == json.loads(text)


def test_clean_leaves_ordinary_text_alone() -> None:
    text = "é 𝄞 ﬀ 中文 العربية emoji 👍🏽 tab\tok"
    assert clean(text) == text.replace("\t", "\\x09")


def test_no_format_character_reaches_a_terminal(tmp_path: Path) -> None:
    """A log whose strings and directory name carry Cf characters: every command on a pty shows none."""
    hidden = "".join(NAMED) + "\U000e0041\U000e007f\u2064"
    run = tmp_path / f"run{hidden}" / "events.jsonl"
    run.parent.mkdir()
    write_small_log(run, extra={"invisible": hidden, hidden: "k"})
    assert Path(RACT).name == "ract" or RACT == "ract"
    for command in read_only_commands():
        argv = ["trace", command, str(run)]
        if command == "repair":
            argv = ["trace", "repair", "--check", str(run)]
        if command == "diff":
            argv = ["trace", "diff", str(run), str(run)]
        if command in ("sql", "checkpoint", "prove", "verify-proof", "export"):
            continue  # need arguments beyond a path; their output goes through the same clean
        for extra in ([], ["--format", "json"] if command in ("verify", "grep", "project") else []):
            _code, shown = run_on_pty([*argv[:2], *extra, *argv[2:]])
            text = shown.decode("utf-8", "replace")
            bad = SHOWN_RAW.search(text)
            assert bad is None, (command, extra, f"U+{ord(bad.group()):04X}" if bad else "")
    _code, shown = run_on_pty(["trace", "grep", "--format", "table", "-H", str(run)])
    assert "\\u200b" in shown.decode() and not SHOWN_RAW.search(shown.decode("utf-8", "replace"))
