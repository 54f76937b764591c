"""An exact set of event ids in bounded memory (duplicate-id detection over huge logs)."""

from __future__ import annotations

# --- across lines --------------------------------------------------------


class _IdSet:
    """Exact set of event ids (32 lowercase hex) in bounded memory.

    The first ``SMALL`` ids live in a Python set (fast, ~100 bytes per id).
    Past that each id is kept as its 16 bytes in one of many buckets: flat
    ``bytearray``s of ids side by side, the bucket picked by CPython's hash
    of those bytes (SipHash, keyed per process: the ids are the log's to
    choose, and under a fixed function a crafted log puts every id in one
    bucket, so that each insert scans all of them). A lookup is one
    ``bytearray.find`` in C over a bucket of at most ``BUCKET_IDS`` ids on
    average (about 1 µs an id with the cache misses; open addressing written
    in Python took 2.6). When the buckets hold ``BUCKET_IDS`` ids on average
    their number doubles and the ids move to their new buckets. About 20-25
    bytes per id past the set, which keeps a multi-gigabyte log inside a
    fixed memory budget.
    """

    SMALL = 1 << 18
    #: the fewest buckets; the set's ids move in with room for four times as many, so that a log of a
    #: million ids never moves them again
    _START = 1 << 12
    BUCKET_IDS = 32

    def __init__(self) -> None:
        self._small: set[str] | None = set()
        self._buckets: list[bytearray] = []
        self._count = 0  # ids in the buckets
        self._limit = 0  # ids the buckets take before their number doubles

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
        key = bytes.fromhex(hex_id)
        buckets = self._buckets
        bucket = buckets[hash(key) % len(buckets)]
        if _holds(bucket, key):
            return False
        bucket += key
        self._count += 1
        if self._count >= self._limit:
            self._resize(2 * len(buckets))
        return True

    def add_new(self, ids: list[str]) -> bool:
        """Add ``ids`` (distinct among themselves) when none of them is here yet; else add none: False."""
        small = self._small
        if small is not None and len(small) + len(ids) < self.SMALL:
            if not small.isdisjoint(ids):
                return False
            small.update(ids)
            return True
        if any(hex_id in self for hex_id in ids):
            return False
        for hex_id in ids:
            self.add(hex_id)
        return True

    def __contains__(self, hex_id: str) -> bool:
        small = self._small
        if small is not None:
            return hex_id in small
        key = bytes.fromhex(hex_id)
        return _holds(self._buckets[hash(key) % len(self._buckets)], key)

    @property
    def probes(self) -> int:
        """The stored ids that adding every id to its bucket now would scan past (a test's measure of
        clustering: about half ``BUCKET_IDS`` an id when ids spread, half of all of them when they do not)."""
        return sum((n := len(b) >> 4) * (n - 1) // 2 for b in self._buckets)

    def _spill(self) -> None:
        small, self._small = self._small or set(), None
        n = self._START
        while n * self.BUCKET_IDS < 4 * len(small):
            n *= 2
        self._resize(n)
        buckets = self._buckets
        for key in map(bytes.fromhex, small):  # (distinct: nothing to look up)
            buckets[hash(key) % n] += key
        self._count = len(small)

    def _resize(self, n: int) -> None:
        old, self._buckets = self._buckets, [bytearray() for _ in range(n)]
        self._limit = n * self.BUCKET_IDS
        buckets = self._buckets
        for bucket in old:
            ids = bytes(bucket)
            for at in range(0, len(ids), 16):
                key = ids[at : at + 16]
                buckets[hash(key) % n] += key


def _holds(bucket: bytearray, key: bytes) -> bool:
    """Whether a bucket (16-byte ids side by side) holds ``key`` as one of its ids."""
    at = bucket.find(key)
    while at >= 0:
        if not at & 15:
            return True
        at = bucket.find(key, at + 1)  # (a match across two ids is neither)
    return False
