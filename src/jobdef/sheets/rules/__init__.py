"""The rules of `jobdef validate`, one small module per area.

Each module defines its :class:`~jobdef.sheets.rules.base.Rule` constants in ``RULES``
and may define two checks:

- ``check_document(doc)`` runs on a document as written, before the schema,
  and returns ``(path, diagnostic)`` pairs; the schema check stays silent
  about those paths, since the rule already said something more precise;
- ``check(context)`` runs on the effective policies (Defaults merged) of the
  documents that passed the schema, and locates findings through each
  policy's ``origins``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from functools import cache
from types import ModuleType

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document, Path_
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context

# In the order of the rule ids.
MODULES = (
    "loading",
    "schema",
    "args",
    "limits",
    "sensitive",
    "values",
    "durations",
    "sizes",
    "backoff",
    "deadline",
    "errors",
    "idempotency",
    "notify",
    "secrets",
    "uniqueness",
    "queues",
    "schedule",
    "retention",
    "handler",
    "decision",
    "placeholders",
    "result",
    "workflows",
    "flow_args",
    "flow_deadline",
    "flow_runtime",
    "flow_notify",
)


# The modules of the rules about Workflow documents, which find nothing in sheets without
# one: a run of such sheets does not load them (1 ms of every `jobdef validate`).
WORKFLOW_MODULES = frozenset(
    {"workflows", "flow_args", "flow_deadline", "flow_runtime", "flow_notify"}
)


@cache
def modules(workflows: bool = True) -> tuple[ModuleType, ...]:
    """The rules' modules, in :data:`MODULES` order; without ``workflows``, less those of
    :data:`WORKFLOW_MODULES`."""
    return tuple(
        importlib.import_module(f"jobdef.sheets.rules.{name}")
        for name in MODULES
        if workflows or name not in WORKFLOW_MODULES
    )


def all_rules() -> list[Rule]:
    """Every rule, sorted by id."""
    return sorted((rule for module in modules() for rule in module.RULES), key=lambda r: r.id)


def check_document(doc: Document) -> tuple[list[Diagnostic], set[Path_]]:
    """Findings of the rules that read a document as written, and the paths they cover."""
    found: list[Diagnostic] = []
    owned: set[Path_] = set()
    for module in modules(workflows=doc.kind == "Workflow"):
        check = getattr(module, "check_document", None)
        if check is None:
            continue
        for path, diagnostic in check(doc):
            found.append(diagnostic)
            owned.add(path)
    return found, owned


def check(context: Context) -> Iterator[Diagnostic]:
    """Findings of the rules that read the effective policies; one about a value a job
    inherited is at the job's line and names it (:meth:`Context.at_job`)."""
    workflows = any(doc.kind == "Workflow" for doc in context.documents)
    for module in modules(workflows):
        run = getattr(module, "check", None)
        if run is not None:
            context.forget_inherited()
            for diagnostic in run(context):
                yield context.at_job(diagnostic)


def rules_markdown() -> str:
    """docs/rules.md: every rule with its id, severity and rationale (a test checks drift)."""
    lines = [
        "# Rules of `jobdef validate`",
        "",
        "Generated from `jobdef.sheets.rules` (`python -m jobdef.sheets.rules > docs/rules.md`); "
        "ids never change meaning.",
        "Errors fail the run; warnings fail it under `--strict`. Each row can be linked as "
        "`rules.md#jd212` (SARIF's helpUri does).",
        "",
        "| Id | Name | Severity | Why |",
        "| --- | --- | --- | --- |",
    ]
    lines += [
        f'| <a id="{rule.id.lower()}"></a>{rule.id} | `{rule.name}` | {rule.severity} '
        f"| {rule.rationale} |"
        for rule in all_rules()
    ]
    return "\n".join(lines) + "\n"
