"""The verdict on one framed line (SPEC §2.1, §2.2, §2.4), shared by the chain reader, its native chain
mode, the parallel verifier and the writer's tail check, so every reader judges a line the same way."""

from __future__ import annotations

import re
from collections.abc import Callable

from ract_cli.read import core
from ract_cli.read.event import BIG_LINE_BYTES, line_body
from ract_cli.read.framing import _torn_tail_problem, split_line_ending
from ract_cli.read.json_rules import (
    MAX_LINE_NODES,
    Body,
    LineResult,
    Problem,
    _too_many_nodes_problem,
    too_many_nodes,
)


def analyze_ract(body: Body, schema_version: int) -> LineResult:
    """RACT's line analysis, ``read.line.analyze_line`` (the RACT dialect's ``analyze``).

    Imported when a line first needs it: ``line_result`` asks the core's proof first, and a log the native
    core proves whole never loads the Python analysis nor orjson (start-up, issue 14).
    """
    from ract_cli.read.line import analyze_line

    return analyze_line(body, schema_version)


def not_an_object(raw: bytes) -> bool:
    """Framing alone shows the line is ``MALFORMED_LINE``: its first byte past JSON whitespace is not ``{``.

    (Blank, a BOM, an array, a bare value, text: no parse can make it one
    JSON object. The caller has checked it ends in ``\n``: a last line
    without one may be a torn tail instead.)
    """
    first = raw[:1]
    if first == b"{":
        return False
    return first not in _JSON_SPACE or _OPENS_OBJECT(raw) is None


_JSON_SPACE = (b" ", b"\t", b"\r", b"\n")
_OPENS_OBJECT = re.compile(rb"[ \t\r\n]*\{").match


def line_result(
    raw: bytes | None,
    schema_version: int,
    max_line_bytes: int,
    analyze: Callable[[bytes, int], LineResult] = analyze_ract,
) -> LineResult:
    """The verdict on one framed line, exactly as ``ChainReader`` reaches it.

    ``raw`` is the line with its ending as ``LineFramer`` yields it (``None``:
    longer than ``max_line_bytes``). Shared with the parallel verifier
    (``parallel.py``), so a chunked read judges every line the same way.
    """
    if raw is None:
        return LineResult(
            None,
            None,
            [Problem("LINE_TOO_LONG", f"line is longer than --max-line-bytes ({max_line_bytes} bytes)")],
            parsed=False,
        )
    if len(raw) > MAX_LINE_NODES and too_many_nodes(raw):  # before any parse: bounded memory (item 8)
        has_newline = raw[-1:] == b"\n"
        result = LineResult(None, None, [_too_many_nodes_problem()], parsed=False)
    else:
        if analyze is analyze_ract:
            if raw[-2:-1] != b"\r" and raw[-1:] == b"\n":
                # the common case, inlined: a clean "\n" line (a huge one as a view: no copy of it)
                body, has_newline = (raw[:-1] if len(raw) <= BIG_LINE_BYTES else memoryview(raw)[:-1]), True
            else:
                body, has_newline = line_body(raw)
            proven = core.prove(body, schema_version)
            if proven is not None:
                result = LineResult(proven[0], proven[1], [])
            else:
                from ract_cli.read.line import analyze_line

                result = analyze_line(body, schema_version, fast=False)  # (prove already said no)
        else:
            plain, has_newline = split_line_ending(raw)
            result = analyze(plain, schema_version)
    if not has_newline:
        if not result.parsed and result.problems[0].code in ("MALFORMED_LINE", "DUPLICATE_KEY"):
            # A last line cut short by a killed writer.
            result = LineResult(None, None, [_torn_tail_problem(raw)], parsed=False)
        else:
            result.problems.append(
                Problem("MISSING_FINAL_NEWLINE", "last event lacks its final newline", severity="warning")
            )
    return result
