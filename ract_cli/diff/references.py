"""When two references agree (docs/diff.md, "References: causality is compared").

A reference field's text differs between two runs (fresh ids), so it is
compared as what it names:

* an **event** reference (``parent_id``, ``source_event_id``) resolves to the
  index of the event with that id in its own run; two agree when those two
  events are aligned with each other (or both name nothing earlier in their
  run);
* a **run** reference (``payload.run_id``...) is "this run" or "another run";
* a **named** reference (a step id, a retrieve call id, an assumption id, a
  Raxol item id...) names something the run made up. Two agree when the
  renaming they imply is consistent: the first aligned pair that carries a
  value of A and a value of B pairs those two values, for the rest of the
  diff, in both directions. So an event of step s aligned with an event of
  step t is a divergence once s is known to be t's counterpart, and an
  inserted event carrying a step id changes nothing for the aligned ones.

Equal texts always agree (the same globally unique id names the same thing),
except for turn-scoped Raxol item ids (``i1`` restarts every turn), whose
texts are never compared.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

__all__ = ["EVENT", "NAMED", "NO_TEXT", "RUN", "Labels", "References", "Trial", "namespace_class"]

#: the text hash of a reference whose text is never compared (``hash`` never returns -1)
NO_TEXT = -1

EVENT = "event"
RUN = "run"
NAMED = "named"

#: (where, name) of a reference field, e.g. ("envelope", "parent_id")
Label = tuple[str, str]


def namespace_class(namespace: str) -> str:
    if namespace == "event":
        return EVENT
    if namespace == "run":
        return RUN
    return NAMED


class Labels:
    """Reference labels as small integers, shared by both logs, with each one's namespace."""

    _NONE: tuple[int, ...] = ()

    def __init__(self) -> None:
        self.labels: list[Label] = []
        self.namespaces: list[str] = []
        self.classes: list[str] = []
        self._index: dict[Label, int] = {}

    def index(self, label: Label, namespace: str) -> int:
        found = self._index.get(label)
        if found is None:
            found = self._index[label] = len(self.labels)
            self.labels.append(label)
            self.namespaces.append(namespace)
            self.classes.append(namespace_class(namespace))
        return found

    def flatten(self, refs: tuple[tuple[Label, str, int, str | None], ...]) -> tuple[int, ...]:
        """``(label, target, text hash)`` per reference, flat. The hash (of this process: both logs are
        read by it) stands for the text; ``NO_TEXT`` marks a text never compared."""
        if not refs:
            return self._NONE
        flat: list[int] = []
        for label, namespace, target, text in refs:
            flat += (self.index(label, namespace), target, NO_TEXT if text is None else hash(text))
        return tuple(flat)

    def of_class(self, cls: str) -> frozenset[int]:
        return frozenset(i for i, c in enumerate(self.classes) if c == cls)


class References:
    """Decide, pair by aligned pair in alignment order, which references disagree."""

    def __init__(self, labels: Labels, a2b: array[int]) -> None:
        self.labels = labels
        self.a2b = a2b
        self._forward: dict[tuple[str, int], int] = {}  # (namespace, A value) -> B value
        self._backward: dict[tuple[str, int], int] = {}

    def _named(self, namespace: str, ta: int, tb: int, update: bool) -> bool:
        fa = self._forward.get((namespace, ta))
        fb = self._backward.get((namespace, tb))
        if fa is None and fb is None:
            if update:
                self._forward[(namespace, ta)] = tb
                self._backward[(namespace, tb)] = ta
            return True
        return fa == tb and fb == ta

    def agree(self, label: int, ta: int, tb: int, *, update: bool = True) -> bool:
        """Whether two references of one label, whose texts differ, agree (``update``: learn the renaming)."""
        cls = self.labels.classes[label]
        if cls == EVENT:
            return self.a2b[ta] == tb if ta >= 0 and tb >= 0 else ta == tb
        if cls == RUN:
            return ta == tb
        return self._named(self.labels.namespaces[label], ta, tb, update)

    def disagreeing(self, ra: tuple[int, ...], rb: tuple[int, ...], *, update: bool = True) -> list[int]:
        """Labels carried by both events whose references disagree (a label on one side only is a content
        difference, found elsewhere)."""
        if not ra or not rb:
            return []
        out: list[int] = []
        if len(ra) == len(rb) and all(ra[k] == rb[k] for k in range(0, len(ra), 3)):
            for k in range(0, len(ra), 3):
                ha, hb = ra[k + 2], rb[k + 2]
                if (ha != hb or ha == NO_TEXT) and not self.agree(ra[k], ra[k + 1], rb[k + 1], update=update):
                    out.append(ra[k])
            return out
        mine = {ra[k]: (ra[k + 1], ra[k + 2]) for k in range(0, len(ra), 3)}
        for k in range(0, len(rb), 3):
            theirs = mine.get(rb[k])
            if theirs is None:
                continue
            ta, ha = theirs
            tb, hb = rb[k + 1], rb[k + 2]
            if (ha != hb or ha == NO_TEXT) and not self.agree(rb[k], ta, tb, update=update):
                out.append(rb[k])
        return out

    def trial(self, fa: Callable[[int], int]) -> Trial:
        """Judge pairs under another alignment ``fa`` (A index -> B index), learning nothing for real."""
        return Trial(self, fa)


class Trial:
    """``References`` under a tentative alignment: what it learns stays in an overlay."""

    def __init__(self, base: References, fa: Callable[[int], int]) -> None:
        self.base, self.fa = base, fa
        self._forward: dict[tuple[str, int], int] = {}
        self._backward: dict[tuple[str, int], int] = {}

    def _named(self, namespace: str, ta: int, tb: int) -> bool:
        key_a, key_b = (namespace, ta), (namespace, tb)
        fa = self._forward.get(key_a, self.base._forward.get(key_a))
        fb = self._backward.get(key_b, self.base._backward.get(key_b))
        if fa is None and fb is None:
            self._forward[key_a] = tb
            self._backward[key_b] = ta
            return True
        return fa == tb and fb == ta

    def disagrees(self, ra: tuple[int, ...], rb: tuple[int, ...]) -> bool:
        if not ra or not rb:
            return False
        labels = self.base.labels
        mine = {ra[k]: (ra[k + 1], ra[k + 2]) for k in range(0, len(ra), 3)}
        bad = False
        for k in range(0, len(rb), 3):
            label = rb[k]
            theirs = mine.get(label)
            if theirs is None:
                continue
            ta, ha = theirs
            tb, hb = rb[k + 1], rb[k + 2]
            if ha == hb and ha != NO_TEXT:
                continue
            cls = labels.classes[label]
            if cls == EVENT:
                ok = self.fa(ta) == tb if ta >= 0 and tb >= 0 else ta == tb
            elif cls == RUN:
                ok = ta == tb
            else:
                ok = self._named(labels.namespaces[label], ta, tb)
            bad = bad or not ok
        return bad
