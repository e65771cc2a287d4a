"""Reporters: turn the findings of one run into text, JSON, GitHub annotations, SARIF or JUnit.

Each format is a module with ``render(report) -> str``; reporters only format,
they never decide the exit code (that is :mod:`jobdef.cli.validate_cmd`).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from jobdef.render.escape import visible
from jobdef.sheets.diagnostics import Diagnostic, count
from jobdef.sheets.files import read_regular, relative_path

FORMATS = ("text", "json", "github", "sarif", "junit")


# Never compared nor printed: without the generated __eq__ and __repr__, each of which
# costs `jobdef validate` start-up time.
@dataclass(repr=False, eq=False)
class Report:
    """The findings of one run, plus what a reporter needs to show them."""

    diagnostics: Sequence[Diagnostic]
    files: Sequence[str]
    strict: bool = False
    # The project root (see jobdef.sheets.files.project_root): paths are shown relative to
    # it, so CI can map them to files of the checkout. None shows them as given.
    root: str | None = None
    # When the run started (UTC) and how long it took, in seconds (JUnit's timestamp, time).
    started: datetime | None = None
    elapsed: float = 0.0
    _lines: dict[str, list[str] | None] = field(default_factory=dict)

    @property
    def counts(self) -> tuple[int, int]:
        return count(self.diagnostics)

    def fails(self, diagnostic: Diagnostic) -> bool:
        """Whether this finding fails the run (warnings do under --strict)."""
        return diagnostic.severity == "error" or self.strict

    def path(self, file: str) -> str:
        """``file`` as reports show it: relative to :attr:`root` with ``/`` separators when
        it is inside the root, else as given."""
        relative = self.relative(file)
        return file if relative is None else relative

    def location(self, file: str, line: int, column: int) -> str:
        """``file:line:col`` as text reports print it: the path with its control, bidi and
        undecodable characters shown escaped, so a file name cannot drive the terminal."""
        return f"{visible(self.path(file))}:{line}:{column}"

    def finding(self, d: Diagnostic) -> str:
        """``file:line:col: severity code message``, every part shown escaped."""
        where = self.location(d.file, d.line, d.column)
        return f"{where}: {d.severity} {d.code} {visible(d.message)}"

    def relative(self, file: str) -> str | None:
        """``file`` relative to :attr:`root` (``/`` separators), or None when it is outside
        (or no root is set)."""
        if self.root is None:
            return None
        return relative_path(file, self.root)

    def source_line(self, file: str, line: int) -> str | None:
        """Line ``line`` of ``file`` as written, or None when it cannot be shown."""
        if file not in self._lines:
            try:
                text = read_regular(file).decode("utf-8-sig")  # never a symlink or FIFO
                self._lines[file] = text.splitlines()
            except (OSError, UnicodeDecodeError):
                self._lines[file] = None
        lines = self._lines[file]
        if lines is None or not 1 <= line <= len(lines):
            return None
        return lines[line - 1]

    def summary(self) -> str:
        errors, warnings = self.counts
        files = len(self.files)
        checked = f"{files} file{'s' if files != 1 else ''} checked"
        if not errors and not warnings:
            return f"{checked}, no findings"
        parts = []
        if errors:
            parts.append(f"{errors} error{'s' if errors != 1 else ''}")
        if warnings:
            parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
        return f"{checked}: {', '.join(parts)}"


def render(format: str, report: Report) -> str:
    """Render ``report`` in ``format`` (one of :data:`FORMATS`)."""
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}")
    module = importlib.import_module(f"jobdef.reporters.{format}_report")
    text: str = module.render(report)
    return text
