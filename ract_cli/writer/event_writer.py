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
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ract_cli.errors import ExitCode, LogIOError, RactError, WriterLockedError
from ract_cli.format.canonical import canonical_bytes, chain_hash
from ract_cli.format.json_types import Event, JSONObject
from ract_cli.format.kinds import KINDS_BY_NAME, LATEST_SCHEMA_VERSION, VALIDATORS
from ract_cli.format.model import GENESIS_HASH, HEX32, MAX_TIMESTAMP_NS
from ract_cli.format.sanitize import _describe, _string_list, _utf8_text, sanitize_report
from ract_cli.proofs.checkpoint import load_signer
from ract_cli.proofs.note import SignerKey
from ract_cli.proofs.seal import Sealer
from ract_cli.read.reader import line_result


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


@dataclass
class RedactionProfile:
    """Scrub regex patterns from strings and fully replace named fields, before hashing.

    Intentionally shallow (the reference calls it a first line of defence):
    it walks nested dicts and lists of the payload. ``patterns`` and
    ``fields`` take a list of strings (one string is a one-item list);
    ``replacement`` is written literally (no regex template).
    """

    patterns: list[str] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)
    replacement: str = "[REDACTED]"

    def __post_init__(self) -> None:
        self.patterns = [_utf8_text(p, "redaction pattern") for p in _string_list(self.patterns, "patterns")]
        self.fields = [_utf8_text(f, "redaction field") for f in _string_list(self.fields, "fields")]
        if type(self.replacement) is not str:
            raise RactError(
                f"replacement must be a string, not {_describe(self.replacement)}", exit_code=ExitCode.USAGE
            )
        _utf8_text(self.replacement, "replacement")
        compiled: list[re.Pattern[str]] = []
        for pattern in self.patterns:
            try:
                compiled.append(re.compile(pattern))
            except (re.error, OverflowError, RecursionError, ValueError) as exc:
                raise RactError(f"bad redaction pattern {pattern!r}: {exc}", exit_code=ExitCode.USAGE) from None
        self._compiled = compiled
        self._fields = frozenset(self.fields)

    @property
    def enabled(self) -> bool:
        return bool(self._compiled or self._fields)

    def apply(self, value: Any) -> Any:
        """The value with patterns scrubbed from its strings and named fields replaced (a sanitized value)."""
        if type(value) is dict:
            return {k: (self.replacement if k in self._fields else self.apply(v)) for k, v in value.items()}
        if type(value) is list:
            return [self.apply(v) for v in value]
        if type(value) is str:
            return self.scrub(value)
        return value

    def scrub(self, text: str) -> str:
        """``text`` with every pattern match replaced by the literal replacement."""
        for pattern in self._compiled:
            text = pattern.sub(self._literal, text)
        return text

    def _literal(self, _match: re.Match[str]) -> str:
        return self.replacement  # a function: a backslash or "\\g<0>" in the replacement is written as is

    @classmethod
    def from_config(cls, config: JSONObject | None) -> RedactionProfile | None:
        """Build from the ``trace.redaction`` mapping of ``ract.yaml``; None when absent.

        A key of the wrong type is a ``RactError`` (exit 2) naming it.
        """
        if not config:
            return None
        if not isinstance(config, dict):
            raise RactError("ract.yaml: the configuration must be a mapping", exit_code=ExitCode.USAGE)
        trace = config.get("trace")
        if trace is None:
            return None
        if not isinstance(trace, dict):
            raise RactError("ract.yaml: trace must be a mapping", exit_code=ExitCode.USAGE)
        section = trace.get("redaction")
        if section is None:
            return None
        if not isinstance(section, dict):
            raise RactError("ract.yaml: trace.redaction must be a mapping", exit_code=ExitCode.USAGE)
        replacement = section.get("replacement", "[REDACTED]")
        if type(replacement) is not str:
            raise RactError(
                f"ract.yaml: trace.redaction.replacement must be a string, not {_describe(replacement)}",
                exit_code=ExitCode.USAGE,
            )
        try:
            return cls(
                patterns=_string_list(section.get("patterns"), "ract.yaml: trace.redaction.patterns"),
                fields=_string_list(section.get("fields"), "ract.yaml: trace.redaction.fields"),
                replacement=replacement,
            )
        except RactError as exc:
            if exc.message.startswith("ract.yaml"):
                raise
            raise RactError(f"ract.yaml: trace.redaction: {exc.message}", exit_code=ExitCode.USAGE) from None

    @classmethod
    def load(cls, path: str | os.PathLike[str] = "ract.yaml") -> RedactionProfile | None:
        """Read ``ract.yaml``; a missing file means redaction is off."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except UnicodeDecodeError:
            raise RactError(f"{path}: not UTF-8 text", exit_code=ExitCode.USAGE) from None
        except OSError as exc:
            raise LogIOError(f"cannot read {path}: {exc.strerror or exc}") from None
        # PyYAML: imported only when a config file is read. It ships no type information
        # (the stubs are the separate types-PyYAML package), hence the ignore.
        import yaml  # type: ignore[import-untyped]

        try:
            config = yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError, ValueError) as exc:
            raise RactError(f"{path}: not valid YAML: {exc}", exit_code=ExitCode.USAGE) from None
        return cls.from_config(config)


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
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
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
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists() and not self.path.is_file():  # a directory, or a FIFO that would block
                raise LogIOError(f"{self.path} is not a regular file")
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise LogIOError(f"cannot open {self.path} for writing: {exc.strerror or exc}") from None
        self._fd: int | None = fd  # None once closed
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise WriterLockedError(f"{self.path}: another writer holds this log's lock") from None
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
        event_id = event_id or self.new_id()
        if not (type(event_id) is str and HEX32.fullmatch(event_id)):
            raise RactError(f"event id must be 32 lowercase hex characters: {event_id!r}", exit_code=ExitCode.USAGE)
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
        self._write_all(fd, line)
        if self.fsync is FsyncPolicy.EVERY:
            os.fsync(fd)
        self.head = event["hash"]
        if self.sealer is not None:
            self.sealer.added(event)
        return event

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
