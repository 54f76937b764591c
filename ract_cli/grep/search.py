"""``grep``: filter events across logs, verifying the chain while searching (SPEC §6).

Two layers, both data-only (no printing):

* The filter: ``build_filter`` turns the command-line values (kind globs,
  run/step ids, a time range, synthesized or not, ``--where`` expressions)
  into a ``GrepFilter`` whose ``matches(event)`` is a pure function of one
  event. Every malformed value raises ``UsageError`` (exit 2).
* The search: ``grep_paths`` returns a ``GrepSearch``; iterating it streams
  ``Match`` objects as soon as they are trustworthy, and one ``FileResult``
  per file (or per path that gave no file) after its last match. Afterwards
  ``exit_code`` is the command's exit code. ``GrepOptions(jobs=N)`` greps
  files in N worker processes; what comes out, and in which order, is the
  same for every N (``grep_file`` is the one per-file search both use).

Verified mode reads through the one ``ChainReader``. A match is held back
until the *next* event has been verified (or the file ends): an event edited
with its hash recomputed is only caught at the following line, whose
``prev_hash`` no longer links to it, so the edited event itself must not have
been handed out. At the first integrity failure the file is abandoned and the
held match dropped: nothing at or after an unverified point is returned.

``--no-verify`` reads through ``iter_lines_unverified``: the same framing, a
raw-bytes prefilter (only lines holding a literal of the kind pattern are
parsed), no hashing.
"""

from __future__ import annotations

import fnmatch
import json
import os
import pickle
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import orjson

from ract_cli.dialects import ChainReader, discovery_suffixes
from ract_cli.errors import ExitCode, LogIOError, UsageError, lowest_nonzero
from ract_cli.findings import ERROR, Finding, error
from ract_cli.format.kinds import KINDS_BY_NAME, LATEST_SCHEMA_VERSION, kinds_for_version
from ract_cli.format.model import ENVELOPE_KEYS, HEX32
from ract_cli.read.discovery import discover
from ract_cli.read.framing import iter_lines_unverified
from ract_cli.read.line import DEFAULT_MAX_LINE_BYTES

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = [
    "Condition",
    "FileResult",
    "GrepFilter",
    "GrepOptions",
    "GrepSearch",
    "Match",
    "build_filter",
    "format_ns",
    "grep_file",
    "grep_paths",
    "parse_time",
    "parse_where",
]

DEFAULT_MAX_FINDINGS = 100  # per file: keeps memory bounded on a hostile log; the exit code still counts the rest

# --- time -----------------------------------------------------------------

_ISO = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})"
    r"(?:[Tt ](?P<hm>\d{2}:\d{2})(?::(?P<s>\d{2})(?:[.,](?P<frac>\d{1,9}))?)?)?"
    r"(?P<tz>Z|z|[+-]\d{2}:?\d{2})?"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DAY_NS = 86_400 * 10**9


