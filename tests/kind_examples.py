"""Example payloads shared by test_kinds.py and test_schemas.py.

Hand-written from reference/ract-event-schema.md (its own examples where it
gives one), so they check the definitions in ract_cli/kinds.py against the
document rather than against themselves. The generated type-confusion cases
at the bottom are derived from the definitions and serve the agreement test
between the verifier and the exported JSON Schemas.
"""

from __future__ import annotations

from collections.abc import Iterator

from ract_cli.format.kinds import KINDS
from ract_cli.format.model import JSON_TYPES

H32 = "d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6"
H32B = "4a1c0f9e6b3d2a5c8f9e1b4d2a7c6f3e"
SHA = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0"
GIT = "3c1e0b5f2a9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b"

#: The 64 kinds in document order, typed out from the reference document.
DOCUMENT_ORDER: tuple[str, ...] = (
    "run.started",
    "run.completed",
    "run.aborted",
    "step.started",
    "step.committed",
    "step.rolled_back",
    "prompt.sent",
    "response.received",
    "response.validated",
    "response.rejected",
    "tool.called",
    "tool.result",
    "tool.refused",
    "sandbox.granted",
    "sandbox.denied",
    "sandbox.unenforced",
    "sandbox.env_scrubbed",
    "process.reaped",
    "predicate.evaluated",
    "handshake.requested",
    "handshake.resolved",
    "rootknot.created",
    "rootknot.verified",
    "assumption.proposed",
    "assumption.discharged",
    "assumption.violated",
    "auction.proposal",
    "budget.declared",
    "budget.exceeded",
    "retrieval.requested",
    "retrieval.satisfied",
    "retrieval.cascaded",
    "retrieval.refused",
    "probe.evaluated",
    # schema_version 4
    "assumption.accepted",
    "tool.invocation.pre",
    "tool.invocation.post",
    "tool.invocation.refused",
    "manifest.ledger.appended",
    "manifest.ledger.refused",
    "whisperer.contract_violation",
    # 6, 7, 8
    "state.budget_capped",
    "retrieval.grouping.applied",
    "subagent.disposed",
    # 9
    "substrate.subagent.tree_kill_invoked",
    "substrate.subagent.pid_reuse_detected",
    "substrate.subagent.orphan_reaped",
    "runtime.run_id.env_injected",
    "runtime.run_id.env_rejected",
    "runtime.run_id.env_stripped_from_parent",
    "runtime.run_id.orphan_generated",
    "sidecar.header.written",
    "sidecar.header.missing_refused",
    "sidecar.header.mismatch_refused",
    "budget.clamp_refused",
    "budget.adjusted_by_probes",
    "tool.invocation.bypassed",
    "laziness.skipped",
    "whisperer.classifier_error",
    "laziness.gate_error",
    "memory.probe_scheduler_error",
    "memory.composition_runner_error",
    "memory.cascade_error",
    "memory.freshness_gap",
)

