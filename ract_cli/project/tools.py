"""Tool calls: per tool, how calls ended, who refused them, and their latency."""

from __future__ import annotations

from array import array

from ract_cli.format.json_types import Event, JSONObject, Payload
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
            block = percentiles([ns / 1e6 for ns in self.result_ns])
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

    def _tool(self, name: object) -> ToolTally:
        return bucket(self.tools, label(name), ToolTally)

    def _called(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._tool(payload.get("tool")).called += 1

    def _result(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        tool = self._tool(payload.get("tool"))
        ok = payload.get("ok")
        if ok is True:
            tool.ok += 1
        elif ok is False:
            tool.failed += 1
        else:
            tool.unknown += 1  # a synthesized close (status "unknown") or no ok at all
        duration = as_int(payload.get("duration_ns"))
        if duration is not None and duration >= 0:
            tool.result_ns.append(duration)

    def _refused(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        tool = self._tool(payload.get("tool"))
        tool.refused += 1
        tally(tool.refused_by, label(payload.get("refused_by")))

    def _gate_refused(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        tool = self._tool(payload.get("tool_id"))
        tool.refused += 1
        tally(tool.refused_by_gate, label(payload.get("gate")))

    def _post(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        latency = as_num(payload.get("latency_ms"))
        if latency is not None and latency >= 0:
            self._tool(payload.get("tool_id")).post_ms.append(float(latency))

    def _bypassed(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._tool(payload.get("tool_id")).bypassed += 1

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
