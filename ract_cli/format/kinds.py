"""The closed RACT event vocabulary: every kind defined once (SPEC §2.5, §2.6).

Source: ``reference/ract-event-schema.md``. The 64 kinds appear below in the
document's order, each as one :class:`~ract_cli.model.KindDef`. The same
definitions drive the verifier (:data:`VALIDATORS`, compiled once at import)
and the published JSON Schemas (:mod:`ract_cli.schema_export`).

Schema versions (SPEC §2.5): kinds listed before the document's
"schema_version 4" section are the base (versions 1-3); 4 adds seven kinds;
6 adds ``state.budget_capped``; 7 ``retrieval.grouping.applied``;
8 ``subagent.disposed``; 9 the twenty kinds of the "v0.5.2 hardening
pipeline" section (its heading says ten).

Conventions used in the definitions:

* A documented key may be absent; undocumented keys are always allowed.
* Closed enumerations are enforced with ``enum=``; vocabularies the document
  calls open ("or a caller-supplied string", "not a closed enum", or a type
  name whose values it never lists) are plain strings.
* ``minimum=0`` only where the document makes it clear a value cannot be
  negative (counts, sizes, token totals, 0-based positions); never on fields
  with a documented ``-1`` sentinel.
* Payloads given only by name (the v9 section) have their type inferred from
  the description; such fields say "(type inferred)" in their description.
"""

from __future__ import annotations

from ract_cli.format.json_types import Payload
from ract_cli.format.model import JSON_TYPES, Field, Invariant, KindDef, PayloadValidator, compile_validator

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import TypedDict, Unpack

__all__ = [
    "KINDS",
    "KINDS_BY_NAME",
    "LATEST_SCHEMA_VERSION",
    "SCHEMA_VERSIONS",
    "VALIDATORS",
    "kinds_for_version",
]

LATEST_SCHEMA_VERSION = 9
SCHEMA_VERSIONS = range(1, LATEST_SCHEMA_VERSION + 1)

# --- field shorthands ----------------------------------------------------

_HEX16 = r"[0-9a-f]{16}"
_HEX32 = r"[0-9a-f]{32}"
_HEX64 = r"[0-9a-f]{64}"
_INFERRED = " (type inferred)"


if TYPE_CHECKING:  # (only ever an annotation: no TypedDict at run time)

    class _Constraints(TypedDict, total=False):
        """The optional constraints of a ``Field``, as the shorthands below pass them on."""

        enum: tuple[object, ...] | None
        minimum: float | None
        maximum: float | None
        max_length: int | None
        pattern: str | None
        items: str | None
        max_items: int | None


def _str(name: str, description: str, **kw: Unpack[_Constraints]) -> Field:
    return Field(name, "string", description, **kw)


def _int(name: str, description: str, **kw: Unpack[_Constraints]) -> Field:
    return Field(name, "integer", description, **kw)


def _count(name: str, description: str) -> Field:
    return Field(name, "integer", description, minimum=0)


def _num(name: str, description: str, **kw: Unpack[_Constraints]) -> Field:
    return Field(name, "number", description, **kw)


def _bool(name: str, description: str) -> Field:
    return Field(name, "boolean", description)


def _obj(name: str, description: str) -> Field:
    return Field(name, "object", description)


def _enum(name: str, description: str, *values: object) -> Field:
    return Field(name, "string", description, enum=values)


_FUNCTIONS = ("intake", "research", "plan", "edit")

# Repair-synthesized close events ("v0.5.1 spec-completeness module_03"):
# additions on top of the base close kinds' payloads.
_SYNTHESIZED = Field(
    "synthesized",
    "boolean",
    "Repair-synthesized close: always true when present; distinguishes a synthesized close from a real one.",
    enum=(True,),
)
_SOURCE_EVENT_ID = _str(
    "source_event_id",
    "Repair-synthesized close: hex id of the open event it closes (by-id pairing).",
    pattern=_HEX32,
)
_SYNTH_REASON = _str("reason", 'Repair-synthesized close: the repair cause ("interrupted" today).')

# Shared payload shapes.
_SANDBOX_FIELDS = (
    _str("manifest_digest", "Digest of the sandbox manifest."),
    _str("reason", "Why the sandbox decided as it did."),
    _obj("details", "Backend-specific structured details."),
)
_STEP_CLOSE_FIELDS = (
    _str("parent_snapshot_before", "Workspace snapshot (git sha) before the step."),
    _str("parent_snapshot_after", "Workspace snapshot (git sha) after the step."),
    _str("branch", "Step branch (rootact/step/<step_id_hex>)."),
)
_ERROR_FIELDS = (
    _str("error_kind", "Kind of the raised error (type inferred)."),
    _str("message", "Error message (type inferred)."),
)


