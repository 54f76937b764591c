"""The normalisation table of ``ract trace diff`` (SPEC §15, docs/diff.md).

Two runs of the same intent never agree on their ids, clocks and hashes.
:data:`RULES` is the one table saying what the diff does with each such
field; everything it does not name is compared value for value (as its
canonical JSON, so ``1`` and ``1.0`` are the same value, as in the hash).

A rule's ``treatment`` is one of:

``ignore``
    never compared (``--compare FIELD`` compares it after all);
``reference``
    the value names something *of the run* (an event, a step, a retrieve
    call...). It is compared as what it points to, not as text: each value
    is mapped to the index, in its own run, of the event it names (for an
    event id) or of the first event that carried it (for a generated id such
    as a step id or a call id), and two references agree when their texts are
    equal or when those two events are aligned with each other. (Raxol item
    ids are turn-scoped -- every turn starts again at ``i1`` -- so for them
    only the alignment counts, never the text.) So a ``tool.result`` whose
    ``parent_id`` closes a different call than its counterpart's is a
    divergence, while fresh ids are not. A reference that resolves to no
    earlier event of its run is "outside the run" and agrees with another
    such reference whatever the text. ``--compare FIELD`` compares the raw
    text instead; ``--ignore FIELD`` drops it;
``snapshot``
    compared, but ignored under ``--ignore-snapshots`` (a re-run in another
    clone of the repository starts from other commits);
``excluded``
    a Raxol record type that is not part of the sequence at all.

The envelope's ``kind`` (RACT) and a record's ``type`` (Raxol) are always
compared: they are what the alignment is about. A field name given to
``--ignore`` / ``--compare`` applies wherever a key of that name appears
(envelope, record or top-level payload key); a dotted ``--ignore`` path
(``usage.input_tokens``) reaches inside payload values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ract_cli.errors import UsageError

__all__ = [
    "COMPARE",
    "EXCLUDED",
    "IGNORE",
    "REFERENCE",
    "RULES",
    "SNAPSHOT",
    "FieldPolicy",
    "Rule",
    "rules_markdown",
]

IGNORE = "ignore"
REFERENCE = "reference"
SNAPSHOT = "snapshot"
EXCLUDED = "excluded"
COMPARE = "compare"  # a resolved treatment only: what every field not in the table gets

ENVELOPE = "envelope"
PAYLOAD = "payload"
RECORD = "record"  # a Raxol record's top-level keys besides type and payload
TYPE = "type"  # a Raxol record type


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the normalisation table."""

    field: str  # the key name ("*": every other key of that place)
    where: str  # envelope | payload (RACT and Raxol payloads) | record | type (Raxol)
    dialect: str  # "ract", "raxol" or "both"
    treatment: str  # ignore | reference | snapshot | excluded
    namespace: str | None  # references: what the value names (event, step, call, ...)
    reason: str


_TIME = "a measured time or duration: differs on every run"
_PID = "a process id the operating system assigned"

