"""Audit flags (docs/project.md): their codes, their one shape, and their order in a report."""

from __future__ import annotations

from ract_cli.format.json_types import Event, JSONObject
from ract_cli.project.tallies import Items

#: audit flag code -> what it means (docs/project.md lists the same table)
FLAG_CODES: dict[str, str] = {
    "UNTRUSTED": "integrity failure: the log is not verified from this line on",
    "GATE_INCONSISTENT": "run.completed while a required predicate's latest verdict failed",
    "SANDBOX_UNENFORCED": "a sandbox.unenforced event: the tool ran without an enforced sandbox",
    "NEVER_PASSTHROUGH_DENIED": "sandbox.env_scrubbed with never_passthrough_denied > 0: the manifest declared "
    "a credential-shaped name",
    "CREDENTIAL_SHAPED_UNBLOCKED": "sandbox.env_scrubbed with credential_shaped_unblocked_count > 0: "
    "the deny surface has a gap",
    "ASSUMPTION_VIOLATED": "an assumption.violated event",
    "BUDGET_EXCEEDED": "a budget.exceeded event",
    "ERROR_EVENT": "a *_error event: a component raised and the run went on",
    "SYNTHESIZED_CLOSE": "a close written by repair, not by the run",
    "OPEN_RUN": "the run was never closed (as far as the log is verified)",
    "OPEN_HANDLE": "a step, tool call, prompt or handshake was never closed",
    "WHISPERER_CONTRACT_VIOLATION": "the sycophancy classifier flagged a response",
    "PID_REUSE_DETECTED": "a signal was skipped because the pid was reused",
    "RUN_ID_ENV_STRIPPED": "a caller-supplied RACT_RUN_ID was stripped (possible sneak vector)",
    "SIDECAR_MISMATCH_REFUSED": "a sidecar's header run_id differed from the expected one",
    "MANIFEST_LEDGER_REFUSED": "the manifest ledger refused an entry",
    # verifier findings carried over as flags keep their finding code (HASH_MISMATCH, TORN_TAIL, ...)
}


def make_flag(
    code: str, line: int | None, event_id: object, kind: str | None, message: str, source: str = "log"
) -> JSONObject:
    """One audit flag: ``source`` is ``log`` (the projection saw it) or ``verify`` (the reader did)."""
    return {"code": code, "source": source, "line": line, "event_id": event_id, "kind": kind, "message": message}


class Flags(Items):
    """The audit flags raised so far: a capped list of ``make_flag`` dicts."""

    __slots__ = ()

    def flag(self, code: str, line: int | None, event: Event | None, message: str) -> None:
        """Raise ``code`` for ``event`` (a log flag)."""
        event_id = event["id"] if event is not None else None
        kind = event["kind"] if event is not None else None
        self.add(make_flag(code, line, event_id, kind, message))

    def copy(self) -> Flags:
        """The same flags in a new list, so a report can add to it without touching the projection."""
        flags = Flags(self.limit)
        flags.items, flags.count = list(self.items), self.count
        return flags


def flag_order(flag: JSONObject) -> tuple[int, bool, str]:
    """Flags sort by line, ``UNTRUSTED`` first on its line, then by code."""
    return (flag["line"] if flag["line"] is not None else 0, flag["code"] != "UNTRUSTED", flag["code"])
