"""The append-only writer (SPEC §9): logs it writes verify.

It holds an advisory lock on the file while open, chains each event onto
the last hash (resuming an existing log from its head), sanitizes payloads,
applies the optional redaction profile before hashing, and flushes every
event with a configurable fsync policy.
"""

from __future__ import annotations

import enum
import fcntl
import hashlib
import math
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .canonical import canonical_bytes, format_number
from .errors import ExitCode, LogIOError, RactError, WriterLockedError
from .kinds import KINDS_BY_NAME, VALIDATORS
from .model import GENESIS_HASH, HEX32, MAX_TIMESTAMP_NS
from .reader import analyze_line, split_line_ending

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_FLOAT_AS_BIG_INT_MIN = 9.2e18  # below this a float's integer token always fits 64 bits
_MAX_DEPTH = 200


class FsyncPolicy(str, enum.Enum):
    """When the writer forces data to disk. Every event is flushed regardless."""

    EVERY = "every"  # fsync after each event: no appended event is ever lost
    CLOSE = "close"  # fsync once when the writer closes
    NEVER = "never"  # leave it to the OS


def encode_line(event: dict) -> bytes:
    """One event as its log line: canonical JSON plus ``\\n``."""
    return canonical_bytes(event) + b"\n"


def event_hash(event: dict) -> str:
    """SPEC §2.4: SHA-256 of the canonical bytes of the event without ``hash``."""
    return hashlib.sha256(canonical_bytes({k: v for k, v in event.items() if k != "hash"})).hexdigest()


def sanitize_payload(payload: Any) -> dict:
    """Make a payload JSON-encodable: anything the encoder cannot take becomes its repr text.

    Never raises. A non-dict payload is wrapped as ``{"value": ...}``.
    """
    clean = _sanitize(payload, 0)
    return clean if isinstance(clean, dict) else {"value": clean}


def _safe_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not crash the writer
        text = f"<unrepresentable {type(value).__name__}>"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _sanitize(value: Any, depth: int) -> Any:
    if value is None or value is True or value is False:
        return value
    t = type(value)
    if t is str:
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return _safe_repr(value)
    if t is int:
        return value if _INT64_MIN <= value <= _INT64_MAX else _safe_repr(value)
    if t is float:
        if not math.isfinite(value):
            return _safe_repr(value)
        if _FLOAT_AS_BIG_INT_MIN <= abs(value) < 1e21 and not _INT64_MIN <= int(format_number(value)) <= _INT64_MAX:
            # JCS writes this float as a bare integer token (9.3e18 -> 9300000000000000000),
            # which a reader must call malformed (outside 64 bits): keep it as text instead.
            return _safe_repr(value)
        return value
    if depth >= _MAX_DEPTH:
        return _safe_repr(value)
    if isinstance(value, dict):  # subclasses too (OrderedDict, defaultdict, Counter...)
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = key if type(key) is str else _safe_repr(key)
            name = _sanitize(name, depth + 1) if type(name) is str else _safe_repr(name)
            out[name] = _sanitize(item, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_sanitize(item, depth + 1) for item in value]
    return _safe_repr(value)


