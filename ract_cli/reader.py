"""The one streaming chain reader. Every command reads logs through it.

Reading is split in two so that a large file can be checked in parallel:

* ``analyze_line`` is a pure function of one line's bytes: parse, envelope,
  canonical hash, kind and payload. It knows nothing of other lines.
* ``ChainState`` feeds those results in file order and checks what spans
  lines: genesis, linkage, run_id, duplicate ids, clock, open handles.

``ChainReader`` ties them together for one file in bounded memory: it reads
one line at a time (never more than ``max_line_bytes`` of it), yields every
usable event with its line number and byte offset, and collects findings.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import orjson

from .canonical import CanonicalizationError, canonical_bytes, jcs_exact, orjson_is_jcs
from .errors import ChainBrokenError, ExitCode, LogIOError, UsageError, lowest_nonzero
from .fastpath import fast_analyze
from .findings import ERROR, Finding, error, exit_code_for, warning
from .handles import HandleTracker
from .kinds import KINDS_BY_NAME, LATEST_SCHEMA_VERSION, VALIDATORS, kinds_for_version
from .model import ENVELOPE_KEYS, GENESIS_HASH, HEX32, HEX64, MAX_TIMESTAMP_NS

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
_SORT = orjson.OPT_SORT_KEYS
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_HASH_PREFIX = b'{"hash":"'  # sorted keys put "hash" first in a valid envelope
_ENVELOPE_ORDER = ("id", "run_id", "step_id", "parent_id", "timestamp_ns", "kind", "payload", "prev_hash", "hash")


@dataclass(slots=True)
class Problem:
    """A finding of one line, before it knows its file and position."""

    code: str
    message: str
    expected: str | None = None
    actual: str | None = None
    severity: str = ERROR


@dataclass(slots=True)
class LineResult:
    """What ``analyze_line`` learned from one line."""

    event: dict | None  # the parsed object when it is a usable envelope
    stored_hash: str | None  # the line's own "hash" when it is 64 lowercase hex
    problems: list[Problem]
    parsed: bool = True  # False: not one JSON object (malformed, torn, too long)


# --- one line ------------------------------------------------------------


class _DuplicateKey(ValueError):
    pass


def _pairs_no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _exact_int(text: str) -> int:
    value = int(text)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"integer {text[:40]} is outside the signed 64-bit range")
    return value


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def parse_exact(body: bytes) -> object:
    """Parse with exact integers, rejecting duplicate keys and 64-bit overflow.

    Used when orjson's fast result cannot be trusted to be exact: foreign
    formatting (possible duplicate keys) or number tokens orjson rounds.
    """
    return json.loads(
        body.decode("utf-8"),
        object_pairs_hook=_pairs_no_duplicates,
        parse_int=_exact_int,
        parse_constant=_reject_constant,
    )


def _describe_json_error(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 200 else text[:200] + "..."


#: The deepest nesting of arrays and objects a line may have (the line's own object is level 1).
#: SPEC §2.1 sets no bound; without one, Python's recursion limit would decide past ~900 levels, and
#: how much of it is left depends on the caller's stack -- one process would accept a line another
#: calls malformed. Deeper is MALFORMED_LINE everywhere. (orjson alone reads 1024 and writes 254.)
MAX_NESTING = 512
_ORJSON_WRITES = 254  # a line with fewer '[' and '{' bytes than this cannot be nested deeper


def nesting_depth(value: object) -> int:
    """How deeply arrays and objects nest in a parsed value (a scalar is 0), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if type(item) is dict:
            children = item.values()
        elif type(item) is list:
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children if type(child) in (dict, list))
    return deepest


def too_deep(body: bytes, obj: object) -> bool:
    """Whether a parsed line nests deeper than ``MAX_NESTING`` (cheap unless it might)."""
    if body.count(b"[") + body.count(b"{") <= _ORJSON_WRITES:
        return False
    return nesting_depth(obj) > MAX_NESTING


def _too_deep_problem() -> Problem:
    return Problem("MALFORMED_LINE", f"nested deeper than {MAX_NESTING} levels of arrays and objects")


def parse_object(body: bytes) -> tuple[dict, bytes, bool] | LineResult:
    """SPEC §2.1 parse rules, shared by both dialects: exactly one JSON object,
    no duplicate key, exact 64-bit integers.

    Returns ``(object, orjson's sorted dump, fast)`` where ``fast`` means the
    line is byte-identical to that dump and the dump is already JCS; or the
    failing ``LineResult``.
    """
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        reason = "blank line" if not body.strip() else _describe_json_error(exc)
        return LineResult(None, None, [Problem("MALFORMED_LINE", f"not valid JSON: {reason}")], parsed=False)
    if type(obj) is not dict:
        kind = {list: "an array", str: "a string"}.get(type(obj), "a bare value")
        return LineResult(None, None, [Problem("MALFORMED_LINE", f"line is {kind}, not a JSON object")], parsed=False)
    try:
        dumped = orjson.dumps(obj, option=_SORT)
    except orjson.JSONEncodeError:  # nested deeper than orjson writes (it reads deeper): exact path
        if too_deep(body, obj):
            return LineResult(None, None, [_too_deep_problem()], parsed=False)
        dumped = b""
    fast = dumped == body and orjson_is_jcs(dumped)
    if not fast:
        # Foreign formatting or a number orjson rounds: re-read exactly.
        try:
            obj = parse_exact(body)
        except _DuplicateKey as exc:
            return LineResult(
                None, None, [Problem("DUPLICATE_KEY", f"duplicate key {str(exc)!r} in an object")], parsed=False
            )
        except (ValueError, RecursionError) as exc:
            return LineResult(
                None, None, [Problem("MALFORMED_LINE", f"not valid JSON: {_describe_json_error(exc)}")], parsed=False
            )
    return obj, dumped, fast


