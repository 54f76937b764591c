"""The ``project`` report of a Raxol journal (docs/raxol.md)."""

from __future__ import annotations

from typing import cast

from ract_cli.dialects.raxol.state import MAX_KEPT, JournalState
from ract_cli.format.json_types import Report
from ract_cli.read.reader import ChainReader

# --- project: the journal report ------------------------------------------

#: what the evidence verdict stands on (``JournalSummary.trust``) -> how a report says it
TRUST_TEXT = {
    "verified-chain": "stands on a verified chain",
    "broken-chain": "stands on a chain that does NOT verify: not to be believed",
    "journal-trust": "stands only on trust in the journal (no hash chain)",
}


def journal_report(reader: ChainReader, path: str, *, max_items: int = MAX_KEPT) -> Report:
    """The ``project`` report of a journal read to its end by ``ChainReader(dialect="raxol")``.

    Counts cover every record (a journal's projection is its ``JournalState``);
    ``trusted``/``untrusted_from_line`` and ``evidence.trust`` say how far that
    can be believed. The JSON shape is documented in ``docs/raxol.md``.
    """
    state = cast(JournalState, reader.state)  # a reader of the raxol dialect keeps a JournalState
    summary = state.summary()
    broken = state.first_integrity_failure
    exit_code = state.exit_code
    findings = state.findings
    flags = [
        {"code": f.code, "source": "verify", "line": f.line, "event_id": f.event_id, "kind": None, "message": f.message}
        for f in findings
    ]
    kept = flags[:max_items]
    journal = summary.to_dict()
    errors = journal.pop("errors")
    evidence = journal.pop("evidence")
    detail = journal.pop("evidence_rejected")
    trust = journal.pop("trust")
    for key in ("dialect", "chained", "chain_verified", "head", "records", "closed", "final_line"):
        journal.pop(key)
    count = journal.pop("error_count")
    journal["errors"] = {"count": count, "items": errors[:max_items], "omitted": count - min(len(errors), max_items)}
    final_line = summary.final_line
    claimed = None
    if broken is not None and final_line is not None and final_line >= broken:
        # As for RACT logs (project's untrusted.claimed_close): a close at or after the first
        # integrity failure is a claim, not a verdict -- it may be the forged record itself.
        claimed = {"status": evidence, "line": final_line, "rejected": detail}
        evidence = detail = final_line = None
    return {
        "report_version": 1,
        "dialect": "raxol",
        "path": path,
        "run_id": None,
        "status": "completed" if final_line is not None else "open",
        "exit_code": int(exit_code),
        "exit_name": exit_code.name,
        "trusted": broken is None,
        "untrusted_from_line": broken,
        "evidence": {
            "status": evidence,
            "line": final_line,
            "rejected": detail,
            "trust": trust,
            "stands_on": TRUST_TEXT[trust] if evidence is not None else None,
            "verified_chain": trust == "verified-chain",
            "claimed": claimed,
        },
        "journal": journal,
        "chain": {
            "chained": summary.chained,
            "verified": summary.chain_verified,
            "head": summary.head,
            "events": summary.records,
            "durable_events": summary.durable_records,
        },
        "audit_flags": {"count": len(flags), "items": kept, "omitted": len(flags) - len(kept)},
        "findings": [f.to_dict() for f in findings],
        "suppressed_findings": state.suppressed,
    }
