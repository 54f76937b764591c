"""Predicates: each predicate's latest verdict, and the gate check when the run completes.

Bounded memory never changes a verdict: predicates are keyed by their **full**
id (a long or non-string id by the SHA-256 of it, never by a prefix), and the
set of predicates whose latest verdict is required-and-failing is kept exactly,
however many there are (it holds only those, so it costs what it must). Only
the display table ``latest`` is capped, at ``MAX_KEYS`` predicates in order of
first evaluation; ``omitted_evaluations`` (present only when it is not 0) says
how many evaluations that table does not show.
"""

from __future__ import annotations

import heapq

from ract_cli.format.json_types import Event, JSONObject, Payload
from ract_cli.project.flags import Flags
from ract_cli.project.grouping import FoldRules, group
from ract_cli.project.handler import Handler
from ract_cli.project.options import MAX_KEYS, MAX_TEXT
from ract_cli.project.values import label, text
from ract_cli.read.handles import OpenHandle

#: a predicate's identity: a short string id itself, else the SHA-256 of the full id (never equal to a str)
Identity = str | bytes


def identity(value: object) -> tuple[Identity, str]:
    """A predicate id's exact key and its display name.

    A string of at most ``MAX_TEXT`` characters is its own key and name. A
    longer string is keyed by the SHA-256 of all of it and shown as its first
    ``MAX_TEXT`` characters, ``…`` and ``#`` plus 12 hex digits of that hash, so
    two ids sharing a prefix stay two predicates; any other JSON value
    (absent, a number...) is keyed by the hash of its JSON text and shown as
    ``label`` names it (``(none)``, ``(invalid int)``). When two predicates
    would show the same name, the later one in sort order gets ``#`` and 12 hex
    digits of the hash of its key.
    """
    if type(value) is str:
        if len(value) <= MAX_TEXT:
            return value, value
        digest = _sha256(b"s" + value.encode("utf-8", "surrogatepass"))
        return digest, f"{label(value)}#{digest.hex()[:12]}"
    import json  # (here: only a non-string id is written, and json costs ~2 ms of start-up)

    raw = json.dumps(value, sort_keys=True, ensure_ascii=True, default=repr).encode("ascii")
    return _sha256(b"j" + raw), label(value)


def _sha256(data: bytes) -> bytes:
    import hashlib  # (here: only a long or non-string id is hashed, and hashlib costs ~4 ms of start-up)

    return hashlib.sha256(data).digest()


def _key_bytes(key: Identity) -> bytes:
    return key if isinstance(key, bytes) else key.encode("utf-8", "surrogatepass")


def _key_hex(key: Identity) -> str:
    return _sha256(_key_bytes(key)).hex()[:12]


