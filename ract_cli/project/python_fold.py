"""``project`` with the Python core: each kind's fold of one event, a function compiled from its rule.

The Python core's chain mode (``read.python_chain``) hands each event it takes
to the function of its kind (``FoldedProjection.folders``). The functions
gather the groups C's ``_core.Fold`` gathers, by the same rules, and leave the
same kinds to the projector; the same appliers apply them (``Gathered``).

Why compiled: one function reading its rule at every event cost ~1.8 µs an
event, a quarter of what verifying the event costs in Python. Each rule's
function is written out straight (only the fields it groups by, its kind of
sample, a step's pairing), compiled once per process as ``read.fastpath``
compiles each kind's check, and made per projection from that code.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any

from ract_cli.format.json_types import Event
from ract_cli.project.grouping import (
    COUNT,
    GROUP,
    INT_NONNEG,
    INT_POS_SUM,
    NUM_NONNEG,
    STEP_CLOSE,
    STEP_OPEN,
    STOP,
    Gathered,
    Rule,
)
from ract_cli.project.steps import StepTally
from ract_cli.read.chain_mode import FoldGaveUp
from ract_cli.read.handles import CLOSE_KINDS, OpenHandle

#: one kind's fold of one event: (event, its line, the open the tracker paired it with)
Folder = Callable[[Event, int, OpenHandle | None], None]


class _Absent:
    """A key field the payload does not have."""


#: what the compiled code reads besides its arguments
_GLOBALS: dict[str, Any] = {
    "FoldGaveUp": FoldGaveUp,
    "Gathered": Gathered,
    "array": array,
    "ABSENT": _Absent(),
    "KEY_TYPES": frozenset({bool, type(None), _Absent}),  # and str, tested first (a key value C compares)
    "INT64_MAX": 2**63 - 1,
    # samples the groups hold before they are applied: C's bound (FOLD_HELD, 4 MiB of 8-byte samples), so
    # the samples are not held twice (here and in the projector's arrays) past that whatever the log
    "MAX_SAMPLES": (4 << 20) // 8,
}
#: (kind, rule) -> the function that makes its folder for one projection: compiled once per process
_MAKERS: dict[tuple[str, Rule], Callable[..., Folder]] = {}


def make_folder(
    kind: str,
    rule: Rule,
    counts: dict[str, int],
    gathered: dict[tuple[object, ...], Gathered],
    apply: Callable[[], None],
    left: Callable[[Event, int], None],
    steps: StepTally,
    max_groups: int,
    held: list[int],
) -> Folder:
    """The folder of ``kind`` by ``rule``, for one projection.

    ``counts``: the events of each kind not grouped (a group's are added as it is
    applied); ``gathered``: the groups gathering, in the order they began;
    ``apply``: applies and clears them (at ``max_groups``, and before a run's
    close); ``left``: where the kinds left to Python go (``FoldedProjection.left``);
    ``steps``: the projection's, which a step's open or close itemizes and times; ``held``: ``[the
    samples the groups hold]``, which ``apply`` sets to 0.
    """
    maker = _MAKERS.get((kind, rule))
    if maker is None:
        scope: dict[str, Any] = {}
        exec(compile(_source(kind, rule), f"<fold {kind}>", "exec"), _GLOBALS, scope)
        maker = _MAKERS[kind, rule] = scope["make"]
    counts.setdefault(kind, 0)  # (a listed kind counted while left, then regrouped, keeps its count)
    return maker(counts, gathered, apply, left, steps, max_groups, held)


def _source(kind: str, rule: Rule) -> str:
    """The source of ``make(...)``, which returns the folder of ``kind`` by ``rule``. (Every name written
    into it, a kind or a field, comes from the rules, this code's own tables; no log's text is.)"""
    action, keys, value, bit, last, step = rule
    k = repr(kind)
    if action != GROUP:
        body = [f"counts[{k}] += 1"]
        if action != COUNT:  # left to Python: a run's close (STOP) reads the predicates gathered
            body += ["apply()"] * (action == STOP) + ["left(event, line)"]
        return _wrapped(body)
    body = ["payload = event['payload']"]
    if kind in CLOSE_KINDS:
        body += ["if payload.get('synthesized') is True:", "    raise FoldGaveUp('a close that repair wrote')"]
    key = [k]
    for i, field in enumerate(keys):  # a string, true, false, null or absent, as C's keys
        body += [
            f"k{i} = payload.get({field!r}, ABSENT)",
            f"if k{i}.__class__ is not str and k{i}.__class__ not in KEY_TYPES:",
            "    raise FoldGaveUp('a key value the fold does not compare')",
        ]
        key.append(f"k{i}")
    if bit is not None:
        key.append(f"payload.get({bit[0]!r}) == {bit[1]!r}")
    update = ["g.n += 1"]
    if last:
        update += ["g.last_payload = payload", "g.last_line = line"]
    samples = "None"
    if value is not None:
        field, how = value
        body.append(f"s = payload.get({field!r})")
        if how == INT_NONNEG:
            samples = "array('q')"
            update += ["if s.__class__ is int and s >= 0:", *_SAMPLE]
        elif how == INT_POS_SUM:
            update += ["if s.__class__ is int and s > 0:", "    g.total = min(g.total + s, INT64_MAX)"]
        else:
            assert how == NUM_NONNEG
            samples = "array('d')"
            body += [  # (as C keeps it: a -0.0 is 0.0)
                "if s.__class__ is float:",
                "    s = s + 0.0 if s >= 0 else None",
                "elif s.__class__ is int:",
                "    s = float(s) if s >= 0 else None",
                "else:",
                "    s = None",
            ]
            key.append("s is not None")  # (the handler names the tool only then)
            update += ["if s is not None:", *_SAMPLE]
    if step == STEP_CLOSE:
        body.append(f"steps.paired_close({k}, payload, line, event['timestamp_ns'], paired)")
    elif step == STEP_OPEN:
        body += [
            "if len(steps.items) < steps.max_items:",
            "    steps.add_item(event['id'], event.get('step_id'), line)",
        ]
    body += [
        f"key = ({', '.join(key)},)",
        "g = gathered.get(key)",
        "if g is not None:",
        *["    " + u for u in update],
        "else:",
        f"    g = gathered[key] = Gathered({k}, payload, {samples})",
        *["    " + u for u in update],
        "    if len(gathered) >= max_groups:",
        "        apply()",
    ]
    return _wrapped(body)


#: a sample kept (the last of a group's updates: ``apply`` may then apply every group)
_SAMPLE = ["    g.samples.append(s)", "    held[0] += 1", "    if held[0] >= MAX_SAMPLES:", "        apply()"]


def _wrapped(body: list[str]) -> str:
    return "\n".join(
        [
            "def make(counts, gathered, apply, left, steps, max_groups, held):",
            "    def fold(event, line, paired):",
            *["        " + line for line in body],
            "    return fold",
        ]
    )
