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

import hashlib
import json

from ract_cli.format.json_types import Event, JSONObject, Payload
from ract_cli.project.flags import Flags
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
        digest = hashlib.sha256(b"s" + value.encode("utf-8", "surrogatepass")).digest()
        return digest, f"{label(value)}#{digest.hex()[:12]}"
    raw = json.dumps(value, sort_keys=True, ensure_ascii=True, default=repr).encode("ascii")
    return hashlib.sha256(b"j" + raw).digest(), label(value)


def _key_bytes(key: Identity) -> bytes:
    return key if isinstance(key, bytes) else key.encode("utf-8", "surrogatepass")


def _key_hex(key: Identity) -> str:
    return hashlib.sha256(_key_bytes(key)).hexdigest()[:12]


class PredicateTable:
    """``predicate.evaluated``: the latest verdict per predicate id; ``GATE_INCONSISTENT`` at completion."""

    def __init__(self, flags: Flags) -> None:
        self.flags = flags
        self.latest: dict[Identity, tuple[str, JSONObject]] = {}  # display table: first MAX_KEYS ids
        self.failing: dict[Identity, str] = {}  # every id whose latest verdict is required and failed, exactly
        self.evaluations = 0
        self.failing_at_completion: list[str] | None = None

    def handlers(self) -> dict[str, Handler]:
        return {"predicate.evaluated": self._evaluated}

    def _evaluated(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self.evaluations += 1
        key, name = identity(payload.get("predicate_id"))
        required, ok = payload.get("required"), payload.get("ok")
        if required is True and ok is False:
            self.failing[key] = name
        else:
            self.failing.pop(key, None)
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
                "evaluations": (shown[1]["evaluations"] if shown else 0) + 1,
            },
        )

    def failing_required(self) -> list[str]:
        """Every predicate whose latest verdict is required and failed (display names, sorted)."""
        return sorted(self.failing.values())

    def at_completion(self, event: Event, line: int) -> None:
        """A ``run.completed`` written by the run: flag it when a required predicate's latest verdict failed."""
        failing = self.failing_required()
        self.failing_at_completion = failing
        if failing:
            shown = ", ".join(failing[:10]) + (f" and {len(failing) - 10} more" if len(failing) > 10 else "")
            self.flags.flag(
                "GATE_INCONSISTENT", line, event, f"run completed while required predicate(s) failed: {shown}"
            )

    def section(self) -> JSONObject:
        """The report's ``predicates`` block."""
        latest: JSONObject = {}
        for key, (name, row) in sorted(self.latest.items(), key=lambda kv: (kv[1][0], _key_bytes(kv[0]))):
            latest[name if name not in latest else f"{name}#{_key_hex(key)}"] = dict(row)
        block: JSONObject = {
            "evaluations": self.evaluations,
            "latest": latest,
            "failing_required": self.failing_required(),
            "failing_required_at_completion": self.failing_at_completion,
            "gate_inconsistent": bool(self.failing_at_completion),
        }
        omitted = self.evaluations - sum(row["evaluations"] for _, row in self.latest.values())
        if omitted:
            block["omitted_evaluations"] = omitted
        return block
