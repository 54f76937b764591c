"""Raxol agent journals: the second dialect (SPEC §8).

A Raxol journal is a JSON-lines file whose records carry ``type`` and
``payload`` (other top-level keys are tolerated: the contract only grows).
The framing (line splitting, torn tail, malformed lines, duplicate keys,
``max_line_bytes``, IO) is the one chain reader's; this package holds what is
particular to journals, behind the reader's ``Dialect`` interface:

* ``contract`` -- the vocabulary, atoms, schema versions, and
  ``evidence_status``, which decodes the evidence marker of a final
  ``turn_completed`` to accepted / rejected / absent / unknown with the
  grandfather rule of the reference contract; it never raises.
* ``encode`` -- ``sanitize_payload`` / ``encode_line`` / ``chain_records``
  make records encodable (atoms become their names, anything else the
  encoder cannot take becomes its repr text) and chain them.
* ``record`` -- ``analyze_record``, the pure per-line check (parse, hash,
  record contract), and ``JournalEvent``.
* ``state`` -- ``JournalState``: what spans records (hash chain, item ids per
  turn, nothing after the final ``turn_completed``, the marker against the
  journal's schema version) and the journal's summary.

Importing this package registers the dialect with the reader.
"""

from ract_cli.dialects.raxol.contract import (
    ABSENT,
    ACCEPTED,
    EVIDENCE_VALUES,
    ITEM_TYPES,
    LOOP_TYPES,
    MARKER_SINCE,
    REJECTED,
    REJECTION_REASONS,
    UNKNOWN,
    Atom,
    EvidenceStatus,
    evidence_status,
    normalize_evidence,
    parse_version,
)
from ract_cli.dialects.raxol.encode import chain_records, encode_line, record_hash, sanitize_payload
from ract_cli.dialects.raxol.record import JournalEvent, analyze_record, check_record
from ract_cli.dialects.raxol.state import JournalState, JournalSummary
from ract_cli.read.dialect import DIALECTS, Dialect, detect_dialect, detect_file_dialect, discovery_suffixes, register

RAXOL = Dialect("raxol", analyze_record, JournalState, JournalEvent, suffixes=(".jsonl",))
register(RAXOL)

__all__ = [
    "ABSENT",
    "ACCEPTED",
    "DIALECTS",
    "EVIDENCE_VALUES",
    "ITEM_TYPES",
    "LOOP_TYPES",
    "MARKER_SINCE",
    "RAXOL",
    "REJECTED",
    "REJECTION_REASONS",
    "UNKNOWN",
    "Atom",
    "EvidenceStatus",
    "JournalEvent",
    "JournalState",
    "JournalSummary",
    "analyze_record",
    "chain_records",
    "check_record",
    "detect_dialect",
    "detect_file_dialect",
    "discovery_suffixes",
    "encode_line",
    "evidence_status",
    "normalize_evidence",
    "parse_version",
    "record_hash",
    "sanitize_payload",
]
