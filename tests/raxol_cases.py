"""Journal cases shared by tests/test_raxol.py (library) and tests/test_raxol_cli.py (CLI).

A valid two-turn journal, and tables of mutations of it: each contract
violation (exit 3) with the line it is reported on, each legal-but-noted
case (exit 0 with a warning), each chain break (exit 1).
"""

from __future__ import annotations

from pathlib import Path

from ract_cli.dialects.raxol.encode import chain_records, encode_line


def rec(rtype: str, payload: dict, **extra: object) -> dict:
    return {"schema_version": "1.1.0", "type": rtype, "payload": payload, **extra}


def valid_journal() -> list[dict]:
    return [
        rec("turn_started", {"prompt": "fix it"}),
        rec("item_started", {"item_id": "i1", "item_type": "tool_use"}),
        rec("item_completed", {"item_id": "i1", "item_type": "tool_use", "name": "bash"}),
        rec("item_started", {"item_id": "i2", "item_type": "tool_result"}),
        rec("item_completed", {"item_id": "i2", "item_type": "tool_result", "output": "ok"}),
        rec("turn_completed", {"usage": {"input_tokens": 10, "output_tokens": 2}, "iteration": 1, "final": False}),
        rec("turn_started", {"prompt": "continue"}),
        rec("item_started", {"item_id": "i1", "item_type": "message"}),  # item ids are turn-scoped
        rec("item_delta", {"item_id": "i1", "chunk": "Do"}),
        rec("item_delta", {"item_id": "i1", "chunk": "ne"}),
        rec("item_completed", {"item_id": "i1", "item_type": "message", "text": "Done"}),
        rec(
            "turn_completed",
            {
                "usage": {"input_tokens": 5, "output_tokens": 1},
                "iteration": 2,
                "final": True,
                "evidence": "accepted",
                "refs": ["i2"],
            },
        ),
    ]


def write_journal(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(encode_line(r) for r in records))
    return path


def final_payload(j: list[dict]) -> dict:
    return j[-1]["payload"]