def hash_without_hash_key(obj: dict, fast: bool) -> str | Problem:
    """SPEC §2.4: SHA-256 hex of the canonical bytes of ``obj`` minus its ``hash`` key."""
    unhashed = {k: v for k, v in obj.items() if k != "hash"}
    try:
        canonical = canonical_bytes(unhashed) if fast else jcs_exact(unhashed)
    except CanonicalizationError as exc:
        return Problem("MALFORMED_LINE", str(exc))
    except RecursionError:
        return Problem("MALFORMED_LINE", "nesting too deep to canonicalize")
    return hashlib.sha256(canonical).hexdigest()


def analyze_line(body: bytes, schema_version: int = LATEST_SCHEMA_VERSION, *, fast: bool = True) -> LineResult:
    """Check one line (without its line ending). Pure: no file, no neighbours.

    ``fast=False`` skips the fast path (fastpath.py) -- for tests that prove
    both paths agree; the verdict is the same either way.
    """
    if fast:
        proven = fast_analyze(body, schema_version)  # a fully valid event, proven cheaply
        if proven is not None:
            return LineResult(proven[0], proven[1], [])
    parsed = parse_object(body)
    if isinstance(parsed, LineResult):
        return parsed
    obj, dumped, is_canonical = parsed

    problems = _check_envelope(obj)
    stored = obj.get("hash")
    stored_hash = stored if type(stored) is str and HEX64.fullmatch(stored) else None
    if problems:
        return LineResult(None, stored_hash, problems)

    # Canonical bytes without "hash": in the fast path they are the line itself
    # minus its leading "hash" member (sorted keys put it first).
    if is_canonical and dumped.startswith(_HASH_PREFIX) and dumped[73:75] == b'",':
        computed = hashlib.sha256(b"{" + dumped[75:]).hexdigest()
    else:
        computed = hash_without_hash_key(obj, is_canonical)
        if isinstance(computed, Problem):
            return LineResult(None, stored_hash, [computed], parsed=False)
    if computed != stored_hash:
        problems.append(
            Problem(
                "HASH_MISMATCH",
                "stored hash differs from the canonical hash of the event",
                expected=computed,
                actual=stored,
            )
        )

    kind = obj["kind"]
    if kind not in kinds_for_version(schema_version):
        known = kind in KINDS_BY_NAME
        detail = f"added in schema version {KINDS_BY_NAME[kind].version}" if known else "not in the vocabulary"
        problems.append(Problem("UNKNOWN_KIND", f"kind {kind!r} is {detail} (schema version {schema_version})"))
    else:
        for message in VALIDATORS[kind](obj["payload"]):
            problems.append(Problem("PAYLOAD_INVALID", f"{kind}: {message}"))
    return LineResult(obj, stored_hash, problems)


def _check_envelope(obj: dict) -> list[Problem]:
    """SPEC §2.2: exactly nine keys, each of its type."""
    problems: list[Problem] = []
    keys = obj.keys()
    if keys != ENVELOPE_KEYS:
        missing = sorted(ENVELOPE_KEYS - keys)
        extra = sorted(keys - ENVELOPE_KEYS)
        if missing:
            problems.append(Problem("ENVELOPE_ERROR", f"missing key(s): {', '.join(missing)}"))
        if extra:
            problems.append(Problem("ENVELOPE_ERROR", f"extra key(s) not covered by the schema: {', '.join(extra)}"))
    for name in ("id", "run_id"):
        value = obj.get(name)
        if name in obj and not (type(value) is str and HEX32.fullmatch(value)):
            problems.append(
                Problem("ENVELOPE_ERROR", f"{name} must be 32 lowercase hex characters", actual=_short(value))
            )
    for name in ("step_id", "parent_id"):
        value = obj.get(name)
        if name in obj and value is not None and not (type(value) is str and HEX32.fullmatch(value)):
            problems.append(
                Problem("ENVELOPE_ERROR", f"{name} must be 32 lowercase hex characters or null", actual=_short(value))
            )
    if "timestamp_ns" in obj:
        ts = obj["timestamp_ns"]
        if type(ts) is not int or not 0 <= ts < MAX_TIMESTAMP_NS:
            problems.append(
                Problem("ENVELOPE_ERROR", "timestamp_ns must be an integer in [0, 2^63)", actual=_short(ts))
            )
    if "kind" in obj and type(obj["kind"]) is not str:
        problems.append(Problem("ENVELOPE_ERROR", "kind must be a string", actual=_short(obj["kind"])))
    if "payload" in obj and type(obj["payload"]) is not dict:
        problems.append(Problem("ENVELOPE_ERROR", "payload must be an object", actual=_short(obj["payload"])))
    for name in ("prev_hash", "hash"):
        value = obj.get(name)
        if name in obj and not (type(value) is str and HEX64.fullmatch(value)):
            problems.append(
                Problem("ENVELOPE_ERROR", f"{name} must be 64 lowercase hex characters", actual=_short(value))
            )
    return problems


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# --- across lines --------------------------------------------------------


