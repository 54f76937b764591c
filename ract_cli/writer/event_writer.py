"""The append-only writer (SPEC §9): logs it writes verify.

It holds an advisory lock on the file while open, chains each event onto
the last hash (resuming an existing log from its head, a last event without
its final newline included), sanitizes payloads (never raising), applies the
optional redaction profile before hashing, and flushes every event with a
configurable fsync policy. A strict writer refuses only the caller's own
mistakes: what sanitizing or redaction changed is written, and ``verify``
reports it if it breaks a field's type (docs/writer.md, "Strict mode").
"""

from __future__ import annotations

import enum
import fcntl
import os
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ract_cli.errors import ExitCode, LogIOError, RactError, WriterLockedError
from ract_cli.format.canonical import canonical_bytes, chain_hash
from ract_cli.format.json_types import Event
from ract_cli.format.kinds import KINDS_BY_NAME, LATEST_SCHEMA_VERSION, VALIDATORS
from ract_cli.format.model import GENESIS_HASH, HEX32, MAX_TIMESTAMP_NS
from ract_cli.format.sanitize import sanitize_report
from ract_cli.proofs.checkpoint import load_signer
from ract_cli.proofs.note import SignerKey
from ract_cli.proofs.seal import Sealer
from ract_cli.read.framing import iter_lines_unverified
from ract_cli.read.idset import _IdSet
from ract_cli.read.verdict import line_result
from ract_cli.writer.redaction import RedactionProfile

__all__ = [
    "FROM_CONFIG",
    "EventWriter",
    "FsyncPolicy",
    "LogHead",
    "RedactionProfile",
    "encode_line",
    "event_hash",
    "is_locked",
    "new_event_id",
    "read_head",
]


class FsyncPolicy(enum.StrEnum):
    """When the writer forces data to disk. Every event is flushed regardless."""

    EVERY = "every"  # fsync after each event: no appended event is ever lost
    CLOSE = "close"  # fsync once when the writer closes
    NEVER = "never"  # leave it to the OS


def encode_line(event: Event) -> bytes:
    """One event as its log line: canonical JSON plus ``\\n``."""
    return canonical_bytes(event) + b"\n"


def event_hash(event: Event) -> str:
    """SPEC §2.4: SHA-256 of the canonical bytes of the event without ``hash`` (``format.canonical.chain_hash``)."""
    return chain_hash(event)


@dataclass(frozen=True)
class LogHead:
    """Where an existing log ends: what the next event chains onto."""

    hash: str
    run_id: str
    timestamp_ns: int
    size_bytes: int  # bytes in the file
    missing_newline: bool = False  # the last event lacks its final "\n" (SPEC §2.1 MISSING_FINAL_NEWLINE)


def read_head(path: str | os.PathLike[str]) -> LogHead | None:
    """The last event of an existing log, read from its end; None for an empty file.

    Raises when the log does not end in a complete, well-formed event: the
    writer never chains onto a torn tail or a damaged line. A last line that
    lacks only its final ``\\n`` but is a valid event is an event (SPEC §2.1):
    its head is returned with ``missing_newline=True``.
    """
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return None
        block = 1 << 16
        pos = size
        tail = b""
        while pos > 0:
            step = min(block, pos)
            pos -= step
            f.seek(pos)
            tail = f.read(step) + tail
            if tail.count(b"\n") >= 2 or pos == 0:
                break
    missing_newline = not tail.endswith(b"\n")
    last = tail.rsplit(b"\n", 1)[-1] if missing_newline else tail[:-1].rsplit(b"\n", 1)[-1] + b"\n"
    # the reader's own verdict on a last line (torn tail, MISSING_FINAL_NEWLINE...): one rule for both
    result = line_result(last, LATEST_SCHEMA_VERSION, max(len(last), 1))
    if any(p.code == "TORN_TAIL" for p in result.problems):
        raise RactError(
            f"{path}: last line has no newline and does not parse (a torn tail); run `ract trace repair` first",
            exit_code=ExitCode.INCOMPLETE,
        )
    if result.event is None or any(p.code == "HASH_MISMATCH" for p in result.problems):
        raise RactError(
            f"{path}: last line is not a valid event; refusing to chain onto it", exit_code=ExitCode.TAMPERED
        )
    ev = result.event
    return LogHead(
        hash=ev["hash"],
        run_id=ev["run_id"],
        timestamp_ns=ev["timestamp_ns"],
        size_bytes=size,
        missing_newline=missing_newline,
    )


def is_locked(path: str | os.PathLike[str]) -> bool:
    """True when another process holds the log's writer lock."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock we may have taken
    return False


def new_event_id() -> str:
    """The writer's default event id: a random UUID4 as 32 lowercase hex characters."""
    return uuid.uuid4().hex


FROM_CONFIG: Any = object()
"""``EventWriter(redaction=FROM_CONFIG)`` (the default): the ``trace.redaction``
profile of ``./ract.yaml`` when that file exists, else none. ``redaction=None``
turns redaction off whatever ``ract.yaml`` says."""


