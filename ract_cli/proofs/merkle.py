"""RFC 9162 §2.1 Merkle trees: hashes, roots, inclusion and consistency proofs.

SPEC §14: the leaves are a log's events in file order; leaf data is the 32
raw bytes of the event's ``hash``. Everything here works on leaf *hashes*
(``leaf_hash(data)``) so that a caller never needs the events themselves.

Two ways to use it:

* in memory, over a list of leaf hashes (``root``, ``inclusion_proof``,
  ``consistency_proof``): for tests and small trees;
* streaming, fed one leaf hash at a time (``TreeBuilder`` keeps O(log n)
  subtree hashes; ``RangeHasher`` computes the hashes of a few chosen
  subtrees in one pass; ``InclusionProver`` builds the proof of one leaf
  whose index is learnt on the way). Memory never depends on the tree size.

Verification (``verify_inclusion``, ``verify_consistency``) follows the
algorithms of RFC 9162 §2.1.3.2 and §2.1.4.2 step by step.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

HASH_SIZE = 32
#: RFC 9162 §2.1.1: the hash of an empty tree is the hash of an empty string
EMPTY_ROOT = hashlib.sha256(b"").digest()


class ProofError(ValueError):
    """An index or size a proof cannot be made or checked for."""


def leaf_hash(data: bytes) -> bytes:
    """RFC 9162 §2.1.1: ``SHA-256(0x00 || data)``."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 9162 §2.1.1: ``SHA-256(0x01 || left || right)``."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def split_point(n: int) -> int:
    """The largest power of two smaller than ``n`` (``n >= 2``): where MTH splits ``D[n]``."""
    if n < 2:
        raise ProofError(f"a tree of {n} leaves does not split")
    return 1 << ((n - 1).bit_length() - 1)


# --- streaming root ---------------------------------------------------------


class TreeBuilder:
    """The root of a growing tree in O(log n) memory.

    Holds the "frontier": the roots of the perfect subtrees the leaves so far
    decompose into (sizes are the binary digits of ``size``, largest first).
    Appending merges equal sizes like a binary counter; ``root()`` folds the
    frontier from the right, which is RFC 9162's MTH (its left subtrees are
    always perfect).
    """

    __slots__ = ("_frontier", "size")

    def __init__(self) -> None:
        self.size = 0
        self._frontier: list[tuple[int, bytes]] = []  # (subtree size, subtree hash)

    def append(self, leaf: bytes) -> None:
        """Add one leaf *hash* (see ``leaf_hash``)."""
        if len(leaf) != HASH_SIZE:
            raise ProofError(f"a leaf hash is {HASH_SIZE} bytes, not {len(leaf)}")
        frontier = self._frontier
        size, value = 1, leaf
        while frontier and frontier[-1][0] == size:
            left_size, left = frontier.pop()
            size, value = size + left_size, node_hash(left, value)
        frontier.append((size, value))
        self.size += 1

    def extend(self, leaves: Iterable[bytes]) -> None:
        for leaf in leaves:
            self.append(leaf)

    def root(self) -> bytes:
        """MTH of the leaves appended so far (``EMPTY_ROOT`` for none)."""
        if not self._frontier:
            return EMPTY_ROOT
        value = self._frontier[-1][1]
        for _, left in reversed(self._frontier[:-1]):
            value = node_hash(left, value)
        return value

    def frontier(self) -> list[tuple[int, int, bytes]]:
        """The perfect subtrees covering ``[0, size)``: ``(start, end, hash)``, left to right."""
        out, start = [], 0
        for size, value in self._frontier:
            out.append((start, start + size, value))
            start += size
        return out


def root(leaves: Iterable[bytes]) -> bytes:
    """MTH over leaf hashes (RFC 9162 §2.1.1), streaming."""
    builder = TreeBuilder()
    builder.extend(leaves)
    return builder.root()


# --- which subtrees a proof is made of ---------------------------------------


