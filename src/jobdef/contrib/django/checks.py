"""What ``manage.py check`` says about a jobdef backend: its sheets, and a sheet for each task.

* every finding of ``jobdef validate`` over the configured sheets, an error as
  ``checks.Error`` and a warning as ``checks.Warning``, each at its sheet's file:line
  (ids ``jobdef.JDnnn``, the rule's code);
* a ``@task`` of the backend with no sheet (``jobdef.E001``), naming the sheet to write;
* a task whose options contradict its sheet (``jobdef.E002``), whose sheet's handler is
  another object (``jobdef.E003``) or whose parameters do not fit the sheet's args
  (``jobdef.E004``); a database jobdef cannot share (``jobdef.E005``).

Tasks are found in each installed app's ``tasks`` module (imported here, as a worker
would) and in the modules of ``OPTIONS["task_modules"]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import import_module
from typing import TYPE_CHECKING, Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import autodiscover_modules

from jobdef.contrib.django.compat import InvalidTask
from jobdef.contrib.django.matching import (
    dotted_path,
    find_policy,
    handler_path,
    job_options,
    mapped_name,
    missing_sheet,
)
from jobdef.contrib.django.task import made
from jobdef.errors import JobdefError
from jobdef.redact import redact
from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.handlers import fit_problem
from jobdef.sheets.pipeline import validate_sheets

if TYPE_CHECKING:
    from jobdef.contrib.django.backend import JobdefBackend


def sheet_message(diagnostic: Diagnostic) -> Any:
    """One finding of `jobdef validate` as a Django check message."""
    where = f"{diagnostic.file}:{diagnostic.line}:{diagnostic.column}"
    kind = checks.Error if diagnostic.severity == "error" else checks.Warning
    return kind(f"{where}: {diagnostic.message}", id=f"jobdef.{diagnostic.code}")


def backend_messages(backend: JobdefBackend, configured: list[JobdefBackend]) -> Iterator[Any]:
    """The messages of ``backend``; ``configured``: every jobdef backend, in order."""
    try:
        backend.database_url  # noqa: B018  # raises for a database jobdef cannot share
    except ImproperlyConfigured as exc:
        yield checks.Error(str(exc), id="jobdef.E005")
    missing = [path for path in backend.sheets if not path.exists()]
    if missing:
        yield checks.Error(
            f"TASKS[{backend.alias!r}] sheets folder {missing[0]} does not exist",
            hint="create it, or point OPTIONS['sheets'] at the folder of the job sheets",
            id="jobdef.E005",
        )
        return
    try:
        validation = validate_sheets(backend.sheets)
    except JobdefError as exc:  # a sheet that cannot be read at all
        yield checks.Error(str(exc), id="jobdef.E005")
        return
    if not _reported_before(backend, configured):
        yield from (sheet_message(d) for d in validation.diagnostics)
    if any(d.severity == "error" for d in validation.diagnostics):
        return  # the sheets do not load: no task can be matched yet
    yield from _task_messages(backend)


def _reported_before(backend: JobdefBackend, configured: list[JobdefBackend]) -> bool:
    """Whether a backend configured before this one reads the same sheets (and so has
    reported their findings already): each finding once, however many backends."""
    mine = [path.resolve() for path in backend.sheets]
    for other in configured:
        if other.alias == backend.alias:
            return False
        if [path.resolve() for path in other.sheets] == mine:
            return True
    return False


def _discover(backend: JobdefBackend) -> Iterator[Any]:
    """Import the modules that define tasks; one that does not import is an error."""
    try:
        autodiscover_modules("tasks")
    except Exception as exc:  # importing the project's code may raise anything
        yield checks.Error(
            redact(f"importing an app's tasks module raised {exc!r}"), id="jobdef.E001"
        )
    for module in backend.options.get("task_modules", ()):
        try:
            import_module(module)
        except Exception as exc:
            yield checks.Error(
                redact(f"OPTIONS['task_modules'] names {module}, whose import raised {exc!r}"),
                id="jobdef.E001",
            )


def _task_messages(backend: JobdefBackend) -> Iterator[Any]:
    yield from _discover(backend)
    registry = backend.registry
    for (_module, _name, alias), task in sorted(made.items(), key=lambda item: item[0]):
        if alias != backend.alias:
            continue
        policy = find_policy(registry, task, backend.names)
        if policy is None:
            yield checks.Error(
                missing_sheet(task, backend.sheets, backend.names, registry),
                obj=dotted_path(task),
                id="jobdef.E001",
            )
            continue
        where = str(policy.origin("handler") or policy.file)
        if mapped_name(task, backend.names) is not None and policy.handler != handler_path(task):
            from jobdef.sheets.rules.imports import resolve

            module, _, attribute = policy.handler.partition(":")
            found, _problem = resolve(module, attribute)
            if getattr(found, "func", None) is not task.func:
                yield checks.Error(
                    f"{where}: job {policy.name!r} runs handler {policy.handler}, not task "
                    f"{dotted_path(task)} that OPTIONS['jobs'] maps to it; write "
                    f"`handler: {handler_path(task)}` in the sheet",
                    id="jobdef.E003",
                )
                continue
        try:
            job_options(task, policy)
        except InvalidTask as exc:
            yield checks.Error(str(exc), obj=dotted_path(task), id="jobdef.E002")
        problem = fit_problem(task, policy.handler, policy.args_schema)
        if problem is not None:
            # The worker passes ctx itself: a task writes `context` first, or nothing.
            function = task.func.__name__
            first = "context, " if task.takes_context else ""
            problem = problem.replace(f"def {function}(ctx, ", f"def {function}({first}")
            problem = problem.replace(f"def {function}(ctx)", f"def {function}({first[:-2]})")
            args_at = policy.origin("args")
            if args_at is not None and args_at.source != "builtin":
                problem += f"; or change the sheet's args at {args_at}"
            yield checks.Error(
                f"{where}: task {dotted_path(task)} does not fit the args of job "
                f"{policy.name!r}: {problem}",
                id="jobdef.E004",
            )
