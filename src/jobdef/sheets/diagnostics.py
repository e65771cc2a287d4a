"""Findings of `jobdef validate`: what is wrong, where, and how bad.

A :class:`Diagnostic` only records; reporters (:mod:`jobdef.reporters`) turn a
list of them into text, JSON, SARIF and so on, and the exit code is decided in
:mod:`jobdef.cli.validate_cmd`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Location:
    """A place in a sheet: 1-based line and column."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding: the rule that fired, where, and a message that says how to fix it.

    ``related`` holds other places the message talks about (the first of two
    duplicated names, the Defaults document a value came from). ``excerpt``
    is False when the source line must not be echoed (it holds a secret).
    """

    file: str
    line: int
    column: int
    severity: Severity
    code: str
    message: str
    rule: str = ""
    related: tuple[Location, ...] = ()
    excerpt: bool = True

    @property
    def location(self) -> Location:
        return Location(self.file, self.line, self.column)

    def sort_key(self) -> tuple[str, int, int]:
        return (self.file, self.line, self.column)


def sort_diagnostics(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """File by file, top to bottom; exact duplicates dropped.

    Findings at the same place keep their order, so the most relevant one
    (as the checker ranked them) stays first.
    """
    return sorted(dict.fromkeys(diagnostics), key=Diagnostic.sort_key)


def count(diagnostics: Iterable[Diagnostic]) -> tuple[int, int]:
    """(errors, warnings)."""
    errors = warnings = 0
    for diagnostic in diagnostics:
        if diagnostic.severity == "error":
            errors += 1
        else:
            warnings += 1
    return errors, warnings
