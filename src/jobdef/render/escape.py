"""Escaping sheet text for the two grids jobdef writes: Markdown tables and TSV.

Sheet values are data, never markup: a title with ``|`` must not split a table
row, ``<script>`` must not reach an HTML renderer, and ``=HYPERLINK(...)`` must
not become a live formula when a TSV file is pasted into a spreadsheet. Nor are
they instructions to a terminal or a text renderer: control characters (ANSI
escapes start with one) and bidirectional overrides are shown escaped
(``\\x1b``, ``\\u202e``), in the grids here and in the CLI's tables
(:func:`visible`, with :func:`display_width` and :func:`clip` for column widths).
"""

from __future__ import annotations

import re
import unicodedata

# The patterns are compiled on first use (re's cache keeps them): the CLI's messages
# and tables, printable ASCII almost always, need none of them (1 ms of every start).
_NEWLINES = r"\r\n|\r|\n"
# Characters with inline meaning in CommonMark/GFM. `_` only matters at a word
# boundary (GFM ignores intraword underscores), so `send_reservation_mail` stays readable.
# (Each branch starts with its character, `_` looking back past itself, so that the
# regular expression engine scans for the characters instead of trying every position.)
_MD_SPECIAL = r"[\\`*\[\]|~]|_(?:(?<![0-9A-Za-z]_)|(?![0-9A-Za-z]))"

# A spreadsheet evaluates a cell that starts with one of these as a formula
# (OWASP "CSV injection"); the full-width forms are included because some
# spreadsheet programs normalise them on input.
FORMULA_PREFIXES = ("=", "+", "-", "@", "＝", "＋", "－", "＠")
# The largest cell Excel accepts; longer text would spill into a new row.
TSV_CELL_LIMIT = 32767
_ELLIPSIS = "…"
# Any character that markdown_cell would change.
_MD_ANY = r"[\\`*\[\]|~_<>&\r\n\t]"


# What a terminal or a renderer would act on instead of showing: C0 controls (ESC starts
# an ANSI sequence), DEL, C1 controls, and the bidirectional controls that reorder
# what follows them (U+202E shows "txt.exe" as "exe.txt"); and lone surrogates, which
# stand for the undecodable bytes of a file name and cannot be written as UTF-8.
_INVISIBLE = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _shown(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    return _SHORT.get(char) or (f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")


def _has_invisible(text: str) -> bool:
    """Whether ``text`` holds a character of :data:`_INVISIBLE` (printable ASCII holds none)."""
    if text.isascii() and text.isprintable():
        return False
    return re.search(_INVISIBLE, text) is not None


def visible(text: object) -> str:
    """``text`` with every control and bidi override character shown escaped
    (``\\x1b``, ``\\u202e``, ``\\n``), so it prints as what it is."""
    text = str(text)
    return re.sub(_INVISIBLE, _shown, text) if _has_invisible(text) else text


def char_width(char: str) -> int:
    """Columns ``char`` takes in a terminal: 2 for East Asian wide and full-width, 0 for a
    combining mark, else 1."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal (see :func:`char_width`)."""
    if text.isascii():
        return len(text)
    return sum(char_width(char) for char in text)


def clip(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` columns, with ``…`` when something was cut."""
    if len(text) <= width and display_width(text) <= width:
        return text
    kept, used = [], 0
    for char in text:
        columns = char_width(char)
        if used + columns > width - 1:
            break
        kept.append(char)
        used += columns
    return "".join(kept) + _ELLIPSIS


def _markdown(text: str) -> str:
    import html  # here: the CLI's tables and messages never need it

    escaped = html.escape(text, quote=False)
    if not re.search(_MD_SPECIAL, escaped):  # e.g. only underscores inside words
        return escaped
    return re.sub(_MD_SPECIAL, r"\\\g<0>", escaped)


def markdown_cell(text: object) -> str:
    """``text`` as a Markdown table cell: no markup, one line, line breaks as ``<br>``."""
    text = str(text)
    if not _has_invisible(text):  # one line (line breaks and tabs are controls)
        # The common case: nothing to escape, or markup characters on one line.
        return _markdown(text) if re.search(_MD_ANY, text) else text
    lines = re.split(_NEWLINES, text.replace("\t", " "))
    return "<br>".join(_markdown(visible(line)) for line in lines)


def markdown_inline(text: object) -> str:
    """``text`` inside a heading or a sentence: no markup, newlines folded to spaces."""
    return _markdown(visible(" ".join(re.split(_NEWLINES, str(text).replace("\t", " ")))))


def tsv_cell(text: object) -> str:
    """``text`` as one spreadsheet cell: one line, no tab, never a formula.

    Tabs and line breaks become spaces, a leading formula character is
    neutralised with an apostrophe (which spreadsheet programs hide and read as
    "this is text"), text longer than a spreadsheet cell holds is cut with ``…``,
    and a cell that starts with ``"`` is written as a quoted cell.
    """
    cell = visible(" ".join(re.split(_NEWLINES, str(text).replace("\t", " "))))
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
_MERMAID_UNSAFE = r"[:;#\"'<>{}\[\]|`\\%&\r\n\t]+"


def mermaid_label(text: object) -> str:
    """``text`` as a Mermaid transition label: statement-breaking characters become spaces."""
    # Control and bidi characters go too: a backslash escape would not survive Mermaid.
    return " ".join(re.sub(_MERMAID_UNSAFE, " ", re.sub(_INVISIBLE, " ", str(text))).split())
