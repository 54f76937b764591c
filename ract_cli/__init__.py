"""ract: verify, replay, repair, project and grep hash-chained JSONL run logs.

The library never prints and never imports the CLI stack (typer, rich).
Start with ``ChainReader`` (the one streaming reader every command uses),
``EventWriter`` (produces logs that verify) and ``verify_file``. Raxol agent
journals (the second dialect) live in ``ract_cli.dialects.raxol`` (``evidence_status``).
"""

from importlib import import_module

# Public names and the module each lives in. Imported on first use, so that
# ``ract trace grep`` does not pay for modules it never touches.
_EXPORTS = {
    "CanonicalizationError": "format.canonical",
    "canonical_bytes": "format.canonical",
    "ChainBrokenError": "errors",
    "ExitCode": "errors",
    "LogIOError": "errors",
    "RactError": "errors",
    "UsageError": "errors",
    "WriterLockedError": "errors",
    "Finding": "findings",
    "EvidenceStatus": "dialects.raxol",
    "detect_dialect": "dialects.raxol",
    "evidence_status": "dialects.raxol",
    "ChainReader": "dialects",
    "EventReader": "dialects",
    "LogEvent": "read.event",
    "analyze_line": "read.line",
    "VerifyOptions": "verify",
    "verify_file": "verify",
    "verify_paths": "verify",
    "EventWriter": "writer",
    "FsyncPolicy": "writer",
    "RedactionProfile": "writer",
    "encode_line": "writer",
    "event_hash": "writer",
    "sanitize_payload": "writer",
    "jcs_exact": "format.canonical",
    "GENESIS_HASH": "format.model",
    "LATEST_SCHEMA_VERSION": "format.kinds",
    "KINDS_BY_NAME": "format.kinds",
    "HandleTracker": "read.handles",
    "Discovered": "read.discovery",
    "discover": "read.discovery",
    "resolve_log_path": "read.discovery",
    "ProjectOptions": "project",
    "project_file": "project",
    "project_paths": "project",
    "ReplayOptions": "replay",
    "replay": "replay",
}

__all__ = [
    "GENESIS_HASH",
    "KINDS_BY_NAME",
    "LATEST_SCHEMA_VERSION",
    "CanonicalizationError",
    "ChainBrokenError",
    "ChainReader",
    "Discovered",
    "EventReader",
    "EventWriter",
    "EvidenceStatus",
    "ExitCode",
    "Finding",
    "FsyncPolicy",
    "HandleTracker",
    "LogEvent",
    "LogIOError",
    "ProjectOptions",
    "RactError",
    "RedactionProfile",
    "ReplayOptions",
    "UsageError",
    "VerifyOptions",
    "WriterLockedError",
    "analyze_line",
    "canonical_bytes",
    "detect_dialect",
    "discover",
    "encode_line",
    "event_hash",
    "evidence_status",
    "jcs_exact",
    "project_file",
    "project_paths",
    "replay",
    "resolve_log_path",
    "sanitize_payload",
    "verify_file",
    "verify_paths",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ract_cli' has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:  # for type checkers and IDEs: the same names, eagerly
    from ract_cli.dialects.raxol.contract import EvidenceStatus, evidence_status
    from ract_cli.errors import ChainBrokenError, ExitCode, LogIOError, RactError, UsageError, WriterLockedError
    from ract_cli.findings import Finding
    from ract_cli.format.canonical import CanonicalizationError, canonical_bytes
    from ract_cli.format.sanitize import sanitize_payload
    from ract_cli.read.dialect import detect_dialect
    from ract_cli.read.event import LogEvent
    from ract_cli.read.line import analyze_line
    from ract_cli.read.reader import ChainReader, EventReader
    from ract_cli.verify.verifier import VerifyOptions, verify_file, verify_paths
    from ract_cli.writer.event_writer import EventWriter, FsyncPolicy, RedactionProfile, encode_line, event_hash

__version__ = "0.1.0"