#: One valid (real, not synthesized) payload per kind.
VALID: dict[str, dict] = {
    "run.started": {  # the document's example (digest filled in)
        "intent_id": H32,
        "suite_digest": "sha256:" + SHA,
        "compiler_version": "0.4.0",
        "predicate_count": 4,
        "required_count": 4,
        "coverage_gate": 0.85,
    },
    "run.completed": {"final_decision": "accepted", "duration_ns": 1_250_000_000, "event_count": 42},
    "run.aborted": {"termination_cause": "BUDGET_EXHAUSTED", "reason": "budget exhausted", "duration_ns": 9_000},
    "step.started": {
        "parent_snapshot": GIT,
        "branch": f"rootact/step/{H32}",
        "postcondition_count": 2,
        "manifest_digest": None,
        "timeout_seconds": 300,
    },
    "step.committed": {
        "outcome": "COMMITTED",
        "parent_snapshot_before": GIT,
        "parent_snapshot_after": GIT[::-1],
        "branch": f"rootact/step/{H32}",
        "reason": "postconditions satisfied",
    },
    "step.rolled_back": {
        "outcome": "BLOCKED_ON_HANDSHAKE",
        "parent_snapshot_before": GIT,
        "parent_snapshot_after": GIT,
        "branch": f"rootact/step/{H32}",
        "reason": "handshake m-1 pending",
    },
    "prompt.sent": {"provider": "anthropic", "response_shape": "PlannedStep", "intent_id": H32, "prompt_chars": 5120},
    "response.received": {
        "provider": "anthropic",
        "intent_id": H32,
        "response_type": "PlannedStep",
        "preview": '{"action": "edit", "path": "src/app.py"}',
    },
    "response.validated": {"step_id": H32, "kind": "edit"},
    "response.rejected": {"step_id": H32, "error": "missing field 'path'", "attempt": 2, "should_halt": False},
    "tool.called": {"tool": "pytest", "arguments": {"args": ["-q"], "api_key": "[REDACTED]"}},
    "tool.result": {"tool": "pytest", "ok": True, "duration_ns": 812_000_000},
    "tool.refused": {"tool": "curl", "reason": "network denied", "refused_by": "sandbox"},
    "sandbox.granted": {"manifest_digest": SHA, "reason": "manifest accepted", "details": {"backend": "bwrap"}},
    "sandbox.denied": {"manifest_digest": SHA, "reason": "write outside workspace", "details": {}},
    "sandbox.unenforced": {"manifest_digest": SHA, "reason": "no sandbox on this platform", "details": {"os": "nt"}},
    "sandbox.env_scrubbed": {
        "backend": "linux-bwrap",
        "allowlist_source": "manifest",
        "scrubbed_count": 37,
        "never_passthrough_denied": 0,
        "credential_shaped_unblocked_count": 1,
    },
    "process.reaped": {
        "pid": 4242,
        "argv0": "pytest",
        "argv_len": 3,
        "reason": "dispose_unsuccessful",
        "reap_latency_ms": 1500,
    },
    "predicate.evaluated": {
        "predicate_id": "tests-pass",
        "kind": "test",
        "required": True,
        "ok": True,
        "reason": "12 passed",
        "duration_ns": 3_000_000_000,
    },
    "handshake.requested": {
        "milestone_id": "m-1",
        "status": "pending",
        "description": "approve schema migration",
        "reason": "destructive change",
    },
    "handshake.resolved": {
        "milestone_id": "m-1",
        "status": "approved",
        "description": "approve schema migration",
        "reason": "operator approved",
    },
    "rootknot.created": {
        "workspace_path": "src/app.py",
        "plan_id": H32,
        "step_id_ref": H32B,
        "artifact_digest": SHA,
        "assumption_digest": SHA,
    },
    "rootknot.verified": {"workspace_path": "src/app.py", "artifact_digest": SHA},
    "assumption.proposed": {"assumption_id": H32, "digest": SHA, "text": "the API is idempotent"},
    "assumption.discharged": {"assumption_id": H32, "digest": SHA},
    "assumption.violated": {"assumption_id": H32B, "root_id": H32},
    "auction.proposal": {
        "workspace_path": "src/legacy/old.py",
        "last_modified_days": 400,
        "inbound_references": 0,
        "reason": "no inbound references for 400 days",
    },
    "budget.declared": {
        "function": "research",
        "declaration": {"input_target": 4000, "hard_ceiling": 8000},
        "narrowing_log": [{"from": 8000, "to": 4000, "why": "cli"}],
        "source": "composition",
    },
    "budget.exceeded": {"function": "plan", "section_name": "state_context", "delta": 120, "boundary": "hard_ceiling"},
    "retrieval.requested": {"canonical_query": {"q": "parse_config"}, "budget": 1200, "call_id": H32},
    "retrieval.satisfied": {"call_id": H32, "total_tokens": 980, "budget_used_pct": 81.7, "step_id": H32B},
    "retrieval.cascaded": {"call_id": H32, "from_level": 1, "to_level": 2, "reason": "semantic index cold"},
    "retrieval.refused": {"call_id": H32, "reason": "every level exhausted"},
    "probe.evaluated": {"probe": "needle", "score": 0.92, "repo_fingerprint": H32, "note": "warm cache"},
    "assumption.accepted": {  # the document's example (digest filled in)
        "run_id": H32B,
        "assumption_id": H32,
        "evidence_digest": "sha256:" + SHA,
    },
    "tool.invocation.pre": {
        "run_id": H32B,
        "tool_id": "fs.read",
        "args_repr": "('src/app.py',)",
        "budget_used": 3,
        "budget_max": 20,
    },
    "tool.invocation.post": {
        "run_id": H32B,
        "tool_id": "fs.read",
        "ok": True,
        "latency_ms": 1.25,
        "result_size_bytes": 2048,
    },
    "tool.invocation.refused": {
        "run_id": H32B,
        "tool_id": "net.fetch",
        "gate": "manifest",
        "reason": "tool not declared",
        "details": {"declared": ["fs.read"]},
    },
    "manifest.ledger.appended": {
        "entry_index": 0,
        "manifest_digest": SHA,
        "prev_ledger_hash": "GENESIS",
        "tool_ids_invoked_count": 2,
    },
    "manifest.ledger.refused": {
        "entry_index": -1,
        "reason": "disk_full",
        "details": {"exception_name": "OSError", "exception_message": "No space left on device"},
    },
    "whisperer.contract_violation": {
        "run_id": "",
        "commitment_count": 1,
        "floor": 3,
        "response_excerpt_hash": "0123456789abcdef",
        "response_full_hash": SHA,
        "null_op_score": 0.81,
        "null_op_threshold": 0.7,
        "trigger": "both",
        "used_regex_fallback": False,
    },
    "state.budget_capped": {  # the document's example
        "function": "plan",
        "cap_tokens": 600,
        "requested_tokens": 872,
        "seated_tokens": 599,
        "dropped_entry_count": 14,
        "strategy": "truncate_tail",
        "requested_hash": "3f5e…",
    },
    "retrieval.grouping.applied": {  # the document's example
        "call_id": "b13a4c0f9e6b3d2a5c8f9e1b4d2a7c6f",
        "primary_symbol_id": 4712,
        "companion_count": 3,
        "rule_fired": "dataclass_methods",
        "companion_format": "full",
        "dropped_companion_count": 0,
    },
    "subagent.disposed": {  # the document's example
        "kind": "subprocess",
        "descriptor": {"role": "whisperer", "label": "legacy_whisperer[intent=refactor_extract]"},
        "reason": "dispose_unsuccessful",
        "ok": True,
    },
    "substrate.subagent.tree_kill_invoked": {
        "pid": 5151,
        "creation_time_ns": 1_732_900_000_000_000_000,
        "path": "poll_exited",
    },
    "substrate.subagent.pid_reuse_detected": {
        "stored_pid": 5151,
        "stored_ctime": 1_732_900_000_000_000_000,
        "current_ctime": 1_732_900_100_000_000_000,
    },
    "substrate.subagent.orphan_reaped": {"count": 2, "pids": [5152, 5153]},
    "runtime.run_id.env_injected": {"run_id": H32B, "child_pid": 5151, "source": "spawn_step_subprocess"},
    "runtime.run_id.env_rejected": {"reason": "value fails ^[A-Za-z0-9_-]{1,240}$", "child_pid": 5151, "source": "env"},
    "runtime.run_id.env_stripped_from_parent": {
        "stripped_key": "RACT_RUN_ID",
        "stripped_value_hash": "a1b2c3d4e5f60718",
    },
    "runtime.run_id.orphan_generated": {
        "synthetic_run_id": f"RUN-ORPHAN-{H32}",
        "reason": "RACT_RUN_ID not set",
        "child_pid": 5151,
    },
    "sidecar.header.written": {
        "path": "evals/runs/x/retrieval.json",
        "sidecar_type": "retrieval",
        "schema_version": 2,
        "run_id": H32B,
    },
    "sidecar.header.missing_refused": {"path": "evals/runs/x/retrieval.json", "reason": "headerless"},
    "sidecar.header.mismatch_refused": {
        "path": "evals/runs/x/retrieval.json",
        "header_run_id": H32,
        "expected_run_id": H32B,
    },
    "budget.clamp_refused": {
        "call_id": H32,
        "declared_target": 4000,
        "proposed_target": 1000,
        "floor": 2000,
        "reason": "below declared floor",
    },
    "budget.adjusted_by_probes": {
        "call_id": H32,
        "declared_target": 4000,
        "adjusted_target": 3000,
        "probe_signal": {"needle": 0.4},
    },
    "tool.invocation.bypassed": {"tool_id": "fs.write", "reason": "dry-run guard", "step_id": H32},
    "laziness.skipped": {"reason": "docs-only", "diff_summary": "1 file changed, docs/README.md"},
    "whisperer.classifier_error": {"error_kind": "ValueError", "message": "grammar load failed"},
    "laziness.gate_error": {"error_kind": "RuntimeError", "message": "gate crashed"},
    "memory.probe_scheduler_error": {"error_kind": "TimeoutError", "message": "probe timed out"},
    "memory.composition_runner_error": {"error_kind": "KeyError", "message": "'state_context'"},
    "memory.cascade_error": {"index": "semantic", "error_kind": "OSError", "message": "index file missing"},
    "memory.freshness_gap": {"index": "lexical", "gap_ms": 12_000, "threshold_ms": 5_000},
}

