"""Sealing while writing (SPEC §14, last bullet): signed checkpoints appended to a sidecar.

``Sealer`` seals one log as an ``EventWriter`` writes it
(``EventWriter(path, seal_key=KEY, seal_every=N)``; ``SealingWriter`` does the
same from outside around any writer): every N events, and at close, it appends a signed checkpoint of the log to
``<log>.checkpoints`` (``events.jsonl.checkpoints``). ``ract trace verify
LOG --vkey FILE`` checks that sidecar, so a log truncated later is caught
even when no head was kept elsewhere.

Sidecar format: signed checkpoint notes one after another, each followed by
one empty line::

    <origin>\\n<size>\\n<root>\\n\\n— <key name> <signature>\\n\\n
    <origin>\\n<size>\\n<root>\\n\\n— <key name> <signature>\\n\\n

Every entry is a checkpoint note exactly as ``ract trace checkpoint``
writes it (so one can be cut out and used with ``prove``). Before a seal is
written the log is fsynced, so a seal never claims events a crash could
lose. A last entry cut short (the writer killed while sealing) is ignored
with a warning. Repair only appends (synthesized closes come after the last
seal) and never touches the sidecar.

What it does not stop: whoever can rewrite the log can also delete or cut
the sidecar back to an older seal. Keep a checkpoint somewhere else as well
(a CI artifact, a witness) when that matters (docs/checkpoints.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ract_cli.errors import ExitCode, LogIOError, UsageError
from ract_cli.proofs.checkpoint import (
    Checkpoint,
    event_leaf,
    make_checkpoint,
    read_log_tree,
    refusal,
    sign_checkpoint,
    valid_origin,
)
from ract_cli.proofs.note import SignerKey
from ract_cli.proofs.sidecar import sidecar_path


class Sealer:
    """Seals one log as it is written: a signed checkpoint in its sidecar every ``every`` events and at close.

    ``EventWriter(path, seal_key=KEY, seal_every=N)`` drives one: it calls
    ``added(event)`` after each event it wrote and ``close()`` when it closes.
    ``origin`` defaults to the key's name (tlog-checkpoint: the key name
    SHOULD be the origin). Opening reads the existing log once to rebuild its
    tree (O(log n) memory), and refuses one that does not verify.
    """

    def __init__(
        self, log_path: str | os.PathLike[str], key: SignerKey, *, every: int = 1000, origin: str | None = None
    ) -> None:
        if every < 1:
            raise UsageError("seal every N events: N must be at least 1")
        self.log_path = log_path
        self.key = key
        self.every = every
        self.origin = origin if origin is not None else key.name
        if not valid_origin(self.origin):
            raise UsageError(f"invalid origin {self.origin!r}")
        self.sidecar = sidecar_path(log_path)
        self._sealed_size: int | None = None
        self._since_seal = 0
        tree = read_log_tree(log_path)
        if tree.exit_code != ExitCode.OK:
            raise refusal(tree, "refusing to seal onto it")
        self._tree = tree.builder

    def added(self, event: dict[str, Any]) -> None:
        """One more event was written (and flushed) to the log."""
        self._tree.append(event_leaf(event))
        self._since_seal += 1
        if self._since_seal >= self.every:
            self.seal()

    @property
    def size(self) -> int:
        return self._tree.size

    def checkpoint(self) -> Checkpoint:
        return Checkpoint(self.origin, self._tree.size, self._tree.root())

    def seal(self) -> bytes:
        """Append a signed checkpoint of the log as written so far to the sidecar; return the note."""
        _fsync_path(self.log_path)  # the seal must never claim events a crash could still lose
        note = sign_checkpoint(self.checkpoint(), self.key)
        append_to_sidecar(self.sidecar, note)
        self._sealed_size = self._tree.size
        self._since_seal = 0
        return note

    def close(self) -> None:
        """Seal what was written since the last seal, if anything."""
        if self._tree.size and self._sealed_size != self._tree.size:
            self.seal()


class SealingWriter:
    """An ``EventWriter`` (or any writer with ``path``, ``append``, ``close``) sealed from outside by a ``Sealer``.

    >>> w = SealingWriter(EventWriter(path, run_id=rid), key=SignerKey.parse(text), every=100)

    ``EventWriter(path, seal_key=..., seal_every=...)`` does the same from inside.
    Every other attribute is the wrapped writer's.
    """

    def __init__(self, writer: Any, key: SignerKey, *, every: int = 1000, origin: str | None = None) -> None:
        self.writer = writer
        try:
            self.sealer = Sealer(writer.path, key, every=every, origin=origin)
        except BaseException:
            writer.close()
            raise
        self._closed = False

    def append(self, kind: str, payload: Any = None, **kw: Any) -> dict[str, Any]:
        event: dict[str, Any] = self.writer.append(kind, payload, **kw)
        self.sealer.added(event)
        return event

    def extend(self, events: Any) -> list[dict[str, Any]]:
        return [self.append(kind, payload) for kind, payload in events]

    @property
    def size(self) -> int:
        return self.sealer.size

    @property
    def sidecar(self) -> Path:
        return self.sealer.sidecar

    def checkpoint(self) -> Checkpoint:
        return self.sealer.checkpoint()

    def seal(self) -> bytes:
        return self.sealer.seal()

    def close(self) -> None:
        """Seal what was written since the last seal (if anything), then close the writer."""
        if self._closed:
            return
        self._closed = True
        try:
            self.sealer.close()
        finally:
            self.writer.close()

    def __enter__(self) -> SealingWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.writer, name)


def seal(log_path: str | os.PathLike[str], key: SignerKey, *, origin: str | None = None) -> bytes:
    """Append one signed checkpoint of the log as it is to its sidecar (refuses a log that does not verify)."""
    made = make_checkpoint(log_path, key, origin if origin is not None else key.name)
    append_to_sidecar(sidecar_path(log_path), made.note)
    return made.note


def append_to_sidecar(path: str | os.PathLike[str], note: bytes) -> None:
    """One ``write`` with ``O_APPEND`` (the note and its separating empty line), then fsync."""
    data = note + b"\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise LogIOError(f"cannot append to {path}: {exc.strerror or exc}") from None


def _fsync_path(path: str | os.PathLike[str]) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise LogIOError(f"cannot open {path}: {exc.strerror or exc}") from None
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
