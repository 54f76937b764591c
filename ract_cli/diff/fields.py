"""Pass two of a diff: the payload fields that differ between two aligned events, with both values."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ract_cli.diff.normalise import EXTERNAL, NAMED_STRIDE, THIS_RUN, Normalised, Normaliser
from ract_cli.diff.references import EVENT, namespace_class
from ract_cli.diff.result import (
    FieldDiff,
    Target,
)
from ract_cli.diff.rules import ENVELOPE, PAYLOAD, RECORD, FieldPolicy
from ract_cli.diff.sides import DiffOptions, _open, _Side, _Walk
from ract_cli.errors import LogIOError
from ract_cli.format.canonical import canonical_bytes

# --- pass two: the fields of the reported events ------------------------------------


class _Cursor:
    """Pass two over one log: its compared events again, in order, checked against pass one."""

    def __init__(self, side: _Side, options: DiffOptions, policy: FieldPolicy) -> None:
        self.side = side
        self.reader = _open(side.reader.path, side.reader.display_path, options, side.reader.dialect)
        self._events: Iterator[Any] = iter(self.reader)
        self._normaliser = Normaliser(policy)
        self._policy = policy
        self.index = -1
        self.current: tuple[Any, Normalised] | None = None

    def at(self, index: int) -> tuple[Any, Normalised]:
        while self.index < index:
            ev = next(self._events, None)
            if ev is None or not ev.trusted:
                raise LogIOError(f"{self.side.reader.display_path}: the log changed while it was being diffed")
            if self._policy.excluded(ev.kind):
                continue
            n = self._normaliser.feed(ev.kind, ev.event, ev.payload)
            self.index += 1
            if n.key != self.side.keys[self.index] or ev.line != self.side.lines[self.index]:
                raise LogIOError(f"{self.side.reader.display_path}: the log changed while it was being diffed")
            self.current = (ev, n)
        assert self.current is not None
        return self.current

    def close(self) -> None:
        close = getattr(self._events, "close", None)
        if callable(close):
            close()


def _same(x: Any, y: Any) -> bool:
    if x is y:
        return True
    try:
        return bool(canonical_bytes(x) == canonical_bytes(y))
    except Exception:  # no canonical form (cannot happen for values read from a log): compare as Python does
        return bool(x == y)


def _walk_values(where: str, path: tuple[str, ...], x: Any, y: Any, out: list[FieldDiff]) -> None:
    if type(x) is dict and type(y) is dict:
        for k in sorted(set(x) | set(y)):
            if k not in x:
                out.append(FieldDiff(where, (*path, k), b=y[k]))
            elif k not in y:
                out.append(FieldDiff(where, (*path, k), a=x[k]))
            else:
                _walk_values(where, (*path, k), x[k], y[k], out)
    elif not _same(x, y):
        out.append(FieldDiff(where, path, a=x, b=y))


class _Fields:
    """How two facing events differ, field by field (references as ``References`` decided)."""

    def __init__(self, a: _Side, b: _Side, walk: _Walk, raxol: bool) -> None:
        self.a, self.b, self.walk = a, b, walk
        self.labels = walk.references.labels
        self.top = RECORD if raxol else ENVELOPE

    def _target(self, side: str, namespace: str, t: int) -> Target:
        if t == EXTERNAL:
            return Target(side, outside=True)
        if t == THIS_RUN:
            return Target(side, this_run=True)
        lines = self.a.lines if side == "a" else self.b.lines
        if namespace_class(namespace) != EVENT:
            first = t // NAMED_STRIDE  # the first event that carried the value
            return Target(side, first + 1, lines[first], first_use=True)
        if side == "a":
            j = self.walk.a2b[t]
            return Target(side, t + 1, lines[t], aligned_with=None if j < 0 else j + 1)
        return Target(side, t + 1, lines[t])

    def diff(
        self,
        ea: dict[str, Any],
        na: Normalised,
        eb: dict[str, Any],
        nb: Normalised,
        bad_refs: tuple[int, ...] | None,
    ) -> list[FieldDiff]:
        """``bad_refs``: the labels the walk found disagreeing for this aligned pair; ``None`` for two
        facing events that are not aligned with each other (their references are judged here, read-only)."""
        out: list[FieldDiff] = []
        if na.kind != nb.kind:
            out.append(FieldDiff(self.top, ("type" if self.top == RECORD else "kind",), a=na.kind, b=nb.kind))
        if bad_refs is None:
            bad_refs = tuple(
                self.walk.references.disagreeing(
                    self.labels.flatten(na.refs), self.labels.flatten(nb.refs), update=False
                )
            )
        bad = {self.labels.labels[k] for k in bad_refs}
        pa, pb = _payload_of(ea), _payload_of(eb)
        for where, ca, cb, raw_a, raw_b in (
            (self.top, na.envelope, nb.envelope, ea, eb),
            (PAYLOAD, na.payload, nb.payload, pa, pb),
        ):
            refs_a = {name: (ns, t) for (w, name), ns, t, _ in na.refs if w == where}
            refs_b = {name: (ns, t) for (w, name), ns, t, _ in nb.refs if w == where}
            for name in sorted(set(ca) | set(cb) | set(refs_a) | set(refs_b)):
                if name in refs_a and name in refs_b:
                    if (where, name) in bad:
                        out.append(
                            FieldDiff(
                                where,
                                (name,),
                                a=raw_a[name],
                                b=raw_b[name],
                                a_target=self._target("a", *refs_a[name]),
                                b_target=self._target("b", *refs_b[name]),
                            )
                        )
                elif name in ca and name in cb:
                    _walk_values(where, (name,), ca[name], cb[name], out)
                else:  # on one side only, or a reference on one side and a plain value on the other
                    diff = FieldDiff(where, (name,))
                    if name in raw_a:
                        diff.a = ca.get(name, raw_a[name])
                        if name in refs_a:
                            diff.a_target = self._target("a", *refs_a[name])
                    if name in raw_b:
                        diff.b = cb.get(name, raw_b[name])
                        if name in refs_b:
                            diff.b_target = self._target("b", *refs_b[name])
                    out.append(diff)
        return out


def _payload_of(event: dict[str, Any]) -> dict[str, Any]:
    payload = event.get("payload")
    return payload if type(payload) is dict else {}
