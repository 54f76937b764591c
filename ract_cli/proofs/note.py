"""C2SP signed notes (c2sp.org/signed-note) with Ed25519 keys in the text forms of Go's
``golang.org/x/mod/sumdb/note``.

A signed note is a text ending in ``\\n``, a blank line, then one or more
signature lines ``— NAME base64(key ID || signature)\\n``. The signature is
Ed25519 (RFC 8032) over the text, final newline included. The key ID is the
first four bytes (big-endian) of ``SHA-256(name || 0x0A || 0x01 || public key)``.

Keys as text (what ``ract trace keygen`` writes):

* signer (secret): ``PRIVATE+KEY+NAME+HASH+BASE64(0x01 || 32-byte seed)``
* verifier (public): ``NAME+HASH+BASE64(0x01 || 32-byte public key)``

where HASH is the key ID as 8 hex digits. Everything read here is hostile
input: a parse or a verification failure is a ``NoteError`` with a message
safe to show, never another exception.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

ALG_ED25519 = 0x01
SIGNATURE_PREFIX = "\u2014 "  # em dash, space
#: signatures read from one note at most (Go's note package stops at 100; the spec asks for at least 16)
MAX_SIGNATURES = 100
#: a note larger than this is refused before it is parsed (a checkpoint is ~200 bytes)
MAX_NOTE_BYTES = 1 << 20
_HEX8 = re.compile(r"[0-9a-fA-F]{8}")


class NoteError(ValueError):
    """A key or a note that does not parse, or a signature that does not verify."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SignatureError(NoteError):
    """The note parsed, but no trusted signature verifies (or a trusted one fails)."""


def b64decode_strict(text: str, what: str) -> bytes:
    """Standard base64 (RFC 4648 §4) in its one canonical spelling, or ``NoteError``."""
    if not text:
        raise NoteError(f"{what} is empty")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise NoteError(f"{what} is not valid base64") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise NoteError(f"{what} is not canonical base64")
    return raw


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def valid_name(name: str) -> bool:
    """Key names are non-empty, without Unicode spaces, ``+`` or control characters (signed-note)."""
    return (
        bool(name)
        and "+" not in name
        and not any(ch.isspace() or ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in name)
        and "\ufffd" not in name
    )


def _check_name(name: str) -> None:
    if not valid_name(name):
        raise NoteError(f"invalid key name {name[:80]!r}: it must be non-empty, without spaces, '+' or controls")


def key_id(name: str, public_key: bytes) -> int:
    """signed-note: ``SHA-256(name || 0x0A || 0x01 || public key)[:4]``, big-endian."""
    digest = hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([ALG_ED25519]) + public_key).digest()
    return int.from_bytes(digest[:4], "big")


@dataclass(frozen=True)
class VerifierKey:
    """An Ed25519 public key with its name, as ``NAME+HASH+BASE64``."""

    name: str
    key_id: int
    public_key: bytes

    @classmethod
    def parse(cls, text: str) -> VerifierKey:
        """Parse the text form; the key ID in it must be the one the name and key give."""
        text = text.strip()
        name, sep, rest = text.partition("+")
        hash_hex, sep2, key64 = rest.partition("+")
        if not sep or not sep2:
            raise NoteError("not a verifier key (NAME+HASH+BASE64)")
        if name == "PRIVATE":
            raise NoteError("this is a signer (private) key; give the verifier key (.vkey)")
        _check_name(name)
        if not _HEX8.fullmatch(hash_hex):
            raise NoteError("the key hash of a verifier key is 8 hex digits")
        raw = b64decode_strict(key64, "the verifier key")
        if raw[0] != ALG_ED25519:
            raise NoteError(f"unsupported key type 0x{raw[0]:02x} (only Ed25519, 0x01)")
        public = raw[1:]
        if len(public) != 32:
            raise NoteError(f"an Ed25519 public key is 32 bytes, not {len(public)}")
        kid = int(hash_hex, 16)
        if key_id(name, public) != kid:
            raise NoteError("the verifier key's hash does not match its name and key")
        return cls(name, kid, public)

    def text(self) -> str:
        return f"{self.name}+{self.key_id:08x}+{b64encode(bytes([ALG_ED25519]) + self.public_key)}"

    def verify(self, message: bytes, signature: bytes) -> bool:
        if len(signature) != 64:
            return False
        # imported on first use (here and below): commands that never sign or verify skip the crypto stack
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True


