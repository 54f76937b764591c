"""``ract trace repair`` (SPEC §4): close what an interrupted run left open, never launder tampering."""

from ract_cli.repair.repairer import (
    COPIED_KEYS,
    RepairOptions,
    RepairRefused,
    RepairResult,
    SynthesizedClose,
    TornTail,
    closes_for_events,
    repair_file,
    repair_id,
    synthesize_close,
    synthesize_closes,
)

__all__ = [
    "COPIED_KEYS",
    "RepairOptions",
    "RepairRefused",
    "RepairResult",
    "SynthesizedClose",
    "TornTail",
    "closes_for_events",
    "repair_file",
    "repair_id",
    "synthesize_close",
    "synthesize_closes",
]
