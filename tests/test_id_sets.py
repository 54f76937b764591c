"""The exact id sets behind DUPLICATE_ID: ``read.idset._IdSet`` (Python) and ``_core.IdSet`` (native).

Both must be exact (a duplicate is found, nothing else is called one) and must
not cluster on ids a log chooses to collide: their slots come from a keyed
hash, so ids that would all share one slot under a fixed hash spread out.
``probes`` counts the ids inserts step or scan past (the native set's open
addressing, the Python set's buckets); under a fixed hash each family below
costs about half its size per id.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ract_cli.read.core import NATIVE as _core
from ract_cli.read.idset import _IdSet


def _python_set() -> _IdSet:
    ids = _IdSet()
    ids.SMALL = 1  # every id after the first goes to the hashed buckets
    return ids


def _native_set() -> object:
    if _core is None:
        pytest.skip("the native core ract_cli._core is not built")
    return _core.IdSet()


IMPLEMENTATIONS: dict[str, Callable[[], object]] = {"python": _python_set, "native": _native_set}

N = 30_000
#: id families that collide under the fixed hashes these sets used before (and under simple ones like
#: them): the high half a shifted copy of the low one, only the top or only the bottom bits varying
CRAFTED: dict[str, list[str]] = {
    "hi = lo >> 6, lo % 64 == 0": [f"{k:016x}{k << 6:016x}" for k in range(1, N + 1)],
    "top bits of hi only": [f"{k << 40:016x}{0:016x}" for k in range(1, N + 1)],
    "low bits of lo, a step of 64": [f"{0:016x}{k << 6:016x}" for k in range(1, N + 1)],
    "equal halves": [f"{k:016x}{k:016x}" for k in range(1, N + 1)],
}


@pytest.mark.parametrize("family", sorted(CRAFTED))
@pytest.mark.parametrize("impl", sorted(IMPLEMENTATIONS))
def test_ids_a_log_crafted_to_collide_spread_out(impl: str, family: str) -> None:
    ids = IMPLEMENTATIONS[impl]()
    crafted = CRAFTED[family]
    assert all(ids.add(x) for x in crafted)  # type: ignore[attr-defined]
    # linear probing below three quarters full steps over ~3 slots an insert, the Python set's 4,096 buckets
    # hold ~7 ids each (~4 scanned an insert); a fixed hash: ~N/2
    assert ids.probes < 8 * len(crafted)  # type: ignore[attr-defined]
    assert not any(ids.add(x) for x in crafted[::7])  # type: ignore[attr-defined]  # still exact


#: lists of ids with repeats, the all-zero id (an empty slot's mark), and ids whose halves are equal
ID_LISTS = st.lists(
    st.sampled_from(["0" * 32, "f" * 32, "0" * 31 + "1", "8" + "0" * 31])
    | st.integers(0, 2**128 - 1).map(lambda n: f"{n:032x}")
    | st.integers(0, 40).map(lambda n: f"{n << 64 | n:032x}"),
    max_size=400,
)


def test_the_python_id_set_does_not_take_an_id_spanning_two_it_holds_for_one_it_holds() -> None:
    id_set = _IdSet()
    id_set.SMALL, id_set._START = 1, 1  # one bucket: every id side by side in one bytearray
    first, second = "00112233445566778899aabbccddeeff", "0123456789abcdef0123456789abcdef"
    spanning = first[16:] + second[:16]  # a new id, found in the bucket across the two
    assert id_set.add(first) and id_set.add(second)
    assert id_set.add(spanning)
    assert not id_set.add(spanning) and not id_set.add(first) and not id_set.add(second)


@settings(max_examples=60, deadline=None)
@given(
    ids=ID_LISTS,
    small=st.sampled_from([1, 3, 50, 1 << 18]),
    start=st.sampled_from([2, 5, 4096]),
)
def test_the_python_id_set_is_exact_before_and_after_it_fills_its_set(ids: list[str], small: int, start: int) -> None:
    id_set = _IdSet()
    id_set.SMALL, id_set._START = small, start  # leave the set early, and grow the parts many times
    seen: set[str] = set()
    for hex_id in ids:
        assert id_set.add(hex_id) == (hex_id not in seen)
        seen.add(hex_id)


@pytest.mark.skipif(_core is None, reason="the native core ract_cli._core is not built")
@settings(max_examples=60, deadline=None)
@given(ids=ID_LISTS)
def test_the_native_id_set_is_exact(ids: list[str]) -> None:
    assert _core is not None
    id_set = _core.IdSet()
    seen: set[str] = set()
    for hex_id in ids:
        assert id_set.add(hex_id) == (hex_id not in seen)
        seen.add(hex_id)
        assert hex_id in id_set
    assert len(id_set) == len(seen)


@settings(max_examples=60, deadline=None)
@given(
    before=st.lists(st.integers(0, 40), max_size=30),
    run=st.lists(st.integers(0, 40), max_size=30, unique=True),
    small=st.sampled_from([1, 8, 1 << 18]),
)
def test_add_new_adds_a_run_of_ids_only_when_none_is_there(before: list[int], run: list[int], small: int) -> None:
    """``_IdSet.add_new`` (a worker's run, ``ChainState.take_run``) and ``in``: exact in the set and in the
    buckets alike; a run meeting any id already there adds none of its ids."""
    ids = _IdSet()
    ids.SMALL = small
    for k in before:
        ids.add(f"{k:032x}")
    hexes = [f"{k:032x}" for k in run]
    assert [h in ids for h in hexes] == [k in before for k in run]
    fresh = not set(run) & set(before)
    assert ids.add_new(hexes) is fresh
    assert all((h in ids) is (fresh or k in before) for h, k in zip(hexes, run, strict=True))
    assert f"{99:032x}" not in ids
