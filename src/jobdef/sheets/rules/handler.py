"""Handlers (JD301-JD303): `module:function`, and with --check-imports, a callable that
imports and takes the sheet's args as its runtime passes them: ctx and the args on
jobdef's worker, the args alone for a Celery task or a job that names `runtime.rq`
(see :mod:`jobdef.sheets.handlers`)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document, Path_
from jobdef.sheets.files import shown_path
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context

if TYPE_CHECKING:
    from jobdef.policy.model import JobPolicy
    from jobdef.sheets.rules.imports import Answer

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
    "jobdef's worker calls handler(ctx, **args), Celery a task's function and RQ (a job that "
    "names runtime.rq) the handler with the args alone; parameters that do not fit the "
    "sheet's args fail every attempt with a TypeError (--check-imports).",
)
RULES = (HANDLER_SHAPE, HANDLER_IMPORT, HANDLER_SIGNATURE)

_SHAPE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$")
# Compiled on first use (re keeps it): only a value written wrong needs it.
_DOTTED = r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$"


def check_document(doc: Document) -> Iterator[tuple[Path_, Diagnostic]]:
    handler = doc.data.get("handler") if doc.kind == "Job" else None
    if not isinstance(handler, str) or _SHAPE.match(handler):
        return
    hint = ""
    if re.match(_DOTTED, handler):
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
        answer = answers[Request.of(policy)]
        where = context.where(doc, policy, "handler")
        if answer.problem is not None:
            yield HANDLER_IMPORT.at_origin(
                where, f"handler {policy.handler}: {answer.problem}; fix the path or the module"
            )
            continue
        if answer.mismatch is not None:
            yield HANDLER_SIGNATURE.at_origin(where, _misfit(policy, answer))


def _misfit(policy: JobPolicy, answer: Answer) -> str:
    """JD303's message: who calls the handler and how, and what does not fit."""
    function = policy.handler.partition(":")[2]
    fit = f"its parameters do not fit the args of job {policy.name!r}: {answer.mismatch}"
    if answer.caller == "celery":
        return (
            f"handler {policy.handler} is a Celery task, which a Celery worker calls as "
            f"{function}(**args), and {fit}"
        )
    if answer.caller == "rq":
        named = policy.origin("runtime.rq")
        by = f", {shown_path(named.file)}:{named.line}" if named is not None else ""
        return (
            f"handler {policy.handler} is called as {function}(**args) by RQ (the job names "
            f"runtime.rq{by}), and {fit}"
        )
    text = f"handler {policy.handler} is called as {function}(ctx, **args), but {fit}"
    if answer.alone:
        text += (
            "; it fits the args alone, as Celery and RQ call: if RQ runs this job, say so "
            "in the sheet (runtime: {rq: {}}) or, for every job, in the Defaults; if Celery "
            "does, name its task (module:task) as handler"
        )
    return text
