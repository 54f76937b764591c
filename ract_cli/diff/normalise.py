"""One event as the diff compares it: the normalisation table applied (docs/diff.md).

A :class:`Normaliser` walks one log's compared events in file order and turns
each into a :class:`Normalised` record:

* ``kind``, the compared envelope / record keys and the compared payload
  (ignored keys dropped, dotted ``--ignore`` paths cut out), from which the
  64-bit alignment ``key`` is hashed; two events with the same key are the
  same event up to their references;
* ``refs``: every reference field (``parent_id``, ``step_id``, ``call_id``,
  Raxol ``item_id``...), resolved within its own run (``references.py``
  says when two agree). Only the *names* of the reference fields go into
  the key: references are compared through the alignment, so fresh ids
  agree and an insertion early in a run does not make every later
  reference differ.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ract_cli.diff.rules import COMPARE, ENVELOPE, IGNORE, PAYLOAD, RECORD, REFERENCE, FieldPolicy
from ract_cli.format.canonical import canonical_bytes

__all__ = ["EXTERNAL", "NAMED_STRIDE", "SCOPED", "THIS_RUN", "Label", "Normalised", "Normaliser"]

#: a reference that names nothing earlier in its own run ("outside the run")
EXTERNAL = -1
#: a run reference (``payload.run_id``...) naming the log's own run
THIS_RUN = -2
#: namespaces whose ids are scoped (Raxol item ids restart at i1 every turn): two equal texts do not make
#: two references agree, only targets aligned with each other do
SCOPED = frozenset({"item"})
#: a named value (a step id, a call id...) resolves to ``first_index * NAMED_STRIDE + n``: the index of the
#: first event that carried it, and n distinguishing the values first carried by that one event (an event
#: has far fewer reference fields than this)
NAMED_STRIDE = 1024

#: (where, name) of a reference field, e.g. ("envelope", "parent_id")
Label = tuple[str, str]

_RACT_ENVELOPE = ("id", "run_id", "step_id", "parent_id", "timestamp_ns", "prev_hash", "hash")
_RACT_OWN = frozenset(("kind", "payload"))
_RAXOL_OWN = frozenset(("type", "payload"))


@dataclass(frozen=True, slots=True)
class Normalised:
    """One compared event after normalisation."""

    kind: str
    envelope: dict[str, Any]  # compared envelope (RACT) / record (Raxol) keys, raw values
    payload: dict[str, Any]  # compared payload keys
    #: sorted by label: (label, namespace, target, text). target: for an event reference the index of the
    #: event it names (or EXTERNAL), for a run reference THIS_RUN or EXTERNAL, for a named one (a step,
    #: a call...) the value's id (``NAMED_STRIDE``); text: the value, or None where equal texts mean
    #: nothing across runs (turn-scoped item ids)
    refs: tuple[tuple[Label, str, int, str | None], ...]
    key: int  # 64-bit digest of (kind, envelope, payload, reference labels)


def _drop(value: Any, paths: tuple[tuple[str, ...], ...]) -> Any:
    """``value`` without the dotted sub-paths (objects only; a path through a non-object is a no-op)."""
    if type(value) is not dict:
        return value
    here = {p[0] for p in paths if len(p) == 1}
    deeper: dict[str, list[tuple[str, ...]]] = {}
    for p in paths:
        if len(p) > 1:
            deeper.setdefault(p[0], []).append(p[1:])
    out = {}
    for k, v in value.items():
        if k in here:
            continue
        out[k] = _drop(v, tuple(deeper[k])) if k in deeper else v
    return out


def digest(material: object) -> int:
    """The 64-bit alignment key of a normalised event (BLAKE2b over its canonical JSON)."""
    return int.from_bytes(hashlib.blake2b(canonical_bytes(material), digest_size=8).digest(), "big")


class Normaliser:
    """Normalise one log's compared events, in file order (``feed`` each once)."""

    def __init__(self, policy: FieldPolicy) -> None:
        self.policy = policy
        self.raxol = policy.dialect == "raxol"
        self.index = 0  # index of the next event fed (0-based, in the compared sequence)
        self.run_id: str | None = None
        self.turn = 0  # Raxol: number of turn_started records seen
        self._ids: dict[str, int] = {}  # event id -> index
        self._first: dict[tuple[str, int, str], int] = {}  # (namespace, turn, value) -> its value id
        self._fresh = 0  # values first carried by the current event
        # every field's treatment, resolved once per (where, name)
        self._treatments: dict[tuple[str, str], tuple[str, str | None]] = {}
        #: payload keys compared as they are (the common case, taken without a call)
        self._plain: dict[str, bool] = {}

    def _treatment(self, where: str, name: str) -> tuple[str, str | None]:
        known = self._treatments.get((where, name))
        if known is None:
            known = self._treatments[(where, name)] = self.policy.treatment(where, name)
        return known

    def _resolve(self, namespace: str, value: str) -> int:
        if namespace == "event":
            return self._ids.get(value, EXTERNAL)
        if namespace == "run":
            return THIS_RUN if value == self.run_id else EXTERNAL
        scope = self.turn if namespace == "item" else 0  # Raxol item ids are turn-scoped (SPEC §8)
        key = (namespace, scope, value)
        found = self._first.get(key)
        if found is None:
            found = self._first[key] = self.index * NAMED_STRIDE + min(self._fresh, NAMED_STRIDE - 1)
            self._fresh += 1
        return found

    def _place(
        self, where: str, name: str, value: Any, kept: dict[str, Any], refs: list[tuple[Label, str, int, str | None]]
    ) -> None:
        treatment, namespace = self._treatment(where, name)
        if treatment == IGNORE:
            return
        if treatment == REFERENCE and namespace is not None and type(value) is str:
            text = None if namespace in SCOPED else value
            refs.append(((where, name), namespace, self._resolve(namespace, value), text))
            return
        # COMPARE, or a reference field holding a non-string (null, a number): its value is compared
        if where == PAYLOAD and name in self.policy.nested:
            value = _drop(value, self.policy.nested[name])
        kept[name] = value

    def feed(self, kind: str, event: dict[str, Any], payload: dict[str, Any]) -> Normalised:
        """Normalise the next event: ``kind`` (its kind or type), the whole envelope / record, its payload."""
        envelope: dict[str, Any] = {}
        compared: dict[str, Any] = {}
        refs: list[tuple[Label, str, int, str | None]] = []
        self._fresh = 0
        if self.raxol:
            if kind == "turn_started":
                self.turn += 1
            for name, value in event.items():
                if name not in _RAXOL_OWN:
                    self._place(RECORD, name, value, envelope, refs)
        else:
            if self.run_id is None and type(event.get("run_id")) is str:
                self.run_id = event["run_id"]
            for name in _RACT_ENVELOPE:
                if name in event:
                    self._place(ENVELOPE, name, event[name], envelope, refs)
        plain = self._plain
        for name, value in payload.items():
            fast = plain.get(name)
            if fast is None:
                fast = plain[name] = self._treatment(PAYLOAD, name)[0] == COMPARE and name not in self.policy.nested
            if fast:
                compared[name] = value
            else:
                self._place(PAYLOAD, name, value, compared, refs)
        refs.sort(key=lambda r: r[0])
        key = digest([kind, envelope, compared, [list(r[0]) for r in refs]])
        if not self.raxol and type(event.get("id")) is str:
            self._ids.setdefault(event["id"], self.index)
        self.index += 1
        return Normalised(kind, envelope, compared, tuple(refs), key)
