"""Error classification by the sheet: the most specific listed class wins.

A raised exception is described by the names of the classes in its MRO
(``exception_names``), so the worker can classify an error raised in a child
process without importing anything. Builtins are written bare
(``ConnectionError``), others as dotted paths (``smtplib.SMTPServerDisconnected``),
as sheets write them. A listed name that is an alias (``IOError``,
``socket.timeout``) is resolved to the class it names.
"""

from __future__ import annotations

import builtins
import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from jobdef.policy.model import ErrorAction, ErrorClass, ErrorPolicy


def class_name(cls: type) -> str:
    """The name a sheet uses for ``cls``: bare for builtins, else ``module.QualName``."""
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def class_names(cls: type) -> tuple[str, ...]:
    """The MRO of ``cls`` as sheet names, nearest first."""
    return tuple(class_name(base) for base in cls.__mro__)


def exception_names(exc: BaseException) -> tuple[str, ...]:
    """The MRO of ``exc``'s class as sheet names, nearest first."""
    return class_names(type(exc))


@cache
def canonical(name: str) -> str:
    """The real class behind a listed name, when it can be imported; else the name as written."""
    module, _, attr = name.rpartition(".")
    try:
        found = (
            getattr(importlib.import_module(module), attr) if module else getattr(builtins, attr)
        )
    except (ImportError, AttributeError, ValueError):
        return name
    return class_name(found) if isinstance(found, type) else name


@dataclass(frozen=True, slots=True)
class Classification:
    """What to do with an error and why (the listed class that matched, or the default)."""

    action: ErrorAction
    matched: str | None

    @property
    def reason(self) -> str:
        if self.matched is None:
            return f"not listed in errors.retry or errors.fatal; errors.default is {self.action}"
        where = "errors.retry" if self.action == "retry" else "errors.fatal"
        return f"{self.matched} is listed in {where}"


def classify(policy: ErrorPolicy, names: Sequence[str]) -> Classification:
    """Walk the MRO from the raised class outwards; the first listed class decides."""
    listed: dict[str, tuple[ErrorAction, str]] = {}
    lists: list[tuple[ErrorAction, tuple[ErrorClass, ...]]] = [
        ("retry", policy.retry),
        ("fatal", policy.fatal),
    ]
    for action, classes in lists:
        for error_class in classes:
            listed[canonical(error_class.name)] = (action, error_class.name)
    for name in names:
        if name in listed:
            action, written = listed[name]
            return Classification(action, written)
    return Classification(policy.default, None)
