"""Equality, hashing and repr of frozen dataclasses, written once for all of them.

``@dataclass(frozen=True)`` writes and compiles the source of six methods for each
class (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``,
``__delattr__``), ~70 us each when the module is imported: the policy model's fifteen
classes took 6.6 ms of every `jobdef validate` of a Job. A class declared
``@dataclass(frozen=True, slots=True, repr=False, eq=False)`` on :class:`Record`
compiles only the first and the last two, and compares, hashes and shows itself as
the generated methods would: the same fields (``compare``, ``hash``, ``repr``), in
the same order, with the same results.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from dataclasses import Field, fields
from operator import attrgetter
from typing import Any

Values = Callable[[Any], tuple[Any, ...]]


def _values(cls: type, chosen: Callable[[Field[Any]], bool]) -> Values:
    """The tuple of the values of ``cls``'s chosen fields, read from an instance."""
    names = [f.name for f in fields(cls) if chosen(f)]
    if len(names) >= 2:
        return attrgetter(*names)  # a tuple when given two names or more
    return lambda record: tuple(getattr(record, name) for name in names)


# Per class: the values it compares, those it hashes, and the names of the fields it shows.
_READERS: dict[type, tuple[Values, Values, tuple[str, ...]]] = {}


def _readers(cls: type) -> tuple[Values, Values, tuple[str, ...]]:
    readers = _READERS.get(cls)
    if readers is None:
        readers = _READERS[cls] = (
            _values(cls, lambda f: f.compare),
            _values(cls, lambda f: f.compare if f.hash is None else f.hash),
            tuple(f.name for f in fields(cls) if f.repr),
        )
    return readers


class Record:
    """Base of a frozen dataclass declared with ``repr=False, eq=False``: equal to an
    instance of its own class with equal fields, hashed by them, shown as
    ``Name(field=value, ...)``."""

    __slots__ = ()

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _readers(type(self))[2])
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            compared = _readers(type(self))[0]
            return compared(self) == compared(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(_readers(type(self))[1](self))