def parse_time(text: str, *, end_of_day: bool = False) -> int:
    """``--since``/``--until`` value -> nanoseconds since the epoch (UTC).

    Accepts an integer (nanoseconds) or ISO-8601: ``2025-11-24``,
    ``2025-11-24T16:00``, ``2025-11-24T16:00:00.123456789Z``, ``...+02:00``.
    Without a zone the time is UTC. A date alone is the day's first
    nanosecond, or its last one when ``end_of_day`` (so ``--until 2025-11-30``
    takes the whole of that day). Raises ``UsageError``.
    """
    value = text.strip()
    if value.isdigit():
        ns = int(value)
        if ns >= 2**63:
            raise UsageError(f"time {text!r} is outside the timestamp range (0 <= t < 2^63 ns)")
        return ns
    m = _ISO.fullmatch(value)
    if m is None:
        raise UsageError(
            f"cannot read time {text!r}: give integer nanoseconds or ISO-8601 such as 2025-11-24T16:00:00Z"
        )
    try:
        base = datetime.fromisoformat(f"{m['date']}T{m['hm'] or '00:00'}:{m['s'] or '00'}")
    except ValueError as exc:
        raise UsageError(f"cannot read time {text!r}: {exc}") from None
    tz = m["tz"]
    if tz and tz not in ("Z", "z"):
        sign = 1 if tz[0] == "+" else -1
        digits = tz[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:])
        if hours > 23 or minutes > 59:
            raise UsageError(f"cannot read time {text!r}: bad UTC offset {tz}")
        base -= sign * timedelta(hours=hours, minutes=minutes)
    delta = base.replace(tzinfo=UTC) - _EPOCH
    ns = (delta.days * 86_400 + delta.seconds) * 10**9
    frac = m["frac"]
    if frac:
        ns += int(frac.ljust(9, "0"))
    if end_of_day and m["hm"] is None:
        ns += _DAY_NS - 1
    if not 0 <= ns < 2**63:
        raise UsageError(f"time {text!r} is outside the timestamp range (1970 .. 2262)")
    return ns


def format_ns(ns: object) -> str:
    """Nanoseconds since the epoch as ISO-8601 UTC with nine fraction digits."""
    if type(ns) is not int or not 0 <= ns < 2**63:
        return "-"
    seconds, rest = divmod(ns, 10**9)
    return (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S") + f".{rest:09d}Z"


# --- --where ----------------------------------------------------------------

_ABSENT = object()
_ROOTS = ENVELOPE_KEYS | {"type"}  # "type": the kind of a Raxol journal record (SPEC §8)
_OPERATORS = ("!=", "!~", ">=", "<=", "==", "=", ">", "<", "~")  # longest first
_OP_CHARS = "=!<>~?"


def _resolve(event: object, path: tuple[str, ...]) -> object:
    value = event
    for segment in path:
        if type(value) is dict:
            value = value.get(segment, _ABSENT)
            if value is _ABSENT:
                return _ABSENT
        elif type(value) is list and segment.isdigit():
            index = int(segment)
            if index >= len(value):
                return _ABSENT
            value = value[index]
        else:
            return _ABSENT
    return value


def _is_number(value: object) -> bool:
    return type(value) is int or type(value) is float


def json_equal(a: object, b: object) -> bool:
    """Equality of JSON values: ``true`` is not ``1``; ``1`` equals ``1.0``; deep for objects and arrays."""
    if _is_number(a) and _is_number(b):
        return a == b
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)  # type: ignore[union-attr,index]
    if type(a) is list:
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))  # type: ignore[arg-type]
    return a == b


def _ordered(a: object, b: object) -> bool:
    """Both numbers (never booleans) or both strings: only then can they be ordered."""
    return (_is_number(a) and _is_number(b)) or (type(a) is str and type(b) is str)


@dataclass(frozen=True)
class Condition:
    """One ``--where`` expression: ``PATH OP VALUE`` or ``PATH?``."""

    text: str
    path: tuple[str, ...]
    op: str  # one of _OPERATORS or "?"
    value: object = None
    regex: re.Pattern[str] | None = None

    def test(self, event: dict) -> bool:
        got = _resolve(event, self.path)
        op = self.op
        if op == "?":
            return got is not _ABSENT
        if op == "!=":
            return got is _ABSENT or not json_equal(got, self.value)
        if op == "!~":
            return not (type(got) is str and self.regex.search(got) is not None)  # type: ignore[union-attr]
        if got is _ABSENT:
            return False
        if op == "=" or op == "==":
            return json_equal(got, self.value)
        if op == "~":
            return type(got) is str and self.regex.search(got) is not None  # type: ignore[union-attr]
        want = self.value
        if not _ordered(got, want):
            return False
        if op == ">":
            return got > want  # type: ignore[operator]
        if op == "<":
            return got < want  # type: ignore[operator]
        if op == ">=":
            return got >= want  # type: ignore[operator]
        return got <= want  # type: ignore[operator]