_SYNTH = {"synthesized": True, "reason": "interrupted", "source_event_id": "3fa85f6417174562b3fc2c963f66afa6"}

#: Repair-synthesized closes (reference "repair-synthesized close events", SPEC §4).
SYNTHESIZED: dict[str, dict] = {
    "run.aborted": dict(_SYNTH),  # the document's example
    "step.rolled_back": {**_SYNTH, "branch": f"rootact/step/{H32}"},
    "tool.result": {**_SYNTH, "tool": "pytest", "status": "unknown"},
    "response.received": {**_SYNTH, "provider": "anthropic", "intent_id": H32, "status": "timed_out"},
    "handshake.resolved": {**_SYNTH, "milestone_id": "m-1", "description": "approve", "resolution": "interrupted"},
}

#: Marks a key to drop from the base example in EXTRA_VALID.
ABSENT = object()


def merged(kind: str, overrides: dict) -> dict:
    """The kind's VALID example with ``overrides`` applied (ABSENT drops a key)."""
    out = {**VALID[kind], **overrides}
    return {k: v for k, v in out.items() if v is not ABSENT}


#: Further valid payloads: alternatives, boundaries, sentinels, integer semantics.
EXTRA_VALID: list[tuple[str, str, dict]] = [
    (
        "tool.invocation.post",
        "failure",
        {"run_id": H32B, "tool_id": "fs.read", "ok": False, "latency_ms": 0, "exception": "FileNotFoundError"},
    ),
    ("probe.evaluated", "score-0", {"score": 0}),
    ("probe.evaluated", "score-1", {"score": 1.0}),
    ("whisperer.contract_violation", "null_op_score-1", {"null_op_score": 1}),
    ("retrieval.cascaded", "levels-4-to-1", {"from_level": 4, "to_level": 1}),
    ("response.received", "preview-200", {"preview": "x" * 200}),
    ("response.received", "preview-200-non-ascii", {"preview": "é" * 200}),
    ("substrate.subagent.orphan_reaped", "pids-32", {"count": 32, "pids": list(range(1, 33))}),
    ("substrate.subagent.orphan_reaped", "pids-empty", {"count": 0, "pids": []}),
    ("runtime.run_id.env_rejected", "reason-80", {"reason": "r" * 80}),
    ("state.budget_capped", "seated-equals-cap", {"cap_tokens": 600, "seated_tokens": 600}),
    ("state.budget_capped", "seated-without-cap", {"seated_tokens": 10_000, "cap_tokens": ABSENT}),
    ("state.budget_capped", "cap-without-seated", {"cap_tokens": 0, "seated_tokens": ABSENT}),
    ("process.reaped", "pid-sentinel", {"pid": -1, "argv0": "", "reap_latency_ms": 0}),
    (
        "retrieval.grouping.applied",
        "primary-sentinel-no-companions",
        {"primary_symbol_id": -1, "companion_count": 0, "companion_format": "", "dropped_companion_count": 2},
    ),
    ("manifest.ledger.refused", "entry-index-sentinel", {"entry_index": -1, "reason": "chain_mismatch"}),
    ("step.started", "manifest-digest-string", {"manifest_digest": SHA}),
    ("run.completed", "integral-float-is-integer", {"duration_ns": 3.0, "event_count": 7.0}),
    ("retrieval.satisfied", "int-in-number-field", {"budget_used_pct": 100}),
    ("retrieval.cascaded", "integral-float-level", {"from_level": 2.0}),
    ("runtime.run_id.env_rejected", "open-source", {"source": "argv"}),
    ("process.reaped", "open-reason", {"reason": "custom_test_path"}),
    ("subagent.disposed", "open-kind-and-reason", {"kind": "embedding_sidecar", "reason": "operator_request"}),
    ("run.aborted", "open-termination-cause", {"termination_cause": "ANYTHING_AT_ALL"}),
    ("response.validated", "open-action-kind", {"kind": "some_new_action"}),
    ("budget.adjusted_by_probes", "probe-signal-number", {"probe_signal": 0.4}),
    ("budget.adjusted_by_probes", "probe-signal-string", {"probe_signal": "coherence_low"}),
    ("memory.cascade_error", "index-open", {"index": "vector2"}),
]

