"""The walk of one replay (SPEC §5): trusted events, through the one chain reader, into ``ReplayState``.

At the first integrity failure (``reader.broken_at``) the walk stops, so
nothing after an unverified point is ever presented as part of the run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from ract_cli.dialects import ChainReader
from ract_cli.errors import ExitCode
from ract_cli.findings import Finding
from ract_cli.format.json_types import Event
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES, LogEvent
from ract_cli.replay.state import ReplayState, ReplayStep

__all__ = ["Replayer", "is_ephemeral"]


def is_ephemeral(event: Event) -> bool:
    """True for an event that is never replayed nor counted (SPEC §8).

    RACT logs have no ephemeral kind, so this is False today. It is the hook
    for the Raxol dialect, whose ``item_delta`` records are ephemeral: pass a
    different predicate as ``Replayer(exclude=...)`` / ``ReplayOptions.exclude``.
    """
    return False


class Replayer:
    """Walk one log through the chain reader; iterate for ``ReplayStep``s of trusted events.

    Iteration stops at the first integrity failure: ``stopped_at_break`` is
    then its line. ``drain()`` reads the rest of the file (verifying, never
    replaying) so ``findings`` / ``exit_code`` are the whole file's verdict.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        schema_version: int = LATEST_SCHEMA_VERSION,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        exclude: Callable[[Event], bool] = is_ephemeral,
        max_findings: int | None = None,
    ) -> None:
        self.path = str(path)
        self.reader = ChainReader(
            path,
            schema_version=schema_version,
            max_line_bytes=max_line_bytes,
            max_findings=max_findings,
            dialect="ract",
        )
        self.state = ReplayState()
        self.exclude = exclude
        self.stopped_at_break: int | None = None
        self._events = iter(self.reader)

    def __iter__(self) -> Iterator[ReplayStep]:
        for ev in self._events:
            if not ev.trusted:
                self.stopped_at_break = self.reader.broken_at
                return
            if self.exclude(ev.event):
                continue
            self.state.apply(ev)
            yield ReplayStep(self.state.index, ev, self.state)
        if self.reader.broken_at is not None:  # a break on a line that held no usable event
            self.stopped_at_break = self.reader.broken_at

    def drain(self, visit: Callable[[LogEvent], None] | None = None) -> None:
        """Read to the end of the file; ``visit`` sees each remaining event that is still trusted."""
        for ev in self._events:
            if visit is not None and ev.trusted and not self.exclude(ev.event):
                visit(ev)
        if self.stopped_at_break is None and self.reader.broken_at is not None:
            self.stopped_at_break = self.reader.broken_at

    @property
    def findings(self) -> list[Finding]:
        return self.reader.findings

    @property
    def exit_code(self) -> ExitCode:
        return self.reader.exit_code