def _reject_constant(name: str) -> object:
    raise ValueError(name)


def _read_rhs(text: str) -> object:
    """The right-hand side: JSON when it parses as JSON, else the text itself."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return text


def parse_where(expr: str, *, any_root: bool = False) -> Condition:
    """Parse one ``--where`` expression; raise ``UsageError`` when it is not one.

    A path starts at an envelope key (or ``type``, a journal record's kind);
    ``any_root`` lifts that check (Raxol journals carry other top-level keys).
    """
    cut = next((i for i, ch in enumerate(expr) if ch in _OP_CHARS), None)
    if cut is None:
        raise UsageError(f"--where {expr!r}: no operator; use PATH=VALUE, !=, <, <=, >, >=, ~REGEX, !~REGEX or PATH?")
    path_text = expr[:cut].strip()
    rest = expr[cut:]
    if not path_text:
        raise UsageError(f"--where {expr!r}: missing the dotted path before the operator (e.g. payload.ok=false)")
    segments = tuple(path_text.split("."))
    if any(not s for s in segments):
        raise UsageError(f"--where {expr!r}: empty segment in the dotted path {path_text!r}")
    if not any_root and segments[0] not in _ROOTS:
        raise UsageError(
            f"--where {expr!r}: paths start at the event's keys ({', '.join(sorted(ENVELOPE_KEYS))}); "
            f"did you mean payload.{path_text}?"
        )
    if rest.rstrip() == "?":
        return Condition(expr, segments, "?")
    op = next((o for o in _OPERATORS if rest.startswith(o)), None)
    if op is None:
        raise UsageError(
            f"--where {expr!r}: unknown operator at {rest[:3]!r}; use =, !=, <, <=, >, >=, ~REGEX, !~REGEX or PATH?"
        )
    rhs = rest[len(op) :].strip()  # spaces around the operator are ignored ("payload.tool != bash")
    if op in ("~", "!~"):
        try:
            return Condition(expr, segments, op, rhs, re.compile(rhs))
        except re.error as exc:
            raise UsageError(f"--where {expr!r}: bad regular expression {rhs!r}: {exc}") from None
    if rhs == "":
        raise UsageError(f'--where {expr!r}: missing the value after {op!r} (use "" for the empty string)')
    value = _read_rhs(rhs)
    if op in ("<", "<=", ">", ">=") and not (_is_number(value) or type(value) is str):
        raise UsageError(f"--where {expr!r}: {op} compares numbers or strings, not {type(value).__name__}")
    return Condition(expr, segments, op, value)


# --- the filter -------------------------------------------------------------

_GLOB_CHARS = "*?["
_PLAIN_KIND = re.compile(r"[A-Za-z0-9_.\-]+")


@dataclass(frozen=True)
class GrepFilter:
    """Every condition of one search; ``matches`` is AND across options, OR within one."""

    kinds: tuple[str, ...] = ()  # exact names or fnmatch globs (case-sensitive)
    runs: frozenset[str] = frozenset()
    steps: frozenset[str] = frozenset()
    since_ns: int | None = None  # inclusive
    until_ns: int | None = None  # inclusive
    synthesized: bool | None = None  # None: either
    where: tuple[Condition, ...] = ()
    _exact_kinds: frozenset[str] = field(init=False, repr=False, compare=False)
    _kind_globs: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        exact = frozenset(k for k in self.kinds if not any(c in k for c in _GLOB_CHARS))
        globs = tuple(re.compile(fnmatch.translate(k)) for k in self.kinds if any(c in k for c in _GLOB_CHARS))
        object.__setattr__(self, "_exact_kinds", exact)
        object.__setattr__(self, "_kind_globs", globs)

    def _kind_ok(self, kind: object) -> bool:
        if type(kind) is not str:
            return False
        if kind in self._exact_kinds:
            return True
        return any(g.match(kind) for g in self._kind_globs)

    def matches(self, event: dict) -> bool:
        """Whether one parsed event passes every condition (a journal record's kind is its ``type``)."""
        if self.kinds and not self._kind_ok(_kind_of(event)):
            return False
        return self._rest(event)

    def _rest(self, event: dict) -> bool:
        """Every condition but the kind."""
        if self.runs:
            run_id = event.get("run_id")
            if type(run_id) is not str or run_id not in self.runs:
                return False
        if self.steps:
            step_id = event.get("step_id")
            if type(step_id) is not str or step_id not in self.steps:
                return False
        if self.since_ns is not None or self.until_ns is not None:
            ts = event.get("timestamp_ns")
            if type(ts) is not int:
                return False
            if self.since_ns is not None and ts < self.since_ns:
                return False
            if self.until_ns is not None and ts > self.until_ns:
                return False
        if self.synthesized is not None:
            payload = event.get("payload")
            flagged = type(payload) is dict and payload.get("synthesized") is True
            if flagged is not self.synthesized:
                return False
        for cond in self.where:
            if not cond.test(event):
                return False
        return True

    def compile(self) -> Callable[[dict], bool]:
        """``matches`` as one function, specialised for the common single-condition searches."""
        only_kinds = not (
            self.runs
            or self.steps
            or self.since_ns is not None
            or self.until_ns is not None
            or self.synthesized is not None
            or self.where
        )
        if not self.kinds and only_kinds:
            return lambda event: True
        if only_kinds and not self._kind_globs:
            exact = self._exact_kinds

            def exact_kind(event: dict) -> bool:
                kind = event.get("kind")
                if type(kind) is not str:
                    kind = _kind_of(event)
                return type(kind) is str and kind in exact

            return exact_kind
        return self.matches

    def prefilter(self) -> tuple[bytes, ...] | None:
        """Byte strings at least one of which every matching line holds, or None.

        Built from the kind patterns (a glob gives its longest literal run),
        else from the step ids. ``\\u00`` is always added: a JSON string may
        spell a kind or an id with escapes, and such a line must still be
        parsed rather than skipped. The literals are ASCII letters, digits,
        ``.``, ``_`` and ``-``, whose only JSON escapes are ``\\u00XX``.
        """
        needles: list[bytes] = []
        if self.kinds:
            for pattern in self.kinds:
                literal = _kind_literal(pattern)
                if literal is None:
                    return None
                needles.append(literal.encode())
        elif self.steps:
            needles.extend(s.encode() for s in sorted(self.steps))
        else:
            return None
        needles.append(b"\\u00")
        return tuple(dict.fromkeys(needles))


def _kind_of(event: dict) -> object:
    """An event's ``kind``; for a Raxol journal record (no ``kind``), its ``type``."""
    kind = event.get("kind", _ABSENT)
    return event.get("type") if kind is _ABSENT else kind


def _kind_literal(pattern: str) -> str | None:
    """The longest literal run of a kind pattern that any match must contain."""
    if "[" in pattern:
        return None
    pieces = re.split(r"[*?]", pattern)
    best = max(pieces, key=len)
    if not best or not _PLAIN_KIND.fullmatch(best):
        return None
    return best


def _check_id(value: str, option: str) -> str:
    text = value.strip().lower()
    if not HEX32.fullmatch(text):
        raise UsageError(f"{option} {value!r}: an id is 32 hex characters")
    return text


def build_filter(
    *,
    kinds: Sequence[str] = (),
    runs: Sequence[str] = (),
    steps: Sequence[str] = (),
    since: str | int | None = None,
    until: str | int | None = None,
    synthesized: bool | None = None,
    where: Sequence[str] = (),
    any_root: bool = False,
) -> GrepFilter:
    """Validate the command-line filter values; raise ``UsageError`` on any bad one.

    ``any_root``: ``--where`` paths may start at any top-level key (Raxol journals).
    """
    for pattern in kinds:
        if not pattern:
            raise UsageError("--kind: empty pattern (use '*' for every kind)")
    since_ns = since if isinstance(since, int) else (parse_time(since) if since is not None else None)
    until_ns = until if isinstance(until, int) else (parse_time(until, end_of_day=True) if until is not None else None)
    if since_ns is not None and until_ns is not None and since_ns > until_ns:
        raise UsageError(f"--since ({format_ns(since_ns)}) is after --until ({format_ns(until_ns)})")
    return GrepFilter(
        kinds=tuple(dict.fromkeys(kinds)),
        runs=frozenset(_check_id(r, "--run") for r in runs),
        steps=frozenset(_check_id(s, "--step") for s in steps),
        since_ns=since_ns,
        until_ns=until_ns,
        synthesized=synthesized,
        where=tuple(parse_where(w, any_root=any_root) for w in where),
    )


def unknown_kind_patterns(patterns: Iterable[str], schema_version: int = LATEST_SCHEMA_VERSION) -> list[str]:
    """Kind patterns that match no kind of the vocabulary (likely a typo)."""
    vocabulary = kinds_for_version(schema_version) if schema_version else set(KINDS_BY_NAME)
    return [p for p in patterns if not any(fnmatch.fnmatchcase(k, p) for k in vocabulary)]


# --- the search -------------------------------------------------------------


@dataclass(frozen=True)
class GrepOptions:
    verify: bool = True
    schema_version: int = LATEST_SCHEMA_VERSION
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_findings: int | None = DEFAULT_MAX_FINDINGS
    dialect: str = "auto"  # "auto" | "ract" | "raxol" (SPEC §8), as ChainReader takes it
    jobs: int = 1  # worker processes across files (see GrepSearch); output is the same for any value


@dataclass(slots=True)
class Match:
    """One matching event: where it is, its exact bytes, and the parsed event."""

    path: str
    line: int  # 1-based
    offset: int  # byte offset of the line's first byte
    raw: bytes  # the line exactly as in the file, line ending included
    event: dict

    def to_dict(self) -> dict:
        """The documented JSON shape of one match (``--format json``)."""
        return {"path": self.path, "line": self.line, "offset": self.offset, "event": self.event}


@dataclass
class FileResult:
    """What grep learned about one file (or one path that gave no file)."""

    path: str
    matches: int = 0
    exit_code: ExitCode = ExitCode.OK
    findings: list[Finding] = field(default_factory=list)
    suppressed: int = 0  # findings past max_findings: counted in exit_code, not kept
    verified: bool = True  # False under --no-verify
    stopped_at: int | None = None  # line of the integrity failure where grep abandoned the file
    is_file: bool = True  # False: a path that gave no log file at all (discovery finding)

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "matches": self.matches,
            "exit_code": int(self.exit_code),
            "verified": self.verified,
            "stopped_at": self.stopped_at,
            "findings": [f.to_dict() for f in self.findings],
            "suppressed_findings": self.suppressed,
        }


class GrepSearch:
    """A lazy search over files: iterate for ``Match`` and ``FileResult`` items, in file order."""

    def __init__(self, paths: Sequence[str | os.PathLike[str]], flt: GrepFilter, options: GrepOptions) -> None:
        self.filter = flt
        self.options = options
        found = discover(paths, suffixes=discovery_suffixes(options.dialect))
        self.files = [str(p) for p in found.files]
        self._path_findings = list(found.findings)
        self.total_matches = 0
        self.files_with_matches = 0
        self._codes: set[int] = set()
        self._iterator: Iterator | None = None
        self._per_file: Iterator | None = None
        self.done = False

    @property
    def several(self) -> bool:
        """More than one file is searched (counts then carry their path)."""
        return len(self.files) > 1

    @property
    def exit_code(self) -> ExitCode:
        """SPEC §3 over every file's findings; else 0 with a match, 7 without."""
        worst = lowest_nonzero(self._codes)
        if worst:
            return worst
        return ExitCode.OK if self.total_matches else ExitCode.NO_MATCH

    def __iter__(self) -> Iterator[Match | FileResult]:
        self._iterator = self._iterate()
        return self._iterator

    def _iterate(self) -> Iterator[Match | FileResult]:
        for finding in self._path_findings:
            result = FileResult(
                finding.path or "",
                exit_code=finding.exit_code,
                findings=[finding],
                verified=self.options.verify,
                is_file=False,
            )
            self._codes.add(int(result.exit_code))
            yield result
        parallel = self.options.jobs > 1 and len(self.files) > 1
        self._per_file = per_file = self._per_file_parallel() if parallel else self._per_file_here()
        for result, matches in per_file:
            for match in matches:
                result.matches += 1
                self.total_matches += 1
                yield match
            if result.matches:
                self.files_with_matches += 1
            self._codes.add(int(result.exit_code))
            yield result
        self.done = True

    def close(self) -> None:
        """Stop early (a closed pipe, an interrupt): cancel what workers have not started."""
        for generator in (self._iterator, self._per_file):
            if generator is not None:
                generator.close()  # type: ignore[attr-defined]

    def _one_here(self, path: str) -> tuple[FileResult, Iterable[Match]]:
        """One file searched in this process: its result (filled in as its matches are consumed)."""
        result = FileResult(path, verified=self.options.verify)
        return result, grep_file(path, self.filter, self.options, result)

    def _per_file_here(self) -> Iterator[tuple[FileResult, Iterable[Match]]]:
        for path in self.files:  # a generator, as close() expects
            yield self._one_here(path)

    def _per_file_parallel(self) -> Iterator[tuple[FileResult, Iterable[Match]]]:
        """``--jobs N``: files go to N worker processes, results come back in file order.

        A worker greps a whole file and sends back its matches as (line,
        offset, raw bytes) and its ``FileResult``; this process rebuilds each
        ``Match`` (parsing the raw line again: cheaper than pickling the
        event). Memory stays bounded whatever N is: a file's matches are at
        most its size, the files in flight are at most ``2 * jobs`` and at
        most ``IN_FLIGHT_BYTES`` together (always at least one), and a file
        of ``PARALLEL_MIN_BYTES`` or more is grepped here, streaming, in its
        turn.
        """
        from ract_cli.read.parallel import PARALLEL_MIN_BYTES, POOL_FAILURES, file_size, make_pool

        options, flt = self.options, self.filter
        paths = self.files
        sizes = [file_size(p) for p in paths]
        queue = deque(i for i in range(len(paths)) if sizes[i] < PARALLEL_MIN_BYTES)
        pending: dict[int, Future[bytes]] = {}
        limit = 2 * options.jobs
        in_flight = 0  # bytes of the files in ``pending``
        try:
            pool = make_pool(options.jobs)
        except POOL_FAILURES:
            pool = None

        def give_up() -> None:
            """A worker died (OOM killer...): what is not back yet is grepped here, with the same output."""
            nonlocal pool, in_flight
            in_flight = 0
            if pool is not None:
                # wait: the broken pool's threads end before anything else forks (a fork while
                # they hold a lock can deadlock the child)
                pool.shutdown(wait=True, cancel_futures=True)
            pool = None
            pending.clear()

        def refill() -> None:
            nonlocal in_flight
            while (
                pool is not None
                and queue
                and len(pending) < limit
                and (not pending or in_flight + sizes[queue[0]] <= IN_FLIGHT_BYTES)
            ):
                i = queue.popleft()
                try:
                    pending[i] = pool.submit(_grep_file_packed, paths[i], flt, options)
                    in_flight += sizes[i]
                except POOL_FAILURES:
                    give_up()

        try:
            refill()
            for i, path in enumerate(paths):
                future = pending.pop(i, None)
                if future is None:  # a large file, or the pool is gone
                    yield self._one_here(path)
                    continue
                try:
                    packed = future.result()
                except POOL_FAILURES:
                    give_up()
                    yield self._one_here(path)
                    continue
                in_flight -= sizes[i]
                refill()
                found, result = pickle.loads(packed)
                yield result, (Match(path, line, offset, raw, orjson.loads(raw)) for line, offset, raw in found)
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)


