"""Values the stores cannot hold (JD109, JD110), anywhere in a document, keys included.

Every number and string of a sheet may end up in a database column, a JSON
payload in the outbox or a message: jobdef's integers are 64-bit (SQLite
INTEGER, PostgreSQL BIGINT) and PostgreSQL's text and jsonb refuse a NUL
character. A value beyond either fails later, once per job or message, far
from the sheet; these rules refuse it at its line. An arg's schema is not stored
and describes values (a ``maximum`` of 2**64, a ``const`` with a NUL are valid
JSON Schema), so under ``args`` only an integer too long to read is refused.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document, OverlongInteger, Path_
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.schema_check import dotted

INTEGER_TOO_LARGE = Rule(
    "JD109",
    "integer-too-large",
    "error",
    "jobdef stores integers in 64 bits; one of more than 18 digits overflows the database "
    "(and Python refuses to read one of 4,300).",
)
NUL_CHARACTER = Rule(
    "JD110",
    "nul-character",
    "error",
    "PostgreSQL text and jsonb cannot hold a NUL character; a value with one fails when stored.",
)
RULES = (INTEGER_TOO_LARGE, NUL_CHARACTER)

MAX_DIGITS = 18
_LIMIT = 10**MAX_DIGITS


def _walk(value: Any, path: Path_) -> Iterator[tuple[Path_, Any, bool]]:
    """Every value under ``value`` with its path; ``True`` marks a key."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield (*path, key), key, True
            yield from _walk(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, (*path, index))
    else:
        yield path, value, False


def _size(value: Any) -> str | None:
    """``"25 digits"`` for an integer too large to store, else None."""
    if isinstance(value, OverlongInteger):
        return f"{len(value.lstrip('+-'))} digits"
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) < _LIMIT:
        return None
    if abs(value).bit_length() > 3000:  # str() of it would pass Python's 4,300 digits
        return "more than 900 digits"
    return f"{len(str(abs(value)))} digits"


def check_document(doc: Document) -> Iterator[tuple[Path_, Diagnostic]]:
    for path, value, key in _walk(doc.data, ()):
        where = doc.key_positions if key else doc.positions
        line, column = where.get(path, (doc.line, doc.column))
        field = dotted(path).replace("\x00", "\\0") + ": " if path else ""
        in_args = path[:1] == ("args",)
        size = _size(value) if not in_args or isinstance(value, OverlongInteger) else None
        if size is not None:
            yield (
                path,
                INTEGER_TOO_LARGE.at(
                    doc.file,
                    line,
                    column,
                    f"{field}an integer of {size} is too large; jobdef stores integers "
                    f"of at most {MAX_DIGITS} digits: write a smaller number",
                ),
            )
        elif isinstance(value, str) and "\x00" in value and not in_args:
            yield (
                path,
                NUL_CHARACTER.at(
                    doc.file,
                    line,
                    column,
                    f"{field}{'the key' if key else 'the value'} holds a NUL character "
                    "(\\0), which PostgreSQL cannot store; remove it",
                ),
            )
