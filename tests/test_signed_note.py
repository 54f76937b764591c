"""C2SP signed notes and Go ``sumdb/note`` key text forms (``ract_cli.proofs.note``).

Pinned to Go's own published example (PeterNeumann: key texts, key ID and a
signature reproduced byte for byte; EnochRoot: the key Go's tests derive from
an all-zero seed), checked by an independent parser and verifier written
here from the signed-note spec with ``cryptography`` alone, and attacked with
a table of hostile notes that must each fail with ``NoteError``, never
another exception.
"""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st

from ract_cli.proofs.note import (
    NoteError,
    SignatureError,
    SignerKey,
    VerifierKey,
    key_id,
    parse_note,
    sign_note,
    verify_note,
)

# golang.org/x/mod/sumdb/note, package documentation (ExampleSign / ExampleOpen)
GO_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
GO_SIG = "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM="
GO_NOTE = (GO_TEXT + "\n\u2014 PeterNeumann " + GO_SIG + "\n").encode()
# Go's tests: note.GenerateKey with a reader of zeros
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"


# --- an independent reading of the spec -------------------------------------------------


def independent_verify(note: bytes, vkey_text: str) -> bool:
    """signed-note + Go vkey form, from the specs: split, find the key's line, Ed25519-verify."""
    name, hash_hex, key64 = vkey_text.split("+", 2)
    raw = base64.b64decode(key64)
    assert raw[0] == 1 and len(raw) == 33
    pub = raw[1:]
    assert hashlib.sha256(name.encode() + b"\n\x01" + pub).digest()[:4].hex() == hash_hex
    text, _, sigs = note.decode("utf-8").rpartition("\n\n")
    text += "\n"
    ok = False
    for line in sigs.splitlines():
        dash, who, b64 = line.split(" ")
        assert dash == "\u2014"
        blob = base64.b64decode(b64, validate=True)
        if who != name or blob[:4].hex() != hash_hex:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(pub).verify(blob[4:], text.encode())
        except InvalidSignature:
            return False
        ok = True
    return ok


# --- Go's vectors ----------------------------------------------------------------------------


def test_go_example_keys_parse_and_print_back() -> None:
    skey = SignerKey.parse(GO_SKEY)
    vkey = VerifierKey.parse(GO_VKEY)
    assert skey.name == vkey.name == "PeterNeumann"
    assert skey.key_id == vkey.key_id == 0xC74F20A3
    assert skey.verifier() == vkey
    assert skey.text() == GO_SKEY and vkey.text() == GO_VKEY


def test_go_example_signature_is_reproduced_byte_for_byte() -> None:
    note = sign_note(GO_TEXT, [SignerKey.parse(GO_SKEY)])
    assert note == GO_NOTE
    verified = verify_note(GO_NOTE, [VerifierKey.parse(GO_VKEY)])
    assert verified.text == GO_TEXT and [v.name for v in verified.verified_by] == ["PeterNeumann"]
    assert independent_verify(GO_NOTE, GO_VKEY)


def test_key_id_is_sha256_of_name_newline_type_key() -> None:
    enoch = SignerKey.from_seed("EnochRoot", bytes(32))
    assert enoch.verifier().text() == ENOCH_VKEY
    pub = enoch.public_key
    assert key_id("EnochRoot", pub) == int.from_bytes(hashlib.sha256(b"EnochRoot\n\x01" + pub).digest()[:4], "big")


def test_a_note_signed_by_two_keys_verifies_with_either() -> None:
    peter, enoch = SignerKey.parse(GO_SKEY), SignerKey.from_seed("EnochRoot", bytes(32))
    note = sign_note(GO_TEXT, [peter, enoch])
    assert note.startswith(GO_NOTE)  # Peter's line first, unchanged
    for vkey in (GO_VKEY, ENOCH_VKEY):
        verified = verify_note(note, [VerifierKey.parse(vkey)])
        assert len(verified.verified_by) == 1 and len(verified.unknown) == 1
        assert independent_verify(note, vkey)


# --- round trips -------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    name=st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"), blacklist_characters="+\ufffd"),
        min_size=1,
        max_size=30,
    ).filter(lambda s: not any(c.isspace() for c in s)),
    text=st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=40), min_size=1).map(
        lambda lines: "".join(line + "\n" for line in lines)
    ),
)
def test_generated_keys_round_trip_and_sign(name: str, text: str) -> None:
    skey = SignerKey.generate(name)
    assert SignerKey.parse(skey.text()) == skey
    vkey = VerifierKey.parse(skey.verifier().text())
    assert vkey == skey.verifier()
    note = sign_note(text, [skey])
    assert verify_note(note, [vkey]).text == text
    assert independent_verify(note, vkey.text())


