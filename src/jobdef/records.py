"""Frozen dataclasses whose methods are written once for all of them.

``@dataclass(frozen=True)`` writes and compiles the source of six methods for each
class (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``,
``__delattr__``), ~70-100 us each when the module is imported: the two dozen classes a
`jobdef validate` of a Job imports took ~9 ms of every run. A class declared
:func:`record` (a subclass of :class:`Record`) compiles only its ``__init__``, which sets
each field through its slot (faster than the generated ``object.__setattr__``); it
compares, hashes and shows itself as the generated methods would (the same fields,
``compare``, ``hash``, ``repr``, in the same order, with the same results), pickles and
copies, and refuses any assignment or deletion with
:class:`dataclasses.FrozenInstanceError`, as a frozen dataclass does.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError, dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")

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


@dataclass_transform(frozen_default=True, eq_default=True, field_specifiers=(field,))
def record(cls: type[T]) -> type[T]:
    """Make ``cls``, a subclass of :class:`Record`, a frozen dataclass with slots.

    Type checkers see ``@dataclass(frozen=True)``; at run time the class is declared
    ``@dataclass(init=False, slots=True, repr=False, eq=False)``, given the ``__init__``
    of :func:`_init`, and :class:`Record` gives it the rest.
    """
    if not issubclass(cls, Record):  # its frozen methods are Record's
        raise TypeError(f"@record needs a subclass of Record, not {cls.__qualname__}")
    made = dataclass(init=False, slots=True, repr=False, eq=False)(cls)
    made.__init__ = _init(made)  # type: ignore[method-assign]
    return made


def _init(cls: type) -> Callable[..., None]:
    """An ``__init__`` taking the fields as the generated one does (in order, those with a
    default or a ``default_factory`` optional), setting each through its slot."""
    specs = fields(cls)
    if len(specs) != len(cls.__dataclass_fields__) or any(  # type: ignore[attr-defined]
        spec.kw_only or not spec.init or spec.name == "self" for spec in specs
    ):
        raise TypeError(
            f"@record takes plain fields only (no InitVar, kw_only, init=False, "
            f"nor a field named self); {cls.__qualname__} has others"
        )
    namespace: dict[str, Any] = {"MISSING": MISSING}
    params, body = [], []
    for number, spec in enumerate(specs):
        name = spec.name
        namespace[f"set_{number}"] = getattr(cls, name).__set__
        value = name
        if spec.default is not MISSING:
            namespace[f"default_{number}"] = spec.default
            name += f"=default_{number}"
        elif spec.default_factory is not MISSING:
            namespace[f"factory_{number}"] = spec.default_factory
            value = f"factory_{number}() if {name} is MISSING else {name}"
            name += "=MISSING"
        params.append(name)
        body.append(f"    set_{number}(self, {value})\n")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()\n")
    # The field names are identifiers (the class body declared them), so this is code
    # of the class's own making, as the dataclass module writes it.
    exec(f"def __init__(self, {', '.join(params)}):\n{''.join(body) or '    pass'}", namespace)
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


class Record:
    """Base of the classes :func:`record` declares: equal to an instance of its own class
    with equal fields, hashed by them, shown as ``Name(field=value, ...)``, and frozen."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        # Pickle and copy by the fields, in order, as __init__ takes them.
        cls: type = type(self)
        return cls, tuple(getattr(self, spec.name) for spec in fields(cls))

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
