"""The one signature every part of the projection folds an event with."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from ract_cli.format.json_types import Event, Payload
from ract_cli.read.handles import OpenHandle

#: ``handler(event, payload, line, timestamp_ns, paired)``: ``paired`` is the open a close paired
#: with (the reader's ``HandleTracker``), or None
Handler: TypeAlias = Callable[[Event, Payload, int, int, OpenHandle | None], None]
