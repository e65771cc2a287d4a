"""Handlers (JD301-JD303): `module:function`, and with --check-imports, a callable that
imports and takes ctx and the sheet's args."""

from __future__ import annotations

import re
from collections.abc import Iterator

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document, Path_
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context

HANDLER_SHAPE = Rule(
    "JD301",
    "handler-shape",
    "error",
    "The worker imports `module` and calls `function`; any other shape cannot be run.",
)
HANDLER_IMPORT = Rule(
    "JD302",
    "handler-import",
    "error",
    "A handler that does not import or is not callable fails every job at run time "
    "(--check-imports).",
)
HANDLER_SIGNATURE = Rule(
    "JD303",
    "handler-signature",
    "error",
    "The worker calls handler(ctx, **args); parameters that do not fit the sheet's args fail "
    "every attempt with a TypeError (--check-imports).",
)
RULES = (HANDLER_SHAPE, HANDLER_IMPORT, HANDLER_SIGNATURE)

_SHAPE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")


def check_document(doc: Document) -> Iterator[tuple[Path_, Diagnostic]]:
    handler = doc.data.get("handler") if doc.kind == "Job" else None
    if not isinstance(handler, str) or _SHAPE.match(handler):
        return
    hint = ""
    if _DOTTED.match(handler):
        module, _, function = handler.rpartition(".")
        hint = f"; did you mean {module}:{function}?"
    line, column = doc.positions.get(("handler",), (doc.line, 1))
    yield (
        ("handler",),
        HANDLER_SHAPE.at(
            doc.file,
            line,
            column,
            f"handler {handler!r} is not module:function shaped; write the module, a colon "
            f"and the function, such as reservations.jobs:send_mail{hint}",
        ),
    )


def check(context: Context) -> Iterator[Diagnostic]:
    if not context.check_imports:
        return
    from jobdef.sheets.rules.imports import Request, probe, requests_of

    answers = probe(requests_of(policy for _, policy in context.jobs))  # in a child process
    for doc, policy in context.jobs:
        function = policy.handler.partition(":")[2]
        answer = answers[Request.handler(policy.handler, policy.args_schema)]
        where = context.where(doc, policy, "handler")
        if answer.problem is not None:
            yield HANDLER_IMPORT.at_origin(
                where, f"handler {policy.handler}: {answer.problem}; fix the path or the module"
            )
            continue
        mismatch = answer.mismatch
        if mismatch is not None:
            yield HANDLER_SIGNATURE.at_origin(
                where,
                f"handler {policy.handler} is called as {function}(ctx, **args), but its "
                f"parameters do not fit the args of job {policy.name!r}: {mismatch}",
            )
