"""Dialects beyond RACT run logs (SPEC §8), registered with the reader on import.

``ChainReader`` is re-exported here: the reader with every dialect loaded, the
one the commands and ``ract_cli.ChainReader`` use.
"""

from ract_cli.dialects.raxol import RAXOL
from ract_cli.read.dialect import DIALECTS, detect_dialect, detect_file_dialect, discovery_suffixes, resolve_dialect
from ract_cli.read.reader import ChainReader, EventReader

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