def _zeroed_u64(n: int) -> memoryview:
    """``n`` zeroed uint64 slots in their own anonymous mapping.

    Freed with ``munmap`` when dropped, so the tables that grow one after
    another never leave holes in the C heap (an ``array`` of the same size
    did: verifying a 1 GB log peaked ~25 MB higher), and untouched pages cost
    no memory.
    """
    return memoryview(mmap.mmap(-1, 8 * n)).cast("Q")


class _IdSet:
    """Exact set of event ids (32 lowercase hex) in bounded memory.

    The first ``SMALL`` ids live in a Python set (fast, ~100 bytes per id).
    Past that they move to ``PARTS`` open-addressing tables of two flat
    uint64 arrays (16 bytes per slot). Each part grows by 1.5x on its own, so
    there is never a whole-table doubling spike: about 25-35 bytes per id,
    which keeps a multi-gigabyte log inside a fixed memory budget.
    """

    SMALL = 1 << 18
    PARTS = 64
    _START = 1 << 12

    def __init__(self) -> None:
        self._small: set[str] | None = set()
        self._parts: list[list] = []
        self._zero = False

    def add(self, hex_id: str) -> bool:
        """Add; False when the id was already present."""
        small = self._small
        if small is not None:
            if hex_id in small:
                return False
            small.add(hex_id)
            if len(small) >= self.SMALL:
                self._spill()
            return True
        return self._add_compact(hex_id)

    def _spill(self) -> None:
        small, self._small = self._small, None
        self._parts = [[_zeroed_u64(self._START), _zeroed_u64(self._START), self._START, 0] for _ in range(self.PARTS)]
        for hex_id in small or ():
            self._add_compact(hex_id)

    def _add_compact(self, hex_id: str) -> bool:
        value = int(hex_id, 16)
        if value == 0:  # zero marks an empty slot: the all-zero id is tracked apart
            seen, self._zero = self._zero, True
            return not seen
        hi, lo = value >> 64, value & 0xFFFFFFFFFFFFFFFF
        part = self._parts[lo & (self.PARTS - 1)]
        if part[3] * 4 >= part[2] * 3:
            self._grow(part)
        return self._insert(part, hi, lo)

    @staticmethod
    def _insert(part: list, hi: int, lo: int) -> bool:
        his, los, size = part[0], part[1], part[2]
        i = ((lo >> 6) ^ hi) % size
        while his[i] or los[i]:
            if his[i] == hi and los[i] == lo:
                return False
            i += 1
            if i == size:
                i = 0
        his[i] = hi
        los[i] = lo
        part[3] += 1
        return True

    def _grow(self, part: list) -> None:
        old_his, old_los = part[0], part[1]
        size = part[2] * 3 // 2
        part[:] = [_zeroed_u64(size), _zeroed_u64(size), size, 0]
        for hi, lo in zip(old_his, old_los):
            if hi or lo:
                self._insert(part, hi, lo)


