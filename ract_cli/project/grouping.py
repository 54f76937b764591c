"""What the native core's fold hands the projection: groups of events, and the rules that make them.

With the native core, ``project`` folds the common kinds in C (``_core.Fold``,
driven by ``project.fold``): the events of one kind whose payload agrees on a
few fields are counted together, with what the report keeps of each. A part
of the report (tools, providers...) names, per kind, the rule that groups its
events and the function that applies one group, beside the handler that
folds one event; both end in the same code, the handler with a count of 1.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

from ract_cli.format.json_types import Payload
from ract_cli.project.tallies import Items
from ract_cli.read import json_text
from ract_cli.records import Record

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import Any

# a kind's action in ``_core.Fold`` (its C enum)
COUNT, GROUP, LEFT, STOP = 1, 2, 3, 4
# what a group keeps of a payload value
INT_NONNEG, NUM_NONNEG, INT_POS_SUM = 1, 2, 3
# a step's open or close
STEP_OPEN, STEP_CLOSE = 1, 2

#: one kind's rule, as ``_core.Fold`` takes it: (action, keys, value, bit, last, step)
Rule = tuple[int, tuple[str, ...], tuple[str, int] | None, tuple[str, str] | None, bool, int]


def group(
    *keys: str,
    value: tuple[str, int] | None = None,
    bit: tuple[str, str] | None = None,
    last: bool = False,
    step: int = 0,
) -> Rule:
    """Group a kind's events by the payload values of ``keys`` (and whether ``bit[0]`` is ``bit[1]``).

    ``value``: (field, INT_NONNEG | NUM_NONNEG | INT_POS_SUM), what each group keeps
    of that field; ``last``: keep the group's last line; ``step``: a step's open or close.
    """
    return (GROUP, keys, value, bit, last, step)


def counted() -> Rule:
    """A kind the report only counts."""
    return (COUNT, (), None, None, False, 0)


def left(stop: bool = False) -> Rule:
    """A kind left to Python, handed out whole; ``stop``: C applies its groups first (its handler reads them)."""
    return (STOP if stop else LEFT, (), None, None, False, 0)


def listed(*keys: str) -> Rule:
    """A kind whose handler adds an item to capped lists (``tallies.Items``): left to Python until they are
    full, then grouped by ``keys`` (``Fold.regroup``), as its handler would then only count it."""
    return (LEFT, keys, None, None, False, 0)


class Group(Record):
    """One group of ``Fold.take()``: ``Group(*t)`` of each tuple it gives."""

    __slots__ = ("kind", "n", "first", "last", "last_line", "ints", "nums", "total")

    def __init__(
        self, kind: str, n: int, first: bytes, last: bytes | None, last_line: int, ints: bytes, nums: bytes, total: int
    ) -> None:
        self.kind = kind
        self.n = n  # the events in it
        self.first = first  # the group's first line
        self.last = last  # its last line (a rule with ``last``)
        self.last_line = last_line
        self.ints = ints  # int64 samples, native order (``array('q').frombytes``)
        self.nums = nums  # double samples (``array('d').frombytes``)
        self.total = total  # a saturating sum

    @property
    def payload(self) -> Payload:
        """The payload of the group's first line (its key fields are every line's)."""
        payload: Payload = json_text.loads(self.first)["payload"]
        return payload

    @property
    def last_payload(self) -> Payload:
        assert self.last is not None
        payload: Payload = json_text.loads(self.last)["payload"]
        return payload


class Gathered:
    """A group gathered in Python (the Python core's fold, ``project.fold``): what ``Group`` says, kept as it goes."""

    __slots__ = ("kind", "last_line", "last_payload", "n", "payload", "samples", "total")

    def __init__(self, kind: str, payload: Payload, samples: array[int] | array[float] | None) -> None:
        self.kind = kind
        self.payload = payload  # the first event's (its key fields are every event's)
        self.last_payload: Payload = payload
        self.last_line = 0
        self.n = 0
        self.samples = samples
        self.total = 0

    @property
    def ints(self) -> bytes:
        return self.samples.tobytes() if self.samples is not None and self.samples.typecode == "q" else b""

    @property
    def nums(self) -> bytes:
        return self.samples.tobytes() if self.samples is not None and self.samples.typecode == "d" else b""


#: a part's fold of one kind: its rule, and what applies one group (a ``Group`` from C, or ``Gathered``)
Applier = Callable[["Any"], None]
FoldRules = dict[str, tuple[Rule, Applier]]
#: a ``listed`` kind's fold: its rule, what applies a group of its events past the caps, and whether its
#: lists are full (from then on it is grouped)
Listed = tuple[Rule, Applier, Callable[[], bool]]
ListedRules = dict[str, Listed]


def past_caps(rule: Rule, *lists: Items, then: Applier | None = None) -> Listed:
    """A ``listed`` kind's fold: grouped by ``rule`` once every one of ``lists`` (the capped lists its
    handler adds an item to) is full; a group is then only counted in each, and ``then`` applies what
    else the handler keeps of an event (a reap's reason...)."""

    def apply(g: Any) -> None:
        for items in lists:
            items.counted(g.n)
        if then is not None:
            then(g)

    def full() -> bool:  # (asked at every such event until true: a loop, not a generator, is half the cost)
        for items in lists:
            if not items.full:
                return False
        return True

    return rule, apply, full