def _seated_within_cap(payload: Payload) -> bool:
    seated = payload.get("seated_tokens")
    cap = payload.get("cap_tokens")
    return seated is None or cap is None or seated <= cap


# --- sections (headings of the reference document) -----------------------

_S_RUN = "Run lifecycle"
_S_STEP = "Step transactions (module_02)"
_S_PROVIDER = "Provider I/O (module_04)"
_S_TOOL = "Tool dispatch"
_S_SANDBOX = "Sandbox (module_03)"
_S_REAP = "Process group reap (v0.5.1 wiring module_05)"
_S_PREDICATE = "Predicates (module_01)"
_S_HANDSHAKE = "Handshakes"
_S_ROOTKNOT = "Rootknot / provenance (module_06 extends)"
_S_ASSUMPTION = "Assumptions"
_S_CONTRACTS = "Contracts (module_06)"
_S_MEMORY = "Memory discipline (module_09, v0.5.0)"
_S_V4 = "v0.5.1 External Review Response (schema_version 4)"
_S_V6 = "v0.5.1 spec-completeness module_02 (schema_version 6)"
_S_V7 = "v0.5.1 spec-completeness module_04 – cross-function grouping (schema_version 7)"
_S_V8 = "v0.5.1 spec-completeness module_07 – subagent cascade (schema_version 8)"
_S_V9 = "v0.5.2 hardening pipeline – ten additive kinds (schema_version 9)"

# --- the vocabulary --------------------------------------------------------

