"""The shape of a rule: a stable id, a severity, a one-line rationale."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from jobdef.records import Record, record
from jobdef.sheets.diagnostics import Diagnostic, Location, Severity

if TYPE_CHECKING:
    from jobdef.policy.model import Origin


@record
class Rule(Record):
    """One check of `jobdef validate`.

    ``id`` (``JD212``) never changes meaning once released; ``name`` is a short
    slug for SARIF and docs; ``rationale`` says in one line why the rule exists.
    """

    id: str
    name: str
    severity: Severity
    rationale: str

    def at(
        self,
        file: str,
        line: int,
        column: int,
        message: str,
        related: Iterable[Location] = (),
    ) -> Diagnostic:
        return Diagnostic(
            file=file,
            line=line,
            column=column,
            severity=self.severity,
            code=self.id,
            message=message,
            rule=self.name,
            related=tuple(related),
        )

    def at_origin(
        self, origin: Origin | Location, message: str, related: Iterable[Location] = ()
    ) -> Diagnostic:
        return self.at(origin.file, origin.line, origin.column, message, related)


def human(seconds: float) -> str:
    """A duration for a message: ``5400`` -> ``1h30m``; an endless one -> ``unbounded``."""
    from jobdef.policy.durations import format_duration

    if math.isinf(seconds) or math.isnan(seconds) or seconds > 1e12:
        return "unbounded"
    return format_duration(seconds)