@dataclass
class ChainState:
    """Checks that span lines, fed one ``LineResult`` at a time in file order."""

    path: str
    require_closed: bool = False
    expected_prev: str | None = GENESIS_HASH
    run_id: str | None = None
    events: int = 0
    head: str | None = None
    first_ts: int | None = None
    last_ts: int | None = None
    prev_ts: int | None = None
    handles: HandleTracker = field(default_factory=HandleTracker)
    findings: list[Finding] = field(default_factory=list)
    max_findings: int | None = None  # keep at most this many; count the rest
    suppressed: int = 0
    first_integrity_failure: int | None = None  # line number
    _suppressed_codes: set = field(default_factory=set)
    _ids: _IdSet = field(default_factory=_IdSet)
    _seen_first_line: bool = False
    _last_event_line: int | None = None

    def add(self, finding: Finding) -> None:
        if self.max_findings is not None and len(self.findings) >= self.max_findings:
            self.suppressed += 1
            self._suppressed_codes.add(finding.exit_code)
        else:
            self.findings.append(finding)
        if (
            finding.severity == ERROR
            and finding.exit_code == ExitCode.TAMPERED
            and self.first_integrity_failure is None
        ):
            # Trust ends at the last event a clean successor confirms. An event's own
            # hash only shows the line was hashed; that it was not edited with its
            # hash recomputed is shown by the next line linking to it as a valid
            # event. So a failure on the line right after an event takes that event
            # too: it may be the forged one (a CHAIN_BREAK at k+1 after k was rehashed).
            line = finding.line
            if line is not None and self._last_event_line is not None and self._last_event_line == line - 1:
                line = self._last_event_line
            self.first_integrity_failure = line

    def feed(self, result: LineResult, line: int, offset: int) -> None:
        event = result.event
        if (
            event is not None
            and not result.problems
            and event["prev_hash"] == self.expected_prev
            and event["run_id"] == self.run_id
            and self.prev_ts is not None
            and event["timestamp_ns"] >= self.prev_ts
        ):
            # The common case, same outcome as the general path below: a clean
            # event that links on, same run, clock not going back.
            if not self._ids.add(event["id"]):
                self.add(
                    error(
                        "DUPLICATE_ID",
                        f"event id {event['id']} already appears earlier in this file",
                        event_id=event["id"],
                        path=self.path,
                        line=line,
                        offset=offset,
                    )
                )
            ts = self.prev_ts = event["timestamp_ns"]
            if ts > self.last_ts:  # type: ignore[operator]
                self.last_ts = ts
            self.events += 1
            self.expected_prev = self.head = result.stored_hash
            self._last_event_line = line
            self.handles.feed(event, line, offset)
            return
        where = {"path": self.path, "line": line, "offset": offset}
        event_id = event["id"] if event is not None else None
        for p in result.problems:
            self.add(
                Finding(p.code, p.severity, p.message, event_id=event_id, expected=p.expected, actual=p.actual, **where)
            )
        first_line = not self._seen_first_line
        self._seen_first_line = True
        if event is None:
            # Re-anchor on the line's own hash when it has one; otherwise the
            # next event's linkage cannot be judged (its break is this line's).
            self.expected_prev = result.stored_hash
            return

        prev = event["prev_hash"]
        if self.expected_prev is not None and prev != self.expected_prev:
            if first_line:
                self.add(
                    error(
                        "MISSING_GENESIS",
                        "first event's prev_hash is not the genesis hash (64 zeros)",
                        event_id=event_id,
                        expected=GENESIS_HASH,
                        actual=prev,
                        **where,
                    )
                )
            else:
                self.add(
                    error(
                        "CHAIN_BREAK",
                        "prev_hash does not equal the previous event's hash",
                        event_id=event_id,
                        expected=self.expected_prev,
                        actual=prev,
                        **where,
                    )
                )
        self.expected_prev = result.stored_hash  # re-anchor on this line's own hash

        if self.run_id is None:
            self.run_id = event["run_id"]
        elif event["run_id"] != self.run_id:
            self.add(
                error(
                    "FOREIGN_RUN_ID",
                    "run_id differs from the log's run_id",
                    event_id=event_id,
                    expected=self.run_id,
                    actual=event["run_id"],
                    **where,
                )
            )
        if not self._ids.add(event_id):
            self.add(
                error(
                    "DUPLICATE_ID",
                    f"event id {event_id} already appears earlier in this file",
                    event_id=event_id,
                    **where,
                )
            )

        ts = event["timestamp_ns"]
        if self.prev_ts is not None and ts < self.prev_ts:
            self.add(
                warning(
                    "CLOCK_REGRESSION",
                    "timestamp goes backwards",
                    event_id=event_id,
                    expected=f">= {self.prev_ts}",
                    actual=str(ts),
                    **where,
                )
            )
        self.prev_ts = ts
        self.first_ts = ts if self.first_ts is None else min(self.first_ts, ts)
        self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)
        self.events += 1
        self.head = result.stored_hash
        self._last_event_line = line
        self.handles.feed(event, line, offset)

    @property
    def exit_code(self) -> ExitCode:
        """SPEC §3 over every finding, including those past ``max_findings``."""
        return lowest_nonzero([exit_code_for(self.findings), *self._suppressed_codes])

    def finish(self) -> None:
        """End-of-file checks: run directory, open handles, repaired closes."""
        if self.events == 0:
            if not self.findings:
                self.add(
                    warning("EMPTY_LOG", "log holds no event", path=self.path)
                    if not self.require_closed
                    else error("EMPTY_LOG", "log holds no event", path=self.path)
                )
            return
        p = Path(os.path.abspath(self.path))  # "events.jsonl" alone still has a directory
        if p.name == "events.jsonl" and self.run_id is not None and p.parent.name != self.run_id:
            self.add(
                warning(
                    "RUN_DIR_MISMATCH",
                    f"directory name {p.parent.name!r} differs from run_id {self.run_id}",
                    path=self.path,
                    expected=self.run_id,
                    actual=p.parent.name,
                )
            )
        for handle in self.handles.open_handles():
            if handle.kind == "run.started":
                continue
            self.add(
                warning(
                    "OPEN_HANDLE",
                    f"{handle.kind} was never closed",
                    path=self.path,
                    line=handle.line,
                    offset=handle.offset,
                    event_id=handle.event_id,
                )
            )
        if not self.handles.run_is_closed:
            start = self.handles.run_started
            make = error if self.require_closed else warning
            self.add(
                make(
                    "OPEN_RUN",
                    "run was never closed (no run.completed or run.aborted)",
                    path=self.path,
                    line=start.line if start else None,
                    offset=start.offset if start else None,
                    event_id=start.event_id if start else None,
                )
            )
        if self.handles.synthesized_closes:
            self.add(
                warning(
                    "REPAIRED",
                    f"log holds {self.handles.synthesized_closes} synthesized close(s) written by repair",
                    path=self.path,
                )
            )