#: Every closed enumeration the document states: (kind, field) -> documented values.
CLOSED_ENUMS: dict[tuple[str, str], tuple[object, ...]] = {
    ("step.committed", "outcome"): ("COMMITTED",),
    ("step.rolled_back", "outcome"): ("ROLLED_BACK", "BLOCKED_ON_HANDSHAKE"),
    ("tool.refused", "refused_by"): ("sandbox", "policy", "handshake", "manifest"),
    ("sandbox.env_scrubbed", "backend"): ("linux-bwrap", "macos-sandbox-exec", "stub"),
    ("sandbox.env_scrubbed", "allowlist_source"): ("manifest", "file", "default"),
    ("predicate.evaluated", "kind"): ("test", "type", "property", "invariant", "artifact"),
    ("handshake.requested", "status"): ("pending",),
    ("handshake.resolved", "status"): ("approved", "rejected", "deferred"),
    ("budget.declared", "function"): ("intake", "research", "plan", "edit"),
    ("budget.declared", "source"): ("composition", "runtime", "cli", "default"),
    ("budget.exceeded", "function"): ("intake", "research", "plan", "edit"),
    ("budget.exceeded", "boundary"): ("input_max", "hard_ceiling"),
    ("probe.evaluated", "probe"): ("needle", "coherence", "adherence"),
    ("tool.invocation.refused", "gate"): ("manifest", "registry", "args", "budget"),
    ("manifest.ledger.refused", "reason"): (
        "lock_contended",
        "disk_full",
        "permission_denied",
        "malformed_payload",
        "chain_mismatch",
    ),
    ("whisperer.contract_violation", "trigger"): ("null_op", "commitment_floor", "both"),
    ("state.budget_capped", "function"): ("intake", "research", "plan", "edit"),
    ("state.budget_capped", "strategy"): ("truncate_tail",),
    ("retrieval.grouping.applied", "rule_fired"): (
        "dataclass_methods",
        "trait_impls",
        "test_subject",
        "function_type_aliases",
    ),
    ("retrieval.grouping.applied", "companion_format"): ("full", "body", "sig", "summary", ""),
    ("substrate.subagent.tree_kill_invoked", "path"): ("poll_exited", "timeout", "explicit", "error"),
    ("runtime.run_id.env_injected", "source"): ("spawn_step_subprocess", "env"),
    ("sidecar.header.missing_refused", "reason"): ("headerless", "unknown_schema", "downgrade"),
    # repair-synthesized closes
    ("run.aborted", "synthesized"): (True,),
    ("step.rolled_back", "synthesized"): (True,),
    ("tool.result", "synthesized"): (True,),
    ("response.received", "synthesized"): (True,),
    ("handshake.resolved", "synthesized"): (True,),
    ("tool.result", "status"): ("unknown",),
    ("response.received", "status"): ("timed_out",),
    ("handshake.resolved", "resolution"): ("interrupted",),
}

