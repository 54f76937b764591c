"""Edits that break a log in the ways a reader must survive, shared by the tests that hold readings to one verdict."""

from __future__ import annotations

import random


def edit_lines(lines: list[bytes], rng: random.Random, kind: str, at: int | None = None) -> None:
    """Apply one edit of ``kind`` (``EDITS``) to ``lines`` in place, at line index ``at`` or one ``rng`` picks."""
    i = rng.randrange(1, len(lines) - 1) if at is None else at
    if kind == "duplicate":  # same id twice (and a chain break after it)
        lines.insert(i, lines[i - 1])
    elif kind == "delete":
        del lines[i]
    elif kind == "swap":
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    elif kind == "flip":
        line = bytearray(lines[i])
        j = rng.randrange(len(line) - 1)
        line[j] = line[j] ^ (1 << rng.randrange(7)) or 0x20
        lines[i] = bytes(line)
    elif kind == "garbage":
        lines[i] = b"not json\n"
    elif kind == "blank":
        lines.insert(i, b"\n")
    elif kind == "crlf":
        lines[i] = lines[i][:-1] + b"\r\n"
    elif kind == "non_object":
        lines.insert(i, b"[1, 2]\n")


EDITS = ("duplicate", "delete", "swap", "flip", "garbage", "blank", "crlf", "non_object")