# --- one file ------------------------------------------------------------


@dataclass(slots=True)
class LogEvent:
    """One usable event of a log, where it is, and whether it is still trusted."""

    line: int  # 1-based
    offset: int  # byte offset of the line's first byte
    raw: bytes  # the line's bytes exactly as in the file, line ending included
    event: dict
    trusted: bool  # no integrity failure at or before this line

    @property
    def kind(self) -> str:
        return self.event["kind"]

    @property
    def payload(self) -> dict:
        return self.event["payload"]


def split_line_ending(raw: bytes) -> tuple[bytes, bool]:
    """The line's body without ``\\n`` / ``\\r\\n``, and whether it had ``\\n``."""
    if raw.endswith(b"\n"):
        body = raw[:-1]
        if body.endswith(b"\r"):
            body = body[:-1]
        return body, True
    return raw, False


class ChainReader:
    """Stream one log: iterate it for ``LogEvent``s, then read ``findings``.

    >>> reader = ChainReader("evals/runs/abc/events.jsonl")
    >>> for ev in reader: ...
    >>> reader.exit_code
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        schema_version: int = LATEST_SCHEMA_VERSION,
        require_closed: bool = False,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_findings: int | None = None,
        display_path: str | None = None,
        dialect: str = "auto",
    ) -> None:
        kinds_for_version(schema_version)  # validates the number
        self.path = Path(path)
        self.display_path = display_path or str(path)
        self.schema_version = schema_version
        self.max_line_bytes = max_line_bytes
        #: "ract" or "raxol" (SPEC §8): "auto" is resolved here, from the file's first record
        self.dialect = resolve_dialect(dialect, self.path, max_line_bytes)
        state_type = ChainState
        if self.dialect == "raxol":
            from .raxol import JournalState as state_type
        self.state = state_type(self.display_path, require_closed=require_closed, max_findings=max_findings)
        self.done = False
        #: optional callback, called with the byte offset reached every few MB while reading
        self.progress: Callable[[int], None] | None = None

    # convenient views of the state
    @property
    def findings(self) -> list[Finding]:
        return self.state.findings

    @property
    def handles(self) -> HandleTracker:
        return self.state.handles

    @property
    def exit_code(self) -> ExitCode:
        return self.state.exit_code

    @property
    def broken_at(self) -> int | None:
        """Line of the first integrity failure (exit-1 finding), if any."""
        return self.state.first_integrity_failure

    def __iter__(self) -> Iterator[LogEvent]:
        return self._events(emit=True)

    def _events(self, emit: bool) -> Iterator[LogEvent]:
        try:
            handle = open_log(self.path)
        except LogIOError as exc:
            self.state.add(error("IO_ERROR", exc.message, path=self.display_path))
            self.done = True
            return
        with handle:
            yield from self._read(handle, emit)
        self.state.finish()
        self.done = True

    def read_all(self) -> list[Finding]:
        """Read to the end, discarding events; return the findings."""
        for _ in self._events(emit=False):
            pass
        return self.findings

    def _release(self, make_event: type, pending: tuple) -> LogEvent:
        line_no, start, raw, event = pending
        failure = self.state.first_integrity_failure
        return make_event(line_no, start, raw, event, failure is None or failure > line_no)

    def _read(self, f: BinaryIO, emit: bool = True) -> Iterator[LogEvent]:
        state = self.state
        limit = self.max_line_bytes
        schema_version = self.schema_version
        analyze, make_event = analyze_line, LogEvent
        if self.dialect == "raxol":  # same framing, the journal's per-line analyzer and record type
            from .raxol import JournalEvent, analyze_record

            analyze, make_event = analyze_record, JournalEvent
        framer = LineFramer(f, limit)
        progress, next_report = self.progress, _PROGRESS_EVERY
        # Each event is handed out one line late: whether event k can be trusted
        # depends on event k+1 (a CHAIN_BREAK there makes k's own hash unconfirmed).
        pending: tuple | None = None
        for line_no, start, raw in framer:
            result = line_result(raw, schema_version, limit, analyze)
            state.feed(result, line_no, start)
            if raw is None:
                continue
            if emit and result.event is not None:
                if pending is not None:
                    yield self._release(make_event, pending)
                pending = (line_no, start, raw, result.event)
            if progress is not None and start >= next_report:
                progress(start)
                next_report = start + _PROGRESS_EVERY
        if pending is not None:
            yield self._release(make_event, pending)
        if framer.read_error is not None:
            state.add(
                error(
                    "IO_ERROR",
                    framer.read_error,
                    path=self.display_path,
                    line=framer.error_line,
                    offset=framer.error_offset,
                )
            )


_PROGRESS_EVERY = 4 << 20  # bytes between two calls of ChainReader.progress


def line_result(
    raw: bytes | None,
    schema_version: int,
    max_line_bytes: int,
    analyze: Callable[[bytes, int], LineResult] = analyze_line,
) -> LineResult:
    """The verdict on one framed line, exactly as ``ChainReader`` reaches it.

    ``raw`` is the line with its ending as ``LineFramer`` yields it (``None``:
    longer than ``max_line_bytes``). Shared with the parallel verifier
    (``parallel.py``), so a chunked read judges every line the same way.
    """
    if raw is None:
        return LineResult(
            None,
            None,
            [Problem("LINE_TOO_LONG", f"line is longer than --max-line-bytes ({max_line_bytes} bytes)")],
            parsed=False,
        )
    if analyze is analyze_line and raw[-2:-1] != b"\r" and raw[-1:] == b"\n":
        proven = fast_analyze(raw[:-1], schema_version)  # the common case, inlined: a clean "\n" line
        if proven is not None:
            return LineResult(proven[0], proven[1], [])
    body, has_newline = split_line_ending(raw)
    result = analyze(body, schema_version)
    if not has_newline:
        if not result.parsed and result.problems[0].code in ("MALFORMED_LINE", "DUPLICATE_KEY"):
            # A last line cut short by a killed writer.
            result = LineResult(None, None, [_torn_tail_problem(raw)], parsed=False)
        else:
            result.problems.append(
                Problem("MISSING_FINAL_NEWLINE", "last event lacks its final newline", severity="warning")
            )
    return result


def resolve_dialect(dialect: str, path: str | os.PathLike[str], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> str:
    """``"ract"`` or ``"raxol"``: ``"auto"`` detects from the file's first record (SPEC §8)."""
    if dialect == "auto":
        from .raxol import detect_file_dialect

        return detect_file_dialect(path, max_line_bytes=max_line_bytes)
    if dialect not in ("ract", "raxol"):
        raise UsageError(f"dialect must be ract, raxol or auto, not {dialect!r}")
    return dialect