RULES: tuple[Rule, ...] = (
    # --- RACT envelope (SPEC §2.2) ---
    Rule("id", ENVELOPE, "ract", IGNORE, None, "the event's own id, fresh in every run (reached through references)"),
    Rule("run_id", ENVELOPE, "ract", IGNORE, None, "fresh in every run"),
    Rule("step_id", ENVELOPE, "ract", REFERENCE, "step", "fresh per step: compared as 'the same step'"),
    Rule("parent_id", ENVELOPE, "ract", REFERENCE, "event", "compared as 'caused by the same event'"),
    Rule("timestamp_ns", ENVELOPE, "ract", IGNORE, None, "wall-clock time"),
    Rule("prev_hash", ENVELOPE, "ract", IGNORE, None, "chain hash: differs as soon as any id or time does"),
    Rule("hash", ENVELOPE, "ract", IGNORE, None, "chain hash: differs as soon as any id or time does"),
    # --- RACT payloads: times ---
    Rule("duration_ns", PAYLOAD, "ract", IGNORE, None, _TIME),
    Rule("latency_ms", PAYLOAD, "ract", IGNORE, None, _TIME),
    Rule("reap_latency_ms", PAYLOAD, "ract", IGNORE, None, _TIME),
    Rule("gap_ms", PAYLOAD, "ract", IGNORE, None, _TIME + " (memory.freshness_gap)"),
    Rule("creation_time_ns", PAYLOAD, "ract", IGNORE, None, "a process creation time"),
    Rule("stored_ctime", PAYLOAD, "ract", IGNORE, None, "a process creation time"),
    Rule("current_ctime", PAYLOAD, "ract", IGNORE, None, "a process creation time"),
    # --- RACT payloads: ids by nature ---
    Rule("pid", PAYLOAD, "ract", IGNORE, None, _PID),
    Rule("child_pid", PAYLOAD, "ract", IGNORE, None, _PID),
    Rule("stored_pid", PAYLOAD, "ract", IGNORE, None, _PID),
    Rule("pids", PAYLOAD, "ract", IGNORE, None, "process ids the operating system assigned"),
    Rule("synthetic_run_id", PAYLOAD, "ract", IGNORE, None, "generated per run (RUN-ORPHAN-{uuid})"),
    Rule("source_event_id", PAYLOAD, "ract", REFERENCE, "event", "a synthesized close names the open it closes"),
    Rule("step_id", PAYLOAD, "ract", REFERENCE, "step", "names a step of the run"),
    Rule("step_id_ref", PAYLOAD, "ract", REFERENCE, "step", "names a step of the run"),
    Rule("call_id", PAYLOAD, "ract", REFERENCE, "call", "generated per retrieve or budget call"),
    Rule("assumption_id", PAYLOAD, "ract", REFERENCE, "assumption", "generated per assumption"),
    Rule("root_id", PAYLOAD, "ract", REFERENCE, "assumption", "names the originating assumption"),
    Rule("plan_id", PAYLOAD, "ract", REFERENCE, "plan", "generated per plan"),
    Rule("run_id", PAYLOAD, "ract", REFERENCE, "run", "compared as 'this run' or 'another run'"),
    Rule("header_run_id", PAYLOAD, "ract", REFERENCE, "run", "compared as 'this run' or 'another run'"),
    Rule("expected_run_id", PAYLOAD, "ract", REFERENCE, "run", "compared as 'this run' or 'another run'"),
    # --- RACT payloads: snapshots ---
    Rule("parent_snapshot", PAYLOAD, "ract", SNAPSHOT, None, "workspace commit: ignored under --ignore-snapshots"),
    Rule(
        "parent_snapshot_before", PAYLOAD, "ract", SNAPSHOT, None, "workspace commit: ignored under --ignore-snapshots"
    ),
    Rule(
        "parent_snapshot_after", PAYLOAD, "ract", SNAPSHOT, None, "workspace commit: ignored under --ignore-snapshots"
    ),
    # --- Raxol journals (SPEC §8) ---
    Rule("item_delta", TYPE, "raxol", EXCLUDED, None, "ephemeral (live render only): never compared nor counted"),
    Rule("item_id", PAYLOAD, "raxol", REFERENCE, "item", "turn-scoped: compared as 'the same item', never as text"),
    Rule("tool_use_id", PAYLOAD, "raxol", REFERENCE, "item", "names an item of the same turn, never compared as text"),
    Rule("seq", RECORD, "raxol", IGNORE, None, "the producer's sequence number (item_delta records shift it)"),
    Rule("at_ms", RECORD, "raxol", IGNORE, None, "wall-clock time"),
    Rule("id", RECORD, "raxol", IGNORE, None, "the record's own id, fresh in every run"),
    Rule("prev_hash", RECORD, "raxol", IGNORE, None, "chain hash"),
    Rule("hash", RECORD, "raxol", IGNORE, None, "chain hash"),
    Rule("schema_version", RECORD, "raxol", IGNORE, None, "journal format version, not run content"),
    Rule("family", RECORD, "raxol", IGNORE, None, "always loop in the v0 vocabulary"),
    Rule("*", RECORD, "raxol", IGNORE, None, "a journal is diffed by type and payload only"),
)

#: ``--ignore payload`` would compare nothing but kinds: refused. (The envelope's ``kind`` and a record's
#: ``type`` are never looked up in the table, so ``--ignore kind`` names payload keys called ``kind``.)
_ALWAYS = frozenset({"payload"})
_PATH = re.compile(r"[^.]+(?:\.[^.]+)*")