#: Fields the document leaves open: any string is accepted.
OPEN_STRINGS: tuple[tuple[str, str], ...] = (
    ("process.reaped", "reason"),
    ("subagent.disposed", "kind"),
    ("subagent.disposed", "reason"),
    ("run.aborted", "termination_cause"),
    ("response.validated", "kind"),
    ("runtime.run_id.env_rejected", "source"),
    ("memory.cascade_error", "index"),
)

#: Field-level invalid values (bounds, patterns, enums) stated by the document:
#: (id, kind, overrides). Each must be rejected by the verifier and the schema.
INVALID: list[tuple[str, str, dict]] = [
    ("score-above-1", "probe.evaluated", {"score": 1.5}),
    ("score-below-0", "probe.evaluated", {"score": -0.01}),
    ("null-op-score-above-1", "whisperer.contract_violation", {"null_op_score": 1.0001}),
    ("null-op-score-below-0", "whisperer.contract_violation", {"null_op_score": -1}),
    ("from-level-0", "retrieval.cascaded", {"from_level": 0}),
    ("from-level-5", "retrieval.cascaded", {"from_level": 5}),
    ("to-level-0", "retrieval.cascaded", {"to_level": 0}),
    ("to-level-5", "retrieval.cascaded", {"to_level": 5}),
    ("pids-33", "substrate.subagent.orphan_reaped", {"pids": list(range(1, 34))}),
    ("pids-string-item", "substrate.subagent.orphan_reaped", {"pids": [1, "2"]}),
    ("pids-bool-item", "substrate.subagent.orphan_reaped", {"pids": [True]}),
    ("pids-fraction-item", "substrate.subagent.orphan_reaped", {"pids": [1.5]}),
    ("orphan-count-negative", "substrate.subagent.orphan_reaped", {"count": -1}),
    ("preview-201", "response.received", {"preview": "x" * 201}),
    ("env-rejected-reason-81", "runtime.run_id.env_rejected", {"reason": "r" * 81}),
    ("stripped-hash-15", "runtime.run_id.env_stripped_from_parent", {"stripped_value_hash": "a1b2c3d4e5f6071"}),
    ("stripped-hash-17", "runtime.run_id.env_stripped_from_parent", {"stripped_value_hash": "a1b2c3d4e5f607189"}),
    ("stripped-hash-upper", "runtime.run_id.env_stripped_from_parent", {"stripped_value_hash": "A1B2C3D4E5F60718"}),
    ("stripped-hash-non-hex", "runtime.run_id.env_stripped_from_parent", {"stripped_value_hash": "g1b2c3d4e5f60718"}),
    ("excerpt-hash-64", "whisperer.contract_violation", {"response_excerpt_hash": SHA}),
    ("full-hash-16", "whisperer.contract_violation", {"response_full_hash": "0123456789abcdef"}),
    ("full-hash-upper", "whisperer.contract_violation", {"response_full_hash": SHA.upper()}),
    ("source-event-id-short", "run.aborted", {"source_event_id": "3fa85f64"}),
    ("source-event-id-upper", "tool.result", {"source_event_id": "3FA85F6417174562B3FC2C963F66AFA6"}),
    ("synthesized-false", "run.aborted", {"synthesized": False}),
    ("synthesized-string", "step.rolled_back", {"synthesized": "true"}),
    ("tool-result-status-ok", "tool.result", {"status": "ok"}),
    ("response-status-ok", "response.received", {"status": "ok"}),
    ("resolution-approved", "handshake.resolved", {"resolution": "approved"}),
    ("resolved-status-pending", "handshake.resolved", {"status": "pending"}),
    ("requested-status-approved", "handshake.requested", {"status": "approved"}),
    ("committed-outcome-rolled-back", "step.committed", {"outcome": "ROLLED_BACK"}),
    ("rolled-back-outcome-committed", "step.rolled_back", {"outcome": "COMMITTED"}),
    ("outcome-lowercase", "step.committed", {"outcome": "committed"}),
    ("refused-by-user", "tool.refused", {"refused_by": "user"}),
    ("gate-policy", "tool.invocation.refused", {"gate": "policy"}),
    ("backend-docker", "sandbox.env_scrubbed", {"backend": "docker"}),
    ("allowlist-source-env", "sandbox.env_scrubbed", {"allowlist_source": "env"}),
    ("scrubbed-count-negative", "sandbox.env_scrubbed", {"scrubbed_count": -1}),
    ("probe-unknown", "probe.evaluated", {"probe": "latency"}),
    ("rule-unknown", "retrieval.grouping.applied", {"rule_fired": "module_siblings"}),
    ("companion-format-signature", "retrieval.grouping.applied", {"companion_format": "SIGNATURE"}),
    ("companion-count-negative", "retrieval.grouping.applied", {"companion_count": -1}),
    ("strategy-summarize", "state.budget_capped", {"strategy": "summarize"}),
    ("capped-function-unknown", "state.budget_capped", {"function": "review"}),
    ("declared-function-unknown", "budget.declared", {"function": "review"}),
    ("declared-source-unknown", "budget.declared", {"source": "env"}),
    ("exceeded-function-unknown", "budget.exceeded", {"function": "review"}),
    ("boundary-unknown", "budget.exceeded", {"boundary": "soft_ceiling"}),
    ("predicate-kind-unknown", "predicate.evaluated", {"kind": "lint"}),
    ("trigger-unknown", "whisperer.contract_violation", {"trigger": "neither"}),
    ("ledger-reason-unknown", "manifest.ledger.refused", {"reason": "timeout"}),
    ("appended-entry-index-negative", "manifest.ledger.appended", {"entry_index": -1}),
    ("tree-kill-path-unknown", "substrate.subagent.tree_kill_invoked", {"path": "sigterm"}),
    ("missing-refused-reason-unknown", "sidecar.header.missing_refused", {"reason": "corrupt"}),
    ("env-injected-source-unknown", "runtime.run_id.env_injected", {"source": "argv"}),
    ("bool-in-integer", "run.completed", {"event_count": True}),
    ("fraction-in-integer", "run.completed", {"duration_ns": 1.5}),
    ("string-in-integer", "process.reaped", {"pid": "4242"}),
    ("bool-in-number", "run.started", {"coverage_gate": False}),
    ("string-in-number", "probe.evaluated", {"score": "0.9"}),
    ("int-in-boolean", "tool.result", {"ok": 1}),
    ("list-in-object", "tool.called", {"arguments": ["-q"]}),
    ("null-in-string", "step.committed", {"branch": None}),
    ("int-in-nullable-string", "step.started", {"manifest_digest": 0}),
    ("narrowing-log-item-not-object", "budget.declared", {"narrowing_log": ["cli"]}),
]

