"""The payloads of the seeded runs: shared constants, and one valid payload for every kind an ordinary step does not emit.

``other_kind_payloads`` builds them in one fixed order, drawing every id from
the builder's seeded RNG: the same seed gives the same bytes (the committed
fixtures depend on it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ract_cli.format.json_types import Payload

BASE_TS = 1_764_000_000_000_000_000  # 2025-11-24T16:00:00Z
TOOLS = ("bash", "read_file", "write_file", "grep", "pytest", "git_diff")
PROVIDERS = ("anthropic", "openai", "local-vllm")
UNICODE_SNIPPETS = (
    "naïve café",
    "日本語のテキスト",
    "emoji 😀 ok",
    "Ελληνικά",
    "עברית",
    "a\tb",
    'quote " and \\ slash',
    "ﬀ ligature",
    "\u2028line sep",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
)


@dataclass(frozen=True)
class OtherKinds:
    """What the payloads of ``other_kind_payloads`` draw on: the builder's RNG and the step they are in."""

    hex: Callable[[int], str]  # n random lowercase hex digits (the seeded RNG)
    text: Callable[[], str]  # one of UNICODE_SNIPPETS (the seeded RNG)
    run_id: str
    step_id: str
    call_id: str
    assumption: str


def other_kind_payloads(c: OtherKinds) -> list[tuple[str, Payload]]:
    """``(kind, payload)`` for each kind but the step, handshake and run kinds, in the order they are emitted.

    The groups are built in this order, so the RNG is drawn in the same order
    whatever the grouping.
    """
    return [
        *_sandbox_and_refusals(c),
        *_rootknots_and_assumptions(c),
        *_budgets_and_retrieval(c),
        *_subagents_and_runtime(c),
        *_sidecars_and_errors(c),
    ]


def _sandbox_and_refusals(c: OtherKinds) -> list[tuple[str, Payload]]:
    """Sandbox grants and denials, a rejected response, a refused tool."""
    h = c.hex
    return [
        (
            "sandbox.granted",
            {
                "manifest_digest": "sha256:" + h(64),
                "reason": "manifest ok",
                "details": {"backend": "linux-bwrap", "binds": ["/workspace", "/tmp"]},
            },
        ),
        (
            "sandbox.denied",
            {
                "manifest_digest": "sha256:" + h(64),
                "reason": "network requested",
                "details": {"requested": ["net"]},
            },
        ),
        (
            "sandbox.unenforced",
            {"manifest_digest": "sha256:" + h(64), "reason": "windows stub", "details": {"platform": "win32"}},
        ),
        (
            "sandbox.env_scrubbed",
            {
                "backend": "linux-bwrap",
                "allowlist_source": "manifest",
                "scrubbed_count": 41,
                "never_passthrough_denied": 1,
                "credential_shaped_unblocked_count": 0,
            },
        ),
        (
            "response.rejected",
            {"step_id": c.step_id, "error": "missing field 'path'", "attempt": 1, "should_halt": False},
        ),
        ("tool.refused", {"tool": "curl", "reason": "network not in manifest", "refused_by": "sandbox"}),
    ]


def _rootknots_and_assumptions(c: OtherKinds) -> list[tuple[str, Payload]]:
    """Root knots, assumptions, an auction proposal."""
    h, rid, assumption = c.hex, c.run_id, c.assumption
    return [
        (
            "rootknot.created",
            {
                "workspace_path": "src/pkg/mod.py",
                "plan_id": h(32),
                "step_id_ref": c.step_id,
                "artifact_digest": "sha256:" + h(64),
                "assumption_digest": "sha256:" + h(64),
            },
        ),
        ("rootknot.verified", {"workspace_path": "src/pkg/mod.py", "artifact_digest": "sha256:" + h(64)}),
        (
            "assumption.proposed",
            {
                "assumption_id": assumption,
                "digest": "sha256:" + h(64),
                "text": "the API is stable — " + c.text(),
            },
        ),
        ("assumption.accepted", {"run_id": rid, "assumption_id": assumption, "evidence_digest": "sha256:" + h(64)}),
        ("assumption.discharged", {"assumption_id": assumption, "digest": "sha256:" + h(64)}),
        ("assumption.violated", {"assumption_id": h(32), "root_id": assumption}),
        (
            "auction.proposal",
            {
                "workspace_path": "legacy/old.py",
                "last_modified_days": 400,
                "inbound_references": 0,
                "reason": "no inbound references",
            },
        ),
    ]


def _budgets_and_retrieval(c: OtherKinds) -> list[tuple[str, Payload]]:
    """Budgets, retrieval cascades, a probe, tool and ledger refusals, a contract violation."""
    h, rid, call_id = c.hex, c.run_id, c.call_id
    return [
        (
            "budget.declared",
            {
                "function": "plan",
                "declaration": {"input_target": 4000, "hard_ceiling": 8000},
                "narrowing_log": [{"from": 8000, "to": 4000, "why": "probe"}],
                "source": "composition",
            },
        ),
        (
            "budget.exceeded",
            {"function": "edit", "section_name": "state_context", "delta": 312, "boundary": "hard_ceiling"},
        ),
        ("retrieval.cascaded", {"call_id": call_id, "from_level": 1, "to_level": 2, "reason": "over budget"}),
        ("retrieval.refused", {"call_id": call_id, "reason": "every level exhausted"}),
        ("probe.evaluated", {"probe": "needle", "score": 0.9375, "repo_fingerprint": h(40), "note": c.text()}),
        (
            "tool.invocation.refused",
            {
                "run_id": rid,
                "tool_id": "rm",
                "gate": "manifest",
                "reason": "not declared",
                "details": {"declared": ["bash", "grep"], "requested": "rm"},
            },
        ),
        (
            "manifest.ledger.appended",
            {
                "entry_index": 0,
                "manifest_digest": h(64),
                "prev_ledger_hash": "GENESIS",
                "tool_ids_invoked_count": 3,
            },
        ),
        (
            "manifest.ledger.refused",
            {
                "entry_index": -1,
                "reason": "lock_contended",
                "details": {"exception_name": "BlockingIOError", "exception_message": "busy"},
            },
        ),
        (
            "whisperer.contract_violation",
            {
                "run_id": rid,
                "commitment_count": 1,
                "floor": 3,
                "response_excerpt_hash": h(16),
                "response_full_hash": h(64),
                "null_op_score": 0.82,
                "null_op_threshold": 0.7,
                "trigger": "both",
                "used_regex_fallback": False,
            },
        ),
    ]