#: bytes of log files being grepped by workers at once (their matches wait here, in file order)
IN_FLIGHT_BYTES = 64 << 20


def _grep_file_packed(path: str, flt: GrepFilter, options: GrepOptions) -> bytes:
    """Worker entry point: grep one file; pickle its matches as (line, offset, raw) and its result."""
    result = FileResult(path, verified=options.verify)
    found = [(m.line, m.offset, m.raw) for m in grep_file(path, flt, options, result)]
    return pickle.dumps((found, result), pickle.HIGHEST_PROTOCOL)


def grep_file(path: str, flt: GrepFilter, options: GrepOptions, result: FileResult) -> Iterator[Match]:
    """Stream one file's matches; its verdict lands in ``result`` once the iterator is exhausted."""
    return (_verified if options.verify else _unverified)(path, flt, options, result)


def _verified(path: str, flt: GrepFilter, options: GrepOptions, result: FileResult) -> Iterator[Match]:
    try:
        reader = ChainReader(
            path,
            schema_version=options.schema_version,
            max_line_bytes=options.max_line_bytes,
            max_findings=options.max_findings,
            dialect=options.dialect,
        )
    except LogIOError as exc:
        finding = error("IO_ERROR", exc.message, path=path)
        result.findings, result.exit_code = [finding], finding.exit_code
        return
    matches = flt.compile()
    for ev in reader:
        # ``trusted`` is final: the reader hands event k out only once line k+1
        # has confirmed (or failed to confirm) k's hash, so an edit with its
        # hash recomputed is never printed.
        if not ev.trusted:
            break
        if matches(ev.event):
            yield Match(path, ev.line, ev.offset, ev.raw, ev.event)
    if reader.broken_at is not None:  # also set by a malformed line, which yields no event
        result.stopped_at = reader.broken_at
    result.findings = reader.findings
    result.suppressed = reader.state.suppressed
    result.exit_code = reader.exit_code