def _names(treatments: Iterable[str]) -> frozenset[str]:
    wanted = set(treatments)
    return frozenset(r.field for r in RULES if r.treatment in wanted and r.field != "*")


#: what ``--compare`` accepts: every field the table does not simply compare
COMPARABLE = _names((IGNORE, REFERENCE, SNAPSHOT))


class FieldPolicy:
    """The table resolved for one dialect and one command line.

    ``treatment(where, name)`` says what happens to a key; ``nested`` holds
    the dotted ``--ignore`` paths that reach inside a payload value
    (``{"usage": (("input_tokens",),)}`` for ``--ignore usage.input_tokens``).
    """

    def __init__(
        self,
        dialect: str,
        *,
        ignore: Iterable[str] = (),
        compare: Iterable[str] = (),
        ignore_snapshots: bool = False,
    ) -> None:
        self.dialect = dialect
        self.ignore = tuple(ignore)
        self.compare = tuple(compare)
        self.ignore_snapshots = ignore_snapshots
        validate(self.ignore, self.compare)
        self._table: dict[tuple[str, str], tuple[str, str | None]] = {
            (r.where, r.field): (r.treatment, r.namespace) for r in RULES if r.dialect in (dialect, "both")
        }
        nested: dict[str, list[tuple[str, ...]]] = {}
        for path in self.ignore:
            if "." in path:
                head, *rest = path.split(".")
                nested.setdefault(head, []).append(tuple(rest))
        self.nested: dict[str, tuple[tuple[str, ...], ...]] = {k: tuple(v) for k, v in nested.items()}
        self._ignored = frozenset(p for p in self.ignore if "." not in p)
        self._compared = frozenset(self.compare)

    def treatment(self, where: str, name: str) -> tuple[str, str | None]:
        """``(treatment, namespace)`` of key ``name`` of ``where`` once the options are applied.

        The treatment is ``ignore``, ``reference`` (with its namespace) or ``compare``.
        """
        if name in self._ignored:
            return IGNORE, None
        if name in self._compared:
            return COMPARE, None
        treatment, namespace = self._table.get((where, name)) or self._table.get((where, "*")) or (COMPARE, None)
        if treatment == SNAPSHOT:
            return (IGNORE, None) if self.ignore_snapshots else (COMPARE, None)
        return treatment, namespace

    def excluded(self, record_type: str) -> bool:
        """True for a record type that is not part of the compared sequence (Raxol ``item_delta``)."""
        return self._table.get((TYPE, record_type), (COMPARE, None))[0] == EXCLUDED

    def to_dict(self) -> dict[str, object]:
        return {"ignore": list(self.ignore), "compare": list(self.compare), "ignore_snapshots": self.ignore_snapshots}


def validate(ignore: Iterable[str], compare: Iterable[str]) -> None:
    """Refuse (``UsageError``, exit 2) what ``--ignore`` / ``--compare`` cannot mean."""
    ignore, compare = list(ignore), list(compare)
    for name in ignore:
        if not _PATH.fullmatch(name):
            raise UsageError(f"--ignore {name!r}: expected a field name or a dotted path such as usage.input_tokens")
        if name in _ALWAYS:
            raise UsageError("--ignore payload: the payload is what the diff compares; ignore its fields instead")
    for name in compare:
        if name not in COMPARABLE:
            raise UsageError(
                f"--compare {name!r}: not a field the normalisation table leaves out (fields it does not name are "
                f"compared already); one of: {', '.join(sorted(COMPARABLE))}"
            )
    both = sorted(set(ignore) & set(compare))
    if both:
        raise UsageError(f"--ignore and --compare both name {both[0]}")


def rules_markdown() -> str:
    """The table as docs/diff.md shows it (a test checks the doc holds exactly this)."""
    lines = ["| field | where | dialect | treatment | why |", "|---|---|---|---|---|"]
    for r in RULES:
        field = "(any other key)" if r.field == "*" else f"`{r.field}`"
        treatment = f"reference ({r.namespace})" if r.treatment == REFERENCE else r.treatment
        lines.append(f"| {field} | {r.where} | {r.dialect} | {treatment} | {r.reason} |")
    return "\n".join(lines) + "\n"
