"""``RunBuilder``: one run's events with realistic payloads, written through ``EventWriter``.

Every id comes from the seeded RNG and every time from a fake clock, never
from the host: the same seed gives the same bytes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ract_cli.format.json_types import Event, Payload
from ract_cli.testing.payloads import BASE_TS, PROVIDERS, TOOLS, UNICODE_SNIPPETS, OtherKinds, other_kind_payloads
from ract_cli.writer.event_writer import EventWriter


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

    def emit(
        self, kind: str, payload: Payload, *, parent_id: str | None = None, step_id: str | None = "current"
    ) -> Event:
        self.emitted.add(kind)
        self.count += 1
        sid = self.step_id if step_id == "current" else step_id
        return self.writer.append(kind, payload, step_id=sid, parent_id=parent_id, timestamp_ns=self.tick())

    # run lifecycle
    def start_run(self) -> Event:
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

    def complete_run(self, events_so_far: int) -> Event:
        return self.emit(
            "run.completed",
            {"final_decision": "accept", "duration_ns": self.ts - BASE_TS, "event_count": events_so_far + 1},
            step_id=None,
        )

    def abort_run(self, cause: str = "BUDGET_EXHAUSTED") -> Event:
        return self.emit(
            "run.aborted",
            {"termination_cause": cause, "reason": "budget exhausted after rollback", "duration_ns": self.ts - BASE_TS},
            step_id=None,
        )

    # one step with provider and tool traffic
    def step(self, *, commit: bool = True, tools: int = 2) -> None:
        self.step_id = self.hex(32)
        started = self._start_step()
        self._retrieval()
        self._provider_round()
        for _ in range(tools):
            self._tool_call()
        self._predicates(commit)
        self._close_step(started, commit)
        self.step_id = None

    def _start_step(self) -> Event:
        return self.emit(
            "step.started",
            {
                "parent_snapshot": self.snapshot,
                "branch": f"rootact/step/{self.step_id}",
                "postcondition_count": self.rng.randint(1, 4),
                "manifest_digest": "sha256:" + self.hex(64),
                "timeout_seconds": 600,
            },
        )

    def _retrieval(self) -> None:
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

    def _provider_round(self) -> None:
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

    def _tool_call(self) -> None:
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
        post.update({"result_size_bytes": self.rng.randint(0, 10**6)} if ok else {"exception": "CalledProcessError"})
        self.emit("tool.invocation.post", post)

    def _predicates(self, commit: bool) -> None:
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

    def _close_step(self, started: Event, commit: bool) -> None:
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

    def every_other_kind(self) -> None:
        """Emit each kind the ordinary step does not, once, with a valid payload."""
        h, rid = self.hex, self.writer.run_id
        step_id = self.step_id = self.hex(32)
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
        payloads = other_kind_payloads(OtherKinds(h, self.text, rid, step_id, call_id, assumption))
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
