"""Human formatting of a Raxol journal's ``project`` report (docs/raxol.md), for terminal and Markdown.

Raw strings: callers escape them (``project.markdown.md``, ``cli.render.clean``).
"""

from __future__ import annotations

from ract_cli.format.json_types import JSONObject, Report


def _counts(table: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in table.items())


def evidence_text(run: Report) -> str:
    """``accepted (line 27); stands on a verified chain``."""
    ev = run["evidence"]
    claimed = ev.get("claimed")
    if claimed is not None:
        return (
            f"none verified: the final turn_completed (line {claimed['line']}) lies at or after the chain "
            f"break and claims {claimed['status']}: not counted"
        )
    if ev["status"] is None:
        return "none: the journal has no final turn_completed"
    text = f"{ev['status']} (line {ev['line']}); {ev['stands_on']}"
    detail = ev["rejected"]
    if detail:
        text += f"; rejected for {detail['reason']} at ref {detail['ref'] if detail['ref'] is not None else 'null'}"
    return text


def _items_text(journal: JSONObject) -> str:
    return (_counts(journal["items_by_type"]) or "none") + f" (started {journal['items_started']})"


def _errors_text(journal: JSONObject) -> str:
    errors = journal["errors"]
    text = str(errors["count"])
    if errors["items"]:
        text += ": " + "; ".join(f"line {e['line']} {e['reason']}" for e in errors["items"][:5])
        if errors["count"] > 5:
            text += f"; {errors['count'] - 5} more"
    return text


def _chain_text(chain: JSONObject) -> str:
    if not chain["chained"]:
        return "none (records carry no hash chain)"
    return ("verified" if chain["verified"] else "broken") + f", head {chain['head']}"


def detail_rows(run: Report) -> list[tuple[str, str]]:
    """The rows of a journal's detailed report, shared by text and Markdown (raw values)."""
    j, chain = run["journal"], run["chain"]
    return [
        ("path", run["path"]),
        ("dialect", f"raxol journal, schema_version {j['schema_version']}"),
        ("status", run["status"]),
        ("evidence", evidence_text(run)),
        ("exit code", f"{run['exit_code']} ({run['exit_name']})"),
        ("trusted", "yes" if run["trusted"] else f"no, from line {run['untrusted_from_line']}"),
        ("chain", _chain_text(chain)),
        ("records", f"{chain['events']} ({j['durable_records']} durable, {j['deltas']} item_delta)"),
        ("turns", f"{j['turns']} started, {j['turn_boundaries']} completed"),
        ("iterations", "-" if j["iterations"] is None else str(j["iterations"])),
        ("items by type", _items_text(j)),
        ("usage", _counts(j["usage"]) or "-"),
        ("errors", _errors_text(j)),
        ("unknown types", _counts(j["unknown_types"]) or "none"),
    ]


def journal_fleet_row(run: Report) -> list[object]:
    """A journal's row in project's summary table (same columns as a RACT run's)."""
    j = run["journal"]
    return [
        "(journal)",
        run["path"],
        run["status"],
        "yes" if run["trusted"] else f"no (line {run['untrusted_from_line']})",
        run["exit_code"],
        run["chain"]["events"],
        "-",
        "-",
        f"{j['turns']} turns",
        f"{j['items_by_type'].get('tool_use', 0)} tool_use; evidence {run['evidence']['status'] or 'none'} "
        f"({run['evidence']['trust']})",
        run["audit_flags"]["count"],
    ]
