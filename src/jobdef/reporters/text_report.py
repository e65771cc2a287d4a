"""Text: ``file:line:col: error JD212 message``, the source line and a caret under the column.

Paths are relative to the project root (:attr:`Report.root`) when the sheet is inside it.
"""

from __future__ import annotations

from jobdef.render.escape import display_width, visible
from jobdef.reporters import Report


def render(report: Report) -> str:
    out: list[str] = []
    for d in report.diagnostics:
        out.append(report.finding(d))
        source = report.source_line(d.file, d.line) if d.excerpt else None
        if source is not None:
            number = str(d.line)
            gutter = " " * len(number)
            spaced = source.replace("\t", " ")
            caret = " " * display_width(visible(spaced[: d.column - 1]))
            out.append(f" {number} | {visible(spaced)}")
            out.append(f" {gutter} | {caret}^")
        for related in d.related:
            out.append(f"  see also {report.location(related.file, related.line, related.column)}")
    out.append(report.summary())
    return "\n".join(out) + "\n"
