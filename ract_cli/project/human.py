"""Human formatting of a report's values, shared by the terminal and Markdown forms.

Pure functions from a report dict (``Projector.report`` / ``project_file``)
to raw strings and rows. The strings hold log-derived text unescaped: the
Markdown form escapes every cell (``project.markdown.md``), the terminal
form cleans it (``ract_cli.cli.render.clean``).
"""

from __future__ import annotations

from ract_cli.format.json_types import JSONObject, Report
from ract_cli.project.journal_text import journal_fleet_row

#: the percentile keys of a latency or duration block, in the order shown
PERCENTILE_KEYS = ("p50_ms", "p90_ms", "p99_ms", "max_ms")
#: the columns of the summary table over several logs
FLEET_COLUMNS = [
    "run",
    "path",
    "status",
    "trusted",
    "exit",
    "events",
    "start",
    "duration",
    "steps c/rb/open",
    "tool calls",
    "flags",
]


def fmt_duration(ns: int | None) -> str:
    """``812.0µs``, ``3.5ms``, ``1.250s``, ``2m03.500s``, ``1h02m03.500s``; ``-`` for None."""
    if ns is None:
        return "-"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < 1_000_000:
        return f"{sign}{ns / 1e3:.1f}µs"
    if ns < 1_000_000_000:
        return f"{sign}{ns / 1e6:.1f}ms"
    seconds = ns / 1e9
    if seconds < 60:
        return f"{sign}{seconds:.3f}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{sign}{int(minutes)}m{seconds:06.3f}s"
    hours, minutes = divmod(int(minutes), 60)
    return f"{sign}{hours}h{minutes:02d}m{seconds:06.3f}s"


def fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def outcome_text(run: Report) -> str:
    """``run.completed final_decision=... reason=...``, or ``not closed``."""
    o = run["outcome"]
    if o["closed_by"] is None:
        return "not closed"
    parts = [o["closed_by"]]
    if o["final_decision"] is not None:
        parts.append(f"final_decision={o['final_decision']}")
    if o["termination_cause"] is not None:
        parts.append(f"termination_cause={o['termination_cause']}")
    if o["reason"] is not None:
        parts.append(f"reason={o['reason']}")
    if o["synthesized"]:
        parts.append("(synthesized by repair)")
    return " ".join(parts)


def refused_text(row: JSONObject) -> str:
    """A tool row's refusals: ``3 (policy:2, gate g:1)``."""
    parts = [f"{k}:{v}" for k, v in row["refused_by"].items()]
    parts += [f"gate {k}:{v}" for k, v in row["refused_by_gate"].items()]
    return f"{row['refused']}" + (f" ({', '.join(parts)})" if parts else "")


def counts_text(table: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in table.items()) or "-"


def tool_cells(name: str, row: JSONObject) -> list[object]:
    """A tool's row of the tool-call table, before its latency columns."""
    return [
        name,
        row["called"],
        row["ok"],
        row["failed"],
        row["unknown"],
        refused_text(row),
        row["bypassed"],
        row["open"],
    ]


def provider_cells(name: str, p: JSONObject) -> list[object]:
    """A provider's row of the provider I/O table."""
    return [name, p["prompts"], p["responses"], p["timed_out"], p["open"], p["prompt_chars"]]


def signal_rows(run: Report, errors_label: str) -> list[tuple[str, object]]:
    """The signals block (handshakes, sandbox, reaps, assumptions, budgets, errors, synthesized closes)."""
    hs, sb, reaps = run["handshakes"], run["sandbox"], run["process_reaps"]
    return [
        ("handshakes", f"{hs['requested']} requested; " + counts_text(hs["by_status"])),
        (
            "sandbox",
            f"granted {sb['granted']}, denied {sb['denied']}, unenforced {sb['unenforced']['count']}, "
            f"never_passthrough_denied {sb['never_passthrough_denied']['total']}, "
            f"credential_shaped_unblocked {sb['credential_shaped_unblocked']['total']}",
        ),
        ("process reaps", f"{reaps['count']}; " + counts_text(reaps["by_reason"])),
        (
            "assumptions",
            f"proposed {run['assumptions']['proposed']}, violated {run['assumptions']['violated']['count']}",
        ),
        ("budgets exceeded", run["budgets"]["exceeded"]["count"]),
        (errors_label, f"{run['errors']['count']}; " + counts_text(run["errors"]["by_kind"])),
        ("synthesized closes", run["synthesized_closes"]["count"]),
    ]


def is_journal(run: Report) -> bool:
    """Whether ``run`` is a Raxol journal's report (docs/raxol.md), not a RACT run's."""
    return run.get("dialect") == "raxol"


def run_fleet_row(run: Report) -> list[object]:
    """A RACT run's row in the summary table (``FLEET_COLUMNS``)."""
    steps, tools = run["steps"], run["tools"]["totals"]
    return [
        (run["run_id"] or "-")[:12],
        run["path"],
        run["status"],
        "yes" if run["trusted"] else f"no (line {run['untrusted_from_line']})",
        run["exit_code"],
        run["chain"]["events"],
        run["timing"]["start"],
        fmt_duration(run["timing"]["duration_ns"]),
        f"{steps['committed']}/{steps['rolled_back']}/{steps['open']}",
        f"{tools['called']} ({tools['failed']} failed, {tools['refused']} refused)",
        run["audit_flags"]["count"],
    ]


def fleet_row(run: Report) -> list[object]:
    """Any log's row in the summary table: a run's, or a journal's (same columns)."""
    return journal_fleet_row(run) if is_journal(run) else run_fleet_row(run)
