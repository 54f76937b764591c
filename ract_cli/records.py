"""Plain value classes for the types every command builds as it starts.

``@dataclass`` writes each class's ``__init__``, ``__repr__`` and ``__eq__``
(frozen: also ``__setattr__``, ``__delattr__`` and ``__hash__``) as source
text and compiles it when its module is imported: 0.8-1.2 ms a class, about
a fifth of ``ract trace verify``'s start-up for the twenty classes on the
reading path (issue 14, docs/performance.md). Those classes write their
``__slots__`` and ``__init__`` by hand and take the rest from here, with a
dataclass's meaning: equal when of the same class with equal fields, a
``repr`` of the fields, and a frozen record cannot be assigned to and hashes
by its fields. Classes built later (a command's own) stay dataclasses.
"""

from __future__ import annotations

from reprlib import recursive_repr

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    _R = TypeVar("_R", bound="FrozenRecord")

_FIELDS: dict[type, tuple[str, ...]] = {}


def fields_of(cls: type) -> tuple[str, ...]:
    """The slots of ``cls`` and its bases, base first: a record's fields in ``__init__``'s order. A slot
    named with a leading ``_`` is not a field: state ``__init__`` works out from the fields."""
    names = _FIELDS.get(cls)
    if names is None:
        slots = (n for c in reversed(cls.__mro__) for n in c.__dict__.get("__slots__", ()))
        names = _FIELDS[cls] = tuple(n for n in slots if not n.startswith("_"))
    return names


class Record:
    """A mutable record: equality and ``repr`` from its fields; unhashable, as a mutable dataclass is
    (a class that defines ``__eq__`` and not ``__hash__`` gets ``__hash__ = None``)."""

    __slots__ = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in fields_of(type(self)))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Record)
        return self._values() == other._values()

    @recursive_repr()  # a record that holds itself shows "..." there, as a dataclass's repr does
    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in fields_of(type(self)))
        return f"{type(self).__qualname__}({shown})"


class FrozenRecord(Record):
    """A record that cannot be changed once built: ``__init__`` sets its fields with ``_freeze``."""

    __slots__ = ()

    def _freeze(self, *values: object) -> None:
        """Set the fields, in order (and nothing else: private slots take ``object.__setattr__``)."""
        for name, value in zip(fields_of(type(self)), values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")

    def __hash__(self) -> int:
        return hash(self._values())

    def __reduce__(self) -> tuple[Any, tuple[object, ...]]:
        return type(self), self._values()  # (pickled for worker processes: __init__ takes the fields in order)

    def replace(self: _R, **changes: object) -> _R:
        """A copy with some fields changed (``dataclasses.replace``)."""
        values: dict[str, object] = dict(zip(fields_of(type(self)), self._values(), strict=True))
        values.update(changes)
        return type(self)(**values)