KINDS: tuple[KindDef, ...] = (
    # Run lifecycle
    KindDef(
        "run.started",
        1,
        _S_RUN,
        "Emitted by IntentCompiler.compile after the frozen AcceptanceSuite is built.",
        (
            _str("intent_id", "The suite's intent id (hex UUID)."),
            _str("suite_digest", "Deterministic digest of the compiled suite."),
            _str("compiler_version", "Version of the intent compiler."),
            _count("predicate_count", "Number of predicates in the suite."),
            _count("required_count", "Number of required predicates."),
            _num("coverage_gate", "Coverage gate of the suite."),
        ),
    ),
    KindDef(
        "run.completed",
        1,
        _S_RUN,
        "Emitted at run close when the acceptance gate is satisfied.",
        (
            _str("final_decision", "The run's final decision."),
            _int("duration_ns", "Run duration in nanoseconds."),
            _count("event_count", "Number of events in the run."),
        ),
    ),
    KindDef(
        "run.aborted",
        1,
        _S_RUN,
        "Emitted at run close when the loop halts before the gate is satisfied "
        "(also a repair-synthesized close of run.started).",
        (
            _str("termination_cause", "One of the TerminationCause names (not listed by the document: open)."),
            _str("reason", 'Why the run halted; "interrupted" on a repair-synthesized close.'),
            _int("duration_ns", "Run duration in nanoseconds."),
            _SYNTHESIZED,
            _SOURCE_EVENT_ID,
        ),
    ),
    # Step transactions (module_02)
    KindDef(
        "step.started",
        1,
        _S_STEP,
        "Emitted by open_transaction in ract.core.transaction.",
        (
            _str("parent_snapshot", "Workspace snapshot the step starts from (git sha)."),
            _str("branch", "Step branch (rootact/step/<step_id_hex>)."),
            _count("postcondition_count", "Number of postconditions of the step."),
            Field("manifest_digest", ("string", "null"), "Digest of the step's manifest, or null."),
            _int("timeout_seconds", "Step timeout in seconds."),
        ),
    ),
    KindDef(
        "step.committed",
        1,
        _S_STEP,
        "Emitted by SubstrateLoop._finalize when the worktree commit lands.",
        (
            _enum("outcome", 'Always "COMMITTED".', "COMMITTED"),
            *_STEP_CLOSE_FIELDS,
            _str("reason", "Why the step committed."),
        ),
    ),
    KindDef(
        "step.rolled_back",
        1,
        _S_STEP,
        "Emitted for ROLLED_BACK and BLOCKED_ON_HANDSHAKE outcomes (also a repair-synthesized close of step.started).",
        (
            _enum("outcome", "ROLLED_BACK or BLOCKED_ON_HANDSHAKE.", "ROLLED_BACK", "BLOCKED_ON_HANDSHAKE"),
            *_STEP_CLOSE_FIELDS,
            _str("reason", 'Names the block or failure; "interrupted" on a repair-synthesized close.'),
            _SYNTHESIZED,
            _SOURCE_EVENT_ID,
        ),
    ),
    # Provider I/O (module_04)
    KindDef(
        "prompt.sent",
        1,
        _S_PROVIDER,
        "Emitted by send_with_trace in ract.providers.provider before the provider call.",
        (
            _str("provider", "Provider name."),
            _str("response_shape", "Expected response shape."),
            _str("intent_id", "Intent id of the run."),
            _count("prompt_chars", "Prompt length in characters."),
        ),
    ),
    KindDef(
        "response.received",
        1,
        _S_PROVIDER,
        "Emitted after the provider call returns; carries the response type and up to 200 "
        "characters of the payload (also a repair-synthesized close of prompt.sent).",
        (
            _str("provider", "Provider name."),
            _str("intent_id", "Intent id of the run."),
            _str("response_type", "Type of the response."),
            _str("preview", "Up to 200 characters of the response payload.", max_length=200),
            _SYNTHESIZED,
            _SYNTH_REASON,
            _SOURCE_EVENT_ID,
            _enum(
                "status",
                'Repair-synthesized close: "timed_out" (the request never received a response).',
                "timed_out",
            ),
        ),
    ),
    KindDef(
        "response.validated",
        1,
        _S_PROVIDER,
        "Emitted by ResponseValidator.parse on success.",
        (
            _str("step_id", "Step id."),
            _str("kind", "One of the ActionKind literals (not listed by the document: open)."),
        ),
    ),
    KindDef(
        "response.rejected",
        1,
        _S_PROVIDER,
        "Emitted by ResponseValidator.parse on failure.",
        (
            _str("step_id", "Step id."),
            _str("error", "Validation error."),
            _int("attempt", "Attempt number."),
            _bool("should_halt", "Whether the loop should halt."),
        ),
    ),
    # Tool dispatch
    KindDef(
        "tool.called",
        1,
        _S_TOOL,
        "Emitted at the tool dispatch site (invocation of a PlannedStep's action against the workspace).",
        (
            _str("tool", "Tool name."),
            _obj("arguments", "Tool arguments, redacted per profile."),
        ),
    ),
    KindDef(
        "tool.result",
        1,
        _S_TOOL,
        "Emitted when a tool call returns (also a repair-synthesized close of tool.called).",
        (
            _str("tool", "Tool name."),
            _bool("ok", "Whether the call succeeded."),
            _int("duration_ns", "Call duration in nanoseconds."),
            _SYNTHESIZED,
            _SYNTH_REASON,
            _SOURCE_EVENT_ID,
            _enum(
                "status",
                'Repair-synthesized close: "unknown" (the outcome cannot be reconstructed from the log).',
                "unknown",
            ),
        ),
    ),
    KindDef(
        "tool.refused",
        1,
        _S_TOOL,
        "Emitted when a tool call is refused (sandbox, policy, handshake, or manifest).",
        (
            _str("tool", "Tool name."),
            _str("reason", "Why the call was refused."),
            _enum("refused_by", "Who refused the call.", "sandbox", "policy", "handshake", "manifest"),
        ),
    ),
    # Sandbox (module_03)
    KindDef(
        "sandbox.granted",
        1,
        _S_SANDBOX,
        "Emitted by LinuxSandbox / MacosSandbox on successful enter.",
        _SANDBOX_FIELDS,
    ),
    KindDef(
        "sandbox.denied",
        1,
        _S_SANDBOX,
        "Emitted when enter refuses the manifest.",
        _SANDBOX_FIELDS,
    ),
    KindDef(
        "sandbox.unenforced",
        1,
        _S_SANDBOX,
        "Emitted by UnenforcedSandbox on each enter; loud in the log by design (ADR-0012).",
        _SANDBOX_FIELDS,
    ),
    KindDef(
        "sandbox.env_scrubbed",
        1,
        _S_SANDBOX,
        "Emitted by every sandbox backend on every enter: the environment-allowlist audit of the invocation.",
        (
            _enum("backend", "Which backend rendered the env scrub.", "linux-bwrap", "macos-sandbox-exec", "stub"),
            _enum(
                "allowlist_source",
                "Which source contributed the largest set of surviving names.",
                "manifest",
                "file",
                "default",
            ),
            _count("scrubbed_count", "Environment variables not allowlisted, never passed to the child (count only)."),
            _count(
                "never_passthrough_denied",
                "Allowlist entries declared but refused by the NEVER_PASSTHROUGH deny surface.",
            ),
            _count(
                "credential_shaped_unblocked_count",
                "Credential-shaped allowlist entries the deny surface did NOT catch (passed through).",
            ),
        ),
    ),
    # Process group reap (v0.5.1 wiring module_05)
    KindDef(
        "process.reaped",
        1,
        _S_REAP,
        "Emitted by SubstrateLoop._reap_active_processes once per handle SIGKILL'd.",
        (
            _int("pid", "Parent PID of the reaped tree; -1 when the handle's pid was unreadable."),
            _str("argv0", "Command name (argv[0]) as spawned; empty string when the handle carries no argv."),
            _count("argv_len", "Number of tokens in the spawn argv."),
            _str(
                "reason",
                "Rollback path that fired the reap: postcondition_failed, commit_failed, run_step_exception, "
                "dispose_unsuccessful, or a caller-supplied string (open).",
            ),
            _count(
                "reap_latency_ms",
                "Monotonic delta from spawn to reap in milliseconds; 0 when the spawn timestamp was unreadable.",
            ),
        ),
    ),
    # Predicates (module_01)
    KindDef(
        "predicate.evaluated",
        1,
        _S_PREDICATE,
        "Emitted by AcceptancePredicate.evaluate after every evaluation.",
        (
            _str("predicate_id", "Predicate id."),
            _enum("kind", "Predicate kind.", "test", "type", "property", "invariant", "artifact"),
            _bool("required", "Whether the predicate is required."),
            _bool("ok", "Whether the predicate held."),
            _str("reason", "Why the predicate held or failed."),
            _int("duration_ns", "Evaluation duration in nanoseconds."),
        ),
    ),
    # Handshakes
    KindDef(
        "handshake.requested",
        1,
        _S_HANDSHAKE,
        "Emitted by HandshakeRegistry.add.",
        (
            _str("milestone_id", "Milestone id."),
            _enum("status", 'Always "pending" at request time.', "pending"),
            _str("description", "What the handshake asks for."),
            _str("reason", "Why the handshake was requested."),
        ),
    ),
    KindDef(
        "handshake.resolved",
        1,
        _S_HANDSHAKE,
        "Emitted by HandshakeRegistry.update_status (also a repair-synthesized close of handshake.requested).",
        (
            _str("milestone_id", "Milestone id."),
            _enum("status", "Resolution status.", "approved", "rejected", "deferred"),
            _str("description", "What the handshake asked for."),
            _str("reason", 'Why it was resolved so; "interrupted" on a repair-synthesized close.'),
            _SYNTHESIZED,
            _SOURCE_EVENT_ID,
            _enum("resolution", 'Repair-synthesized close: "interrupted".', "interrupted"),
        ),
    ),
    # Rootknot / provenance (module_06 extends)
    KindDef(
        "rootknot.created",
        1,
        _S_ROOTKNOT,
        "Emitted by ProvenanceIndex.save.",
        (
            _str("workspace_path", "Workspace path."),
            _str("plan_id", "Plan id (hex UUID)."),
            _str("step_id_ref", "Step id (hex UUID)."),
            _str("artifact_digest", "Digest of the artifact."),
            _str("assumption_digest", "Digest of the assumptions."),
        ),
    ),
    KindDef(
        "rootknot.verified",
        1,
        _S_ROOTKNOT,
        "Emitted by verify_workspace per verified knot.",
        (
            _str("workspace_path", "Workspace path."),
            _str("artifact_digest", "Digest of the artifact."),
        ),
    ),
    # Assumptions
    KindDef(
        "assumption.proposed",
        1,
        _S_ASSUMPTION,
        "Emitted by AssumptionRegistry.propose.",
        (
            _str("assumption_id", "Assumption id (hex UUID)."),
            _str("digest", "Digest of the assumption."),
            _str("text", "Text of the assumption."),
        ),
    ),
    KindDef(
        "assumption.discharged",
        1,
        _S_ASSUMPTION,
        "Emitted by AssumptionRegistry.discharge.",
        (
            _str("assumption_id", "Assumption id (hex UUID)."),
            _str("digest", "Digest of the assumption."),
        ),
    ),
    KindDef(
        "assumption.violated",
        1,
        _S_ASSUMPTION,
        "Emitted by AssumptionRegistry.violate for the primary and every propagated dependent.",
        (
            _str("assumption_id", "Assumption id (hex UUID)."),
            _str("root_id", "The originating assumption id."),
        ),
    ),
    # Contracts (module_06)
    KindDef(
        "auction.proposal",
        1,
        _S_CONTRACTS,
        "Emitted by AuctionSweep.run, one event per staged DeletionProposal.",
        (
            _str("workspace_path", "Workspace-relative path of the proposed deletion."),
            _int("last_modified_days", "File age at scan time, in days."),
            _count("inbound_references", "Count of graph edges into the target from other modules."),
            _str("reason", "Short human-readable justification."),
        ),
    ),
    # Memory discipline (module_09, v0.5.0)
    KindDef(
        "budget.declared",
        1,
        _S_MEMORY,
        "Emitted when a memory-discipline function declares its per-invocation budget.",
        (
            _enum("function", "The memory-discipline function.", *_FUNCTIONS),
            _obj("declaration", "BudgetDeclaration.asdict."),
            Field("narrowing_log", "array", "List of BudgetNarrowing dicts.", items="object"),
            _enum("source", "Where the budget came from.", "composition", "runtime", "cli", "default"),
        ),
    ),
    KindDef(
        "budget.exceeded",
        1,
        _S_MEMORY,
        "Emitted by refuse_over_ceiling before the paired BudgetExceededError raise.",
        (
            _enum("function", "The memory-discipline function.", *_FUNCTIONS),
            _str("section_name", "Section that exceeded the budget."),
            _int("delta", "Amount over the boundary."),
            _enum("boundary", "Which boundary was exceeded.", "input_max", "hard_ceiling"),
        ),
    ),
    KindDef(
        "retrieval.requested",
        1,
        _S_MEMORY,
        "Emitted by retrieve() at cascade entry.",
        (
            _obj("canonical_query", "canonical_query_payload output."),
            _int("budget", "Retrieve-local sub-budget."),
            _str("call_id", "Retrieve call id (hex)."),
        ),
    ),
    KindDef(
        "retrieval.satisfied",
        1,
        _S_MEMORY,
        "Emitted by retrieve() on a returned bundle and by SubstrateLoop.run_step when the step's spec "
        "carries a retrieval bundle.",
        (
            _str("call_id", "Retrieve call id (hex)."),
            _count("total_tokens", "Total tokens of the bundle."),
            _num("budget_used_pct", "Share of the budget used, in percent."),
            _str("step_id", "Step id (hex), on the loop-side emission."),
        ),
    ),
    KindDef(
        "retrieval.cascaded",
        1,
        _S_MEMORY,
        "Emitted when the four-level retrieve cascade downgrades a level.",
        (
            _str("call_id", "Retrieve call id (hex)."),
            _int("from_level", "Cascade level before the downgrade (1-4).", minimum=1, maximum=4),
            _int("to_level", "Cascade level after the downgrade (1-4).", minimum=1, maximum=4),
            _str("reason", "Why the level was downgraded."),
        ),
    ),
    KindDef(
        "retrieval.refused",
        1,
        _S_MEMORY,
        "Emitted when the retrieve cascade exhausts every level and returns an empty bundle.",
        (
            _str("call_id", "Retrieve call id (hex)."),
            _str("reason", "Why retrieval was refused."),
        ),
    ),
    KindDef(
        "probe.evaluated",
        1,
        _S_MEMORY,
        "Emitted by the self-adjustment probe scheduler on each probe completion.",
        (
            _enum("probe", "Which probe ran.", "needle", "coherence", "adherence"),
            _num("score", "Probe score, 0.0-1.0.", minimum=0, maximum=1),
            _str("repo_fingerprint", "Repository fingerprint (hex)."),
            _str("note", "Free-form note."),
        ),
    ),
    # v0.5.1 External Review Response (schema_version 4)
    KindDef(
        "assumption.accepted",
        4,
        _S_V4,
        "Emitted by AssumptionRegistry.accept when a proposed assumption is durably persisted to the WAL.",
        (
            _str("run_id", "Run id (hex; ambient or empty)."),
            _str("assumption_id", "Assumption id (hex UUID)."),
            _str("evidence_digest", "SHA-256 of the evidence bytes that justified acceptance."),
        ),
    ),
    KindDef(
        "tool.invocation.pre",
        4,
        _S_V4,
        "Emitted by ToolInvocationGate.invoke before the tool callable runs, after all four gates accepted.",
        (
            _str("run_id", "Run id (hex; ambient)."),
            _str("tool_id", "Tool id."),
            _str("args_repr", "Bounded, privacy-safe repr of the call arguments."),
            _count("budget_used", "Invocations already consumed this step."),
            _int("budget_max", "Per-step ceiling from InvocationBudget.max_invocations."),
        ),
    ),
    KindDef(
        "tool.invocation.post",
        4,
        _S_V4,
        "Emitted by ToolInvocationGate.invoke after the tool callable returns or raises.",
        (
            _str("run_id", "Run id (hex)."),
            _str("tool_id", "Tool id."),
            _bool("ok", "Whether the callable returned (true) or raised (false)."),
            _num("latency_ms", "Call latency in milliseconds."),
            _count("result_size_bytes", "On success: approximate serialised size of the return value."),
            _str("exception", "On failure: type(exc).__name__ of the raised exception."),
        ),
    ),
    KindDef(
        "tool.invocation.refused",
        4,
        _S_V4,
        "Emitted by ToolInvocationGate._refuse when any of the four gates rejects a call.",
        (
            _str("run_id", "Run id (hex)."),
            _str("tool_id", "Tool id."),
            _enum("gate", "Which gate rejected the call.", "manifest", "registry", "args", "budget"),
            _str("reason", "Short human-readable diagnostic."),
            _obj("details", "Gate-specific structured payload."),
        ),
    ),
    KindDef(
        "manifest.ledger.appended",
        4,
        _S_V4,
        "Emitted by ManifestLedger.append on every successful entry write.",
        (
            _count("entry_index", "0-based ledger position of the appended entry."),
            _str("manifest_digest", "Hex of the observed manifest's canonical digest."),
            _str("prev_ledger_hash", "Hex of the previous entry's chain hash, or the GENESIS sentinel."),
            _count("tool_ids_invoked_count", "Number of distinct tool ids invoked in the step at append time."),
        ),
    ),
    KindDef(
        "manifest.ledger.refused",
        4,
        _S_V4,
        "Emitted by the ledger observer when a ledger is bound but the append fails.",
        (
            _int("entry_index", "Attempted ledger position; -1 when it could not be resolved."),
            _enum(
                "reason",
                "Why the append failed.",
                "lock_contended",
                "disk_full",
                "permission_denied",
                "malformed_payload",
                "chain_mismatch",
            ),
            _obj("details", "Free-form structured diagnostic (exception_name, exception_message, ...)."),
        ),
    ),
    KindDef(
        "whisperer.contract_violation",
        4,
        _S_V4,
        "Emitted by SycophancyClassification.emit_event whenever is_sycophantic is true.",
        (
            _str("run_id", "Run id (hex; ambient or empty)."),
            _count("commitment_count", "Sum of AST commitments and factual claims."),
            _int("floor", "MIN_COMMITMENT_FLOOR at classify time (default 3)."),
            _str(
                "response_excerpt_hash",
                "16-hex prefix of SHA-256 over the first 256 bytes of the response.",
                pattern=_HEX16,
            ),
            _str("response_full_hash", "64-hex SHA-256 over the entire response body.", pattern=_HEX64),
            _num("null_op_score", "Null-op score, 0.0-1.0.", minimum=0, maximum=1),
            _num("null_op_threshold", "NULL_OP_SCORE_THRESHOLD in effect at classify time (default 0.7)."),
            _enum("trigger", "Which signal fired.", "null_op", "commitment_floor", "both"),
            _bool("used_regex_fallback", "True when grammar-parse failed and the classifier used the regex fallback."),
        ),
    ),
    # v0.5.1 spec-completeness module_02 (schema_version 6)
    KindDef(
        "state.budget_capped",
        6,
        _S_V6,
        "Emitted by seat_state_section when the state_context section exceeds floor(0.15 * input_target).",
        (
            _enum("function", "The memory-discipline function.", *_FUNCTIONS),
            _count("cap_tokens", "floor(0.15 * input_target)."),
            _count("requested_tokens", "Pre-truncate seated size."),
            _count("seated_tokens", "Post-truncate seated size; always <= cap_tokens."),
            _count("dropped_entry_count", "Lines dropped by the truncation walk."),
            _enum("strategy", "Truncation strategy (currently only truncate_tail).", "truncate_tail"),
            _str("requested_hash", "SHA-256 hex of the pre-truncate content."),
        ),
        (Invariant("seated_tokens <= cap_tokens", _seated_within_cap),),
    ),
    # v0.5.1 spec-completeness module_04 - cross-function grouping (schema_version 7)
    KindDef(
        "retrieval.grouping.applied",
        7,
        _S_V7,
        "Emitted once per (primary, rule) pair when a grouping rule fires for a primary symbol seated in the bundle.",
        (
            _str("call_id", "Retrieve call id (hex)."),
            _int("primary_symbol_id", "Id of the primary symbol; -1 when the primary had no id."),
            _count("companion_count", "Companions seated into the bundle at this format cascade level."),
            _enum(
                "rule_fired",
                "The grouping rule that fired.",
                "dataclass_methods",
                "trait_impls",
                "test_subject",
                "function_type_aliases",
            ),
            _enum(
                "companion_format",
                "ChunkFormat the companions were rendered under; empty string when companion_count == 0.",
                "full",
                "body",
                "sig",
                "summary",
                "",
            ),
            _count("dropped_companion_count", "Companions the rule identified but the budget floor dropped."),
        ),
    ),
    # v0.5.1 spec-completeness module_07 - subagent cascade (schema_version 8)
    KindDef(
        "subagent.disposed",
        8,
        _S_V8,
        "Emitted per subagent handle disposed during a non-T1 cascade.",
        (
            _str("kind", 'Short role string; open vocabulary (e.g. "subprocess", "inline", "lsp").'),
            _obj("descriptor", "Free-form dict the caller attached at registration."),
            _str(
                "reason",
                'Cascade cause: "dispose_unsuccessful", "run_step_exception", or a caller-supplied string (open).',
            ),
            _bool("ok", "True on successful dispose, false when dispose returned False or raised."),
        ),
    ),
    # v0.5.2 hardening pipeline (schema_version 9); payloads given by name only.
    KindDef(
        "substrate.subagent.tree_kill_invoked",
        9,
        _S_V9,
        "Emitted every time SubprocessSubagentHandle.dispose calls into process_group.kill_tree.",
        (
            _int("pid", "PID of the subagent" + _INFERRED + "."),
            _int("creation_time_ns", "Process creation time in nanoseconds" + _INFERRED + "."),
            _enum("path", "Which dispose path invoked the tree-kill.", "poll_exited", "timeout", "explicit", "error"),
        ),
    ),
    KindDef(
        "substrate.subagent.pid_reuse_detected",
        9,
        _S_V9,
        "Emitted when process_identity.same_process refuses a signal because the pid's creation time changed.",
        (
            _int("stored_pid", "PID captured at spawn" + _INFERRED + "."),
            _int("stored_ctime", "creation_time_ns captured at spawn" + _INFERRED + "."),
            _int("current_ctime", "creation_time_ns of the pid right now" + _INFERRED + "."),
        ),
    ),
    KindDef(
        "substrate.subagent.orphan_reaped",
        9,
        _S_V9,
        "Emitted when tree-kill actually terminated live descendants after the parent Popen exited.",
        (
            _count("count", "Number of descendants reaped."),
            Field("pids", "array", "PIDs reaped, capped at 32.", items="integer", max_items=32),
        ),
    ),
    KindDef(
        "runtime.run_id.env_injected",
        9,
        _S_V9,
        "Emitted when RACT_RUN_ID is plumbed into a spawned child, or a subagent binds its ambient from it.",
        (
            _str("run_id", "The injected run id" + _INFERRED + "."),
            _int("child_pid", "PID of the child" + _INFERRED + "."),
            _enum("source", "Where the injection happened.", "spawn_step_subprocess", "env"),
        ),
    ),
    KindDef(
        "runtime.run_id.env_rejected",
        9,
        _S_V9,
        "Emitted when bootstrap_ambient_from_env discards a RACT_RUN_ID value that fails the format regex.",
        (
            _str("reason", "Why the value was rejected, truncated to at most 80 characters.", max_length=80),
            _int("child_pid", "PID of the child" + _INFERRED + "."),
            _str("source", 'Where the value came from (typically "env"; open).'),
        ),
    ),
    KindDef(
        "runtime.run_id.env_stripped_from_parent",
        9,
        _S_V9,
        "Emitted when _inject_ract_run_id_env discards a caller-supplied RACT_RUN_ID; the raw value is never logged.",
        (
            _str("stripped_key", "Name of the stripped environment key" + _INFERRED + "."),
            _str("stripped_value_hash", "16-hex prefix of the SHA-256 of the stripped value.", pattern=_HEX16),
        ),
    ),
    KindDef(
        "runtime.run_id.orphan_generated",
        9,
        _S_V9,
        "Emitted when a subagent is invoked without RACT_RUN_ID and binds a synthetic RUN-ORPHAN-{uuid}.",
        (
            _str("synthetic_run_id", "The generated RUN-ORPHAN-{uuid} id" + _INFERRED + "."),
            _str("reason", "Why an orphan id was generated" + _INFERRED + "."),
            _int("child_pid", "PID of the child" + _INFERRED + "."),
        ),
    ),
    KindDef(
        "sidecar.header.written",
        9,
        _S_V9,
        "Emitted each time a sidecar writer emits a header.",
        (
            _str("path", "Path of the sidecar" + _INFERRED + "."),
            _str("sidecar_type", "Type of the sidecar" + _INFERRED + "."),
            _int("schema_version", "Schema version written in the header" + _INFERRED + "."),
            _str("run_id", "Run id written in the header" + _INFERRED + "."),
        ),
    ),
    KindDef(
        "sidecar.header.missing_refused",
        9,
        _S_V9,
        "Emitted when read_sidecar_header refuses a headerless sidecar in strict mode, or a header that "
        "violates schema-allowlist / downgrade policy.",
        (
            _str("path", "Path of the sidecar" + _INFERRED + "."),
            _enum("reason", "Why the sidecar was refused.", "headerless", "unknown_schema", "downgrade"),
        ),
    ),
    KindDef(
        "sidecar.header.mismatch_refused",
        9,
        _S_V9,
        "Emitted when the header run_id differs from the verifier's expected_run_id.",
        (
            _str("path", "Path of the sidecar" + _INFERRED + "."),
            _str("header_run_id", "run_id found in the header" + _INFERRED + "."),
            _str("expected_run_id", "run_id the verifier expected" + _INFERRED + "."),
        ),
    ),
    KindDef(
        "budget.clamp_refused",
        9,
        _S_V9,
        "Emitted by request_budget when a probe-informed clamp would drop the input target below the declared floor.",
        (
            _str("call_id", "Budget request id" + _INFERRED + "."),
            _int("declared_target", "Caller's declared input target" + _INFERRED + "."),
            _int("proposed_target", "Target the clamp proposed" + _INFERRED + "."),
            _int("floor", "Caller's declared floor" + _INFERRED + "."),
            _str("reason", "Why the clamp was refused" + _INFERRED + "."),
        ),
    ),
    KindDef(
        "budget.adjusted_by_probes",
        9,
        _S_V9,
        "Emitted by request_budget when a probe-informed clamp is applied.",
        (
            _str("call_id", "Budget request id" + _INFERRED + "."),
            _int("declared_target", "Caller's declared input target" + _INFERRED + "."),
            _int("adjusted_target", "Reduced input target that replaces the declared one" + _INFERRED + "."),
            Field(
                "probe_signal",
                JSON_TYPES,
                "The probe signal that informed the clamp (type undocumented and not inferable: any JSON value).",
            ),
        ),
    ),
    KindDef(
        "tool.invocation.bypassed",
        9,
        _S_V9,
        "Emitted by run_step when the step skipped a declared tool invocation.",
        (
            _str("tool_id", "Tool id" + _INFERRED + "."),
            _str("reason", "Why the invocation was skipped (dry-run guard, allowlist refusal, precondition failure)."),
            _str("step_id", "Step id" + _INFERRED + "."),
        ),
    ),
    KindDef(
        "laziness.skipped",
        9,
        _S_V9,
        "Emitted by antilazy.pre_commit when the pre-commit gate elects not to run for the current diff.",
        (
            _str("reason", "Why the gate did not run (small edit, docs-only, operator opt-out)" + _INFERRED + "."),
            _str("diff_summary", "Summary of the diff" + _INFERRED + "."),
        ),
    ),
    KindDef(
        "whisperer.classifier_error",
        9,
        _S_V9,
        "Emitted by the loop controller when the sycophancy classifier raises.",
        _ERROR_FIELDS,
    ),
    KindDef(
        "laziness.gate_error",
        9,
        _S_V9,
        "Emitted by the loop controller when the anti-laziness gate raises.",
        _ERROR_FIELDS,
    ),
    KindDef(
        "memory.probe_scheduler_error",
        9,
        _S_V9,
        "Emitted by the loop controller when the probe scheduler raises.",
        _ERROR_FIELDS,
    ),
    KindDef(
        "memory.composition_runner_error",
        9,
        _S_V9,
        "Emitted by the loop controller when the context-composition runner raises.",
        _ERROR_FIELDS,
    ),
    KindDef(
        "memory.cascade_error",
        9,
        _S_V9,
        "Emitted by MemoryWatcher when one index in the memory cascade fails to attach.",
        (
            _str(
                "index", "The index that failed (semantic / symbol / lexical; not stated as closed)" + _INFERRED + "."
            ),
            *_ERROR_FIELDS,
        ),
    ),
    KindDef(
        "memory.freshness_gap",
        9,
        _S_V9,
        "Emitted by MemoryWatcher when an index's freshness trails the workspace clock beyond the policy threshold.",
        (
            _str("index", "The trailing index" + _INFERRED + "."),
            _int("gap_ms", "How far the index trails, in milliseconds" + _INFERRED + "."),
            _int("threshold_ms", "Policy threshold in milliseconds" + _INFERRED + "."),
        ),
    ),
)

KINDS_BY_NAME: dict[str, KindDef] = {k.name: k for k in KINDS}
if len(KINDS_BY_NAME) != len(KINDS):  # pragma: no cover - definition error
    raise RuntimeError("a kind is defined twice in ract_cli.kinds")

_VOCABULARY: dict[int, frozenset[str]] = {
    n: frozenset(k.name for k in KINDS if k.version <= n) for n in SCHEMA_VERSIONS
}


def kinds_for_version(n: int) -> frozenset[str]:
    """Return the closed vocabulary of schema version ``n`` (1..9)."""
    if type(n) is not int or n not in _VOCABULARY:
        raise ValueError(f"unknown schema version {n!r}: expected an integer in 1..{LATEST_SCHEMA_VERSION}")
    return _VOCABULARY[n]


VALIDATORS: dict[str, PayloadValidator] = {k.name: compile_validator(k) for k in KINDS}
