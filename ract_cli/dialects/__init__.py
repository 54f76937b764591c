"""Dialects beyond RACT run logs (SPEC §8), registered with the reader.

``ChainReader`` is re-exported here: the reader with every dialect available,
the one the commands and ``ract_cli.ChainReader`` use. The Raxol dialect is
imported on first use (``read.dialect.register_loader``): a command on RACT
logs never loads it.
"""

from __future__ import annotations

import importlib

from ract_cli.read.dialect import (
    DIALECTS,
    detect_dialect,
    detect_file_dialect,
    discovery_suffixes,
    register_loader,
    resolve_dialect,
)
from ract_cli.read.reader import ChainReader, EventReader

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from ract_cli.read.dialect import Dialect

register_loader("raxol", lambda: importlib.import_module("ract_cli.dialects.raxol"))


def __getattr__(name: str) -> Dialect:
    if name == "RAXOL":  # (imports the dialect)
        from ract_cli.dialects.raxol import RAXOL

        return RAXOL
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DIALECTS",
    "RAXOL",
    "ChainReader",
    "EventReader",
    "detect_dialect",
    "detect_file_dialect",
    "discovery_suffixes",
    "resolve_dialect",
]