def _subagents_and_runtime(c: OtherKinds) -> list[tuple[str, Payload]]:
    """Capped state, retrieval grouping, subagents, the runtime's run_id handling."""
    h, rid, call_id = c.hex, c.run_id, c.call_id
    return [
        (
            "state.budget_capped",
            {
                "function": "plan",
                "cap_tokens": 600,
                "requested_tokens": 872,
                "seated_tokens": 599,
                "dropped_entry_count": 14,
                "strategy": "truncate_tail",
                "requested_hash": h(64),
            },
        ),
        (
            "retrieval.grouping.applied",
            {
                "call_id": call_id,
                "primary_symbol_id": 4712,
                "companion_count": 3,
                "rule_fired": "dataclass_methods",
                "companion_format": "full",
                "dropped_companion_count": 0,
            },
        ),
        (
            "subagent.disposed",
            {
                "kind": "subprocess",
                "descriptor": {"role": "whisperer", "label": "legacy_whisperer[intent=refactor_extract]"},
                "reason": "dispose_unsuccessful",
                "ok": True,
            },
        ),
        (
            "substrate.subagent.tree_kill_invoked",
            {"pid": 4242, "creation_time_ns": BASE_TS - 10**9, "path": "poll_exited"},
        ),
        (
            "substrate.subagent.pid_reuse_detected",
            {"stored_pid": 4242, "stored_ctime": BASE_TS - 10**9, "current_ctime": BASE_TS + 10**9},
        ),
        ("substrate.subagent.orphan_reaped", {"count": 2, "pids": [4243, 4244]}),
        ("runtime.run_id.env_injected", {"run_id": rid, "child_pid": 4245, "source": "spawn_step_subprocess"}),
        (
            "runtime.run_id.env_rejected",
            {"reason": "RACT_RUN_ID fails ^[A-Za-z0-9_-]{1,240}$", "child_pid": 4246, "source": "env"},
        ),
        ("runtime.run_id.env_stripped_from_parent", {"stripped_key": "RACT_RUN_ID", "stripped_value_hash": h(16)}),
        (
            "runtime.run_id.orphan_generated",
            {"synthetic_run_id": "RUN-ORPHAN-" + h(32), "reason": "no RACT_RUN_ID", "child_pid": 4247},
        ),
    ]


def _sidecars_and_errors(c: OtherKinds) -> list[tuple[str, Payload]]:
    """Sidecar headers, budget clamps, a bypass, the error kinds, a reaped process."""
    h, rid, call_id = c.hex, c.run_id, c.call_id
    return [
        (
            "sidecar.header.written",
            {"path": ".ract/sidecars/index.json", "sidecar_type": "index", "schema_version": 2, "run_id": rid},
        ),
        ("sidecar.header.missing_refused", {"path": ".ract/sidecars/old.json", "reason": "headerless"}),
        (
            "sidecar.header.mismatch_refused",
            {"path": ".ract/sidecars/x.json", "header_run_id": h(32), "expected_run_id": rid},
        ),
        (
            "budget.clamp_refused",
            {
                "call_id": call_id,
                "declared_target": 4000,
                "proposed_target": 1000,
                "floor": 2000,
                "reason": "below declared floor",
            },
        ),
        (
            "budget.adjusted_by_probes",
            {
                "call_id": call_id,
                "declared_target": 4000,
                "adjusted_target": 3000,
                "probe_signal": {"probe": "coherence", "score": 0.41},
            },
        ),
        ("tool.invocation.bypassed", {"tool_id": "deploy", "reason": "dry-run guard", "step_id": c.step_id}),
        ("laziness.skipped", {"reason": "docs-only diff", "diff_summary": "README.md +3 -1"}),
        ("whisperer.classifier_error", {"error_kind": "ParseError", "message": "grammar parse failed"}),
        ("laziness.gate_error", {"error_kind": "TimeoutError", "message": "gate timed out after 30s"}),
        ("memory.probe_scheduler_error", {"error_kind": "RuntimeError", "message": "scheduler stopped"}),
        ("memory.composition_runner_error", {"error_kind": "KeyError", "message": "'state_context'"}),
        ("memory.cascade_error", {"index": "semantic", "error_kind": "OSError", "message": "index file missing"}),
        ("memory.freshness_gap", {"index": "symbol", "gap_ms": 120_000, "threshold_ms": 60_000}),
        (
            "process.reaped",
            {
                "pid": 5150,
                "argv0": "node",
                "argv_len": 3,
                "reason": "dispose_unsuccessful",
                "reap_latency_ms": 1830,
            },
        ),
    ]