def _unverified(path: str, flt: GrepFilter, options: GrepOptions, result: FileResult) -> Iterator[Match]:
    matches = flt.compile()
    cap = options.max_findings
    codes: set[int] = set()
    try:
        for item in iter_lines_unverified(path, prefilter=flt.prefilter(), max_line_bytes=options.max_line_bytes):
            event = item.event
            if event is None:
                p = item.problem
                finding = Finding(
                    p.code,
                    p.severity,
                    p.message,
                    path=path,
                    line=item.line,  # type: ignore[union-attr]
                    offset=item.offset,
                )
                codes.add(int(finding.exit_code))
                if cap is None or len(result.findings) < cap:
                    result.findings.append(finding)
                else:
                    result.suppressed += 1
            elif matches(event):
                yield Match(path, item.line, item.offset, item.raw, event)
    except LogIOError as exc:
        finding = error("IO_ERROR", exc.message, path=path)
        result.findings.append(finding)
        codes.add(int(finding.exit_code))
    result.exit_code = lowest_nonzero(codes)


def grep_paths(
    paths: Sequence[str | os.PathLike[str]], flt: GrepFilter, options: GrepOptions = GrepOptions()
) -> GrepSearch:
    """Search every log under the given files and directories (lazy: iterate the result)."""
    return GrepSearch(paths, flt, options)


def is_error(finding: Finding) -> bool:
    return finding.severity == ERROR
