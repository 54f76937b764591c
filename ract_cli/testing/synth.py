"""Seeded generator of realistic runs, written through ``EventWriter``.

Used for the committed fixtures (``scripts/gen_fixtures.py``), the
benchmark log (``bench/bench.py``) and tests. Same seed, same bytes: ids
come from the seeded RNG and time from a fake clock, never from the host.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from ract_cli.writer.event_writer import EventWriter, FsyncPolicy

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


def fixture_run_id(name: str) -> str:
    """Fixture runs get a run_id derived from their name (and live in a dir of that name)."""
    return hashlib.sha256(f"ract.fixture:{name}".encode()).hexdigest()[:32]


@dataclass
class RunBuilder:
    """Writes one run's events with realistic payloads; every kind can be emitted."""

    writer: EventWriter
    rng: random.Random
    ts: int = BASE_TS
    step_id: str | None = None
    snapshot: str = field(default="")
    intent_id: str = ""
    emitted: set[str] = field(default_factory=set)
    count: int = 0  # events written by this builder

    def __post_init__(self) -> None:
        self.snapshot = self.sha1()
        self.intent_id = self.hex(32)

    # random helpers
    def hex(self, n: int) -> str:
        return f"{self.rng.getrandbits(4 * n):0{n}x}"

    def sha1(self) -> str:
        return self.hex(40)

    def text(self) -> str:
        return self.rng.choice(UNICODE_SNIPPETS)

    def tick(self) -> int:
        self.ts += self.rng.randint(50_000, 400_000_000)
        return self.ts

    def emit(self, kind: str, payload: dict, *, parent_id: str | None = None, step_id: str | None = "current") -> dict:
        self.emitted.add(kind)
        self.count += 1
        sid = self.step_id if step_id == "current" else step_id
        return self.writer.append(kind, payload, step_id=sid, parent_id=parent_id, timestamp_ns=self.tick())

    # run lifecycle
    def start_run(self) -> dict:
        return self.emit(
            "run.started",
            {
                "intent_id": self.intent_id,
                "suite_digest": "sha256:" + self.hex(64),
                "compiler_version": "0.4.0",
                "predicate_count": 4,
                "required_count": 3,
                "coverage_gate": 0.85,
            },
            step_id=None,
        )

    def complete_run(self, events_so_far: int) -> dict:
        return self.emit(
            "run.completed",
            {"final_decision": "accept", "duration_ns": self.ts - BASE_TS, "event_count": events_so_far + 1},
            step_id=None,
        )

    def abort_run(self, cause: str = "BUDGET_EXHAUSTED") -> dict:
        return self.emit(
            "run.aborted",
            {"termination_cause": cause, "reason": "budget exhausted after rollback", "duration_ns": self.ts - BASE_TS},
            step_id=None,
        )

    # one step with provider and tool traffic
    def step(self, *, commit: bool = True, tools: int = 2) -> None:
        self.step_id = self.hex(32)
        started = self.emit(
            "step.started",
            {
                "parent_snapshot": self.snapshot,
                "branch": f"rootact/step/{self.step_id}",
                "postcondition_count": self.rng.randint(1, 4),
                "manifest_digest": "sha256:" + self.hex(64),
                "timeout_seconds": 600,
            },
        )
        call_id = self.hex(32)
        self.emit(
            "retrieval.requested",
            {
                "canonical_query": {
                    "symbols": ["Foo.bar", "baz"],
                    "k": 8,
                    "filters": {"lang": "python", "recent": True},
                },
                "budget": 4000,
                "call_id": call_id,
            },
        )
        self.emit(
            "retrieval.satisfied",
            {
                "call_id": call_id,
                "total_tokens": self.rng.randint(100, 4000),
                "budget_used_pct": round(self.rng.uniform(1, 99), 3),
                "step_id": self.step_id,
            },
        )
        provider = self.rng.choice(PROVIDERS)
        prompt = self.emit(
            "prompt.sent",
            {
                "provider": provider,
                "response_shape": "action",
                "intent_id": self.intent_id,
                "prompt_chars": self.rng.randint(200, 90_000),
            },
        )
        self.emit(
            "response.received",
            {
                "provider": provider,
                "intent_id": self.intent_id,
                "response_type": "tool_use",
                "preview": ("plan: " + self.text())[:200],
            },
            parent_id=prompt["id"],
        )
        self.emit("response.validated", {"step_id": self.step_id, "kind": "edit"})
        for _ in range(tools):
            tool = self.rng.choice(TOOLS)
            self.emit(
                "tool.invocation.pre",
                {
                    "run_id": self.writer.run_id,
                    "tool_id": tool,
                    "args_repr": f"{tool}(path='src/m.py')",
                    "budget_used": 1,
                    "budget_max": 16,
                },
            )
            call = self.emit(
                "tool.called",
                {
                    "tool": tool,
                    "arguments": {
                        "argv": [tool, "--flag", self.text()],
                        "cwd": "/workspace",
                        "env": {"LANG": "C.UTF-8"},
                        "limits": {"cpu_s": 30, "mem_mb": 512.5},
                        "nested": [{"depth": 1, "items": [1, 2.5, None, True]}],
                    },
                },
            )
            ok = self.rng.random() > 0.2
            self.emit(
                "tool.result",
                {"tool": tool, "ok": ok, "duration_ns": self.rng.randint(10**5, 10**10)},
                parent_id=call["id"],
            )
            post = {
                "run_id": self.writer.run_id,
                "tool_id": tool,
                "ok": ok,
                "latency_ms": round(self.rng.uniform(0.1, 5000), 3),
            }
            post.update(
                {"result_size_bytes": self.rng.randint(0, 10**6)} if ok else {"exception": "CalledProcessError"}
            )
            self.emit("tool.invocation.post", post)
        for pid in ("tests-pass", "types-check"):
            self.emit(
                "predicate.evaluated",
                {
                    "predicate_id": pid,
                    "kind": "test" if pid == "tests-pass" else "type",
                    "required": True,
                    "ok": commit,
                    "reason": "ok" if commit else "2 failing",
                    "duration_ns": self.rng.randint(10**6, 10**9),
                },
            )
        before = self.snapshot
        if commit:
            self.snapshot = self.sha1()
            self.emit(
                "step.committed",
                {
                    "outcome": "COMMITTED",
                    "parent_snapshot_before": before,
                    "parent_snapshot_after": self.snapshot,
                    "branch": f"rootact/step/{self.step_id}",
                    "reason": "postconditions satisfied",
                },
                parent_id=started["id"],
            )
        else:
            self.emit(
                "process.reaped",
                {
                    "pid": self.rng.randint(1000, 60000),
                    "argv0": "pytest",
                    "argv_len": 4,
                    "reason": "postcondition_failed",
                    "reap_latency_ms": self.rng.randint(0, 5000),
                },
            )
            self.emit(
                "step.rolled_back",
                {
                    "outcome": "ROLLED_BACK",
                    "parent_snapshot_before": before,
                    "parent_snapshot_after": before,
                    "branch": f"rootact/step/{self.step_id}",
                    "reason": "postcondition_failed",
                },
                parent_id=started["id"],
            )
        self.step_id = None

    def every_other_kind(self) -> None:
        """Emit each kind the ordinary step does not, once, with a valid payload."""
        h, rid = self.hex, self.writer.run_id
        self.step_id = self.hex(32)
        started = self.emit(
            "step.started",
            {
                "parent_snapshot": self.snapshot,
                "branch": f"rootact/step/{self.step_id}",
                "postcondition_count": 1,
                "manifest_digest": None,
                "timeout_seconds": 60,
            },
        )
        req = self.emit(
            "handshake.requested",
            {
                "milestone_id": "m-deploy",
                "status": "pending",
                "description": "approve deploy to staging",
                "reason": "policy",
            },
        )
        self.emit(
            "handshake.resolved",
            {
                "milestone_id": "m-deploy",
                "status": "approved",
                "description": "approve deploy to staging",
                "reason": "operator ok",
            },
            parent_id=req["id"],
        )
        call_id = h(32)
        assumption = h(32)
        payloads: list[tuple[str, dict]] = [
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
                {"step_id": self.step_id, "error": "missing field 'path'", "attempt": 1, "should_halt": False},
            ),
            ("tool.refused", {"tool": "curl", "reason": "network not in manifest", "refused_by": "sandbox"}),
            (
                "rootknot.created",
                {
                    "workspace_path": "src/pkg/mod.py",
                    "plan_id": h(32),
                    "step_id_ref": self.step_id,
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
                    "text": "the API is stable — " + self.text(),
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
            ("probe.evaluated", {"probe": "needle", "score": 0.9375, "repo_fingerprint": h(40), "note": self.text()}),
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
            ("tool.invocation.bypassed", {"tool_id": "deploy", "reason": "dry-run guard", "step_id": self.step_id}),
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
        for kind, payload in payloads:
            self.emit(kind, payload)
        self.emit(
            "step.rolled_back",
            {
                "outcome": "BLOCKED_ON_HANDSHAKE",
                "parent_snapshot_before": self.snapshot,
                "parent_snapshot_after": self.snapshot,
                "branch": f"rootact/step/{self.step_id}",
                "reason": "blocked on handshake m-release",
            },
            parent_id=started["id"],
        )
        self.step_id = None


def _writer(path: Path, run_id: str, rng: random.Random) -> EventWriter:
    return EventWriter(
        path,
        run_id=run_id,
        fsync=FsyncPolicy.NEVER,
        redaction=None,  # fixtures never depend on ./ract.yaml
        new_id=lambda: f"{rng.getrandbits(128):032x}",
    )


def write_completed(path: Path, run_id: str, *, seed: int = 1, steps: int = 6) -> None:
    """A completed run that uses 63 of the 64 kinds: all but ``run.aborted`` (see fixtures/README.md)."""
    rng = random.Random(seed)
    with _writer(path, run_id, rng) as w:
        b = RunBuilder(w, rng)
        b.start_run()
        for i in range(steps):
            b.step(commit=(i % 3 != 2))
            if i == steps // 2:
                b.every_other_kind()
        b.complete_run(b.count)


def write_aborted(path: Path, run_id: str, *, seed: int = 2) -> None:
    rng = random.Random(seed)
    with _writer(path, run_id, rng) as w:
        b = RunBuilder(w, rng)
        b.start_run()
        b.step(commit=True)
        b.step(commit=False)
        b.abort_run()


def write_interrupted(path: Path, run_id: str, *, seed: int = 3) -> None:
    """Killed mid-step: open step, tool call in flight, unanswered prompt, pending handshake, torn last line."""
    rng = random.Random(seed)
    with _writer(path, run_id, rng) as w:
        b = RunBuilder(w, rng)
        b.start_run()
        b.step(commit=True)
        b.step_id = b.hex(32)
        b.emit(
            "step.started",
            {
                "parent_snapshot": b.snapshot,
                "branch": f"rootact/step/{b.step_id}",
                "postcondition_count": 2,
                "manifest_digest": None,
                "timeout_seconds": 600,
            },
        )
        b.emit(
            "prompt.sent",
            {"provider": "anthropic", "response_shape": "action", "intent_id": b.intent_id, "prompt_chars": 5120},
        )
        b.emit("tool.called", {"tool": "pytest", "arguments": {"argv": ["pytest", "-x"], "cwd": "/workspace"}})
        b.emit(
            "handshake.requested",
            {
                "milestone_id": "m-merge",
                "status": "pending",
                "description": "merge to main",
                "reason": "policy requires approval",
            },
        )
    # the writer was killed while writing one more event: half a line, no newline
    with open(path, "ab") as f:
        f.write(
            b'{"hash":"'
            + hashlib.sha256(b"torn").hexdigest().encode()
            + b'","id":"'
            + b"7" * 32
            + b'","kind":"tool.res'
        )


def write_tampered(path: Path, run_id: str, *, seed: int = 4) -> None:
    """A completed run with one tool.result edited after the fact (ok flipped, hash left as it was)."""
    write_completed(path, run_id, seed=seed, steps=3)
    lines = path.read_bytes().split(b"\n")
    for i, line in enumerate(lines):
        if b'"kind":"tool.result"' in line and b'"ok":false' in line:
            lines[i] = line.replace(b'"ok":false', b'"ok":true', 1)
            break
    else:
        raise AssertionError("fixture generator: no failed tool.result to tamper with")
    path.write_bytes(b"\n".join(lines))


def write_foreign_format(path: Path, run_id: str, *, seed: int = 5) -> None:
    """Valid events as another writer would format them: spaces, \\u escapes, other key order."""
    write_aborted(path, run_id, seed=seed)
    out = []
    for line in path.read_bytes().splitlines():
        event = json.loads(line)
        reordered = dict(reversed(list(event.items())))
        out.append(json.dumps(reordered, ensure_ascii=True, separators=(", ", ": ")).encode() + b"\r\n")
    path.write_bytes(b"".join(out))


FIXTURES = {
    "completed": (write_completed, "a completed run using every kind but run.aborted; verifies clean (exit 0)"),
    "aborted": (write_aborted, "a run aborted after a rollback (run.aborted, process.reaped); exit 0"),
    "interrupted": (
        write_interrupted,
        "killed mid-step: open step, tool call, prompt, handshake, torn last line; exit 4",
    ),
    "tampered": (write_tampered, "one tool.result's ok flipped after writing: HASH_MISMATCH, exit 1"),
    "foreign-format": (write_foreign_format, "valid events with spaces, \\u escapes, reversed keys, CRLF; exit 0"),
}


def fixture_path(root: Path, name: str) -> Path:
    return Path(root) / "runs" / fixture_run_id(name) / "events.jsonl"


def write_fixtures(root: Path) -> dict[str, Path]:
    """(Re)write every fixture under ``root/runs/<run_id>/events.jsonl``."""
    written = {}
    for name, (make, _) in FIXTURES.items():
        path = fixture_path(root, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.unlink()
        make(path, fixture_run_id(name))
        written[name] = path
    return written


def write_benchmark_log(path: Path, *, events: int = 100_000, seed: int = 7) -> int:
    """A realistic log of about ``events`` events (every kind, nested args, floats, unicode)."""
    rng = random.Random(seed)
    run_id = f"{rng.getrandbits(128):032x}"
    with _writer(path, run_id, rng) as w:
        b = RunBuilder(w, rng)
        b.start_run()
        i = 0
        while b.count < events - 60:
            b.step(commit=(i % 4 != 3), tools=rng.randint(1, 4))
            if i % 50 == 25:
                b.every_other_kind()
            i += 1
        b.complete_run(b.count)
    return b.count
