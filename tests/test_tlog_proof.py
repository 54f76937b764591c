"""tlog-proof files (``ract_cli.proofs.proof``): format round trip, hostile input never raises."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ract_cli.errors import UsageError
from ract_cli.proofs import SignerKey, make_checkpoint, make_proof, verify_proof
from ract_cli.proofs.proof import ConsistencyProof, ProofFormatError, TlogProof, proof_kind

ROOT = Path(__file__).resolve().parent.parent
ABORTED = ROOT / "fixtures" / "runs" / "410d1cc7be160683b49c268f18a6ff49"
KEY = SignerKey.from_seed("example.com/ract/proof", bytes(range(1, 33)))
VERIFIERS = [KEY.verifier()]


@pytest.fixture(scope="module")
def proof_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    d = tmp_path_factory.mktemp("p")
    shutil.copytree(ABORTED, d / ABORTED.name)
    log = d / ABORTED.name / "events.jsonl"
    note = make_checkpoint(log, KEY, KEY.name).note
    return make_proof(log, note, line=7).to_bytes()


def test_round_trip(proof_bytes: bytes) -> None:
    proof = TlogProof.parse(proof_bytes)
    assert proof.index == 6 and proof.to_bytes() == proof_bytes and proof.extra is not None
    assert proof_kind(proof_bytes) == "inclusion"
    verdict = verify_proof(proof_bytes, VERIFIERS)
    assert verdict.ok and verdict.index == 6 and verdict.event is not None
    assert verdict.to_dict()["event"]["id"] == verdict.event["id"]


def test_a_proof_without_extra_parses_but_proves_no_event(proof_bytes: bytes) -> None:
    proof = TlogProof.parse(proof_bytes)
    bare = TlogProof(proof.index, proof.hashes, proof.checkpoint).to_bytes()
    assert b"extra" not in bare.split(b"\n\n")[0]
    assert [f.code for f in verify_proof(bare, VERIFIERS).findings] == ["PROOF_EVENT"]


@pytest.mark.parametrize(
    "data,needle",
    [
        (b"", "no empty line"),
        (b"c2sp.org/tlog-proof@v1\nindex 0\n\n", "no checkpoint"),
        (b"c2sp.org/tlog-proof@v1\r\nindex 0\n\nx", "control character"),
        (b"c2sp.org/tlog-proof@v1\nindex -1\n\nx", "decimal"),
        (b"c2sp.org/tlog-proof@v1\nindex 18446744073709551616\n\nx", "2^64"),
        (b"c2sp.org/tlog-proof@v1\nextra \nindex 0\n\nx", "empty"),
        (b"c2sp.org/tlog-proof@v1\nextra AA\nindex 0\n\nx", "base64"),
        (b"c2sp.org/tlog-proof@v1\nAAAA\n\nx", "no index"),
        (b"c2sp.org/tlog-proof@v1\nindex 0\nAAAA\n\nx", "not 32"),
        (b"c2sp.org/tlog-proof@v1\nindex 0\n" + b"A" * 43 + b"=\n" * 0 + b"\n\nx", "base64"),
        (b"c2sp.org/tlog-proof@v1\nindex 0\n" + (b"A" * 43 + b"=\n") * 65 + b"\nx", "more than 64"),
        (b"\xff\xfe\n\nx", "UTF-8"),
    ],
)
def test_hostile_proofs_do_not_parse(data: bytes, needle: str) -> None:
    with pytest.raises(ProofFormatError) as exc:
        TlogProof.parse(data)
    assert needle in str(exc.value)
    assert [f.code for f in verify_proof(data, VERIFIERS).findings] == ["PROOF_MALFORMED"]


def test_consistency_format_round_trip() -> None:
    proof = ConsistencyProof(5, (bytes(32), bytes(range(32))), b"checkpoint\n")
    assert ConsistencyProof.parse(proof.to_bytes()) == proof and proof_kind(proof.to_bytes()) == "consistency"
    with pytest.raises(ProofFormatError):
        ConsistencyProof.parse(b"old 05\n\nx")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 2000))
def test_mutated_and_random_proofs_never_raise(data: bytes, cut: int) -> None:
    for blob in (data, b"c2sp.org/tlog-proof@v1\n" + data):
        try:
            verdict = verify_proof(blob, VERIFIERS)
        except UsageError:  # "old ..." without --from-checkpoint: a usage error, by design
            continue
        assert not verdict.ok


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_single_byte_change_is_refused(proof_bytes: bytes, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(proof_bytes) - 1))
    x = data.draw(st.integers(1, 255))
    mutated = bytearray(proof_bytes)
    mutated[i] ^= x
    verdict = verify_proof(bytes(mutated), VERIFIERS)
    # the one change that may pass: JSON whitespace in the event line (the hash covers values, SPEC §2.1)
    assert not verdict.ok or verdict.event == verify_proof(proof_bytes, VERIFIERS).event, (i, x)
