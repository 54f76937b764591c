"""The run's initial snapshot (SPEC §5): ``parent_snapshot`` of its first trusted ``step.started``."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ract_cli.dialects import ChainReader
from ract_cli.format.kinds import LATEST_SCHEMA_VERSION
from ract_cli.read.event import DEFAULT_MAX_LINE_BYTES

__all__ = ["InitialSnapshot", "find_initial_snapshot"]


@dataclass(frozen=True)
class InitialSnapshot:
    """``parent_snapshot`` of the run's first ``step.started`` (raw log value), and where it is."""

    value: object  # None when there is no (trusted) step.started or it has no parent_snapshot
    line: int | None = None
    offset: int | None = None
    event_id: str | None = None


def find_initial_snapshot(
    path: str | os.PathLike[str],
    *,
    schema_version: int = LATEST_SCHEMA_VERSION,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> InitialSnapshot:
    """Read (through the chain reader) up to the first trusted ``step.started``."""
    reader = ChainReader(
        path, schema_version=schema_version, max_line_bytes=max_line_bytes, dialect="ract", max_findings=1
    )  # its findings are not used: keep memory flat on a hostile log
    for ev in reader:
        if not ev.trusted:
            break
        if ev.event["kind"] == "step.started":
            return InitialSnapshot(ev.event["payload"].get("parent_snapshot"), ev.line, ev.offset, ev.event["id"])
    return InitialSnapshot(None)