class EventWriter:
    """Append chained events to a log, holding its advisory lock while open.

    >>> with EventWriter("evals/runs/<run_id>/events.jsonl", run_id=rid) as w:
    ...     w.append("run.started", {"intent_id": ...})
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        run_id: str | None = None,
        fsync: FsyncPolicy | str = FsyncPolicy.EVERY,
        redaction: RedactionProfile | object | None = FROM_CONFIG,
        clock: Callable[[], int] = time.time_ns,
        new_id: Callable[[], str] = new_event_id,
        strict: bool = True,
        seal_key: SignerKey | str | os.PathLike[str] | None = None,
        seal_every: int = 1000,
        seal_origin: str | None = None,
    ) -> None:
        """``seal_key`` (a ``SignerKey`` or a ``.skey`` file): seal as it writes (SPEC §14) -- a signed
        checkpoint in ``<log>.checkpoints`` every ``seal_every`` events and at close (``proofs/seal.py``)."""
        self.path = Path(path)
        self.fsync = FsyncPolicy(fsync)
        if redaction is FROM_CONFIG:  # SPEC §9 / reference: redaction is enabled in ract.yaml
            redaction = RedactionProfile.load()
        self.redaction = redaction if isinstance(redaction, RedactionProfile) and redaction.enabled else None
        self.clock = clock
        self.new_id = new_id
        self.strict = strict
        # every id in the log, once an id not from new_event_id has to be checked against them (_check_id)
        self._ids: _IdSet | None = None
        self._fd: int | None = self._open_locked()  # None once closed
        try:
            head = read_head(self.path)
        except BaseException:
            self._release()
            raise
        # a last event that lacks its "\n": the next append writes it first, in the same write
        self._pending_newline = head is not None and head.missing_newline
        if head is None:
            self.run_id = run_id or self.new_id()
            self.head = GENESIS_HASH
        else:
            if run_id is not None and run_id != head.run_id:
                self._release()
                raise RactError(
                    f"{self.path}: log belongs to run {head.run_id}, not {run_id}", exit_code=ExitCode.USAGE
                )
            self.run_id = head.run_id
            self.head = head.hash
        if not (type(self.run_id) is str and HEX32.fullmatch(self.run_id)):
            self._release()
            raise RactError(f"run_id must be 32 lowercase hex characters: {self.run_id!r}", exit_code=ExitCode.USAGE)
        self.sealer: Sealer | None = None
        if seal_key is not None:
            try:
                key = seal_key if isinstance(seal_key, SignerKey) else load_signer(seal_key)
                self.sealer = Sealer(self.path, key, every=seal_every, origin=seal_origin)
            except BaseException:
                self._release()
                raise

    #: how many times the writer opens the log again when the path turned out to name another file
    OPEN_ATTEMPTS = 5

    def _open_locked(self) -> int:
        """Open the log for appending and take its lock, on the file the path names once it is locked.

        Between the open and the lock, ``repair`` may rename a repaired log
        into place: the descriptor would then lock and append to the old
        inode (by then the ``.bak``), and every event written would be lost
        to the log. So once locked, the descriptor must be the file at the
        path (same ``st_dev`` and ``st_ino``); if not, open again, up to
        ``OPEN_ATTEMPTS`` times, then fail (``LogIOError``, exit 5).
        """
        for _ in range(self.OPEN_ATTEMPTS):
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                if self.path.exists() and not self.path.is_file():  # a directory, or a FIFO that would block
                    raise LogIOError(f"{self.path} is not a regular file")
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as exc:
                raise LogIOError(f"cannot open {self.path} for writing: {exc.strerror or exc}") from None
            try:
                self._opened(fd)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise WriterLockedError(f"{self.path}: another writer holds this log's lock") from None
                if self._is_the_path(fd):
                    return fd
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # the path names another file now: drop the lock on the old one, open again
        raise LogIOError(
            f"{self.path}: the file at this path was replaced each of {self.OPEN_ATTEMPTS} times the writer "
            "opened and locked it (a repair renaming a new log into place?); refusing to write to a file "
            "that is no longer the log"
        )

    def _is_the_path(self, fd: int) -> bool:
        """Whether ``fd`` is still the file ``self.path`` names (symlinks followed)."""
        mine = os.fstat(fd)
        try:
            there = os.stat(self.path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise LogIOError(f"cannot stat {self.path}: {exc.strerror or exc}") from None
        return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)

    def _opened(self, fd: int) -> None:
        """Called between opening the log and locking it; does nothing (a seam for race tests)."""

    def append(
        self,
        kind: str,
        payload: Any = None,
        *,
        step_id: str | None = None,
        parent_id: str | None = None,
        timestamp_ns: int | None = None,
        event_id: str | None = None,
    ) -> Event:
        """Append one event; returns it (with its hash) once it is written."""
        fd = self._fd
        if fd is None:
            raise RactError("writer is closed", exit_code=ExitCode.USAGE)
        if type(kind) is not str:
            raise RactError(f"kind must be a string, not {type(kind).__name__}", exit_code=ExitCode.USAGE)
        clean, replaced = sanitize_report({} if payload is None else payload)
        untouched = set(clean) - replaced
        if self.redaction is not None:
            redacted = self.redaction.apply(clean)
            # both sides are sanitized JSON values: comparing them runs none of the caller's code
            untouched = {k for k in untouched if redacted[k] == clean[k]}
            clean = redacted
        if self.strict:
            # Refuse only what the caller got wrong: an unknown kind, or a problem in a key that
            # neither sanitizing (repr text, SPEC §9) nor the redaction profile changed. What those
            # two changed is written as they left it; `verify` reports it (SCHEMA) if it breaks a type.
            if kind not in KINDS_BY_NAME:
                raise RactError(f"unknown event kind {kind!r}", exit_code=ExitCode.SCHEMA)
            checked = {k: v for k, v in clean.items() if k in untouched}
            # A container that sanitizing or redaction only reached into is still the caller's choice
            # of type (an array where an object belongs): check its type, with the contents left out.
            checked.update({k: type(v)() for k, v in clean.items() if k not in checked and type(v) in (dict, list)})
            problems = VALIDATORS[kind](checked)
            if problems:
                raise RactError(f"{kind}: {'; '.join(problems)}", exit_code=ExitCode.SCHEMA)
        for name, value in (("step_id", step_id), ("parent_id", parent_id)):
            if value is not None and not (type(value) is str and HEX32.fullmatch(value)):
                raise RactError(f"{name} must be 32 lowercase hex characters", exit_code=ExitCode.USAGE)
        # the envelope must verify (SPEC §2.2): check the id and time we were given or generated
        chosen = event_id is not None or self.new_id is not new_event_id
        event_id = event_id or self.new_id()
        if not (type(event_id) is str and HEX32.fullmatch(event_id)):
            raise RactError(f"event id must be 32 lowercase hex characters: {event_id!r}", exit_code=ExitCode.USAGE)
        if chosen or self._ids is not None:
            self._check_id(event_id)
        ts = self.clock() if timestamp_ns is None else timestamp_ns
        if type(ts) is not int or not 0 <= ts < MAX_TIMESTAMP_NS:
            raise RactError(f"timestamp_ns must be an integer in [0, 2^63): {ts!r}", exit_code=ExitCode.USAGE)
        event: Event = {
            "id": event_id,
            "run_id": self.run_id,
            "step_id": step_id,
            "parent_id": parent_id,
            "timestamp_ns": ts,
            "kind": kind,
            "payload": clean,
            "prev_hash": self.head,
        }
        event["hash"] = event_hash(event)
        line = encode_line(event)
        if self._pending_newline:
            line = b"\n" + line  # one write: the log is valid before it and after it
        try:
            self._write_all(fd, line)
        except BaseException:
            self._ids = None  # the id was added but may not be in the log: read the log again when needed
            raise
        if self.fsync is FsyncPolicy.EVERY:
            os.fsync(fd)
        self.head = event["hash"]
        if self.sealer is not None:
            self.sealer.added(event)
        return event

    def _check_id(self, event_id: str) -> None:
        """Refuse an id the log already holds (verify would report ``DUPLICATE_ID``).

        The log's ids are read once, at the first id that was chosen rather
        than drawn at random (``event_id=``, or a ``new_id`` of the caller's):
        one pass over the file (framing and a JSON parse per line, as
        ``grep --no-verify``), kept in ``read.idset._IdSet`` (about 100 bytes
        an id up to 2^18 ids, 20-25 bytes past that). From then on each
        appended id is added to it. The default random ids (``new_event_id``,
        122 random bits) are not checked until then, so a writer that never
        chooses an id never reads its log. The id is added here, before the
        write; a failed write drops the set, to be read again.
        """
        ids = self._ids
        if ids is None:
            ids = _IdSet()
            try:
                for raw in iter_lines_unverified(self.path):
                    found = raw.event.get("id") if raw.event is not None else None
                    if type(found) is str and HEX32.fullmatch(found):
                        ids.add(found)
            except OSError as exc:
                raise LogIOError(f"cannot read {self.path}: {exc.strerror or exc}") from None
            self._ids = ids
        if not ids.add(event_id):
            raise RactError(
                f"{self.path}: event id {event_id} is already used in this log (verify would report DUPLICATE_ID)",
                exit_code=ExitCode.USAGE,
            )

    def extend(self, events: Iterable[tuple[str, Any]]) -> list[Event]:
        return [self.append(kind, payload) for kind, payload in events]

    def _write_all(self, fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            if written:
                self._pending_newline = False  # the missing "\n" went first: never write it twice
            view = view[written:]

    def close(self) -> None:
        fd = self._fd
        if fd is None:
            return
        if self.fsync is FsyncPolicy.CLOSE:
            os.fsync(fd)
        try:
            if self.sealer is not None:
                self.sealer.close()  # the last events since the last seal, while the lock is still held
        finally:
            self._release()

    def _release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops the flock

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