def test_keys_with_surrounding_whitespace_parse() -> None:
    assert VerifierKey.parse(f"  {GO_VKEY}\n") == VerifierKey.parse(GO_VKEY)


# --- hostile notes ----------------------------------------------------------------------------

PETER = VerifierKey.parse(GO_VKEY)
ENOCH = VerifierKey.parse(ENOCH_VKEY)


def _sig_line(note: bytes) -> tuple[bytes, bytes]:
    head, _, line = note.rpartition(b"\n\n")
    return head + b"\n\n", line


def _with_key_id(note: bytes, kid: int) -> bytes:
    head, line = _sig_line(note)
    prefix, b64 = line.rstrip(b"\n").rsplit(b" ", 1)
    blob = base64.b64decode(b64)
    return head + prefix + b" " + base64.b64encode(kid.to_bytes(4, "big") + blob[4:]) + b"\n"


def _flip_sig(note: bytes) -> bytes:
    head, line = _sig_line(note)
    prefix, b64 = line.rstrip(b"\n").rsplit(b" ", 1)
    blob = bytearray(base64.b64decode(b64))
    blob[10] ^= 1
    return head + prefix + b" " + base64.b64encode(bytes(blob)) + b"\n"


ENOCH_SIG_LINE = sign_note(GO_TEXT, [SignerKey.from_seed("EnochRoot", bytes(32))]).rpartition(b"\n\n")[2]

HOSTILE: list[tuple[str, bytes, str]] = [
    ("wrong key hash: an unknown key, so no trusted signature", _with_key_id(GO_NOTE, 0xC74F20A4), "no signature"),
    ("signature bytes flipped", _flip_sig(GO_NOTE), "does not verify"),
    ("text edited", GO_NOTE.replace(b"cryptography", b"cryptographi"), "does not verify"),
    ("a line of text dropped", GO_NOTE.replace(b"then you don't know what your problem is.\n", b""), "does not verify"),
    ("bad base64", GO_NOTE.replace(GO_SIG.encode(), b"x08go/ZJkuBS9UG!!" + GO_SIG[17:].encode()), "base64"),
    ("non-canonical base64 (padding)", GO_NOTE.replace(GO_SIG.encode(), GO_SIG[:-1].encode()), "base64"),
    ("missing blank line", GO_NOTE.replace(b"\n\n\xe2\x80\x94", b"\n\xe2\x80\x94"), "blank line"),
    ("no signature line", GO_TEXT.encode() + b"\n", "no signature"),
    ("no final newline", GO_NOTE[:-1], "newline"),
    ("CRLF line endings", GO_NOTE.replace(b"\n", b"\r\n"), "carriage return"),
    ("a tab in the text", GO_NOTE.replace(b"If you", b"If\tyou"), "control character"),
    ("not UTF-8", GO_NOTE.replace(b"If you", b"If \xff you"), "UTF-8"),
    ("hyphen instead of em dash", GO_NOTE.replace("\u2014".encode(), b"-"), "em dash"),
    ("no space after the name", GO_NOTE.replace(b"PeterNeumann ", b"PeterNeumann"), "no space"),
    ("a second space", GO_NOTE.replace(b"PeterNeumann ", b"PeterNeumann  "), "base64"),
    ("name with a plus", GO_NOTE.replace(b"PeterNeumann ", b"Peter+Neumann "), "invalid key name"),
    ("signature too short", GO_TEXT.encode() + "\n\u2014 PeterNeumann AAAA\n".encode(), "too short"),
    ("blank line after the signatures", GO_NOTE + b"\n", "no signature"),
    ("empty", b"", "newline"),
    ("too many signatures", GO_TEXT.encode() + b"\n" + ENOCH_SIG_LINE * 101, "more than 100"),
]


