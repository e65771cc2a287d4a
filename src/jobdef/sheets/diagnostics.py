"""Findings of `jobdef validate`: what is wrong, where, and how bad.

A :class:`Diagnostic` only records; reporters (:mod:`jobdef.reporters`) turn a
list of them into text, JSON, SARIF and so on, and the exit code is decided in
:mod:`jobdef.cli.validate_cmd`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Literal

from jobdef.records import Record, record

Severity = Literal["error", "warning"]


@record
class Location(Record):
    """A place in a sheet: 1-based line and column."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@record
class Diagnostic(Record):
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


# Findings of one rule in one file shown in full; past it, one finding says how many more.
MAX_PER_RULE = 50


def sort_diagnostics(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """File by file, top to bottom; exact duplicates dropped, and at most
    :data:`MAX_PER_RULE` findings of one rule in one file.

    Findings at the same place keep their order, so the most relevant one
    (as the checker ranked them) stays first. The findings of a rule past the limit
    become one, at the first of them, that says how many there are: a sheet that names
    20,000 unknown args gets a report its reader can use, not 20,000 lines.
    """
    ordered = sorted(dict.fromkeys(diagnostics), key=Diagnostic.sort_key)
    seen: dict[tuple[str, str], int] = {}
    for d in ordered:
        seen[d.file, d.code] = seen.get((d.file, d.code), 0) + 1
    if all(n <= MAX_PER_RULE for n in seen.values()):
        return ordered
    kept: list[Diagnostic] = []
    shown: dict[tuple[str, str], int] = {}
    for d in ordered:
        key = (d.file, d.code)
        n = shown[key] = shown.get(key, 0) + 1
        if n <= MAX_PER_RULE:
            kept.append(d)
        elif n == MAX_PER_RULE + 1:
            more = seen[key] - MAX_PER_RULE
            message = (
                f"{more:,} more {d.code} findings in this file, from here on, are not shown; "
                "fix the ones above and run again"
            )
            kept.append(replace(d, message=message, related=(), excerpt=False))
    return kept


def count(diagnostics: Iterable[Diagnostic]) -> tuple[int, int]:
    """(errors, warnings)."""
    errors = warnings = 0
    for diagnostic in diagnostics:
        if diagnostic.severity == "error":
            errors += 1
        else:
            warnings += 1
    return errors, warnings
