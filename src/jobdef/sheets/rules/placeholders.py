"""Placeholders (JD321): text a template left for the author to replace.

`jobdef new` writes ``TODO: what the job does`` into the fields a person reads
(title, description, owner, trigger, rerun, each arg's description); the docs and
notifications made from the sheet would print it as it is. Warned, so that
``jobdef validate --strict`` in CI refuses a sheet that still carries one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document, Path_
from jobdef.sheets.rules.base import Rule

PLACEHOLDER = Rule(
    "JD321",
    "placeholder-text",
    "warning",
    "A TODO left by a template is printed as it is in the design docs, the spreadsheet "
    "tables and the notifications made from the sheet.",
)
RULES = (PLACEHOLDER,)

# The fields a person reads, as each kind of document has them.
TEXT_FIELDS = ("title", "description", "owner", "trigger", "rerun")
_MARK = re.compile(r"\s*(TODO|TBD|FIXME|XXX)\b")


def check_document(doc: Document) -> Iterator[tuple[Path_, Diagnostic]]:
    if not isinstance(doc.data, Mapping):
        return
    places: list[tuple[Path_, object]] = [((name,), doc.data.get(name)) for name in TEXT_FIELDS]
    args = doc.data.get("args")
    if isinstance(args, Mapping):
        for name, schema in args.items():
            if isinstance(name, str) and isinstance(schema, Mapping):
                places.append((("args", name, "description"), schema.get("description")))
    for path, value in places:
        if not isinstance(value, str):
            continue
        found = _MARK.match(value)
        if found is None:
            continue
        line, column = doc.positions.get(path, (doc.line, 1))
        field = ".".join(map(str, path))
        yield (
            path,
            PLACEHOLDER.at(
                doc.file,
                line,
                column,
                f"{field} still says {value[:60]!r}; replace the {found[1]} with the real "
                f"text (or delete {field}, which is optional)",
            ),
        )
