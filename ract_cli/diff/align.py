"""Aligning two sequences of event keys, in bounded time and memory (docs/diff.md, "Alignment").

1. The common prefix and suffix are matched first (linear: a faithful
   replay, or one that diverges once, is settled here).
2. The rest is aligned with Myers' O((N+M)·D) shortest edit script, so one
   inserted event is one insertion and one changed event one deletion plus
   one insertion (the caller pairs those into a change). The search stops
   after ``max_edits`` edits or ``max_work`` comparison steps; its trace
   takes at most ``max_edits``² / 2 8-byte integers.
3. Past either bound the middle is resynchronised greedily instead (linear):
   at a mismatch, the nearest pair of equal keys within ``window`` events on
   each side is taken as the next match. The result is then marked
   ``exact=False``: still an alignment, not necessarily a shortest one.

Keys are compared for equality only, so any hashable sequence will do; the
diff passes ``array('Q')`` of 64-bit event digests.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DEFAULT_MAX_EDITS", "DEFAULT_MAX_WORK", "DEFAULT_WINDOW", "Alignment", "align"]

DEFAULT_MAX_EDITS = 2000
DEFAULT_MAX_WORK = 20_000_000
DEFAULT_WINDOW = 64

#: difflib-style opcode: (tag, a_start, a_end, b_start, b_end), tag in equal / delete / insert
Opcode = tuple[str, int, int, int, int]


@dataclass(frozen=True, slots=True)
class Alignment:
    """How two sequences line up: opcodes covering both sequences, in order."""

    opcodes: list[Opcode]
    exact: bool  # False: a bound was hit and part of it was resynchronised greedily
    edits: int  # insertions + deletions in the opcodes
    work: int = 0  # comparison steps spent (prefix and suffix, search, resync)

    @property
    def method(self) -> str:
        return "myers" if self.exact else "myers+resync"


def align(
    a: Sequence[object],
    b: Sequence[object],
    *,
    max_edits: int = DEFAULT_MAX_EDITS,
    max_work: int = DEFAULT_MAX_WORK,
    window: int = DEFAULT_WINDOW,
) -> Alignment:
    """Align ``a`` with ``b`` (see the module docstring for the bounds)."""
    n, m = len(a), len(b)
    p = 0
    while p < n and p < m and a[p] == b[p]:
        p += 1
    s = 0
    while s < n - p and s < m - p and a[n - 1 - s] == b[m - 1 - s]:
        s += 1
    ops: list[Opcode] = []
    if p:
        ops.append(("equal", 0, p, 0, p))
    mid_a, mid_b = a[p : n - s], b[p : m - s]
    exact = True
    middle, work = _myers(mid_a, mid_b, max_edits, max_work)
    work += p + s
    if middle is None:
        exact = False
        middle, more = _resync(mid_a, mid_b, window)
        work += more
    ops.extend((tag, a1 + p, a2 + p, b1 + p, b2 + p) for tag, a1, a2, b1, b2 in middle)
    if s:
        ops.append(("equal", n - s, n, m - s, m))
    merged = _merge(ops)
    edits = sum((a2 - a1) + (b2 - b1) for tag, a1, a2, b1, b2 in merged if tag != "equal")
    return Alignment(merged, exact, edits, work)


def _merge(ops: list[Opcode]) -> list[Opcode]:
    """Join adjacent opcodes of one tag; drop empty ones."""
    out: list[Opcode] = []
    for op in ops:
        tag, a1, a2, b1, b2 = op
        if a1 == a2 and b1 == b2:
            continue
        if out and out[-1][0] == tag and out[-1][2] == a1 and out[-1][4] == b1:
            prev = out[-1]
            out[-1] = (tag, prev[1], a2, prev[3], b2)
        else:
            out.append(op)
    return out


def _myers(a: Sequence[object], b: Sequence[object], max_edits: int, max_work: int) -> tuple[list[Opcode] | None, int]:
    """Myers' greedy forward search with a trace for backtracking; ``None`` past a bound (and the work)."""
    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return ([("delete", 0, n, 0, 0)] if n else [("insert", 0, 0, 0, m)] if m else []), 0
    limit = min(max_edits, n + m)
    off = limit + 1
    v = array("q", bytes(8 * (2 * limit + 3)))
    trace: list[array[int]] = []
    work = 0
    for d in range(limit + 1):
        trace.append(v[off - d - 1 : off + d + 2])  # k in [-d-1, d+1] before round d; index k + d + 1
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[off + k - 1] < v[off + k + 1]):
                x = v[off + k + 1]  # down: an insertion from b
            else:
                x = v[off + k - 1] + 1  # right: a deletion from a
            y = x - k
            start = x
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            work += 1 + x - start
            v[off + k] = x
            if x >= n and y >= m:
                return _backtrack(trace, d, n, m), work
        if work > max_work:
            return None, work
    return None, work


def _backtrack(trace: list[array[int]], d_end: int, n: int, m: int) -> list[Opcode]:
    ops: list[Opcode] = []
    x, y = n, m
    for d in range(d_end, -1, -1):
        vd, base = trace[d], d + 1
        k = x - y
        down = k == -d or (k != d and vd[base + k - 1] < vd[base + k + 1])
        pk = k + 1 if down else k - 1
        px = vd[base + pk]
        py = px - pk
        if d == 0:
            mx, my = 0, 0
        else:
            mx, my = (px, py + 1) if down else (px + 1, py)
        if x > mx:
            ops.append(("equal", mx, x, my, y))
        if d > 0:
            ops.append(("insert", px, px, py, py + 1) if down else ("delete", px, px + 1, py, py))
        x, y = px, py
    ops.reverse()
    return _merge(ops)


def _resync(a: Sequence[object], b: Sequence[object], window: int) -> tuple[list[Opcode], int]:
    """Linear greedy alignment: match runs, and at a mismatch jump to the nearest equal pair in the window."""
    n, m = len(a), len(b)
    ops: list[Opcode] = []
    i = j = 0
    work = 0
    while i < n and j < m:
        if a[i] == b[j]:
            i0, j0 = i, j
            while i < n and j < m and a[i] == b[j]:
                i += 1
                j += 1
            ops.append(("equal", i0, i, j0, j))
            work += i - i0
            continue
        first_in_b: dict[object, int] = {}
        for q in range(min(window + 1, m - j)):
            first_in_b.setdefault(b[j + q], q)
        best: tuple[int, int] | None = None
        for p in range(min(window + 1, n - i)):
            hit = first_in_b.get(a[i + p])
            if hit is not None and (best is None or p + hit < best[0] + best[1]):
                best = (p, hit)
        if best is None:  # nothing to hold on to nearby: one window of each side is replaced
            step = min(window, n - i, m - j)
            best = (step, step)
        work += min(window + 1, m - j) + min(window + 1, n - i)
        p, q = best
        if p:
            ops.append(("delete", i, i + p, j, j))
        if q:
            ops.append(("insert", i + p, i + p, j, j + q))
        i, j = i + p, j + q
    if i < n:
        ops.append(("delete", i, n, j, j))
    if j < m:
        ops.append(("insert", n, n, j, m))
    return _merge(ops), work
