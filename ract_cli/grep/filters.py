"""The filter of one ``grep`` (SPEC §6): the command-line values as a pure function of one event.

``build_filter`` turns the command-line values (kind globs, run/step ids, a
time range, synthesized or not, ``--where`` expressions) into a
``GrepFilter`` whose ``matches(event)`` is a pure function of one event.
Every malformed value raises ``UsageError`` (exit 2).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Sequence

from ract_cli.errors import UsageError
from ract_cli.format.json_types import Event
from ract_cli.format.kinds import KINDS_BY_NAME, LATEST_SCHEMA_VERSION, kinds_for_version
from ract_cli.format.model import HEX32
from ract_cli.grep.times import format_ns, parse_time
from ract_cli.grep.where import ABSENT, Condition, parse_where
from ract_cli.read.handles import is_synthesized_close
from ract_cli.records import FrozenRecord

__all__ = ["GrepFilter", "build_filter", "unknown_kind_patterns"]

_GLOB_CHARS = "*?["
_PLAIN_KIND = re.compile(r"[A-Za-z0-9_.\-]+")


class GrepFilter(FrozenRecord):
    """Every condition of one search; ``matches`` is AND across options, OR within one."""

    __slots__ = (
        "kinds",
        "runs",
        "steps",
        "since_ns",
        "until_ns",
        "synthesized",
        "where",
        "_exact_kinds",  # (worked out from kinds)
        "_kind_globs",
    )
    kinds: tuple[str, ...]  # exact names or fnmatch globs (case-sensitive)
    runs: frozenset[str]
    steps: frozenset[str]
    since_ns: int | None  # inclusive
    until_ns: int | None  # inclusive
    synthesized: bool | None  # None: either
    where: tuple[Condition, ...]
    _exact_kinds: frozenset[str]
    _kind_globs: tuple[re.Pattern[str], ...]

    def __init__(
        self,
        kinds: tuple[str, ...] = (),
        runs: frozenset[str] = frozenset(),
        steps: frozenset[str] = frozenset(),
        since_ns: int | None = None,
        until_ns: int | None = None,
        synthesized: bool | None = None,
        where: tuple[Condition, ...] = (),
    ) -> None:
        self._freeze(kinds, runs, steps, since_ns, until_ns, synthesized, where)
        exact = frozenset(k for k in kinds if not any(c in k for c in _GLOB_CHARS))
        globs = tuple(re.compile(fnmatch.translate(k)) for k in kinds if any(c in k for c in _GLOB_CHARS))
        object.__setattr__(self, "_exact_kinds", exact)
        object.__setattr__(self, "_kind_globs", globs)

    def kind_ok(self, kind: object) -> bool:
        """Whether ``kind`` passes ``--kind`` (exact names or globs); any kind when none was given."""
        if not self.kinds:
            return True
        if type(kind) is not str:
            return False
        if kind in self._exact_kinds:
            return True
        return any(g.match(kind) for g in self._kind_globs)

    def matches(self, event: Event) -> bool:
        """Whether one parsed event passes every condition (a journal record's kind is its ``type``)."""
        if self.kinds and not self.kind_ok(_kind_of(event)):
            return False
        return self._rest(event)

    def _rest(self, event: Event) -> bool:
        """Every condition but the kind."""
        if self.runs:
            run_id = event.get("run_id")
            if type(run_id) is not str or run_id not in self.runs:
                return False
        if self.steps:
            step_id = event.get("step_id")
            if type(step_id) is not str or step_id not in self.steps:
                return False
        if (self.since_ns is not None or self.until_ns is not None) and not self._in_time(event):
            return False
        if self.synthesized is not None:
            flagged = is_synthesized_close(event.get("kind"), event.get("payload"))
            if flagged is not self.synthesized:
                return False
        for cond in self.where:
            if not cond.test(event):
                return False
        return True

    def _in_time(self, event: Event) -> bool:
        """``timestamp_ns`` within ``since_ns`` .. ``until_ns`` (both inclusive)."""
        ts = event.get("timestamp_ns")
        if type(ts) is not int:
            return False
        if self.since_ns is not None and ts < self.since_ns:
            return False
        return not (self.until_ns is not None and ts > self.until_ns)

    def compile(self) -> Callable[[Event], bool]:
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

            def exact_kind(event: Event) -> bool:
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


def _kind_of(event: Event) -> object:
    """An event's ``kind``; for a Raxol journal record (no ``kind``), its ``type``."""
    kind = event.get("kind", ABSENT)
    return event.get("type") if kind is ABSENT else kind


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
