"""Tool calls: per tool, how calls ended, who refused them, and their latency."""

from __future__ import annotations

from array import array

from ract_cli.format.json_types import Event, JSONObject, Payload
from ract_cli.project.grouping import INT_NONNEG, NUM_NONNEG, FoldRules, Group, group
from ract_cli.project.handler import Handler
from ract_cli.project.tallies import bucket, percentiles, tally
from ract_cli.project.values import as_int, as_num, label
from ract_cli.read.handles import OpenHandle

#: the counted columns of a tool's row, in report order (``open`` comes from the HandleTracker)
_COUNTS = ("called", "ok", "failed", "unknown", "refused", "bypassed", "open")


class ToolTally:
    """One tool's counts and latency samples."""

    __slots__ = (
        "bypassed",
        "called",
        "failed",
        "ok",
        "post_ms",
        "refused",
        "refused_by",
        "refused_by_gate",
        "result_ns",
        "unknown",
    )

    def __init__(self) -> None:
        self.called = self.ok = self.failed = self.unknown = self.refused = self.bypassed = 0
        self.refused_by: dict[str, int] = {}
        self.refused_by_gate: dict[str, int] = {}
        self.result_ns = array("q")  # tool.result.duration_ns samples
        self.post_ms = array("d")  # tool.invocation.post.latency_ms samples

    def latency(self) -> JSONObject | None:
        """Percentiles of ``tool.result`` durations, else of ``tool.invocation.post`` latencies."""
        if self.result_ns:
            block = percentiles(self.result_ns, 1e6)
            assert block is not None
            block["source"] = "tool.result.duration_ns"
            return block
        block = percentiles(self.post_ms)
        if block is not None:
            block["source"] = "tool.invocation.post.latency_ms"
        return block

    def row(self, open_calls: int) -> JSONObject:
        """This tool's row of the report (``open_calls``: its calls still open)."""
        return {
            "called": self.called,
            "ok": self.ok,
            "failed": self.failed,
            "unknown": self.unknown,
            "refused": self.refused,
            "bypassed": self.bypassed,
            "open": open_calls,
        }


class ToolTable:
    """``tool.*`` events, keyed by tool name (``tool`` or ``tool_id``, by kind)."""

    def __init__(self) -> None:
        self.tools: dict[str, ToolTally] = {}

    def handlers(self) -> dict[str, Handler]:
        return {
            "tool.called": self._called,
            "tool.result": self._result,
            "tool.refused": self._refused,
            "tool.invocation.refused": self._gate_refused,
            "tool.invocation.post": self._post,
            "tool.invocation.bypassed": self._bypassed,
        }

    def fold_rules(self) -> FoldRules:
        """The native fold's groups of these kinds (``project.grouping``), each applied as ``n`` events."""
        return {
            "tool.called": (group("tool"), lambda g: self._called_n(g.payload, g.n)),
            "tool.result": (
                group("tool", "ok", value=("duration_ns", INT_NONNEG)),
                lambda g: self._result_n(g.payload, g.n).result_ns.frombytes(g.ints),
            ),
            "tool.refused": (group("tool", "refused_by"), lambda g: self._refused_n(g.payload, g.n)),
            "tool.invocation.refused": (group("tool_id", "gate"), lambda g: self._gate_refused_n(g.payload, g.n)),
            # (a post without a latency names no tool: whether it has one is part of the group's key)
            "tool.invocation.post": (group("tool_id", value=("latency_ms", NUM_NONNEG)), self._post_group),
            "tool.invocation.bypassed": (group("tool_id"), lambda g: self._bypassed_n(g.payload, g.n)),
        }

    def _tool(self, name: object) -> ToolTally:
        return bucket(self.tools, label(name), ToolTally)

    def _called(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._called_n(payload, 1)

    def _called_n(self, payload: Payload, n: int) -> None:
        self._tool(payload.get("tool")).called += n

    def _result(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        tool = self._result_n(payload, 1)
        duration = as_int(payload.get("duration_ns"))
        if duration is not None and duration >= 0:
            tool.result_ns.append(duration)

    def _result_n(self, payload: Payload, n: int) -> ToolTally:
        tool = self._tool(payload.get("tool"))
        ok = payload.get("ok")
        if ok is True:
            tool.ok += n
        elif ok is False:
            tool.failed += n
        else:
            tool.unknown += n  # a synthesized close (status "unknown") or no ok at all
        return tool

    def _refused(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._refused_n(payload, 1)

    def _refused_n(self, payload: Payload, n: int) -> None:
        tool = self._tool(payload.get("tool"))
        tool.refused += n
        tally(tool.refused_by, label(payload.get("refused_by")), n)

    def _gate_refused(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._gate_refused_n(payload, 1)

    def _gate_refused_n(self, payload: Payload, n: int) -> None:
        tool = self._tool(payload.get("tool_id"))
        tool.refused += n
        tally(tool.refused_by_gate, label(payload.get("gate")), n)

    def _post(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        latency = as_num(payload.get("latency_ms"))
        if latency is not None and latency >= 0:  # (+ 0.0: a -0.0 is kept as 0.0, as C keeps it, so the
            self._tool(payload.get("tool_id")).post_ms.append(float(latency) + 0.0)  # samples' order is moot)

    def _post_group(self, g: Group) -> None:
        if g.nums:  # (the group's every post has a latency, or none has)
            self._tool(g.payload.get("tool_id")).post_ms.frombytes(g.nums)

    def _bypassed(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._bypassed_n(payload, 1)

    def _bypassed_n(self, payload: Payload, n: int) -> None:
        self._tool(payload.get("tool_id")).bypassed += n

    def section(self, open_calls: dict[str, int]) -> JSONObject:
        """The report's ``tools`` block; ``open_calls``: tool name -> calls still open."""
        tools: dict[str, JSONObject] = {}
        totals = dict.fromkeys(_COUNTS, 0)
        for name in sorted(set(self.tools) | set(open_calls)):
            tool = self.tools.get(name) or ToolTally()
            row = tool.row(open_calls.get(name, 0))
            for key, value in row.items():
                totals[key] += value
            row["refused_by"] = dict(sorted(tool.refused_by.items()))
            row["refused_by_gate"] = dict(sorted(tool.refused_by_gate.items()))
            row["latency"] = tool.latency()
            tools[name] = row
        return {"by_tool": tools, "totals": totals}