#: Invariant violations: the verifier rejects them; JSON Schema cannot say them.
INVARIANT_INVALID: list[tuple[str, str, dict]] = [
    ("seated-above-cap", "state.budget_capped", {"cap_tokens": 600, "seated_tokens": 601}),
    ("seated-above-cap-zero", "state.budget_capped", {"cap_tokens": 0, "seated_tokens": 1}),
]

# --- generated from the definitions ----------------------------------------

_WRONG_BY_TYPE: dict[str, tuple[object, ...]] = {
    "string": (1, True, [], {}),
    "integer": (True, False, 1.5, "1", None),
    "number": (True, "1.0", None, [1]),
    "boolean": (1, 0, "true", None),
    "object": ([], "x", 1),
    "array": ({}, "x", 1),
    "null": (),
}


def type_confusion_cases() -> Iterator[tuple[str, str, dict]]:
    """For every field of every kind, values of a wrong JSON type."""
    for kind in KINDS:
        for f in kind.fields:
            types = f.types
            if set(types) == set(JSON_TYPES):
                continue
            seen: list[object] = []
            for t in types:
                for wrong in _WRONG_BY_TYPE[t]:
                    if any(
                        _type_of(wrong) == other or (other == "number" and _type_of(wrong) == "integer")
                        for other in types
                    ):
                        continue
                    if any(wrong is s or (type(wrong) is type(s) and wrong == s) for s in seen):
                        continue
                    seen.append(wrong)
                    yield f"{kind.name}.{f.name}={wrong!r}", kind.name, {f.name: wrong}


