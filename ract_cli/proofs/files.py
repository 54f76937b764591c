"""Small file helpers of the proofs package: bounded reads (writes: ``ract_cli.atomic``)."""

from __future__ import annotations

import os
from pathlib import Path

from ract_cli.errors import LogIOError

#: the largest checkpoint, proof or key file read (a checkpoint is ~200 bytes, a proof of 2^63 leaves ~4 KB
#: plus its event line, which may be as long as a log line)
MAX_INPUT_BYTES = 64 << 20


def read_small(path: str | os.PathLike[str], what: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a small input file, or ``LogIOError`` (exit 5) saying why not."""
    p = Path(path)
    try:
        if p.is_dir():
            raise LogIOError(f"{what} {path} is a directory")
        if p.exists() and not p.is_file():
            raise LogIOError(f"{what} {path} is not a regular file")
        with open(p, "rb") as f:
            data = f.read(limit + 1)
    except FileNotFoundError:
        raise LogIOError(f"{what} {path}: no such file") from None
    except OSError as exc:
        raise LogIOError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise LogIOError(f"{what} {path} is larger than {limit} bytes")
    return data
