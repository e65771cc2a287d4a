"""Uniqueness (JD271-JD273): one Job per name, one Defaults per field, one name per Channel."""

from __future__ import annotations

from collections.abc import Iterator

from jobdef.sheets.diagnostics import Diagnostic, Location
from jobdef.sheets.document import Document
from jobdef.sheets.field_paths import field_paths
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context
from jobdef.sheets.words import MAX_LISTED

DUPLICATE_JOB = Rule(
    "JD271",
    "duplicate-job-name",
    "error",
    "Enqueue, docs and the worker find a job by name; two sheets with one name hide one.",
)
DEFAULTS_OVERLAP = Rule(
    "JD272",
    "defaults-overlap",
    "error",
    "When two Defaults set one field, which wins depends on file order; nobody reviews that.",
)
DUPLICATE_NAME = Rule(
    "JD273",
    "duplicate-channel-or-queue",
    "error",
    "Sheets refer to channels and queues by name; two definitions of a name hide one.",
)
RULES = (DUPLICATE_JOB, DEFAULTS_OVERLAP, DUPLICATE_NAME)


def _name_location(doc: Document) -> Location:
    line, column = doc.positions.get(("name",), (doc.line, 1))
    return Location(doc.file, line, column)


def _duplicates(context: Context, kind: str, rule: Rule) -> Iterator[Diagnostic]:
    by_name: dict[str, list[Document]] = {}
    for doc in context.documents:  # schema errors elsewhere in a sheet do not hide its name
        name = doc.data.get("name")
        if doc.kind == kind and isinstance(name, str):
            by_name.setdefault(name, []).append(doc)
    for name, docs in by_name.items():
        if len(docs) < 2:
            continue
        places = [_name_location(doc) for doc in docs]
        for here in places:
            # The first few others, and how many more: 10,000 sheets of one name must
            # not give 10,000 findings that each list the other 9,999.
            others = [p for p in places[: MAX_LISTED + 1] if p is not here][:MAX_LISTED]
            listed = ", ".join(f"{p.file}:{p.line}" for p in others)
            more = len(places) - 1 - len(others)
            if more:
                listed += f" and {more:,} more"
            yield rule.at_origin(
                here,
                f"{kind} name {name!r} is also defined at {listed}; rename one of them",
                related=others,
            )


def check(context: Context) -> Iterator[Diagnostic]:
    yield from _duplicates(context, "Job", DUPLICATE_JOB)
    yield from _duplicates(context, "Channel", DUPLICATE_NAME)
    yield from _duplicates(context, "Queue", DUPLICATE_NAME)
    first: dict[tuple[str | int, ...], Location] = {}
    for doc in context.defaults:
        for path in field_paths(doc.data):
            if path[0] in ("apiVersion", "kind", "name"):
                continue
            line, column = doc.positions.get(path, (doc.line, 1))
            here = Location(doc.file, line, column)
            if path not in first:
                first[path] = here
                continue
            there = first[path]
            field = ".".join(str(p) for p in path)
            yield DEFAULTS_OVERLAP.at_origin(
                here,
                f"{field} is also set by the Defaults at {there.file}:{there.line}; which value "
                "wins would depend on file order, so set it in one Defaults only",
                related=[there],
            )