def _torn_tail_problem(raw: bytes) -> Problem:
    return Problem("TORN_TAIL", f"last line ({len(raw)} bytes, no newline) does not parse: torn tail")


class LineFramer:
    """SPEC §2.1 framing, shared by ``ChainReader`` and ``iter_lines_unverified``.

    Iterate it for ``(line_no, offset, raw)``: ``raw`` is the line's exact bytes
    with its ending, or ``None`` for a line longer than ``max_line_bytes`` (its
    rest is skipped, never held in memory). A read failure ends the iteration
    and is left in ``read_error`` / ``error_line`` / ``error_offset``.

    ``needles``: when given, a complete line (one ending in ``\n``) holding
    none of these byte strings is counted but not yielded -- the raw-bytes
    prefilter of ``grep --no-verify``. A last line without ``\n`` and an
    over-long line are always yielded.
    """

    def __init__(
        self, f: BinaryIO, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, needles: tuple[bytes, ...] | None = None
    ) -> None:
        self.f = f
        self.max_line_bytes = max_line_bytes
        self.needles = needles
        self.read_error: str | None = None
        self.error_line: int | None = None
        self.error_offset: int | None = None

    def __iter__(self) -> Iterator[tuple[int, int, bytes | None]]:
        if self.needles is not None and not any(b"\n" in n or not n for n in self.needles):
            yield from _frame_prefiltered(self)
            return
        f, limit, needles = self.f, self.max_line_bytes, self.needles
        readline = f.readline
        size = limit + 2  # +2: room for "\r\n" after a maximal body
        offset = 0
        line_no = 0
        single = needles[0] if needles is not None and len(needles) == 1 else None
        while True:
            try:
                raw = readline(size)
            except OSError as exc:
                self.read_error = f"read failed: {exc.strerror or exc}"
                self.error_line, self.error_offset = line_no + 1, offset
                return
            if not raw:
                return
            line_no += 1
            start = offset
            offset += len(raw)
            if needles is not None and raw[-1:] == b"\n":
                if single is not None:
                    if single not in raw:
                        continue
                elif not any(n in raw for n in needles):
                    continue
            if len(raw) >= size - 1 and len(split_line_ending(raw)[0]) > limit:
                # over the limit: a body of limit+1 bytes then "\n" fits the read but not the limit
                if len(raw) == size and raw[-1:] != b"\n":
                    try:
                        offset += self._skip_rest_of_line(f)
                    except OSError as exc:
                        self.read_error = f"read failed: {exc.strerror or exc}"
                        self.error_line, self.error_offset = line_no, start
                        return
                yield line_no, start, None
                continue
            yield line_no, start, raw
            if raw[-1:] != b"\n":
                # End of file mid-line: the file ends here, as read now. A writer may be
                # appending the rest this instant; reading on would split its line in two.
                return

    @staticmethod
    def _skip_rest_of_line(f: BinaryIO) -> int:
        skipped = 0
        while True:
            chunk = f.readline(1 << 16)  # small chunks: the skipped line is never held
            skipped += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                return skipped


