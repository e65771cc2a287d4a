"""Text: ``file:line:col: error JD212 message``, the source line and a caret under the column.

Paths are relative to the project root (:attr:`Report.root`) when the sheet is inside it.
"""

from __future__ import annotations

import unicodedata

from jobdef.reporters import Report


def _width(text: str) -> int:
    """Display width: wide (CJK) characters take two columns, tabs one."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def render(report: Report) -> str:
    out: list[str] = []
    for d in report.diagnostics:
        out.append(f"{report.path(d.file)}:{d.line}:{d.column}: {d.severity} {d.code} {d.message}")
        source = report.source_line(d.file, d.line) if d.excerpt else None
        if source is not None:
            number = str(d.line)
            gutter = " " * len(number)
            shown = source.replace("\t", " ")
            out.append(f" {number} | {shown}")
            out.append(f" {gutter} | {' ' * _width(source[: d.column - 1])}^")
        for related in d.related:
            out.append(f"  see also {report.path(related.file)}:{related.line}:{related.column}")
    out.append(report.summary())
    return "\n".join(out) + "\n"
