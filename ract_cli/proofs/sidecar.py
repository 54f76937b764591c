"""The sealing sidecar's file format (``<log>.checkpoints``): signed checkpoint notes, one after another.

Shared by the writer that seals (``seal.py``) and the verifier that reads the
sidecar (``checkpoint.py``), so neither imports the other for it.
"""

from __future__ import annotations

import os
from pathlib import Path

from ract_cli.proofs.note import SIGNATURE_PREFIX

SIDECAR_SUFFIX = ".checkpoints"
_SIG = SIGNATURE_PREFIX.encode("utf-8")


def sidecar_path(log_path: str | os.PathLike[str]) -> Path:
    """``events.jsonl`` -> ``events.jsonl.checkpoints`` (beside the log)."""
    p = Path(log_path)
    return p.with_name(p.name + SIDECAR_SUFFIX)


def find_sidecar(log_path: str | os.PathLike[str]) -> Path | None:
    """The log's sidecar when there is one (what ``verify --vkey`` checks without ``--checkpoint``)."""
    p = sidecar_path(log_path)
    return p if p.is_file() else None


def split_notes(data: bytes) -> list[bytes]:
    """The notes of a sidecar (or of a file holding one note), each as it would stand alone.

    An entry ends at the empty line after its signature lines (or where a
    non-signature line follows them). The bytes of each entry are kept
    exactly; the separating empty line is not part of it.
    """
    entries: list[bytes] = []
    current: list[bytes] = []
    in_signatures = False
    after_blank = False
    lines = data.split(b"\n")
    for n, line in enumerate(lines):
        last = n == len(lines) - 1
        piece = line if last else line + b"\n"
        if last and not line:
            break
        if in_signatures and not line.startswith(_SIG):
            entries.append(b"".join(current))
            current, in_signatures, after_blank = [], False, False
            if not line:
                continue  # the separator
        if after_blank and line.startswith(_SIG):
            in_signatures = True
        after_blank = not line
        current.append(piece)
    if current:
        entries.append(b"".join(current))
    return entries


def entry_is_torn(entry: bytes) -> bool:
    """A last sidecar entry a killed writer cut short: no final newline, or no signature line yet."""
    return not entry.endswith(b"\n") or (b"\n\n" + _SIG) not in entry