PREFILTER_BLOCK_BYTES = 1 << 20


def _frame_prefiltered(
    framer: LineFramer, block_size: int = PREFILTER_BLOCK_BYTES
) -> Iterator[tuple[int, int, bytes | None]]:
    """``LineFramer`` with needles, block by block: lines holding no needle are never looked at one by one.

    Reads ``block_size`` bytes at a time and jumps from needle to needle
    (``bytes.find``), counting the newlines it skips, so line numbers and
    offsets are those of the line-by-line framing. Memory: one block plus the
    line being assembled, which is cut off (as over-long) past
    ``max_line_bytes``. Yields a line holding a needle, the last line when it
    lacks ``\n``, and over-long lines (``None``).
    """
    f, limit, needles = framer.f, framer.max_line_bytes, framer.needles
    assert needles is not None
    buf = b""  # always starts at a line start (file offset ``base``)
    base = 0
    line_no = 0  # lines before ``buf``
    skipping = False  # inside an over-long line already reported: drop bytes up to its newline
    parts: list[bytes] = []  # blocks of a long line without a newline yet (joined once: linear, not quadratic)
    held = 0  # bytes in ``buf`` + ``parts``
    while True:
        try:
            chunk = f.read(block_size)
        except OSError as exc:
            framer.read_error = f"read failed: {exc.strerror or exc}"
            framer.error_line, framer.error_offset = line_no + 1, base + held
            return
        eof = not chunk
        if not skipping and not eof and buf and b"\n" not in chunk:
            parts.append(chunk)  # still inside the line begun in ``buf``
            held += len(chunk)
            if held <= limit + 2:
                continue
            line_no += 1  # no newline yet and already over the limit
            yield line_no, base, None
            base += held
            buf, parts, held, skipping = b"", [], 0, True
            continue
        if parts:
            buf = b"".join([buf, *parts])
            parts = []
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                base += len(chunk)
                if chunk:
                    continue
                return
            base += nl + 1
            chunk = chunk[nl + 1 :]
            skipping = False
        buf = buf + chunk if buf else chunk
        held = len(buf)
        end = buf.rfind(b"\n") + 1  # [0, end) holds complete lines only
        pos = 0
        hits = [buf.find(n, 0, end) for n in needles]
        while True:
            hit = min((h for h in hits if h >= 0), default=-1)
            if hit < 0:
                break
            start = buf.rfind(b"\n", pos, hit) + 1 or pos  # 0: no newline between pos and the hit
            stop = buf.find(b"\n", hit) + 1
            line_no += buf.count(b"\n", pos, start) + 1
            raw = buf[start:stop]
            too_long = len(raw) > limit + 1 and len(split_line_ending(raw)[0]) > limit
            yield line_no, base + start, None if too_long else raw
            pos = stop
            hits = [h if h >= pos or h < 0 else buf.find(n, pos, end) for h, n in zip(hits, needles)]
        line_no += buf.count(b"\n", pos, end)
        base += end
        buf = buf[end:]
        held = len(buf)
        if eof:  # what is left is a last line without its newline
            if buf:
                yield line_no + 1, base, None if len(buf) > limit else buf
            return
        if held > limit + 2:  # no newline yet and already over the limit
            line_no += 1
            yield line_no, base, None
            base += held
            buf, held = b"", 0
            skipping = True


@dataclass(slots=True)
class RawLine:
    """One line read by ``iter_lines_unverified``: framed and parsed, never checked."""

    line: int  # 1-based
    offset: int  # byte offset of the line's first byte
    raw: bytes  # the line's bytes exactly as in the file, line ending included (b"" when not read)
    event: dict | None  # the parsed JSON object; None when the line is not one
    problem: Problem | None  # why ``event`` is None: MALFORMED_LINE, LINE_TOO_LONG, TORN_TAIL or IO_ERROR


def iter_lines_unverified(
    path: str | os.PathLike[str],
    *,
    prefilter: tuple[bytes, ...] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawLine]:
    """The fast, unchecked reading mode (``grep --no-verify``).

    Same framing as ``ChainReader`` (``LineFramer``: line splitting, CRLF,
    ``max_line_bytes``, torn tail, read errors) but no hash, chain, envelope or
    schema check: each yielded line is only parsed as a JSON object. With
    ``prefilter``, complete lines holding none of those byte strings are
    skipped before parsing. Raises ``LogIOError`` when the file cannot be
    opened; a later read failure is yielded as an ``IO_ERROR`` line, last.
    """
    handle = open_log(Path(path))
    with handle:
        framer = LineFramer(handle, max_line_bytes, prefilter)
        loads = orjson.loads
        for line_no, start, raw in framer:
            if raw is None:
                yield RawLine(
                    line_no,
                    start,
                    b"",
                    None,
                    Problem("LINE_TOO_LONG", f"line is longer than --max-line-bytes ({max_line_bytes} bytes)"),
                )
                continue
            body, has_newline = split_line_ending(raw)
            try:
                obj = loads(body)
            except orjson.JSONDecodeError as exc:
                obj = exc
            deep = type(obj) is dict and too_deep(body, obj)  # the same bound as the chain reader
            if type(obj) is dict and not deep:
                yield RawLine(line_no, start, raw, obj, None)
            elif not has_newline:
                yield RawLine(line_no, start, raw, None, _torn_tail_problem(raw))
            elif deep:
                yield RawLine(line_no, start, raw, None, _too_deep_problem())
            else:
                reason = (
                    "blank line"
                    if not body.strip()
                    else (_describe_json_error(obj) if isinstance(obj, Exception) else "not a JSON object")
                )
                yield RawLine(line_no, start, raw, None, Problem("MALFORMED_LINE", f"not valid JSON: {reason}"))
        if framer.read_error is not None:
            yield RawLine(
                framer.error_line or 1, framer.error_offset or 0, b"", None, Problem("IO_ERROR", framer.read_error)
            )


