"""The documented Markdown report (docs/project.md): a report dict in, GitHub-flavoured Markdown out.

For ``$GITHUB_STEP_SUMMARY``. Every log-derived cell goes through ``md``:
control characters (newlines included) become visible escapes and
``\\ ` * _ [ ] < > | ~ &`` are backslash-escaped, and a word GitHub would
autolink (``https://...``, ``www....``, an e-mail address, a bare domain) is
put in a code span, so a log string can neither split a cell, nor inject HTML
or links.
"""

from __future__ import annotations

import re

from ract_cli.format.json_types import Report
from ract_cli.format.text import escape_unsafe
from ract_cli.project.human import (
    FLEET_COLUMNS,
    PERCENTILE_KEYS,
    counts_text,
    fleet_row,
    fmt_duration,
    fmt_ms,
    is_journal,
    outcome_text,
    provider_cells,
    signal_rows,
    tool_cells,
)
from ract_cli.project.journal_text import detail_rows
from ract_cli.project.result import ProjectResult

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")
_TOOL_COLUMNS = ["tool", "called", "ok", "failed", "unknown", "refused", "bypassed", "open"]
_MS_COLUMNS = ["p50 ms", "p90 ms", "p99 ms", "max ms"]


#: a word a GFM renderer would turn into a link: a scheme (``https://``, ``ftp://``, ``mailto:``, ``xmpp:``),
#: ``www.``, an e-mail address (``@``), ``//host``, or a bare domain ending in a top-level domain that
#: linkify-style renderers link (``evil.com``, ``x.io``: any two letters, and linkify-it's list)
_LINKABLE = re.compile(
    r"(?i)[a-z][a-z0-9+.-]*:/|\b(?:mailto|xmpp|tel|sms):|www\.|@|//"
    r"|\w\.(?:[a-z]{2}|biz|com|edu|gov|net|org|pro|web|xxx|aero|asia|coop|info|museum|name|shop|рф|xn--[a-z0-9-]+)"
    r"(?![\w-])"
)
_WORDS = re.compile(r"(\s+)")
_BACKTICKS = re.compile(r"`+")


def _code_span(word: str) -> str:
    """``word`` as a code span, where no renderer autolinks and nothing is markup; ``|`` stays ``\\|`` (a
    table cell's pipe, which GFM unescapes inside code spans too). The fence is longer than any run of
    backticks in the word, and padded when the word starts or ends with one."""
    fence = "`" * (max((len(m) for m in _BACKTICKS.findall(word)), default=0) + 1)
    pad = " " if word.startswith("`") or word.endswith("`") else ""
    body = word.replace("|", "\\|")
    return f"{fence}{pad}{body}{pad}{fence}"


def md(value: object) -> str:
    """A Markdown-table-safe cell: control chars (newlines included) visible, punctuation escaped, and
    every word a renderer would autolink (``https://...``, ``www....``, ``a@b.c``) in a code span."""
    if value is None:
        return "-"
    if value is True or value is False:
        return "yes" if value else "no"
    words = _WORDS.split(escape_unsafe(str(value)))
    return "".join(
        _code_span(w) if i % 2 == 0 and _LINKABLE.search(w) else _MD_SPECIAL.sub(r"\\\1", w)
        for i, w in enumerate(words)
    )


def md_table(columns: list[str], rows: list[list[object]]) -> list[str]:
    """A table's lines (header cells as given, every row cell through ``md``), then a blank line."""
    out = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    out += ["| " + " | ".join(md(c) for c in row) + " |" for row in rows]
    return [*out, ""]


def _run_head(run: Report, level: str) -> list[str]:
    out: list[str] = [f"{level} Run {md(run['run_id'])}: {md(run['status'])}", ""]
    if not run["trusted"]:
        out += [
            f"> **UNTRUSTED from line {run['untrusted_from_line']}**: the log fails verification there; "
            f"this report covers lines 1-{run['untrusted_from_line'] - 1} only "
            f"({run['untrusted']['events']} unverified event(s) not counted).",
            "",
        ]
    chain, timing = run["chain"], run["timing"]
    return out + md_table(
        ["field", "value"],
        [
            ["path", run["path"]],
            ["status", run["status"]],
            ["outcome", outcome_text(run)],
            ["start", timing["start"]],
            ["end", timing["end"]],
            ["duration", fmt_duration(timing["duration_ns"])],
            ["exit code", f"{run['exit_code']} ({run['exit_name']})"],
            ["trusted", run["trusted"]],
            ["events", f"{chain['verified_events']} verified of {chain['events']}"],
            ["chain head", chain["head"]],
            ["verified head", chain["verified_head"]],
            ["verified range", f"{chain['first'] or '-'} .. {chain['last'] or '-'}"],
        ],
    )


