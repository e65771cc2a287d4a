"""Text: ``file:line:col: error JD212 message``, the source line and a caret under the column.

Paths are relative to the project root (:attr:`Report.root`) when the sheet is inside it.
"""

from __future__ import annotations

from jobdef.render.escape import display_width, visible
from jobdef.reporters import Report

# Characters of a long source line shown before and after the column a finding points at.
BEFORE, AFTER = 60, 60
_CUT = "..."


def render(report: Report) -> str:
    out: list[str] = []
    for d in report.diagnostics:
        out.append(report.finding(d))
        source = report.source_line(d.file, d.line) if d.excerpt else None
        if source is not None:
            number = str(d.line)
            gutter = " " * len(number)
            shown, before = _around(source.replace("\t", " "), d.column - 1)
            caret = " " * display_width(visible(before))
            out.append(f" {number} | {visible(shown)}")
            out.append(f" {gutter} | {caret}^")
        for related in d.related:
            out.append(f"  see also {report.location(related.file, related.line, related.column)}")
    out.append(report.summary())
    return "\n".join(out) + "\n"


def _around(line: str, column: int) -> tuple[str, str]:
    """The part of ``line`` shown for a finding at ``column`` (0-based), and the part of
    it before the column (where the caret goes): a line of 100,000 characters is cut to
    the characters around the column, so each finding echoes a bounded excerpt."""
    if len(line) <= BEFORE + AFTER:
        return line, line[:column]
    start = max(0, column - BEFORE)
    end = min(len(line), max(column, start) + AFTER)
    head = _CUT if start > 0 else ""
    tail = _CUT if end < len(line) else ""
    return head + line[start:end] + tail, head + line[start:column]