import errno as _errno  # noqa: E402 - used only by open_log's file type below
import io as _io  # noqa: E402


class _NonBlockingFileIO(_io.FileIO):
    """A ``FileIO`` opened with ``O_NONBLOCK`` whose read that would block raises.

    Regular files ignore ``O_NONBLOCK``. A "regular" file that blocks in
    ``read`` (``/proc/kmsg`` with an empty kernel log, some FUSE or network
    files) then fails at once with ``BlockingIOError`` (EAGAIN), an ``OSError``
    the framing reports as an ``IO_ERROR`` finding, instead of hanging. A plain
    non-blocking ``FileIO`` returns ``None`` there, which ``BufferedReader``
    turns into ``b""``: a silent, false end of file.
    """

    def readinto(self, buffer):  # type: ignore[override]
        n = super().readinto(buffer)
        if n is None:
            raise self._would_block()
        return n

    def read(self, size: int | None = -1) -> bytes:  # type: ignore[override]
        if size is None or size < 0:
            return self.readall()
        data = super().read(size)
        if data is None:
            raise self._would_block()
        return data

    def readall(self) -> bytes:
        parts = []
        while data := self.read(1 << 20):
            parts.append(data)
        return b"".join(parts)

    @staticmethod
    def _would_block() -> BlockingIOError:
        return BlockingIOError(_errno.EAGAIN, "the read would block (a kernel, FUSE or network file?)")


def open_log(path: Path) -> BinaryIO:
    """Open a log for reading, turning every OS failure into ``LogIOError``.

    Refuses anything that is not a regular file (directories, FIFOs, devices)
    before opening it, so a FIFO can never block the reader, and again after
    opening it (the path may have been replaced in between). The file is opened
    with ``O_NONBLOCK``: a regular file whose read would block fails with
    ``BlockingIOError`` on read (an ``IO_ERROR`` finding) instead of hanging.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise LogIOError(f"no such file: {path}") from None
    except OSError as exc:
        raise LogIOError(f"cannot stat {path}: {exc.strerror or exc}") from None
    import stat as _stat

    if _stat.S_ISDIR(st.st_mode):
        raise LogIOError(f"{path} is a directory, not a log")
    if not _stat.S_ISREG(st.st_mode):
        raise LogIOError(f"{path} is not a regular file (FIFO, device or socket)")
    try:
        raw = _NonBlockingFileIO(path, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NONBLOCK))
    except OSError as exc:
        raise LogIOError(f"cannot open {path}: {exc.strerror or exc}") from None
    try:
        regular = _stat.S_ISREG(os.fstat(raw.fileno()).st_mode)
    except OSError as exc:
        raw.close()
        raise LogIOError(f"cannot stat {path}: {exc.strerror or exc}") from None
    if not regular:  # replaced (by a FIFO, a device...) between the stat and the open
        raw.close()
        raise LogIOError(f"{path} is not a regular file (FIFO, device or socket)")
    return _io.BufferedReader(raw, buffer_size=1 << 20)


class EventReader:
    """The source document's API: load a log or raise at the first integrity failure."""

    @staticmethod
    def load(path: str | os.PathLike[str], *, schema_version: int = LATEST_SCHEMA_VERSION) -> list[dict]:
        reader = ChainReader(path, schema_version=schema_version)
        events: list[dict] = []
        for ev in reader:
            if reader.broken_at is not None:
                break
            events.append(ev.event)
        failure = next(
            (f for f in reader.findings if f.severity == ERROR and f.exit_code in (ExitCode.TAMPERED, ExitCode.IO)),
            None,
        )
        if failure is not None:
            if failure.code == "IO_ERROR":  # not a broken chain: the file could not be read
                raise LogIOError(f"{failure.path}: {failure.message}")
            raise ChainBrokenError(
                f"{failure.path}:{failure.line}: {failure.code} {failure.message}",
                path=failure.path,
                line=failure.line,
                offset=failure.offset,
                expected=failure.expected,
                actual=failure.actual,
                code=failure.code,
                exit_code=failure.exit_code,
            )
        return events
