"""An exact set of event ids in bounded memory (duplicate-id detection over huge logs)."""

from __future__ import annotations

import mmap

# --- across lines --------------------------------------------------------

_MASK64 = (1 << 64) - 1
_LOW58 = (1 << 58) - 1


def _hash(value: int) -> int:
    """A keyed 64-bit hash of a 128-bit id: CPython's hash of its 16 bytes (SipHash, keyed per process).

    Keyed because the ids are the log's to choose: under a fixed hash a
    crafted log can put every id in one slot, and each insert then steps over
    all of them (a million such ids: hours). And not a linear (multiply-shift)
    hash: under linear probing, ids in an arithmetic progression cluster. The
    top 6 bits pick the part, the rest the slot.
    """
    return hash(value.to_bytes(16, "big")) & _MASK64


def _zeroed_u64(n: int) -> memoryview:
    """``n`` zeroed uint64 slots in their own anonymous mapping.

    Freed with ``munmap`` when dropped, so the tables that grow one after
    another never leave holes in the C heap (an ``array`` of the same size
    did: verifying a 1 GB log peaked ~25 MB higher), and untouched pages cost
    no memory.
    """
    return memoryview(mmap.mmap(-1, 8 * n)).cast("Q")


class _Part:
    """One open-addressing table: the high and low 64 bits of each id, a zero pair marking an empty slot."""

    __slots__ = ("his", "limit", "los", "size", "used")

    def __init__(self, size: int) -> None:
        self.his = _zeroed_u64(size)
        self.los = _zeroed_u64(size)
        self.size = size
        self.used = 0
        self.limit = size * 3 // 4  # grown past three quarters full


class _IdSet:
    """Exact set of event ids (32 lowercase hex) in bounded memory.

    The first ``SMALL`` ids live in a Python set (fast, ~100 bytes per id).
    Past that they move to ``PARTS`` open-addressing tables of two flat
    uint64 arrays (16 bytes per slot), placed by a keyed hash (``_hash``),
    sized to take the moved ids without growing (keeping the set instead
    saves the move, ~0.4 s, but costs 30 MB: 89 MB instead of 59 for two
    million ids). Each part grows by 1.5x on its own, so there is never a
    whole-table doubling spike: about 25-35 bytes per id, which keeps a
    multi-gigabyte log inside a fixed memory budget.
    ``probes`` counts the occupied slots inserts stepped over (a test's
    measure of clustering).
    """

    SMALL = 1 << 18
    PARTS = 64  # (the top 6 bits of the hash pick one)
    _START = 1 << 12

    def __init__(self) -> None:
        self._small: set[str] | None = set()
        self._parts: list[_Part] = []
        self._zero = False
        self.probes = 0

    def add(self, hex_id: str) -> bool:
        """Add; False when the id was already present."""
        small = self._small
        if small is not None:
            if hex_id in small:
                return False
            small.add(hex_id)
            if len(small) >= self.SMALL:
                self._spill()
            return True
        return self._add_compact(int(hex_id, 16))

    def _spill(self) -> None:
        small, self._small = self._small or set(), None
        # sized for the moved ids at half load, so no part grows while they move in; a size on the
        # growth ladder (_START times 1.5 to the n), so later growth ends where it would have anyway
        size = self._START
        while size < 2 * len(small) // self.PARTS:
            size = _grown(size)
        self._parts = [_Part(size) for _ in range(self.PARTS)]
        add = self._add_compact
        for hex_id in small:
            add(int(hex_id, 16))

    def _add_compact(self, value: int) -> bool:
        if value == 0:  # zero marks an empty slot: the all-zero id is tracked apart
            seen, self._zero = self._zero, True
            return not seen
        hi, lo = value >> 64, value & _MASK64
        h = hash(value.to_bytes(16, "big")) & _MASK64  # (``_hash``, inlined)
        index = h >> 58
        part = self._parts[index]
        if part.used >= part.limit:
            part = self._grow(index)
        probes = _place(part, hi, lo, h)
        if probes < 0:
            return False
        self.probes += probes
        return True

    def _grow(self, index: int) -> _Part:
        old = self._parts[index]
        part = self._parts[index] = _Part(_grown(old.size))
        for hi, lo in zip(old.his, old.los, strict=True):
            if hi or lo:
                _place(part, hi, lo, _hash(hi << 64 | lo))  # (moving ids is not counted in probes)
        return part


def _grown(size: int) -> int:
    """A part's next size: 1.5 times (the growth ladder)."""
    return size * 3 // 2


def _place(part: _Part, hi: int, lo: int, h: int) -> int:
    """Put the id (``hi``, ``lo``; hash ``h``) in ``part``: the occupied slots stepped over, -1 if it was there."""
    his, los, size = part.his, part.los, part.size
    i = (h & _LOW58) % size
    probes = 0
    while his[i] or los[i]:
        if his[i] == hi and los[i] == lo:
            return -1
        probes += 1
        i += 1
        if i == size:
            i = 0
    his[i] = hi
    los[i] = lo
    part.used += 1
    return probes