@dataclass
class RedactionProfile:
    """Scrub regex patterns from strings and fully replace named fields, before hashing.

    Intentionally shallow (the reference calls it a first line of defence):
    it walks nested dicts and lists of the payload.
    """

    patterns: list[str] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)
    replacement: str = "[REDACTED]"

    def __post_init__(self) -> None:
        self._compiled = [re.compile(p) for p in self.patterns]
        self._fields = frozenset(self.fields)

    @property
    def enabled(self) -> bool:
        return bool(self._compiled or self._fields)

    def apply(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: (self.replacement if k in self._fields else self.apply(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.apply(v) for v in value]
        if isinstance(value, str):
            for pattern in self._compiled:
                value = pattern.sub(self.replacement, value)
            return value
        return value

    @classmethod
    def from_config(cls, config: dict | None) -> RedactionProfile | None:
        """Build from the ``trace.redaction`` mapping of ``ract.yaml``; None when absent."""
        if not config:
            return None
        section = (config.get("trace") or {}).get("redaction")
        if not section:
            return None
        if not isinstance(section, dict):
            raise RactError("ract.yaml: trace.redaction must be a mapping", exit_code=ExitCode.USAGE)
        try:
            return cls(
                patterns=[str(p) for p in section.get("patterns") or []],
                fields=[str(f) for f in section.get("fields") or []],
                replacement=str(section.get("replacement", "[REDACTED]")),
            )
        except re.error as exc:
            raise RactError(f"ract.yaml: bad redaction pattern: {exc}", exit_code=ExitCode.USAGE) from None

    @classmethod
    def load(cls, path: str | os.PathLike[str] = "ract.yaml") -> RedactionProfile | None:
        """Read ``ract.yaml``; a missing file means redaction is off."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise LogIOError(f"cannot read {path}: {exc.strerror or exc}") from None
        import yaml  # PyYAML: only needed when a config file is read

        try:
            config = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise RactError(f"{path}: not valid YAML: {exc}", exit_code=ExitCode.USAGE) from None
        return cls.from_config(config if isinstance(config, dict) else None)


@dataclass(frozen=True)
class LogHead:
    """Where an existing log ends: what the next event chains onto."""

    hash: str
    run_id: str
    timestamp_ns: int
    size_bytes: int  # bytes in the file


def read_head(path: str | os.PathLike[str]) -> LogHead | None:
    """The last event of an existing log, read from its end; None for an empty file.

    Raises when the log does not end in a complete, well-formed event: the
    writer never chains onto a torn tail or a damaged line.
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
    if not tail.endswith(b"\n"):
        raise RactError(f"{path}: last line has no newline (torn tail?); run `ract trace repair` first",
                        exit_code=ExitCode.INCOMPLETE)
    last = tail[:-1].rsplit(b"\n", 1)[-1] + b"\n"
    body, _ = split_line_ending(last)
    result = analyze_line(body)
    if result.event is None or any(p.code == "HASH_MISMATCH" for p in result.problems):
        raise RactError(f"{path}: last line is not a valid event; refusing to chain onto it",
                        exit_code=ExitCode.TAMPERED)
    ev = result.event
    return LogHead(hash=ev["hash"], run_id=ev["run_id"], timestamp_ns=ev["timestamp_ns"], size_bytes=size)


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
        redaction: RedactionProfile | None | object = FROM_CONFIG,
        clock: Callable[[], int] = time.time_ns,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        strict: bool = True,
    ) -> None:
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
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise LogIOError(f"cannot open {self.path} for writing: {exc.strerror or exc}") from None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise WriterLockedError(f"{self.path}: another writer holds this log's lock") from None
        try:
            head = read_head(self.path)
        except BaseException:
            self._release()
            raise
        if head is None:
            self.run_id = run_id or self.new_id()
            self.head = GENESIS_HASH
            self.last_timestamp_ns = 0
        else:
            if run_id is not None and run_id != head.run_id:
                self._release()
                raise RactError(f"{self.path}: log belongs to run {head.run_id}, not {run_id}",
                                exit_code=ExitCode.USAGE)
            self.run_id = head.run_id
            self.head = head.hash
            self.last_timestamp_ns = head.timestamp_ns
        if not (type(self.run_id) is str and HEX32.fullmatch(self.run_id)):
            self._release()
            raise RactError(f"run_id must be 32 lowercase hex characters: {self.run_id!r}", exit_code=ExitCode.USAGE)

    def append(
        self,
        kind: str,
        payload: Any = None,
        *,
        step_id: str | None = None,
        parent_id: str | None = None,
        timestamp_ns: int | None = None,
        event_id: str | None = None,
    ) -> dict:
        """Append one event; returns it (with its hash) once it is written."""
        if self._fd is None:
            raise RactError("writer is closed", exit_code=ExitCode.USAGE)
        if type(kind) is not str:
            raise RactError(f"kind must be a string, not {type(kind).__name__}", exit_code=ExitCode.USAGE)
        clean = sanitize_payload({} if payload is None else payload)
        if self.redaction is not None:
            clean = self.redaction.apply(clean)
        if self.strict:
            if kind not in KINDS_BY_NAME:
                raise RactError(f"unknown event kind {kind!r}", exit_code=ExitCode.SCHEMA)
            problems = VALIDATORS[kind](clean)
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
        event = {
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
        self._write_all(line)
        if self.fsync is FsyncPolicy.EVERY:
            os.fsync(self._fd)
        self.head = event["hash"]
        self.last_timestamp_ns = event["timestamp_ns"]
        return event

    def extend(self, events: Iterable[tuple[str, Any]]) -> list[dict]:
        return [self.append(kind, payload) for kind, payload in events]

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def close(self) -> None:
        if self._fd is None:
            return
        if self.fsync is FsyncPolicy.CLOSE:
            os.fsync(self._fd)
        self._release()

    def _release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops the flock

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
