"""Every finding in one run: the rules of the effective policy also read a sheet that
has errors, with the fields in error set aside.

A Job, Defaults or Workflow document with an error at a field (``max_attemps: 5``,
``timeout: 30 seconds``) cannot be built as written, so the rules that read
effective policies used to skip it, and its other findings (a backoff cut below
its start, a key naming no arg) only came once the first were fixed. Here the
document is read again without its top-level fields in error: when what is
left passes the schema, its job is built, and the rules' findings about it are
reported, except any that may come from a field set aside (it names that
field, or the field a misspelt key was meant to be): with that field missing,
its default took its place, and a finding about the default would mislead.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document
from jobdef.sheets.rules import check_document
from jobdef.sheets.schema_check import check_document as check_schema

# Fields that make a document what it is: one in error leaves nothing to read.
_IDENTITY = frozenset({"apiVersion", "kind", "name"})
# The kinds the rules read as built policies: a job's effective policy, a flow's graph.
KINDS = ("Job", "Defaults", "Workflow")


@dataclass(frozen=True)
class Salvaged:
    """``document`` without the fields in error; ``unknown``: those fields, and the
    known fields a misspelt one among them was meant to be."""

    document: Document
    unknown: frozenset[str]


@cache
def _known(kind: str) -> frozenset[str]:
    from jobdef.sheets.schema_check import schema

    found = schema()["definitions"].get(kind, {}).get("properties", {})
    return frozenset(found)


def salvage(doc: Document, found: Sequence[Diagnostic]) -> Salvaged | None:
    """``doc`` without the top-level fields its errors ``found`` are in, or None when
    that leaves a document with errors still (a required field in error or missing) or
    an error is not inside a field."""
    if doc.kind not in KINDS or not isinstance(doc.data, dict):
        return None
    errors = [d for d in found if d.severity == "error"]
    fields = {_field_of(doc, d) for d in errors}
    if not errors or None in fields or fields & _IDENTITY:
        return None
    dropped = {str(name) for name in fields}
    data = {key: value for key, value in doc.data.items() if key not in dropped}
    left = replace(doc, data=data)
    again, owned = check_document(left)
    if any(d.severity == "error" for d in [*again, *check_schema(left, owned)]):
        return None
    return Salvaged(left, frozenset(dropped | _meant(doc.kind, dropped)))


def _field_of(doc: Document, diagnostic: Diagnostic) -> str | None:
    """The top-level key whose lines hold ``diagnostic``: the last one at or before it."""
    if diagnostic.file != doc.file:
        return None
    at = (diagnostic.line, diagnostic.column)
    starts = sorted(
        (position, str(path[0])) for path, position in doc.key_positions.items() if len(path) == 1
    )
    before = [key for position, key in starts if position <= at]
    return before[-1] if before else None


def _meant(kind: str, dropped: Iterable[str]) -> set[str]:
    """The known fields the unknown ones among ``dropped`` were probably meant to be."""
    import difflib

    known = _known(kind)
    meant: set[str] = set()
    for name in dropped:
        if name not in known:
            meant.update(difflib.get_close_matches(name, list(known), n=1, cutoff=0.6))
    return meant


def within(diagnostic: Diagnostic, doc: Document, documents: Sequence[Document]) -> bool:
    """Whether ``diagnostic`` is at a line of ``doc`` (up to the next document of its file)."""
    if diagnostic.file != doc.file or diagnostic.line < doc.line:
        return False
    later = [d.line for d in documents if d.file == doc.file and d.line > doc.line]
    return not later or diagnostic.line < min(later)


def mentions(diagnostic: Diagnostic, fields: Collection[str]) -> bool:
    """Whether ``diagnostic`` names one of ``fields`` (as a field: ``backoff.max`` names
    ``backoff``), or one item of a list field (``args`` by "no arg")."""
    words = {*fields, *(name[:-1] for name in fields if name.endswith("s"))}
    return any(
        re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", diagnostic.message) for word in words
    )