@dataclass(frozen=True)
class SignerKey:
    """An Ed25519 private key (its 32-byte seed) with its name, as ``PRIVATE+KEY+NAME+HASH+BASE64``."""

    name: str
    key_id: int
    seed: bytes = field(repr=False)

    @classmethod
    def generate(cls, name: str) -> SignerKey:
        _check_name(name)
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        private = Ed25519PrivateKey.generate()
        seed = private.private_bytes(
            serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
        )
        return cls.from_seed(name, seed)

    @classmethod
    def from_seed(cls, name: str, seed: bytes) -> SignerKey:
        _check_name(name)
        if len(seed) != 32:
            raise NoteError(f"an Ed25519 seed is 32 bytes, not {len(seed)}")
        return cls(name, key_id(name, _public_of(seed)), seed)

    @classmethod
    def parse(cls, text: str) -> SignerKey:
        text = text.strip()
        parts = text.split("+", 4)
        if len(parts) != 5 or parts[0] != "PRIVATE" or parts[1] != "KEY":
            raise NoteError("not a signer key (PRIVATE+KEY+NAME+HASH+BASE64)")
        _, _, name, hash_hex, key64 = parts
        _check_name(name)
        if not _HEX8.fullmatch(hash_hex):
            raise NoteError("the key hash of a signer key is 8 hex digits")
        raw = b64decode_strict(key64, "the signer key")
        if raw[0] != ALG_ED25519:
            raise NoteError(f"unsupported key type 0x{raw[0]:02x} (only Ed25519, 0x01)")
        seed = raw[1:]
        if len(seed) != 32:
            raise NoteError(f"an Ed25519 seed is 32 bytes, not {len(seed)}")
        key = cls.from_seed(name, seed)
        if key.key_id != int(hash_hex, 16):
            raise NoteError("the signer key's hash does not match its name and key")
        return key

    @property
    def public_key(self) -> bytes:
        return _public_of(self.seed)

    def verifier(self) -> VerifierKey:
        return VerifierKey(self.name, self.key_id, self.public_key)

    def text(self) -> str:
        return f"PRIVATE+KEY+{self.name}+{self.key_id:08x}+{b64encode(bytes([ALG_ED25519]) + self.seed)}"

    def sign(self, message: bytes) -> bytes:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        signature: bytes = Ed25519PrivateKey.from_private_bytes(self.seed).sign(message)
        return signature


def _public_of(seed: bytes) -> bytes:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.from_private_bytes(seed)
    public: bytes = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return public


# --- notes ----------------------------------------------------------------------


@dataclass(frozen=True)
class Signature:
    """One signature line: who (name, key ID) and the signature bytes."""

    name: str
    key_id: int
    signature: bytes

    def line(self) -> str:
        return f"{SIGNATURE_PREFIX}{self.name} {b64encode(self.key_id.to_bytes(4, 'big') + self.signature)}\n"


@dataclass(frozen=True)
class Note:
    """A parsed (not yet verified) signed note: its text, final newline included, and its signatures."""

    text: str
    signatures: tuple[Signature, ...]

    def to_bytes(self) -> bytes:
        return (self.text + "\n" + "".join(s.line() for s in self.signatures)).encode("utf-8")


@dataclass(frozen=True)
class VerifiedNote:
    """A note whose text at least one trusted key signed (and no trusted key's signature failed)."""

    text: str
    verified_by: tuple[VerifierKey, ...]
    unknown: tuple[Signature, ...]  # signatures by keys not given: ignored, as signed-note requires


