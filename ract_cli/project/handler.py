"""The one signature every part of the projection folds an event with."""

from __future__ import annotations

from collections.abc import Callable

from ract_cli.format.json_types import Event, Payload
from ract_cli.read.handles import OpenHandle

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import TypeAlias

#: ``handler(event, payload, line, timestamp_ns, paired)``: ``paired`` is the open a close paired
#: with (the reader's ``HandleTracker``), or None
Handler: TypeAlias = Callable[[Event, Payload, int, int, OpenHandle | None], None]