@pytest.mark.parametrize("case,data,needle", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_hostile_notes_are_refused_with_a_reason(case: str, data: bytes, needle: str) -> None:
    with pytest.raises(NoteError) as exc:
        verify_note(data, [PETER])
    assert needle in exc.value.message, (case, exc.value.message)


def test_signatures_from_other_keys_are_ignored_but_one_must_verify() -> None:
    both = GO_NOTE + ENOCH_SIG_LINE
    assert [v.name for v in verify_note(both, [PETER]).verified_by] == ["PeterNeumann"]
    assert [v.name for v in verify_note(both, [ENOCH]).verified_by] == ["EnochRoot"]
    assert len(verify_note(both, [PETER, ENOCH]).verified_by) == 2
    # a foreign signature that is garbage is still ignored (it is not ours to judge)
    garbage = (
        GO_NOTE
        + "\u2014 someone.else AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n".encode()
    )
    assert verify_note(garbage, [PETER]).unknown
    with pytest.raises(SignatureError, match="no signature by a trusted key"):
        verify_note(GO_TEXT.encode() + b"\n" + ENOCH_SIG_LINE, [PETER])


def test_a_failing_signature_by_a_trusted_key_rejects_the_note_even_beside_a_good_one() -> None:
    bad_enoch = _flip_sig(GO_TEXT.encode() + b"\n" + ENOCH_SIG_LINE).rpartition(b"\n\n")[2]
    with pytest.raises(SignatureError, match="EnochRoot"):
        verify_note(GO_NOTE + bad_enoch, [PETER, ENOCH])


def test_same_name_other_key_id_is_not_the_trusted_key() -> None:
    impostor = SignerKey.from_seed("PeterNeumann", b"\x01" * 32)  # same name, another key (and key ID)
    note = sign_note(GO_TEXT, [impostor])
    with pytest.raises(SignatureError, match="no signature by a trusted key"):
        verify_note(note, [PETER])


@pytest.mark.parametrize(
    "text,needle",
    [
        (GO_VKEY.replace("c74f20a3", "c74f20a4"), "does not match"),
        (GO_VKEY.replace("c74f20a3", "c74f20a"), "8 hex digits"),
        (GO_VKEY.replace("+ARpc", "+AhRpc"), "base64"),
        ("PeterNeumann+c74f20a3+" + base64.b64encode(b"\x02" + bytes(32)).decode(), "unsupported key type"),
        ("PeterNeumann+c74f20a3+" + base64.b64encode(b"\x01" + bytes(31)).decode(), "32 bytes"),
        (GO_SKEY, "signer (private) key"),
        ("PeterNeumann", "NAME+HASH+BASE64"),
        ("Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "invalid key name"),
        ("", "NAME+HASH+BASE64"),
    ],
)
def test_hostile_verifier_keys(text: str, needle: str) -> None:
    with pytest.raises(NoteError) as exc:
        VerifierKey.parse(text)
    assert needle in exc.value.message


@pytest.mark.parametrize(
    "text,needle",
    [
        (GO_SKEY.replace("c74f20a3", "00000000"), "does not match"),
        (GO_SKEY.replace("PRIVATE+KEY", "PRIVATE+KEX"), "not a signer key"),
        (GO_VKEY, "not a signer key"),
        ("PRIVATE+KEY+PeterNeumann+c74f20a3+" + base64.b64encode(b"\x01" + bytes(33)).decode(), "32 bytes"),
    ],
)
def test_hostile_signer_keys(text: str, needle: str) -> None:
    with pytest.raises(NoteError) as exc:
        SignerKey.parse(text)
    assert needle in exc.value.message


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_raise_anything_but_note_error(data: bytes) -> None:
    for blob in (data, GO_NOTE[: len(data) % len(GO_NOTE)] + data, GO_TEXT.encode() + b"\n" + data):
        try:
            verify_note(blob, [PETER])
        except NoteError:
            pass


@settings(max_examples=200, deadline=None)
@given(st.integers(0, len(GO_NOTE) - 1), st.integers(1, 255))
def test_any_byte_changed_in_the_note_fails(position: int, xor: int) -> None:
    data = bytearray(GO_NOTE)
    data[position] ^= xor
    try:
        verified = verify_note(bytes(data), [PETER])
    except NoteError:
        return
    # only a change that leaves text and signature bytes the same may pass (none exists in a canonical note)
    raise AssertionError(f"a changed note verified: {verified}")


def test_parse_note_keeps_the_text_exact() -> None:
    note = parse_note(GO_NOTE)
    assert note.text == GO_TEXT and note.to_bytes() == GO_NOTE
    assert note.signatures[0].key_id == 0xC74F20A3 and len(note.signatures[0].signature) == 64


def test_sign_refuses_text_without_final_newline() -> None:
    with pytest.raises(NoteError):
        sign_note("no newline", [SignerKey.parse(GO_SKEY)])
