"""ract: verify, replay, repair, project and grep hash-chained JSONL run logs.

The library never prints and never imports the CLI stack (typer, rich).
Start with ``ChainReader`` (the one streaming reader every command uses),
``EventWriter`` (produces logs that verify) and ``verify_file``. Raxol agent
journals (the second dialect) live in ``ract_cli.raxol`` (``evidence_status``).
"""

from .canonical import CanonicalizationError, canonical_bytes
from .errors import ChainBrokenError, ExitCode, LogIOError, RactError, UsageError, WriterLockedError
from .findings import Finding
from .raxol import EvidenceStatus, detect_dialect, evidence_status
from .reader import ChainReader, EventReader, LogEvent, analyze_line
from .verify import VerifyOptions, verify_file, verify_paths
from .writer import EventWriter, FsyncPolicy, RedactionProfile, encode_line, event_hash, sanitize_payload

__all__ = [
    "CanonicalizationError",
    "ChainBrokenError",
    "ChainReader",
    "EventReader",
    "EventWriter",
    "EvidenceStatus",
    "ExitCode",
    "Finding",
    "FsyncPolicy",
    "LogEvent",
    "LogIOError",
    "RactError",
    "RedactionProfile",
    "UsageError",
    "VerifyOptions",
    "WriterLockedError",
    "analyze_line",
    "canonical_bytes",
    "detect_dialect",
    "encode_line",
    "event_hash",
    "evidence_status",
    "sanitize_payload",
    "verify_file",
    "verify_paths",
]

__version__ = "0.1.0"