class PredicateTable:
    """``predicate.evaluated``: the latest verdict per predicate id; ``GATE_INCONSISTENT`` at completion."""

    def __init__(self, flags: Flags) -> None:
        self.flags = flags
        self.latest: dict[Identity, tuple[str, JSONObject]] = {}  # display table: first MAX_KEYS ids
        self.failing: dict[Identity, str] = {}  # every id whose latest verdict is required and failed, exactly
        self.evaluations = 0
        # A log may hold any number of run.completed, each after new verdicts: copying or sorting the failing
        # set at each made a crafted log quadratic. The failing set as of the last completion is the current
        # one with the changes since undone (``_undo``: each changed key's name then, None if it was not
        # failing); the names a flag's message shows come from a heap (``_names``).
        self.completed = False
        self._undo: dict[Identity, str | None] = {}
        self._names = _NameHeap()

    def handlers(self) -> dict[str, Handler]:
        return {"predicate.evaluated": self._evaluated}

    def fold_rules(self) -> FoldRules:
        """The native fold's groups: one per predicate id (a string, or absent...), its last verdict kept."""
        return {
            "predicate.evaluated": (
                group("predicate_id", last=True),
                lambda g: self.evaluate(g.last_payload, g.last_line, g.n),
            )
        }

    def _evaluated(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self.evaluate(payload, line, 1)

    def evaluate(self, payload: Payload, line: int, n: int) -> None:
        """``n`` evaluations of one predicate, ``payload`` (on ``line``) the last: what only the last decides."""
        self.evaluations += n
        key, name = identity(payload.get("predicate_id"))
        required, ok = payload.get("required"), payload.get("ok")
        failing, before = self.failing, self.failing.get(key)
        if self.completed and key not in self._undo:
            self._undo[key] = before
        if required is True and ok is False:
            if before != name:
                failing[key] = name
                self._names.push(name, key, failing)
        elif before is not None:
            del failing[key]
        shown = self.latest.get(key)
        if shown is None and len(self.latest) >= MAX_KEYS:
            return  # not displayed; counted in omitted_evaluations, and the verdict is kept above
        self.latest[key] = (
            name,
            {
                "kind": text(payload.get("kind")),
                "required": required if type(required) is bool else None,
                "ok": ok if type(ok) is bool else None,
                "reason": text(payload.get("reason")),
                "line": line,
                "evaluations": (shown[1]["evaluations"] if shown else 0) + n,
            },
        )

    def failing_required(self) -> list[str]:
        """Every predicate whose latest verdict is required and failed (display names, sorted)."""
        return sorted(self.failing.values())

    def at_completion(self, event: Event, line: int) -> None:
        """A ``run.completed`` written by the run: flag it when a required predicate's latest verdict failed."""
        self.completed = True
        self._undo.clear()
        count = len(self.failing)
        if not count:
            return
        if self.flags.full:
            self.flags.count += 1  # counted, not kept: its message is never built
            return
        first = self._names.smallest(10, self.failing)
        shown = ", ".join(first) + (f" and {count - 10} more" if count > 10 else "")
        self.flags.flag("GATE_INCONSISTENT", line, event, f"run completed while required predicate(s) failed: {shown}")

    @property
    def failing_at_completion(self) -> list[str] | None:
        """The failing predicates' names (sorted) as of the last real ``run.completed``; None before one."""
        if not self.completed:
            return None
        then = dict(self.failing)
        for key, name in self._undo.items():
            if name is None:
                then.pop(key, None)
            else:
                then[key] = name
        return sorted(then.values())

    def section(self) -> JSONObject:
        """The report's ``predicates`` block."""
        latest: JSONObject = {}
        for key, (name, row) in sorted(self.latest.items(), key=lambda kv: (kv[1][0], _key_bytes(kv[0]))):
            latest[name if name not in latest else f"{name}#{_key_hex(key)}"] = dict(row)
        at_completion = self.failing_at_completion
        block: JSONObject = {
            "evaluations": self.evaluations,
            "latest": latest,
            "failing_required": self.failing_required(),
            "failing_required_at_completion": at_completion,
            "gate_inconsistent": bool(at_completion),
        }
        omitted = self.evaluations - sum(row["evaluations"] for _, row in self.latest.values())
        if omitted:
            block["omitted_evaluations"] = omitted
        return block


class _NameHeap:
    """The failing predicates' names, smallest first: a heap of (name, key bytes, key), stale entries and all.

    An entry is stale once its key no longer fails under that name; ``smallest`` drops the stale ones it
    meets, and the heap is rebuilt from the failing set when it holds twice as many entries: amortized
    O(log n) per change, however the verdicts and completions interleave.
    """

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[tuple[str, bytes, Identity]] = []

    def push(self, name: str, key: Identity, failing: dict[Identity, str]) -> None:
        if len(self.entries) > 2 * len(failing) + 16:
            self.entries = [(n, _key_bytes(k), k) for k, n in failing.items()]
            heapq.heapify(self.entries)
        else:
            heapq.heappush(self.entries, (name, _key_bytes(key), key))

    def smallest(self, n: int, failing: dict[Identity, str]) -> list[str]:
        """The ``n`` smallest names of ``failing`` (by name, then key), in order."""
        entries, seen = self.entries, set()
        kept: list[tuple[str, bytes, Identity]] = []
        while entries and len(kept) < n:
            entry = heapq.heappop(entries)
            if entry[1] not in seen and failing.get(entry[2]) == entry[0]:
                seen.add(entry[1])
                kept.append(entry)
        for entry in kept:
            heapq.heappush(entries, entry)
        return [name for name, _, _ in kept]
