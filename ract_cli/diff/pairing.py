"""Pairing the events of one hunk by kind, in bounded work (docs/diff.md, "Alignment and its bounds").

Inside a run of deletions and insertions, events of the same kind are paired
into **changed** events by a sequence alignment of the two kind sequences:

1. a hunk whose sides multiply past ``PAIRING_CELLS`` is paired position by
   position (linear);
2. otherwise the longest-match-first alignment of ``difflib.SequenceMatcher``
   (``autojunk=False``, no junk) is computed, with the same result, by
   ``match_kinds`` -- but under a budget of ``WORK_PER_CELL`` steps per cell
   of the hunk (plus ``WORK_FLOOR``). Ordinary hunks take under 2 steps a
   cell (random kinds, 2 to 12 of them, up to 1000 by 1000 events: at most
   1.7); a few repeated kinds (A all ``X``, B alternating ``Y``, ``X``) make
   it peel one match at a time, in steps cubic in the hunk's size (1.7
   million for 250 events against 250, 13 million for 500), which is where
   the budget stops it;
3. past the budget the kinds are aligned by ``align`` instead (Myers'
   shortest edit script, ``max_work`` the same budget, greedy resync past it).

So a hunk of n by m events costs at most ``WORK_PER_CELL``·n·m +
``WORK_FLOOR`` steps in the matcher (one row over at most), as much again in
the search (checked after each of its rounds), and a linear resync: about 8
million steps at most (n·m <= 1,000,000), which is at most 4·sqrt(n·m) <=
4000 steps per event of the hunk (plus the floor), whatever its content.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from ract_cli.diff.align import DEFAULT_MAX_EDITS, DEFAULT_WINDOW, Opcode, align

__all__ = ["PAIRING_CELLS", "WORK_FLOOR", "WORK_PER_CELL", "Pairing", "budget", "match_kinds", "pair_kinds"]

#: a hunk whose two sides multiply past this is paired position by position, not by a kind alignment
PAIRING_CELLS = 1_000_000
#: the matcher's budget: this many steps per cell of the hunk (ordinary hunks measure under 2) ...
WORK_PER_CELL = 4
#: ... plus this many, so that small hunks are always matched
WORK_FLOOR = 20_000


@dataclass(frozen=True, slots=True)
class Pairing:
    """A hunk's events grouped by a kind alignment: ``equal`` groups pair into changed events."""

    groups: list[Opcode]  # difflib-style opcodes over the two kind sequences
    method: str  # "matcher", "myers", "myers+resync", "positional" or "trivial"
    work: int  # comparison steps spent (the matcher's, plus the fallback's)


def budget(n: int, m: int) -> int:
    """The matcher's budget for a hunk of ``n`` by ``m`` events (the fallback gets as much)."""
    return WORK_PER_CELL * n * m + WORK_FLOOR


def pair_kinds(ka: Sequence[int], kb: Sequence[int]) -> Pairing:
    """Group one hunk's events (kinds ``ka`` in A, ``kb`` in B) as the module docstring says."""
    n, m = len(ka), len(kb)
    if not n or not m:
        return Pairing([("delete", 0, n, 0, 0)] if n else [("insert", 0, 0, 0, m)], "trivial", 0)
    if n * m > PAIRING_CELLS:
        return Pairing(_positional(ka, kb), "positional", min(n, m))
    limit = budget(n, m)
    groups, work = match_kinds(ka, kb, limit)
    if groups is not None:
        return Pairing(groups, "matcher", work)
    alignment = align(ka, kb, max_edits=DEFAULT_MAX_EDITS, max_work=limit, window=DEFAULT_WINDOW)
    return Pairing(alignment.opcodes, alignment.method, work + alignment.work)


def _positional(ka: Sequence[int], kb: Sequence[int]) -> list[Opcode]:
    common = min(len(ka), len(kb))
    groups: list[Opcode] = [("equal" if ka[t] == kb[t] else "replace", t, t + 1, t, t + 1) for t in range(common)]
    if len(ka) > common:
        groups.append(("delete", common, len(ka), common, common))
    if len(kb) > common:
        groups.append(("insert", common, common, common, len(kb)))
    return groups


def match_kinds(a: Sequence[int], b: Sequence[int], limit: int) -> tuple[list[Opcode] | None, int]:
    """``SequenceMatcher(None, a, b, autojunk=False).get_opcodes()``, or ``None`` past ``limit`` steps.

    The same algorithm (the longest matching block of each unmatched stretch,
    the first in ``a`` then ``b`` among the longest, recursively), with the
    same result; a step is one row of a longest-match search or one candidate
    position in it. Returns the opcodes (``None`` past the limit) and the
    steps taken, which exceed ``limit`` by at most one row (``len(b)`` + 1).
    """
    la, lb = len(a), len(b)
    b2j: dict[int, list[int]] = {}
    for j, x in enumerate(b):
        b2j.setdefault(x, []).append(j)
    work = lb
    nothing: list[int] = []
    blocks: list[tuple[int, int, int]] = []
    queue = [(0, la, 0, lb)]
    while queue:
        alo, ahi, blo, bhi = queue.pop()
        besti, bestj, bestsize = alo, blo, 0
        j2len: dict[int, int] = {}
        for i in range(alo, ahi):
            js = b2j.get(a[i], nothing)
            lo = bisect_left(js, blo)
            hi = bisect_left(js, bhi, lo)
            work += 1 + hi - lo
            if work > limit:
                return None, work
            get = j2len.get
            new: dict[int, int] = {}
            for t in range(lo, hi):
                j = js[t]
                k = new[j] = get(j - 1, 0) + 1
                if k > bestsize:
                    besti, bestj, bestsize = i - k + 1, j - k + 1, k
            j2len = new
        if bestsize:
            blocks.append((besti, bestj, bestsize))
            if alo < besti and blo < bestj:
                queue.append((alo, besti, blo, bestj))
            if besti + bestsize < ahi and bestj + bestsize < bhi:
                queue.append((besti + bestsize, ahi, bestj + bestsize, bhi))
    blocks.sort()
    merged: list[tuple[int, int, int]] = []
    for i2, j2, k2 in blocks:  # adjacent blocks are one (as difflib collapses them)
        if merged and merged[-1][0] + merged[-1][2] == i2 and merged[-1][1] + merged[-1][2] == j2:
            i1, j1, k1 = merged[-1]
            merged[-1] = (i1, j1, k1 + k2)
        else:
            merged.append((i2, j2, k2))
    merged.append((la, lb, 0))
    ops: list[Opcode] = []
    i = j = 0
    for ai, bj, size in merged:
        tag = "replace" if i < ai and j < bj else "delete" if i < ai else "insert" if j < bj else ""
        if tag:
            ops.append((tag, i, ai, j, bj))
        i, j = ai + size, bj + size
        if size:
            ops.append(("equal", ai, i, bj, j))
    return ops, work
