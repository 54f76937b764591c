"""Recorded provider responses (SPEC §5): in order per ``intent_id``, so a harness can replay the model layer."""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field

from ract_cli.errors import ExitCode
from ract_cli.findings import Finding
from ract_cli.format.json_types import Payload
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES
from ract_cli.replay.replayer import Replayer
from ract_cli.replay.summary import value_key

__all__ = ["RecordedResponse", "RecordedResponses", "ResponsesExhausted", "recorded_responses"]


@dataclass(frozen=True)
class RecordedResponse:
    """One ``response.received`` as the run recorded it."""

    intent_id: str | None
    provider: object
    response_type: object
    preview: object
    event_id: str
    prompt_event_id: str | None  # the envelope's parent_id: the prompt.sent it answers, when set
    step_id: str | None
    line: int
    timestamp_ns: int
    synthesized: bool  # written by repair (status "timed_out"): no real response came back
    payload: Payload


class ResponsesExhausted(LookupError):
    """``RecordedResponses.next`` was asked for more responses than the run recorded."""


@dataclass
class RecordedResponses:
    """Provider responses in recorded order, per ``intent_id`` (key None: no intent_id).

    A harness replaying the model layer calls ``next(intent_id)`` where the run
    called the provider; ``by_intent`` keeps the full lists. ``exit_code`` and
    ``findings`` are the chain reader's verdict on the file: responses after a
    chain break are not included.
    """

    by_intent: dict[str | None, list[RecordedResponse]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    exit_code: ExitCode = ExitCode.OK
    _cursors: dict[str | None, deque[RecordedResponse]] = field(default_factory=dict, repr=False)

    def next(self, intent_id: str | None) -> RecordedResponse:
        """The next recorded response for ``intent_id``; raises ``ResponsesExhausted`` when none is left."""
        if intent_id not in self._cursors:
            self._cursors[intent_id] = deque(self.by_intent.get(intent_id, ()))
        queue = self._cursors[intent_id]
        if not queue:
            raise ResponsesExhausted(f"no more recorded responses for intent_id {intent_id!r}")
        return queue.popleft()

    def __len__(self) -> int:
        return sum(len(v) for v in self.by_intent.values())


def recorded_responses(
    path: str | os.PathLike[str],
    *,
    include_synthesized: bool = True,
    schema_version: int = LATEST_SCHEMA_VERSION,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> RecordedResponses:
    """Every trusted ``response.received`` of the log, in order, grouped by ``intent_id``."""
    replayer = Replayer(path, schema_version=schema_version, max_line_bytes=max_line_bytes)
    result = RecordedResponses()
    for step in replayer:
        event = step.event.event
        if event["kind"] != "response.received":
            continue
        payload = event["payload"]
        synthesized = payload.get("synthesized") is True
        if synthesized and not include_synthesized:
            continue
        intent = payload.get("intent_id")
        key = intent if type(intent) is str else (None if intent is None else value_key(intent))
        result.by_intent.setdefault(key, []).append(
            RecordedResponse(
                key,
                payload.get("provider"),
                payload.get("response_type"),
                payload.get("preview"),
                event["id"],
                event["parent_id"],
                event["step_id"],
                step.event.line,
                event["timestamp_ns"],
                synthesized,
                payload,
            )
        )
    replayer.drain()
    result.findings = list(replayer.findings)
    result.exit_code = replayer.exit_code
    return result
