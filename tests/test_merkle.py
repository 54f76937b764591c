"""RFC 9162 Merkle trees (``ract_cli.proofs.merkle``): published vectors, a naive oracle, streaming = in memory.

The vectors are transparency-dev/merkle's (tests/data/rfc6962/README.md). The
oracle below is RFC 9162 §2.1's recursive definitions written out literally
(MTH, PATH, SUBPROOF), sharing nothing with the module under test.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ract_cli.proofs import merkle

DATA = Path(__file__).resolve().parent / "data" / "rfc6962" / "vectors.json"
VECTORS = json.loads(DATA.read_text())
LEAVES = [bytes.fromhex(x) for x in VECTORS["leaves"]]
ROOTS = [bytes.fromhex(x) for x in VECTORS["roots"]]
SOME_HASH = bytes.fromhex("abacaba000000000000000000000000000000000000000000060061e00123456")
EMPTY = bytes.fromhex(VECTORS["empty_root"])


# --- the oracle: RFC 9162 §2.1 as written -----------------------------------------


def o_leaf(d: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + d).digest()


def o_k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def o_mth(d: list[bytes]) -> bytes:
    n = len(d)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return o_leaf(d[0])
    k = o_k(n)
    return hashlib.sha256(b"\x01" + o_mth(d[:k]) + o_mth(d[k:])).digest()


def o_path(m: int, d: list[bytes]) -> list[bytes]:
    n = len(d)
    if n == 1:
        return []
    k = o_k(n)
    if m < k:
        return [*o_path(m, d[:k]), o_mth(d[k:])]
    return [*o_path(m - k, d[k:]), o_mth(d[:k])]


def o_subproof(m: int, d: list[bytes], b: bool) -> list[bytes]:
    n = len(d)
    if m == n:
        return [] if b else [o_mth(d)]
    k = o_k(n)
    if m <= k:
        return [*o_subproof(m, d[:k], b), o_mth(d[k:])]
    return [*o_subproof(m - k, d[k:], False), o_mth(d[:k])]


def o_proof(m: int, d: list[bytes]) -> list[bytes]:
    return o_subproof(m, d, True) if 0 < m < len(d) else []


def data_of(n: int) -> list[bytes]:
    return [i.to_bytes(4, "big") for i in range(n)]


# --- published vectors ----------------------------------------------------------------


def test_leaf_and_node_hashes_follow_rfc9162() -> None:
    assert merkle.leaf_hash(b"") == hashlib.sha256(b"\x00").digest()
    assert merkle.node_hash(b"a" * 32, b"b" * 32) == hashlib.sha256(b"\x01" + b"a" * 32 + b"b" * 32).digest()
    assert merkle.EMPTY_ROOT == EMPTY == merkle.root([])


@pytest.mark.parametrize("n", range(1, 9))
def test_roots_of_the_published_vectors(n: int) -> None:
    leaves = [merkle.leaf_hash(d) for d in LEAVES[:n]]
    assert merkle.root(leaves) == ROOTS[n - 1]
    assert o_mth(LEAVES[:n]) == ROOTS[n - 1]  # the oracle agrees with the vectors too


@pytest.mark.parametrize("v", VECTORS["inclusion"], ids=lambda v: f"{v['index']}-of-{v['size']}")
def test_inclusion_vectors(v: dict) -> None:
    index, size = v["index"], v["size"]
    want = [bytes.fromhex(h) for h in v["proof"]]
    leaves = [merkle.leaf_hash(d) for d in LEAVES[:size]]
    assert merkle.inclusion_proof(leaves, index) == want
    prover = merkle.InclusionProver(size, index)
    for leaf in leaves:
        prover.add(leaf)
    assert prover.proof() == want and prover.root == ROOTS[size - 1]
    assert merkle.verify_inclusion(index, size, leaves[index], want, ROOTS[size - 1])


def corrupt_inclusion(index: int, size: int, proof: list[bytes], root: bytes, leaf: bytes) -> list[tuple]:
    """transparency-dev/merkle's corruptInclusionProof: none of these may verify."""
    probes = [
        (index - 1, size, root, leaf, proof),
        (index + 1, size, root, leaf, proof),
        (index ^ 2, size, root, leaf, proof),
        (index, size * 2, root, leaf, proof),
        (index, size // 2, root, leaf, proof),
        (index, size, root, b"WrongLeaf", proof),
        (index, size, EMPTY, leaf, proof),
        (index, size, SOME_HASH, leaf, proof),
        (index, size, root, leaf, [*proof, b""]),
        (index, size, root, leaf, [*proof, root]),
        (index, size, root, leaf, [b"", *proof]),
        (index, size, root, leaf, [root, *proof]),
    ]
    for i in range(len(proof)):
        wrong = list(proof)
        wrong[i] = bytes([wrong[i][0] ^ 8]) + wrong[i][1:]
        probes.append((index, size, root, leaf, wrong))
    if proof:
        probes.append((index, size, root, leaf, proof[:-1]))
    if len(proof) > 1:
        probes.append((index, size, root, leaf, [proof[0], SOME_HASH, *proof[1:]]))
    return probes


@pytest.mark.parametrize("v", VECTORS["inclusion"], ids=lambda v: f"{v['index']}-of-{v['size']}")
def test_corrupted_inclusion_proofs_never_verify(v: dict) -> None:
    index, size = v["index"], v["size"]
    proof = [bytes.fromhex(h) for h in v["proof"]]
    leaf = merkle.leaf_hash(LEAVES[index])
    for probe in corrupt_inclusion(index, size, proof, ROOTS[size - 1], leaf):
        i, n, r, lf, p = probe
        assert not merkle.verify_inclusion(i, n, lf, p, r), probe[:2]


@pytest.mark.parametrize("index,size", [(0, 0), (0, 1), (1, 0), (2, 1)])
def test_inclusion_probes_of_impossible_trees(index: int, size: int) -> None:
    assert not merkle.verify_inclusion(index, size, SOME_HASH, [], b"")
    assert not merkle.verify_inclusion(index, size, b"", [], EMPTY)
    assert not merkle.verify_inclusion(index, size, SOME_HASH, [], EMPTY)


def test_single_entry_tree() -> None:
    h = merkle.leaf_hash(b"data")
    assert merkle.verify_inclusion(0, 1, h, [], h)
    assert not merkle.verify_inclusion(0, 1, b"", [], h)
    assert not merkle.verify_inclusion(0, 1, h, [], b"")


@pytest.mark.parametrize("v", VECTORS["consistency"], ids=lambda v: f"{v['size1']}-to-{v['size2']}")
def test_consistency_vectors(v: dict) -> None:
    m, n = v["size1"], v["size2"]
    want = [bytes.fromhex(h) for h in v["proof"]]
    leaves = [merkle.leaf_hash(d) for d in LEAVES[:n]]
    assert merkle.consistency_proof(leaves, m) == want
    assert merkle.verify_consistency(m, n, ROOTS[m - 1], ROOTS[n - 1], want)
    if not want:
        return
    r1, r2 = ROOTS[m - 1], ROOTS[n - 1]
    probes = [  # transparency-dev/merkle's corruptConsistencyProof
        (m - 1, n, r1, r2, want),
        (m + 1, n, r1, r2, want),
        (m ^ 2, n, r1, r2, want),
        (m, n * 2, r1, r2, want),
        (m, n // 2, r1, r2, want),
        (m, n, b"WrongRoot", r2, want),
        (m, n, r1, b"WrongRoot", want),
        (m, n, r2, r1, want),
        (m, n, r1, r2, []),
        (m, n, r1, r2, [*want, b""]),
        (m, n, r1, r2, [*want, r1]),
        (m, n, r1, r2, [*want, r2]),
        (m, n, r1, r2, [b"", *want]),
        (m, n, r1, r2, [r1, *want]),
        (m, n, r1, r2, [r2, *want]),
        (m, n, r1, r2, [want[0], *want]),
        (m, n, r1, r2, want[:-1]),
    ]
    for i in range(len(want)):
        wrong = list(want)
        wrong[i] = bytes([wrong[i][0] ^ 16]) + wrong[i][1:]
        probes.append((m, n, r1, r2, wrong))
    for probe in probes:
        assert not merkle.verify_consistency(*probe), probe[:2]


@pytest.mark.parametrize(
    "m,n,r1,r2,proof,ok",
    [
        (0, 0, b"1" * 32, b"2" * 32, [], False),
        (1, 1, b"1" * 32, b"2" * 32, [], False),
        (0, 0, b"1" * 32, b"1" * 32, [], True),
        (0, 1, b"1" * 32, b"2" * 32, [], True),
        (1, 1, b"2" * 32, b"2" * 32, [], True),
        (1, 0, b"1" * 32, b"2" * 32, [], False),
        (2, 1, b"1" * 32, b"2" * 32, [], False),
        (1, 2, b"1" * 32, b"2" * 32, [], False),
        (0, 0, EMPTY, EMPTY, [EMPTY], False),
        (0, 1, EMPTY, EMPTY, [EMPTY], False),
        (1, 1, EMPTY, EMPTY, [EMPTY], False),
    ],
)
def test_consistency_edge_cases(m: int, n: int, r1: bytes, r2: bytes, proof: list, ok: bool) -> None:
    assert merkle.verify_consistency(m, n, r1, r2, proof) is ok


# --- against the oracle, every index ------------------------------------------------------


def _check_size(n: int) -> None:
    data = data_of(n)
    leaves = [o_leaf(d) for d in data]
    root = o_mth(data)
    builder = merkle.TreeBuilder()
    builder.extend(leaves)
    assert builder.root() == root == merkle.root(leaves)
    for i in range(n):
        want = o_path(i, data)
        assert merkle.inclusion_proof(leaves, i) == want, (i, n)
        assert merkle.verify_inclusion(i, n, leaves[i], want, root)
        assert not merkle.verify_inclusion(i, n, leaves[(i + 1) % n], want, root) or n == 1
        marked = merkle.InclusionProver(n)  # the leaf named while streaming, leaves past n ignored
        for j, leaf in enumerate(leaves + leaves[:3]):
            marked.add(leaf, target=j == i)
        assert marked.proof() == want and marked.root == root
    for m in range(n + 1):
        want = o_proof(m, data)
        assert merkle.consistency_proof(leaves, m) == want, (m, n)
        assert merkle.verify_consistency(m, n, o_mth(data[:m]), root, want), (m, n)
        hasher = merkle.RangeHasher(merkle.consistency_ranges(m, n))
        for leaf in leaves:
            hasher.add(leaf)
        assert hasher.hashes() == want


@pytest.mark.parametrize("n", range(1, 65))
def test_every_index_of_small_trees_matches_the_oracle(n: int) -> None:
    _check_size(n)


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=1, max_value=300))
def test_every_index_of_random_sizes_up_to_300(n: int) -> None:
    _check_size(n)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=300).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1))))