def inclusion_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """RFC 9162 §2.1.3.1 PATH(index, D[size]) as leaf ranges ``[start, end)``, the leaf's sibling first.

    The proof is the MTH of each range, in this order.
    """
    if not 0 <= index < size:
        raise ProofError(f"leaf index {index} is outside a tree of {size} leaves")
    top_down: list[tuple[int, int]] = []
    lo, hi = 0, size
    while hi - lo > 1:
        k = split_point(hi - lo)
        if index - lo < k:
            top_down.append((lo + k, hi))
            hi = lo + k
        else:
            top_down.append((lo, lo + k))
            lo = lo + k
    return top_down[::-1]


def consistency_ranges(old_size: int, new_size: int) -> list[tuple[int, int]]:
    """RFC 9162 §2.1.4.1 PROOF(old_size, D[new_size]) as leaf ranges, in proof order.

    Empty when ``old_size`` is 0 or equals ``new_size`` (nothing to prove).
    """
    if not 0 <= old_size <= new_size:
        raise ProofError(f"no consistency proof from a tree of {old_size} leaves to one of {new_size}")
    if old_size == 0 or old_size == new_size:
        return []
    out: list[tuple[int, int]] = []
    # SUBPROOF(m, D[lo:hi], b), unrolled: the appended MTHs come out innermost last, so collect and reverse
    suffix: list[tuple[int, int]] = []
    lo, hi, m, whole = 0, new_size, old_size, True
    while True:
        n = hi - lo
        if m == n:
            if not whole:
                out.append((lo, hi))
            break
        k = split_point(n)
        if m <= k:
            suffix.append((lo + k, hi))
            hi = lo + k
        else:
            suffix.append((lo, lo + k))
            lo, m, whole = lo + k, m - k, False
    return out + suffix[::-1]


# --- hashing chosen subtrees in one pass --------------------------------------


@dataclass(slots=True)
class _Range:
    start: int
    end: int
    builder: TreeBuilder = field(default_factory=TreeBuilder)


class RangeHasher:
    """MTH of each of a few disjoint leaf ranges, fed every leaf once, in order.

    Memory: O(log n) per range. ``hashes()`` once every range is complete.
    """

    def __init__(self, ranges: Sequence[tuple[int, int]], *, first_index: int = 0) -> None:
        self._ranges = [_Range(s, e) for s, e in ranges]
        self._pending = sorted(self._ranges, key=lambda r: r.start)
        for a, b in zip(self._pending, self._pending[1:], strict=False):
            if b.start < a.end:
                raise ProofError("ranges overlap")
        self.index = first_index  # index of the next leaf fed

    def add(self, leaf: bytes) -> None:
        i = self.index
        self.index += 1
        pending = self._pending
        while pending and pending[0].end <= i:
            pending.pop(0)
        if pending and pending[0].start <= i:
            pending[0].builder.append(leaf)

    @property
    def complete(self) -> bool:
        return all(r.builder.size == r.end - r.start for r in self._ranges)

    def hashes(self) -> list[bytes]:
        if not self.complete:
            raise ProofError("not every leaf of the proof's subtrees was seen")
        return [r.builder.root() for r in self._ranges]


