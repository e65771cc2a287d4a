"""Sensitive args (JD113, JD114): an arg whose name says secret says whether it is one, and
a receipt never shows a secret.

Pages, logs, listings and notifications show an arg as ``***`` when its schema says
``sensitive: true``, or says nothing and its name says secret
(:func:`jobdef.redact.sensitive_arg`): the name decides only until the sheet does.
This rule asks the sheet to decide, so that a reader of the sheet (and of the docs
made from it) sees which args are hidden, and a rename to a name that says nothing
(``db_password`` to ``db_pass``) does not quietly show the value.

A receipt (the status endpoint an application shows its own user) shows only the args
that say ``public: true`` (:func:`jobdef.redact.public_arg`); JD114 refuses that on an
arg every other display hides.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from jobdef.redact import secret_name, sensitive_arg
from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document, Path_
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.words import near_miss

UNMARKED_SECRET = Rule(
    "JD113",
    "arg-secret-unmarked",
    "warning",
    "An arg named like a secret (password, token, api_key) is hidden only while its name "
    "says so; `sensitive: true` keeps it hidden whatever it is renamed to.",
)
PUBLIC_SECRET = Rule(
    "JD114",
    "arg-public-and-sensitive",
    "error",
    "A receipt is shown to the application's own user, and whoever holds its token; an arg "
    "that pages, logs and notifications hide must not be shown there.",
)
RULES = (UNMARKED_SECRET, PUBLIC_SECRET)


def check_document(doc: Document) -> Iterator[tuple[Path_, Diagnostic]]:
    args = doc.data.get("args") if doc.kind == "Job" else None
    if not isinstance(args, Mapping):
        return
    for name, schema in args.items():
        if not isinstance(name, str) or not isinstance(schema, Mapping):
            continue
        if schema.get("public") is True and sensitive_arg(name, schema):
            yield _public_secret(doc, name, schema)
            continue  # its message says what JD113 would
        if "sensitive" in schema or not secret_name(name):
            continue
        path: Path_ = ("args", name)
        line, column = doc.key_positions.get(path) or doc.positions.get(path, (doc.line, 1))
        yield (
            (*path, "sensitive"),
            UNMARKED_SECRET.at(
                doc.file,
                line,
                column,
                f"args.{name}: the name says it holds a secret, but the arg does not say "
                f"`sensitive`; did you mean {_suggestion(name, schema)}? (pages, logs and "
                "notifications then show it as ***; write `sensitive: false` if it is "
                "not a secret)",
            ),
        )


def _public_secret(
    doc: Document, name: str, schema: Mapping[object, object]
) -> tuple[Path_, Diagnostic]:
    path: Path_ = ("args", name, "public")
    line, column = doc.key_positions.get(path) or doc.positions.get(path, (doc.line, 1))
    if schema.get("sensitive") is True:
        why = "and `sensitive: true` disagree"
        fix = "remove `public: true` (or `sensitive: true`, if the value is no secret)"
    else:
        why = "on an arg whose name says it holds a secret"
        fix = (
            "remove `public: true`, or write `sensitive: false` beside it if the value is no secret"
        )
    return path, PUBLIC_SECRET.at(
        doc.file,
        line,
        column,
        f"args.{name}: `public: true` {why}: a receipt would show what pages, logs and "
        f"notifications hide; {fix}",
    )


def _suggestion(name: str, schema: Mapping[object, object]) -> str:
    """The arg as it would read marked: one flow line when it is made of short scalars."""
    # A misspelt `sensitive` (JD111 names it) is what the suggestion writes right.
    kept = {k: v for k, v in schema.items() if not (isinstance(k, str) and _misspelt(k))}
    entries = [
        f"{key}: {str(value).lower() if isinstance(value, bool) else value}"
        for key, value in kept.items()
        if _short(value)
    ]
    if len(entries) == len(kept) and len(entries) <= 4:
        return f"`{name}: {{{', '.join([*entries, 'sensitive: true'])}}}`"
    return f"`sensitive: true` in args.{name}"


def _misspelt(key: str) -> bool:
    return near_miss(key, {"sensitive"}) == "sensitive"


def _short(value: object) -> bool:
    """Whether ``value`` reads the same in a flow mapping (a plain scalar, not a schema)."""
    if isinstance(value, bool | int | float):
        return True
    return isinstance(value, str) and value.isidentifier() and len(value) <= 30