def test_a_flipped_bit_anywhere_is_caught(case: tuple[int, int]) -> None:
    n, i = case
    leaves = [o_leaf(d) for d in data_of(n)]
    root = merkle.root(leaves)
    proof = merkle.inclusion_proof(leaves, i)
    for k in range(len(proof)):
        wrong = list(proof)
        wrong[k] = bytes([wrong[k][0] ^ 1]) + wrong[k][1:]
        assert not merkle.verify_inclusion(i, n, leaves[i], wrong, root)
    assert not merkle.verify_inclusion(i, n, leaves[i], proof, merkle.node_hash(root, root))


def test_streaming_memory_is_logarithmic() -> None:
    """The frontier holds one hash per set bit of the size: never the leaves."""
    builder = merkle.TreeBuilder()
    for i in range(5000):
        builder.append(o_leaf(i.to_bytes(4, "big")))
        assert len(builder.frontier()) == bin(builder.size).count("1")


def test_bad_inputs_raise_proof_error() -> None:
    with pytest.raises(merkle.ProofError):
        merkle.inclusion_ranges(3, 3)
    with pytest.raises(merkle.ProofError):
        merkle.consistency_ranges(4, 3)
    with pytest.raises(merkle.ProofError):
        merkle.TreeBuilder().append(b"short")
    with pytest.raises(merkle.ProofError):
        merkle.InclusionProver(0)
    prover = merkle.InclusionProver(2)
    prover.add(SOME_HASH)
    with pytest.raises(merkle.ProofError):
        prover.proof()  # no leaf marked