class InclusionProver:
    """One pass over a tree's leaves: its root at ``size`` and the inclusion proof of one leaf.

    The leaf may be named up front (``index``) or while streaming
    (``add(leaf, target=True)``: the id or line of an event is matched on the
    way). The proof's subtrees left of the leaf are exactly the frontier of
    the tree at that moment (RFC 9162's left subtrees are perfect), so they are
    taken from it; those to its right are hashed as their leaves go by.
    Memory: O(log size).
    """

    def __init__(self, size: int, index: int | None = None) -> None:
        if size < 1:
            raise ProofError("an empty tree proves no leaf")
        self.size = size
        self.index: int | None = None
        self._tree = TreeBuilder()
        self._root: bytes | None = None
        self._left: dict[tuple[int, int], bytes] = {}
        self._right: RangeHasher | None = None
        self._ranges: list[tuple[int, int]] = []
        self._wanted = index
        self.fed = 0  # leaves fed so far, counting those past ``size``
        if index is not None and not 0 <= index < size:
            raise ProofError(f"leaf index {index} is outside a tree of {size} leaves")

    def add(self, leaf: bytes, *, target: bool = False) -> None:
        """Feed the next leaf hash; ``target``: this is the leaf to prove. Leaves past ``size`` are ignored."""
        i = self._tree.size
        if i >= self.size:  # past the checkpoint: the tree it signs is complete
            if target:
                raise ProofError(f"leaf {self.fed} is not in the first {self.size} leaves")
            self.fed += 1
            return
        self.fed += 1
        if target or i == self._wanted:
            if self.index is not None:
                raise ProofError("a second leaf was marked as the one to prove")
            self._mark(i)
        elif self._right is not None:
            self._right.add(leaf)
        self._tree.append(leaf)
        if self._tree.size == self.size:
            self._root = self._tree.root()

    def _mark(self, i: int) -> None:
        self.index = i
        self._ranges = inclusion_ranges(i, self.size)
        self._left = {(s, e): h for s, e, h in self._tree.frontier()}
        right = [(s, e) for s, e in self._ranges if s > i]
        left = [(s, e) for s, e in self._ranges if e <= i]
        if set(left) != set(self._left):  # cannot happen: RFC 9162's left subtrees are the frontier
            raise AssertionError("inclusion path does not match the frontier")
        self._right = RangeHasher(right, first_index=i + 1)

    @property
    def root(self) -> bytes | None:
        """MTH of the first ``size`` leaves, once that many were fed."""
        return self._root

    def proof(self) -> list[bytes]:
        if self.index is None:
            raise ProofError("no leaf was marked as the one to prove")
        if self._root is None or self._right is None:
            raise ProofError(f"fewer than {self.size} leaves were fed")
        right = dict(zip([(s, e) for s, e in self._ranges if s > self.index], self._right.hashes(), strict=False))
        return [self._left[r] if r in self._left else right[r] for r in self._ranges]


# --- in memory ----------------------------------------------------------------


def subtree_root(leaves: Sequence[bytes], start: int, end: int) -> bytes:
    return root(leaves[start:end])


def inclusion_proof(leaves: Sequence[bytes], index: int) -> list[bytes]:
    """PATH(index, D[n]) over a list of leaf hashes (RFC 9162 §2.1.3.1)."""
    return [subtree_root(leaves, s, e) for s, e in inclusion_ranges(index, len(leaves))]


def consistency_proof(leaves: Sequence[bytes], old_size: int) -> list[bytes]:
    """PROOF(old_size, D[n]) over a list of leaf hashes (RFC 9162 §2.1.4.1)."""
    return [subtree_root(leaves, s, e) for s, e in consistency_ranges(old_size, len(leaves))]


# --- verification -------------------------------------------------------------


def root_from_inclusion_proof(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """RFC 9162 §2.1.3.2 steps 1-4: the root the proof leads to; raises ``ProofError`` if it leads nowhere."""
    if not 0 <= index < size:
        raise ProofError(f"leaf index {index} is outside a tree of {size} leaves")
    if len(leaf) != HASH_SIZE or any(len(p) != HASH_SIZE for p in proof):
        raise ProofError(f"every hash is {HASH_SIZE} bytes")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofError("the proof is longer than the path from the leaf to the root")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("the proof is shorter than the path from the leaf to the root")
    return r


def verify_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes], root_hash: bytes) -> bool:
    """RFC 9162 §2.1.3.2: does ``proof`` show leaf hash ``leaf`` at ``index`` in the tree of ``size`` with ``root_hash``?"""
    try:
        return root_from_inclusion_proof(index, size, leaf, proof) == root_hash
    except ProofError:
        return False


def verify_consistency(old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]) -> bool:
    """RFC 9162 §2.1.4.2: is the tree (``new_size``, ``new_root``) an append-only extension of (``old_size``, ``old_root``)?"""
    if not 0 <= old_size <= new_size:
        return False
    if any(len(p) != HASH_SIZE for p in proof) or len(old_root) != HASH_SIZE or len(new_root) != HASH_SIZE:
        return False
    if old_size == new_size:
        return not proof and old_root == new_root
    if old_size == 0:
        return not proof  # every tree extends the empty one
    path = list(proof)
    if not path:
        return False
    if old_size & (old_size - 1) == 0:  # an exact power of two: the old root is a node of the new tree
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == old_root and sr == new_root and sn == 0
