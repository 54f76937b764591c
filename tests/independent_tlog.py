"""A checkpoint and tlog-proof verifier written from the public specs, apart from ``ract_cli``.

C2SP signed-note, tlog-checkpoint and tlog-proof, RFC 9162 §2.1 and Go's
``sumdb/note`` key text form: parsed here with ``base64``/``hashlib`` and
verified with ``cryptography`` directly. The event hash is recomputed with
``independent_jcs`` (the test suite's own RFC 8785 encoder). Nothing from
``ract_cli`` is imported, so a bug there cannot vouch for itself.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from independent_jcs import rhash


class Invalid(Exception):
    pass


def _b64(text: str) -> bytes:
    raw = base64.b64decode(text, validate=True)
    if base64.b64encode(raw).decode() != text:
        raise Invalid(f"non-canonical base64 {text!r}")
    return raw


def parse_vkey(text: str) -> tuple[str, bytes, bytes]:
    """``NAME+HASH+BASE64`` -> (name, 4-byte key id, 32-byte public key), the key id checked."""
    name, hash_hex, key64 = text.strip().split("+", 2)
    raw = _b64(key64)
    if raw[0] != 1 or len(raw) != 33:
        raise Invalid("not an Ed25519 verifier key")
    kid = hashlib.sha256(name.encode() + b"\n" + raw).digest()[:4]
    if kid.hex() != hash_hex.lower():
        raise Invalid("key id does not match")
    return name, kid, raw[1:]


def open_note(note: bytes, vkey: str) -> str:
    """The note's text if a signature by ``vkey`` verifies (signed-note), else ``Invalid``."""
    name, kid, pub = parse_vkey(vkey)
    message = note.decode("utf-8")
    if any(ord(c) < 0x20 and c != "\n" for c in message) or not message.endswith("\n"):
        raise Invalid("not a note")
    cut = message.rindex("\n\n")
    text, sigs = message[: cut + 1], message[cut + 2 :]
    good = False
    for line in sigs[:-1].split("\n"):
        if not line.startswith("\u2014 "):
            raise Invalid("bad signature line")
        who, b64 = line[2:].split(" ")
        blob = _b64(b64)
        if who != name or blob[:4] != kid:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(pub).verify(blob[4:], text.encode())
        except InvalidSignature:
            raise Invalid("signature does not verify") from None
        good = True
    if not good:
        raise Invalid("no signature by the key")
    return text


@dataclass
class Tree:
    origin: str
    size: int
    root: bytes


def open_checkpoint(note: bytes, vkey: str) -> Tree:
    lines = open_note(note, vkey)[:-1].split("\n")
    if len(lines) < 3 or not all(lines):
        raise Invalid("not a checkpoint")
    origin, size, root = lines[:3]
    raw = _b64(root)
    if len(raw) != 32:
        raise Invalid("bad root")
    return Tree(origin, decimal(size), raw)


def decimal(text: str) -> int:
    """ASCII decimal, no leading zeros (tlog-checkpoint size, tlog-proof index)."""
    if not text.isascii() or not text.isdigit() or (text != "0" and text.startswith("0")):
        raise Invalid(f"not a decimal without leading zeros: {text!r}")
    return int(text)


def leaf(event_hash_hex: str) -> bytes:
    return hashlib.sha256(b"\x00" + bytes.fromhex(event_hash_hex)).digest()


def mth(leaves: list[bytes]) -> bytes:
    """RFC 9162 §2.1.1 over leaf hashes, recursively."""
    n = len(leaves)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return leaves[0]
    k = 1 << ((n - 1).bit_length() - 1)
    return hashlib.sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:])).digest()


def log_root(lines: list[bytes]) -> bytes:
    """The root over a log's lines: each line's own ``hash`` field as leaf data (SPEC §14)."""
    return mth([leaf(json.loads(line)["hash"]) for line in lines])


def root_from_path(index: int, size: int, leaf_hash: bytes, path: list[bytes]) -> bytes:
    """RFC 9162 §2.1.3.2, written as the recursive PATH it inverts (not the bit-twiddling loop)."""
    if size == 1:
        if path:
            raise Invalid("proof too long")
        return leaf_hash
    if not path:
        raise Invalid("proof too short")
    k = 1 << ((size - 1).bit_length() - 1)
    *inner, sibling = path
    if index < k:
        return hashlib.sha256(b"\x01" + root_from_path(index, k, leaf_hash, inner) + sibling).digest()
    return hashlib.sha256(b"\x01" + sibling + root_from_path(index - k, size - k, leaf_hash, inner)).digest()


@dataclass
class Proven:
    tree: Tree
    index: int
    event: dict


def verify_tlog_proof(data: bytes, vkey: str) -> Proven:
    """c2sp.org/tlog-proof@v1 with the event line in ``extra``: everything checked, else ``Invalid``."""
    head, _, checkpoint = data.partition(b"\n\n")
    lines = head.decode("ascii").split("\n")
    if lines[0] != "c2sp.org/tlog-proof@v1":
        raise Invalid("header")
    if not lines[1].startswith("extra "):
        raise Invalid("no extra")
    line = _b64(lines[1][6:])
    if not lines[2].startswith("index "):
        raise Invalid("no index")
    index = decimal(lines[2][6:])
    path = [_b64(h) for h in lines[3:]]
    tree = open_checkpoint(checkpoint, vkey)
    event = json.loads(line)
    if not isinstance(event, dict) or not isinstance(event.get("hash"), str):
        raise Invalid("extra is not an event")
    if rhash(event) != event["hash"]:
        raise Invalid("event hash does not match its line")
    if not 0 <= index < tree.size or root_from_path(index, tree.size, leaf(event["hash"]), path) != tree.root:
        raise Invalid("inclusion proof does not lead to the root")
    return Proven(tree, index, event)
