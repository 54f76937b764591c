"""Provider I/O: prompts and responses per provider, and how responses were validated."""

from __future__ import annotations

from ract_cli.format.json_types import Event, JSONObject, Payload
from ract_cli.project.grouping import INT_POS_SUM, FoldRules, ListedRules, group, listed, past_caps
from ract_cli.project.handler import Handler
from ract_cli.project.tallies import Items, bucket, saturating_sum
from ract_cli.project.values import as_int, is_synthesized, label, text
from ract_cli.read.handles import OpenHandle

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import Any


class ProviderTally:
    """One provider's counts."""

    __slots__ = ("prompt_chars", "prompts", "responses", "timed_out")

    def __init__(self) -> None:
        self.prompts = self.responses = self.timed_out = self.prompt_chars = 0


class ProviderTable:
    """``prompt.sent``, ``response.received`` (per provider), ``response.validated``/``rejected``."""

    def __init__(self, max_items: int) -> None:
        self.providers: dict[str, ProviderTally] = {}
        self.validated = self.rejected = self.rejected_halting = 0
        self.rejections = Items(max_items)

    def handlers(self) -> dict[str, Handler]:
        return {
            "prompt.sent": self._prompt_sent,
            "response.received": self._response_received,
            "response.validated": self._response_validated,
            "response.rejected": self._response_rejected,
        }

    def fold_rules(self) -> FoldRules:
        """The native fold's groups of these kinds (``project.grouping``); a rejection is left to Python."""
        return {
            "prompt.sent": (
                group("provider", value=("prompt_chars", INT_POS_SUM)),
                lambda g: self._prompts_n(g.payload, g.n, g.total),
            ),
            # (a synthesized response makes the fold give up: the bit is the status alone)
            "response.received": (
                group("provider", bit=("status", "timed_out")),
                lambda g: self._responses_n(g.payload, g.n),
            ),
            "response.validated": (group(), lambda g: self._validated_n(g.n)),
        }

    def _provider(self, name: object) -> ProviderTally:
        return bucket(self.providers, label(name), ProviderTally)

    def _prompt_sent(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        chars = as_int(payload.get("prompt_chars"))
        self._prompts_n(payload, 1, chars if chars is not None and chars > 0 else 0)

    def _prompts_n(self, payload: Payload, n: int, chars: int) -> None:
        provider = self._provider(payload.get("provider"))
        provider.prompts += n
        if chars:
            provider.prompt_chars = saturating_sum(provider.prompt_chars, chars)

    def _response_received(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._responses_n(payload, 1)

    def _responses_n(self, payload: Payload, n: int) -> None:
        provider = self._provider(payload.get("provider"))
        if payload.get("status") == "timed_out" or is_synthesized(payload):
            provider.timed_out += n
        else:
            provider.responses += n

    def _response_validated(
        self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None
    ) -> None:
        self._validated_n(1)

    def _validated_n(self, n: int) -> None:
        self.validated += n

    def fold_listed(self) -> ListedRules:
        """A rejection, once its list is full: counted, grouped by whether it halts."""
        return {"response.rejected": past_caps(listed("should_halt"), self.rejections, then=self._rejected_group)}

    def _rejected_group(self, g: Any) -> None:
        self._rejected_n(g.payload, g.n)

    def _rejected_n(self, payload: Payload, n: int) -> bool:
        self.rejected += n
        halting = payload.get("should_halt") is True
        if halting:
            self.rejected_halting += n
        return halting

    def _response_rejected(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        halting = self._rejected_n(payload, 1)
        self.rejections.add(
            {
                "line": line,
                "step_id": event.get("step_id"),
                "error": text(payload.get("error")),
                "attempt": as_int(payload.get("attempt")),
                "should_halt": halting,
            }
        )

    def section(self, open_prompts: dict[str, int]) -> JSONObject:
        """The report's ``providers`` block; ``open_prompts``: provider name -> prompts still unanswered."""
        providers: dict[str, JSONObject] = {}
        for name in sorted(set(self.providers) | set(open_prompts)):
            p = self.providers.get(name) or ProviderTally()
            providers[name] = {
                "prompts": p.prompts,
                "responses": p.responses,
                "timed_out": p.timed_out,
                "open": open_prompts.get(name, 0),
                "prompt_chars": p.prompt_chars,
            }
        return {
            "by_provider": providers,
            "validated": self.validated,
            "rejected": self.rejected,
            "rejected_halting": self.rejected_halting,
            "rejections": self.rejections.to_dict(),
        }
