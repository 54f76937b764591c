"""``ract trace replay`` (SPEC §5): re-walk a verified log, rebuilding the run's state.

``controls`` (``--until``/``--pace``), ``summary`` (timeline lines), ``state``
(``ReplayState``), ``replayer`` (the walk), ``snapshot`` (the initial
snapshot), ``session`` (``replay()``), ``responses`` (recorded provider
responses), ``result``, ``workspace`` (git checks), ``journal`` (Raxol journals).
"""

from ract_cli.replay.controls import MAX_PACE_SLEEP_S, format_elapsed, pace_delay, parse_pace, parse_until
from ract_cli.replay.replayer import Replayer, is_ephemeral
from ract_cli.replay.responses import RecordedResponse, RecordedResponses, ResponsesExhausted, recorded_responses
from ract_cli.replay.result import ReplayResult
from ract_cli.replay.session import DEFAULT_MAX_FINDINGS, ReplayOptions, ReplaySession, replay
from ract_cli.replay.snapshot import find_initial_snapshot
from ract_cli.replay.state import ReplayState, ReplayStep
from ract_cli.replay.summary import summarize

__all__ = [
    "DEFAULT_MAX_FINDINGS",
    "MAX_PACE_SLEEP_S",
    "RecordedResponse",
    "RecordedResponses",
    "ReplayOptions",
    "ReplayResult",
    "ReplaySession",
    "ReplayState",
    "ReplayStep",
    "Replayer",
    "ResponsesExhausted",
    "find_initial_snapshot",
    "format_elapsed",
    "is_ephemeral",
    "pace_delay",
    "parse_pace",
    "parse_until",
    "recorded_responses",
    "replay",
    "summarize",
]