def _run_steps(run: Report, level: str) -> list[str]:
    s = run["steps"]
    d = s["duration"] or {}
    row = [
        s["committed"],
        s["rolled_back"],
        s["open"],
        counts_text(s["by_outcome"]),
        *(fmt_ms(d.get(k)) for k in PERCENTILE_KEYS),
    ]
    columns = ["committed", "rolled back", "open", "by outcome", *_MS_COLUMNS]
    return [f"{level}# Steps", "", *md_table(columns, [row])]


def _run_tools(run: Report, level: str) -> list[str]:
    tools = run["tools"]["by_tool"]
    if not tools:
        return []
    rows = []
    for name, row in tools.items():
        lat = row["latency"] or {}
        rows.append([*tool_cells(name, row), *(fmt_ms(lat.get(k)) for k in PERCENTILE_KEYS)])
    return [f"{level}# Tool calls", "", *md_table([*_TOOL_COLUMNS, *_MS_COLUMNS], rows)]


def _run_providers(run: Report, level: str) -> list[str]:
    prov = run["providers"]
    if not (prov["by_provider"] or prov["rejected"] or prov["validated"]):
        return []
    rows = [provider_cells(n, p) for n, p in prov["by_provider"].items()]
    return [
        f"{level}# Provider I/O",
        "",
        f"validated {prov['validated']}, rejected {prov['rejected']} ({prov['rejected_halting']} halting)",
        "",
        *md_table(["provider", "prompts", "responses", "timed out", "open", "prompt chars"], rows),
    ]


def _run_predicates(run: Report, level: str) -> list[str]:
    latest = run["predicates"]["latest"]
    if not latest:
        return []
    rows: list[list[object]] = [
        [pid, p["kind"], p["required"], p["ok"], p["reason"], p["line"], p["evaluations"]] for pid, p in latest.items()
    ]
    columns = ["predicate", "kind", "required", "ok", "reason", "line", "evaluations"]
    return [f"{level}# Predicates (latest verdict)", "", *md_table(columns, rows)]


def _run_signals(run: Report, level: str) -> list[str]:
    rows: list[list[object]] = [[k, v] for k, v in signal_rows(run, "error events")]
    return [f"{level}# Signals", "", *md_table(["signal", "value"], rows)]


def _run_flags(run: Report, level: str) -> list[str]:
    flags = run["audit_flags"]
    out = [f"{level}# Audit flags ({flags['count']})", ""]
    if not flags["count"]:
        return [*out, "None.", ""]
    out += md_table(
        ["line", "code", "kind", "message"],
        [[f["line"], f["code"], f["kind"], f["message"]] for f in flags["items"]],
    )
    if flags["omitted"]:
        out += [f"{flags['omitted']} more not shown (--max-items).", ""]
    return out


def run_markdown(run: Report, level: str = "##") -> list[str]:
    """The Markdown lines of one RACT run's report, headed at ``level``."""
    out: list[str] = []
    for section in (_run_head, _run_steps, _run_tools, _run_providers, _run_predicates, _run_signals, _run_flags):
        out += section(run, level)
    return out


def journal_markdown(run: Report, level: str = "##") -> list[str]:
    """The Markdown lines of one Raxol journal's report (docs/raxol.md), headed at ``level``."""
    out = [f"{level} Journal {md(run['path'])}: {md(run['status'])}", ""]
    if not run["trusted"]:
        out += [
            f"> **UNTRUSTED from line {run['untrusted_from_line']}**: the journal fails verification there; "
            "its evidence verdict is not to be believed.",
            "",
        ]
    out += md_table(["field", "value"], [[k, v] for k, v in detail_rows(run)])
    flags = run["audit_flags"]
    out += [f"{level}# Findings ({flags['count']})", ""]
    if flags["count"]:
        out += md_table(["line", "code", "message"], [[f["line"], f["code"], f["message"]] for f in flags["items"]])
    else:
        out += ["None.", ""]
    return out


def to_markdown(result: ProjectResult) -> str:
    """GitHub-flavoured Markdown (for ``$GITHUB_STEP_SUMMARY``): one log in detail, else a summary table."""
    if len(result.runs) == 1 and result.detailed:
        run = result.runs[0]
        body = journal_markdown(run) if is_journal(run) else run_markdown(run)
        return "\n".join(["# ract run report", "", *body]).rstrip("\n") + "\n"
    totals = result.totals()
    out = [
        "# ract run summary",
        "",
        f"{totals['runs']} run(s); by status: {md(counts_text(totals['by_status']))}; "
        f"untrusted: {totals['untrusted']}; flagged: {totals['flagged']}; exit code {int(result.exit_code)}",
        "",
    ]
    out += md_table(FLEET_COLUMNS, [fleet_row(r) for r in result.runs])
    for f in result.findings:
        out += [f"- {md(f.path)}: {md(f.message)}"]
    return "\n".join(out).rstrip("\n") + "\n"
