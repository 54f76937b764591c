"""Sliding insertions and deletions so that references line up (docs/diff.md, "Alignment").

A shortest edit script is often not unique: when a retried tool call is
inserted next to an identical one, the insertion can sit before or after
it at the same cost, and which one the search picks decides which call each
later ``tool.result`` is aligned with. The keys cannot tell (references are
left out of them on purpose), the references can.

So every pure insertion or deletion that can slide -- the events just
before it equal (by key) the last events of the block, or the events just
after it the first ones -- is tried at each position it can slide to (at
most ``limit`` each way), and kept where the fewest aligned pairs have a
reference that disagrees: the pairs whose alignment the slide changes, and
every pair with a reference into the events it moves, judged in alignment
order by the same rules as the walk (``References``), on top of what the
walk has learnt before the hunk. Ties keep the search's own position. The
walk settles each hunk when it reaches it (``Slider.settle``).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from ract_cli.diff.normalise import NAMED_STRIDE
from ract_cli.diff.references import NAMED, References

__all__ = ["DEFAULT_SLIDE", "Referrers", "Segment", "Slider"]

DEFAULT_SLIDE = 64


@dataclass(slots=True)
class Segment:
    """A stretch of the alignment: ``equal`` (pairs a1+t with b1+t) or ``hunk`` (deletions and insertions)."""

    tag: str
    a1: int
    a2: int
    b1: int
    b2: int


class _SideLike(Protocol):
    keys: array[int]
    refs: list[tuple[int, ...]]

    def __len__(self) -> int: ...


class Referrers:
    """Who refers to whom, within one log: event index -> the later events whose references resolve to it
    (a named value counts as a reference to the first event that carried it)."""

    def __init__(self, refs: Sequence[tuple[int, ...]], named: frozenset[int]) -> None:
        n = len(refs)

        def targets(x: int, r: tuple[int, ...]) -> Iterator[int]:
            for k in range(0, len(r), 3):
                t = r[k + 1] // NAMED_STRIDE if r[k] in named else r[k + 1]
                if 0 <= t < x:
                    yield t

        counts = array("q", bytes(8 * (n + 1)))
        for x, r in enumerate(refs):
            for t in targets(x, r):
                counts[t + 1] += 1
        for t in range(n):
            counts[t + 1] += counts[t]
        self.start = counts
        filled = array("q", counts[:-1]) if n else array("q")
        self.who = array("q", bytes(8 * (counts[n] if n else 0)))
        for x, r in enumerate(refs):
            for t in targets(x, r):
                self.who[filled[t]] = x
                filled[t] += 1

    def of(self, target: int) -> array[int]:
        return self.who[self.start[target] : self.start[target + 1]]


class Slider:
    """Settle pure hunks one at a time, as the walk reaches them (``References`` holds what it learnt)."""

    def __init__(
        self,
        a: _SideLike,
        b: _SideLike,
        a2b: array[int],
        b2a: array[int],
        references: References,
        limit: int = DEFAULT_SLIDE,
    ) -> None:
        self.a, self.b, self.a2b, self.b2a, self.limit = a, b, a2b, b2a, limit
        self.references = references
        self._named = references.labels.of_class(NAMED)
        self._ref_a: Referrers | None = None
        self._ref_b: Referrers | None = None

    def referrers(self, side: str) -> Referrers:
        if side == "a":
            if self._ref_a is None:
                self._ref_a = Referrers(self.a.refs, self._named)
            return self._ref_a
        if self._ref_b is None:
            self._ref_b = Referrers(self.b.refs, self._named)
        return self._ref_b

    @staticmethod
    def _neighbours(segments: list[Segment], k: int) -> tuple[Segment | None, Segment | None]:
        prev = segments[k - 1] if k > 0 and segments[k - 1].tag == "equal" else None
        nxt = segments[k + 1] if k + 1 < len(segments) and segments[k + 1].tag == "equal" else None
        return prev, nxt

    def extents(self, segments: list[Segment], k: int) -> tuple[int, int]:
        """How far the hunk at ``k`` can slide left and right (0, 0: it cannot, or it is not pure)."""
        seg = segments[k]
        if seg.tag != "hunk" or (seg.a1 != seg.a2 and seg.b1 != seg.b2):
            return 0, 0
        prev, nxt = self._neighbours(segments, k)
        block_in_b = seg.a1 == seg.a2
        keys = self.b.keys if block_in_b else self.a.keys
        s1, s2 = (seg.b1, seg.b2) if block_in_b else (seg.a1, seg.a2)
        room_left = prev.a2 - prev.a1 if prev is not None else 0
        room_right = nxt.a2 - nxt.a1 if nxt is not None else 0
        left = 0
        while left < self.limit and left < room_left and keys[s1 - 1 - left] == keys[s2 - 1 - left]:
            left += 1
        right = 0
        while right < self.limit and right < room_right and keys[s1 + right] == keys[s2 + right]:
            right += 1
        return left, right

    def _cost(
        self, fa: Callable[[int], int], fb: Callable[[int], int], a_lo: int, a_hi: int, b_lo: int, b_hi: int
    ) -> int:
        """Aligned pairs with a disagreeing reference, among those the slide touches, judged in alignment
        order on top of what the walk has learnt so far."""
        pairs: set[tuple[int, int]] = set()
        for u in range(a_lo, a_hi):
            pairs.add((u, fa(u)))
        ref_a, ref_b = self.referrers("a"), self.referrers("b")
        for t in range(a_lo, a_hi):
            for x in ref_a.of(t):
                pairs.add((x, fa(x)))
        for t in range(b_lo, b_hi):
            for y in ref_b.of(t):
                pairs.add((fb(y), y))
        trial = self.references.trial(fa)
        return sum(1 for x, y in sorted(pairs) if x >= 0 and y >= 0 and trial.disagrees(self.a.refs[x], self.b.refs[y]))

    def settle(self, segments: list[Segment], k: int, left: int, right: int) -> None:
        """Move the pure hunk at ``k`` (and ``a2b`` / ``b2a`` with it) to its best position."""
        seg = segments[k]
        prev, nxt = self._neighbours(segments, k)
        block_in_b = seg.a1 == seg.a2
        a1, a2, b1, b2 = seg.a1, seg.a2, seg.b1, seg.b2
        s1, s2 = (b1, b2) if block_in_b else (a1, a2)  # the block, on its side
        o = a1 if block_in_b else b1  # where it stands on the other side
        # other side O[u], u in [o-left, o+right), pairs S[u-o+s1] before the block, S[u-o+s2] after it
        o_lo, o_hi, s_lo, s_hi = o - left, o + right, s1 - left, s2 + right

        def maps(c: int) -> tuple[Callable[[int], int], Callable[[int], int]]:
            def o2s(u: int, default: Callable[[int], int]) -> int:
                if o_lo <= u < o_hi:
                    return u - o + s1 if u < o + c else u - o + s2
                return default(u)

            def s2o(v: int, default: Callable[[int], int]) -> int:
                if s_lo <= v < s_hi:
                    if v < s1 + c:
                        return v - s1 + o
                    if v < s2 + c:
                        return -1  # in the block
                    return v - s2 + o
                return default(v)

            a2b, b2a = self.a2b.__getitem__, self.b2a.__getitem__
            if block_in_b:
                return (lambda u: o2s(u, a2b)), (lambda v: s2o(v, b2a))
            return (lambda u: s2o(u, a2b)), (lambda v: o2s(v, b2a))

        a_lo, a_hi, b_lo, b_hi = (o_lo, o_hi, s_lo, s_hi) if block_in_b else (s_lo, s_hi, o_lo, o_hi)
        best_c, best_cost = 0, self._cost(*maps(0), a_lo, a_hi, b_lo, b_hi)
        for c in sorted(range(-left, right + 1), key=abs):
            if c == 0 or best_cost == 0:
                continue
            cost = self._cost(*maps(c), a_lo, a_hi, b_lo, b_hi)
            if cost < best_cost:
                best_c, best_cost = c, cost
        if best_c == 0:
            return
        fa, fb = maps(best_c)
        new_a = [fa(u) for u in range(a_lo, a_hi)]
        new_b = [fb(v) for v in range(b_lo, b_hi)]
        self.a2b[a_lo:a_hi] = array("q", new_a)
        self.b2a[b_lo:b_hi] = array("q", new_b)
        c = best_c
        seg.a1, seg.a2, seg.b1, seg.b2 = a1 + c, a2 + c, b1 + c, b2 + c
        if prev is not None:
            prev.a2 += c
            prev.b2 += c
        if nxt is not None:
            nxt.a1 += c
            nxt.b1 += c