def _set(path: tuple, value: object):
    def mutate(j: list[dict]) -> None:
        target = j[path[0]]
        for key in path[1:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _delete(path: tuple):
    def mutate(j: list[dict]) -> None:
        target = j[path[0]]
        for key in path[1:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


def _insert(index: int, record: dict):
    return lambda j: j.insert(index, record)


def _rejected(detail: object):
    def mutate(j: list[dict]) -> None:
        p = final_payload(j)
        p.pop("refs")
        p["evidence"] = "rejected"
        p["evidence_rejected"] = detail

    return mutate


GOOD_DETAIL = {"refs": ["i2"], "reason": "mutation_echo", "ref": 0}

# (id, mutation of valid_journal(), line of the violation)
VIOLATIONS = [
    ("duplicate-item-id", _insert(3, rec("item_started", {"item_id": "i1", "item_type": "tool_result"})), 4),
    ("completed-never-started", _insert(5, rec("item_completed", {"item_id": "i9", "item_type": "message"})), 6),
    ("completed-twice", _insert(5, rec("item_completed", {"item_id": "i2", "item_type": "tool_result"})), 6),
    (
        "completed-from-previous-turn",
        _insert(10, rec("item_completed", {"item_id": "i2", "item_type": "tool_result"})),
        11,
    ),
    ("record-after-final", lambda j: j.append(rec("error", {"reason": "late"})), 13),
    ("turn-after-final", lambda j: j.append(rec("turn_started", {"prompt": "again"})), 13),
    ("unknown-type-after-final", lambda j: j.append(rec("approval_requested", {})), 13),
    ("marker-on-non-final-turn", _set((5, "payload", "evidence"), "absent"), 6),
    ("rejection-detail-on-non-final-turn", _set((5, "payload", "evidence_rejected"), GOOD_DETAIL), 6),
    ("marker-on-item", _set((4, "payload", "evidence"), "accepted"), 5),
    ("marker-on-turn-started", _set((0, "payload", "evidence"), "accepted"), 1),
    ("evidence-future-value", _set((11, "payload", "evidence"), "partial"), 12),
    ("evidence-forged-case", _set((11, "payload", "evidence"), "ACCEPTED"), 12),
    ("evidence-unknown-string", _set((11, "payload", "evidence"), "unknown"), 12),
    ("evidence-int", _set((11, "payload", "evidence"), 1), 12),
    ("evidence-null", _set((11, "payload", "evidence"), None), 12),
    ("evidence-bool", _set((11, "payload", "evidence"), True), 12),
    ("evidence-list", _set((11, "payload", "evidence"), ["accepted"]), 12),
    ("evidence-object", _set((11, "payload", "evidence"), {"status": "accepted"}), 12),
    ("rejected-detail-with-accepted", _set((11, "payload", "evidence_rejected"), GOOD_DETAIL), 12),
    (
        "rejected-detail-without-evidence",
        lambda j: (_delete((11, "payload", "evidence"))(j), _set((11, "payload", "evidence_rejected"), GOOD_DETAIL)(j)),
        12,
    ),
    (
        "rejected-detail-with-absent",
        lambda j: (
            _set((11, "payload", "evidence"), "absent")(j),
            _set((11, "payload", "evidence_rejected"), GOOD_DETAIL)(j),
        ),
        12,
    ),
    ("rejected-detail-not-object", _rejected(["i2"]), 12),
    ("rejected-detail-null", _rejected(None), 12),
    ("rejected-no-refs", _rejected({"reason": "missing_ref", "ref": None}), 12),
    ("rejected-refs-not-list", _rejected({"refs": "i2", "reason": "missing_ref", "ref": None}), 12),
    ("rejected-no-reason", _rejected({"refs": ["i2"], "ref": None}), 12),
    ("rejected-bad-reason", _rejected({"refs": ["i2"], "reason": "too_slow", "ref": None}), 12),
    ("rejected-reason-case", _rejected({"refs": ["i2"], "reason": "Missing_Ref", "ref": None}), 12),
    ("rejected-reason-int", _rejected({"refs": ["i2"], "reason": 1, "ref": None}), 12),
    ("rejected-no-ref", _rejected({"refs": ["i2"], "reason": "foreign_turn"}), 12),
    ("rejected-ref-string", _rejected({"refs": ["i2"], "reason": "foreign_turn", "ref": "0"}), 12),
    ("rejected-ref-negative", _rejected({"refs": ["i2"], "reason": "foreign_turn", "ref": -1}), 12),
    ("rejected-ref-bool", _rejected({"refs": ["i2"], "reason": "foreign_turn", "ref": True}), 12),
    ("rejected-ref-float", _rejected({"refs": ["i2"], "reason": "foreign_turn", "ref": 1.5}), 12),
    ("no-type", _delete((2, "type")), 3),
    ("type-not-string", _set((2, "type"), 7), 3),
    ("type-null", _set((2, "type"), None), 3),
    ("no-payload", _delete((2, "payload")), 3),
    ("payload-list", _set((2, "payload"), []), 3),
    ("payload-null", _set((2, "payload"), None), 3),
    ("turn-started-no-prompt", _delete((0, "payload", "prompt")), 1),
    ("turn-started-prompt-not-string", _set((0, "payload", "prompt"), ["hi"]), 1),
    ("item-started-no-item-id", _delete((1, "payload", "item_id")), 2),
    ("item-started-no-item-type", _delete((1, "payload", "item_type")), 2),
    ("item-id-int", _set((1, "payload", "item_id"), 1), 2),
    ("item-id-empty", _set((1, "payload", "item_id"), ""), 2),
    ("item-type-not-string", _set((1, "payload", "item_type"), {"t": 1}), 2),
    ("item-delta-no-chunk", _delete((8, "payload", "chunk")), 9),
    ("item-delta-chunk-not-string", _set((8, "payload", "chunk"), 5), 9),
    ("item-delta-no-item-id", _delete((8, "payload", "item_id")), 9),
    ("item-completed-no-item-id", _delete((2, "payload", "item_id")), 3),
    ("item-completed-no-item-type", _delete((2, "payload", "item_type")), 3),
    ("turn-completed-no-usage", _delete((5, "payload", "usage")), 6),
    ("turn-completed-usage-not-object", _set((5, "payload", "usage"), 12), 6),
    ("turn-completed-no-final", _delete((5, "payload", "final")), 6),
    ("turn-completed-final-string", _set((5, "payload", "final"), "true"), 6),
    ("turn-completed-iteration-negative", _set((5, "payload", "iteration"), -1), 6),
    ("turn-completed-iteration-bool", _set((5, "payload", "iteration"), True), 6),
    ("turn-completed-iteration-string", _set((5, "payload", "iteration"), "2"), 6),
    ("error-no-reason", _insert(6, rec("error", {})), 7),
    ("error-null-reason", _insert(6, rec("error", {"reason": None})), 7),
]


# (id, mutation, the warning's code) -- legal but noted, exit 0
WARNINGS = [
    ("unknown-type", _insert(6, rec("approval_requested", {"tool": "bash"})), "UNKNOWN_TYPE"),
    ("unknown-family", _insert(6, rec("turn_started", {"prompt": "x"}, family="ui")), "UNKNOWN_TYPE"),
    ("unknown-type-without-payload", _insert(6, {"type": "heartbeat", "payload": {}}), "UNKNOWN_TYPE"),
    (
        "unknown-item-type",
        lambda j: (_set((1, "payload", "item_type"), "image")(j), _set((2, "payload", "item_type"), "image")(j)),
        "CONTRACT_WARNING",
    ),
    ("item-type-changes", _set((2, "payload", "item_type"), "message"), "CONTRACT_WARNING"),
    (
        "item-never-completed",
        _insert(5, rec("item_started", {"item_id": "i7", "item_type": "message"})),
        "CONTRACT_WARNING",
    ),
    ("delta-for-unstarted-item", _insert(5, rec("item_delta", {"item_id": "i8", "chunk": "x"})), "CONTRACT_WARNING"),
    ("accepted-without-refs", _delete((11, "payload", "refs")), "CONTRACT_WARNING"),
    ("absent-with-refs", _set((11, "payload", "evidence"), "absent"), "CONTRACT_WARNING"),
    ("turn-started-twice", lambda j: j.pop(5), "CONTRACT_WARNING"),
    ("schema-version-changes", _set((3, "schema_version"), "1.2.0"), "CONTRACT_WARNING"),
    ("schema-version-garbage", _set((0, "schema_version"), "one"), "CONTRACT_WARNING"),
    ("schema-version-bool", _set((0, "schema_version"), True), "CONTRACT_WARNING"),
    ("no-final-turn", lambda j: j.pop(), "OPEN_RUN"),
]


def _chained() -> list[dict]:
    return chain_records(valid_journal())


CHAIN_BREAKS = [
    ("edited-payload", lambda j: _set((11, "payload", "evidence"), "rejected")(j), "HASH_MISMATCH", 12),
    ("edited-extra-key", lambda j: _set((3, "seq"), 99)(j), "HASH_MISMATCH", 4),
    ("hash-not-hex", lambda j: _set((2, "hash"), "zz")(j), "HASH_MISMATCH", 3),
    ("hash-removed", lambda j: _delete((2, "hash"))(j), "HASH_MISMATCH", 3),
    ("record-deleted", lambda j: j.pop(4), "CHAIN_BREAK", 5),
    ("records-swapped", lambda j: j.insert(3, j.pop(4)), "CHAIN_BREAK", 4),
    ("first-record-deleted", lambda j: j.pop(0), "MISSING_GENESIS", 1),
    ("unchained-record-inserted", _insert(6, {"type": "error", "payload": {"reason": "x"}}), "CHAIN_BREAK", 7),
    ("unchained-record-appended", lambda j: j.append({"type": "error", "payload": {"reason": "x"}}), "CHAIN_BREAK", 13),
]