def parse_note(data: bytes) -> Note:
    """Split a signed note into its text and signature lines (signed-note "Format"); checks no signature."""
    if len(data) > MAX_NOTE_BYTES:
        raise NoteError(f"note is larger than {MAX_NOTE_BYTES} bytes")
    try:
        message = data.decode("utf-8")
    except UnicodeDecodeError:
        raise NoteError("note is not valid UTF-8") from None
    for ch in message:
        if ord(ch) < 0x20 and ch != "\n":
            what = "a carriage return (CRLF line endings?)" if ch == "\r" else f"control character 0x{ord(ch):02x}"
            raise NoteError(f"note holds {what}: only \\n may end its lines")
    if not message.endswith("\n"):
        raise NoteError("note does not end with a newline")
    split = message.rfind("\n\n")
    if split < 0:
        raise NoteError("note has no blank line before its signatures")
    text, block = message[: split + 1], message[split + 2 :]
    if not block:
        raise NoteError("note has no signature line")
    lines = block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise NoteError(f"note has more than {MAX_SIGNATURES} signatures")
    signatures = []
    for n, line in enumerate(lines, 1):
        if not line.startswith(SIGNATURE_PREFIX):
            raise NoteError(f"signature line {n} does not start with an em dash and a space")
        name, sep, b64 = line[len(SIGNATURE_PREFIX) :].partition(" ")
        if not sep:
            raise NoteError(f"signature line {n} has no space between the key name and the signature")
        if not valid_name(name):
            raise NoteError(f"signature line {n}: invalid key name")
        raw = b64decode_strict(b64, f"signature {n}")
        if len(raw) < 5:
            raise NoteError(f"signature {n} is too short ({len(raw)} bytes; a key ID and a signature)")
        signatures.append(Signature(name, int.from_bytes(raw[:4], "big"), raw[4:]))
    return Note(text, tuple(signatures))


def verify_note(data: bytes, verifiers: Sequence[VerifierKey]) -> VerifiedNote:
    """signed-note "Signatures": verify ``data`` against trusted keys.

    A signature by a key not given (name *and* key ID) is ignored. Every
    signature by a given key must verify (else ``SignatureError``), and at
    least one must be there.
    """
    note = parse_note(data)
    message = note.text.encode("utf-8")
    known = {(v.name, v.key_id): v for v in verifiers}
    verified: list[VerifierKey] = []
    unknown: list[Signature] = []
    for sig in note.signatures:
        key = known.get((sig.name, sig.key_id))
        if key is None:
            unknown.append(sig)
            continue
        if not key.verify(message, sig.signature):
            raise SignatureError(
                f"the signature by {sig.name} ({sig.key_id:08x}) does not verify: the note was altered"
            )
        if key not in verified:
            verified.append(key)
    if not verified:
        names = ", ".join(f"{s.name} ({s.key_id:08x})" for s in note.signatures[:5])
        trusted = ", ".join(f"{v.name} ({v.key_id:08x})" for v in verifiers) or "none"
        raise SignatureError(f"no signature by a trusted key (signed by: {names}; trusted: {trusted})")
    return VerifiedNote(note.text, tuple(verified), tuple(unknown))


def sign_note(text: str, signers: Sequence[SignerKey]) -> bytes:
    """A signed note of ``text`` (which must end in ``\\n`` and hold no blank-line ambiguity) by each signer."""
    if not text.endswith("\n"):
        raise NoteError("note text must end with a newline")
    if any(ord(ch) < 0x20 and ch != "\n" for ch in text):
        raise NoteError("note text must not hold control characters other than \\n")
    if not signers:
        raise NoteError("a note needs at least one signer")
    message = text.encode("utf-8")
    sigs = tuple(Signature(s.name, s.key_id, s.sign(message)) for s in signers)
    return Note(text, sigs).to_bytes()


def read_key_file(path: str, *, kind: str) -> str:
    """The text of a key file (``kind``: "signer" or "verifier"), or ``NoteError`` / ``OSError``."""
    with open(path, "rb") as f:
        raw = f.read(4097)
    if len(raw) > 4096:
        raise NoteError(f"{kind} key file is too large to be a key")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NoteError(f"{kind} key file is not UTF-8 text") from None
