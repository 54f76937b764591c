"""The append-only writer (SPEC §9): logs it writes verify."""

from ract_cli.format.sanitize import sanitize_payload
from ract_cli.writer.event_writer import EventWriter, FsyncPolicy, RedactionProfile, encode_line, event_hash

__all__ = ["EventWriter", "FsyncPolicy", "RedactionProfile", "encode_line", "event_hash", "sanitize_payload"]
