"""Escaping sheet text for the two grids jobdef writes: Markdown tables and TSV.

Sheet values are data, never markup: a title with ``|`` must not split a table
row, ``<script>`` must not reach an HTML renderer, and ``=HYPERLINK(...)`` must
not become a live formula when a TSV file is pasted into a spreadsheet.
"""

from __future__ import annotations

import html
import re

_NEWLINES = re.compile(r"\r\n|\r|\n")
# Characters with inline meaning in CommonMark/GFM. `_` only matters at a word
# boundary (GFM ignores intraword underscores), so `send_reservation_mail` stays readable.
_MD_SPECIAL = re.compile(r"([\\`*\[\]|~])|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")

# A spreadsheet evaluates a cell that starts with one of these as a formula
# (OWASP "CSV injection"); the full-width forms are included because some
# spreadsheet programs normalise them on input.
FORMULA_PREFIXES = ("=", "+", "-", "@", "＝", "＋", "－", "＠")
# The largest cell Excel accepts; longer text would spill into a new row.
TSV_CELL_LIMIT = 32767
_ELLIPSIS = "…"
# Any character that markdown_cell would change.
_MD_ANY = re.compile(r"[\\`*\[\]|~_<>&\r\n\t]")


def _markdown(text: str) -> str:
    escaped = html.escape(text, quote=False)
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), escaped)


def markdown_cell(text: object) -> str:
    """``text`` as a Markdown table cell: no markup, one line, line breaks as ``<br>``."""
    text = str(text)
    if not _MD_ANY.search(text):
        return text  # the common case: nothing to escape
    lines = _NEWLINES.split(str(text).replace("\t", " "))
    return "<br>".join(_markdown(line) for line in lines)


def markdown_inline(text: object) -> str:
    """``text`` inside a heading or a sentence: no markup, newlines folded to spaces."""
    return _markdown(" ".join(_NEWLINES.split(str(text).replace("\t", " "))))


def tsv_cell(text: object) -> str:
    """``text`` as one spreadsheet cell: one line, no tab, never a formula.

    Tabs and line breaks become spaces, a leading formula character is
    neutralised with an apostrophe (which spreadsheet programs hide and read as
    "this is text"), text longer than a spreadsheet cell holds is cut with ``…``,
    and a cell that starts with ``"`` is written as a quoted cell.
    """
    cell = " ".join(_NEWLINES.split(str(text).replace("\t", " ")))
    if cell.startswith(FORMULA_PREFIXES):
        cell = "'" + cell
    if len(cell) > TSV_CELL_LIMIT:
        cell = cell[: TSV_CELL_LIMIT - 1] + _ELLIPSIS
    if cell.startswith('"'):
        # Spreadsheets read a leading quote as the start of a quoted cell, which
        # could run on past tabs and lines: quote it properly instead.
        cell = '"' + cell.replace('"', '""') + '"'
    return cell


def tsv_row(cells: list[str] | tuple[str, ...]) -> str:
    """One TSV line (without its line ending) from raw cell texts."""
    return "\t".join(tsv_cell(cell) for cell in cells)


# Characters that end or restructure a Mermaid statement or label.
_MERMAID_UNSAFE = re.compile(r"[:;#\"'<>{}\[\]|`\\%&\r\n\t]+")


def mermaid_label(text: object) -> str:
    """``text`` as a Mermaid transition label: statement-breaking characters become spaces."""
    return " ".join(_MERMAID_UNSAFE.sub(" ", str(text)).split())