def enum_cases() -> Iterator[tuple[str, str, dict]]:
    """For every closed enumeration, a value outside it (of the right type)."""
    for kind in KINDS:
        for f in kind.fields:
            if f.enum is None:
                continue
            bad: object = False if f.types == ("boolean",) else "not-a-documented-value"
            yield f"{kind.name}.{f.name}-outside-enum", kind.name, {f.name: bad}


def _type_of(value: object) -> str:
    if value is None:
        return "null"
    if type(value) is bool:
        return "boolean"
    if type(value) is int or (type(value) is float and value.is_integer()):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}[type(value)]


def all_field_invalid_cases() -> list[tuple[str, str, dict]]:
    """(id, kind, payload): hand-written and generated field-level invalid cases."""
    return [(i, k, merged(k, o)) for i, k, o in (*INVALID, *type_confusion_cases(), *enum_cases())]


def all_valid_cases() -> list[tuple[str, str, dict]]:
    """(id, kind, payload) for every valid example."""
    cases = [(f"{k}-valid", k, p) for k, p in VALID.items()]
    cases += [(f"{k}-synthesized", k, p) for k, p in SYNTHESIZED.items()]
    cases += [(f"{k}-{label}", k, merged(k, over)) for k, label, over in EXTRA_VALID]
    return cases
