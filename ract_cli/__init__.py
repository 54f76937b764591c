"""ract: verify, replay, repair, project and grep hash-chained JSONL run logs.

The library never prints and never imports the CLI stack (typer, rich).
Start with ``ChainReader`` (the one streaming reader every command uses),
``EventWriter`` (produces logs that verify) and ``verify_file``. Raxol agent
journals (the second dialect) live in ``ract_cli.raxol`` (``evidence_status``).
"""

from importlib import import_module
from typing import TYPE_CHECKING

# Public names and the module each lives in. Imported on first use, so that
# ``ract trace grep`` does not pay for modules it never touches.
_EXPORTS = {
    "CanonicalizationError": "canonical",
    "canonical_bytes": "canonical",
    "ChainBrokenError": "errors",
    "ExitCode": "errors",
    "LogIOError": "errors",
    "RactError": "errors",
    "UsageError": "errors",
    "WriterLockedError": "errors",
    "Finding": "findings",
    "EvidenceStatus": "raxol",
    "detect_dialect": "raxol",
    "evidence_status": "raxol",
    "ChainReader": "reader",
    "EventReader": "reader",
    "LogEvent": "reader",
    "analyze_line": "reader",
    "VerifyOptions": "verify",
    "verify_file": "verify",
    "verify_paths": "verify",
    "EventWriter": "writer",
    "FsyncPolicy": "writer",
    "RedactionProfile": "writer",
    "encode_line": "writer",
    "event_hash": "writer",
    "sanitize_payload": "writer",
    "jcs_exact": "canonical",
    "GENESIS_HASH": "model",
    "LATEST_SCHEMA_VERSION": "kinds",
    "KINDS_BY_NAME": "kinds",
    "HandleTracker": "handles",
    "Discovered": "discovery",
    "discover": "discovery",
    "resolve_log_path": "discovery",
    "ProjectOptions": "project",
    "project_file": "project",
    "project_paths": "project",
    "ReplayOptions": "replay",
    "replay": "replay",
}

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


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ract_cli' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, eagerly
    from .canonical import CanonicalizationError, canonical_bytes
    from .errors import ChainBrokenError, ExitCode, LogIOError, RactError, UsageError, WriterLockedError
    from .findings import Finding
    from .raxol import EvidenceStatus, detect_dialect, evidence_status
    from .reader import ChainReader, EventReader, LogEvent, analyze_line
    from .verify import VerifyOptions, verify_file, verify_paths
    from .writer import EventWriter, FsyncPolicy, RedactionProfile, encode_line, event_hash, sanitize_payload

__version__ = "0.1.0"
