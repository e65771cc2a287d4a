"""Whether a handler can be called as its runtime calls it.

jobdef's worker calls ``handler(ctx, **args)``. Through jobdef's adapters the args
come alone: a Celery worker calls a task's function as ``run(**args)``, and RQ
(:func:`jobdef.adapters.rq.perform`) calls ``handler(**args)``.

``jobdef validate --check-imports`` (rule JD303) and the worker at start ask
:func:`signature_problem` of each job; a handler whose parameters do not fit
the sheet's args would otherwise fail every attempt of every job with a
``TypeError``. The worker asks in its own process (:func:`handler_problems`);
``--check-imports`` in a child process, which runs :func:`serve`, and checks each
handler the way the runtime that runs it calls it (:func:`_answer`): a Celery task
as Celery calls it, whatever the sheet says (no other runtime can call a task with
the args alone: jobdef's worker would pass ctx to its function); a plain function
as RQ calls it when the job names ``runtime.rq`` (its sheet or the Defaults),
else as jobdef's worker calls it.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from jobdef.policy.model import JobPolicy
from jobdef.sheets.rules.imports import handler_kind, resolve

_BY_NAME = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _names(names: Iterable[str]) -> str:
    return ", ".join(sorted(names))


def signature_problem(handler: Callable[..., Any], policy: JobPolicy) -> str | None:
    """What is wrong with calling ``handler(ctx, **args)`` for the args of ``policy``,
    or None when every call the sheet allows fits (and when Python cannot tell)."""
    return fit_problem(handler, policy.handler, policy.args_schema)


def fit_problem(
    handler: Callable[..., Any], path: str, schema: Mapping[str, Any], *, ctx: bool = True
) -> str | None:
    """:func:`signature_problem` for the handler named ``path`` and an args schema;
    ``ctx=False``: called with the args alone, as Celery and RQ call it."""
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):  # some builtins have no signature to read
        return None
    params = list(signature.parameters.values())
    if ctx and params and params[0].kind in _POSITIONAL:
        params = params[1:]
    elif ctx and not any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return "it takes no first positional parameter for ctx"
    args = list(schema.get("properties", {}))
    required = set(schema.get("required", ()))
    by_name = {p.name: p for p in params if p.kind in _BY_NAME}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    unexpected = [] if takes_any else [a for a in args if a not in by_name]
    missing = [
        p.name
        for p in params
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        and (p.name not in args or p.kind is inspect.Parameter.POSITIONAL_ONLY)
    ]
    optional = [
        name
        for name, p in by_name.items()
        if name in args and name not in required and p.default is inspect.Parameter.empty
    ]
    if not (unexpected or missing or optional):
        return None
    parts = []
    if unexpected:
        parts.append(f"unexpected (args it does not take): {_names(unexpected)}")
    if missing:
        parts.append(f"missing (parameters no arg fills): {_names(missing)}")
    if optional:
        parts.append(f"without a default though the arg is optional: {_names(optional)}")
    first = ["ctx"] if ctx else []
    wanted = ", ".join([*first, *(a if a in required else f"{a}=None" for a in args)])
    function = path.partition(":")[2]
    return f"{'; '.join(parts)}; write def {function}({wanted}), or add **kwargs"


def handler_problems(policies: Iterable[JobPolicy]) -> list[str]:
    """One line per job whose handler does not import, is not callable, or does not fit
    its sheet's args: what a worker checks before it takes any job."""
    problems = []
    for policy in policies:
        module, _, function = policy.handler.partition(":")
        found, problem = resolve(module, function)
        if problem is None and not callable(found):
            problem = f"{policy.handler} is a {type(found).__name__}, not a function"
        if problem is None:
            mismatch = signature_problem(found, policy)
            if mismatch is not None:
                problem = f"its parameters do not fit: {mismatch}{_runs_elsewhere(found, policy)}"
        if problem is not None:
            problems.append(f"job {policy.name!r}: handler {policy.handler}: {problem}")
    return problems


def celery_task_run(handler: Any) -> Callable[..., Any] | None:
    """The function a Celery worker runs for ``handler`` when it is a Celery task (what
    ``@sheet_task`` and ``@app.task`` return, a lazy proxy included), else None.

    Only a module that imported Celery can define a task: Celery is not imported here."""
    tasks = sys.modules.get("celery.app.task")
    if tasks is None or not isinstance(handler, tasks.Task):
        return None
    run: Callable[..., Any] = handler.run
    return run


def _runs_elsewhere(handler: Any, policy: JobPolicy) -> str:
    """What to do when jobdef's worker meets a handler another runtime runs."""
    if celery_task_run(handler) is not None:
        who = "it is a Celery task, which a Celery worker runs"
    elif policy.runtime.rq.named:
        who = "its job names runtime.rq, so RQ runs it"
    else:
        return ""
    return f"; {who}: leave queue {policy.queue!r} to that runtime (jobdef worker --queues)"


def _answer(path: str, args: str | None, call: str = "worker") -> dict[str, Any]:
    """What importing one request of :func:`jobdef.sheets.rules.imports.probe` finds;
    ``call``: "rq" when the job names ``runtime.rq``, else "worker"."""
    if args is None:  # a dotted exception class
        module, _, attribute = path.rpartition(".")
        found, problem = resolve(module, attribute)
        if problem is None and not (isinstance(found, type) and issubclass(found, BaseException)):
            problem = f"{path} is not an exception class"
        return {"problem": problem}
    module, _, function = path.partition(":")
    found, problem = resolve(module, function)
    if problem is None and not callable(found):
        problem = f"{path} is a {type(found).__name__}, not a function"
    if problem is not None:
        return {"problem": problem}
    schema = json.loads(args)
    run = celery_task_run(found)
    if run is not None:
        mismatch = fit_problem(run, path, schema, ctx=False)
        return {"mismatch": mismatch, "kind": handler_kind(run), "caller": "celery"}
    if call == "rq":
        mismatch = fit_problem(found, path, schema, ctx=False)
        return {"mismatch": mismatch, "kind": handler_kind(found), "caller": "rq"}
    mismatch = fit_problem(found, path, schema)
    # Whether the args alone would fit: the job may run on RQ without saying so.
    alone = mismatch is not None and fit_problem(found, path, schema, ctx=False) is None
    return {"mismatch": mismatch, "kind": handler_kind(found), "caller": "worker", "alone": alone}


def serve(requests: Sequence[tuple[str, str | None, str]]) -> None:
    """The child process of :func:`jobdef.sheets.rules.imports.probe`: import each
    request and write one JSON line before (``start``) and one after (its answer).

    What the imported code prints goes nowhere: the answers have the stdout pipe
    to themselves, and the code reads an empty stdin."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    quiet = os.open(os.devnull, os.O_RDWR)
    os.dup2(quiet, 0)
    os.dup2(quiet, 1)
    for index, (path, args, call) in enumerate(requests):
        out.write(json.dumps({"i": index, "start": True}) + "\n")
        out.flush()
        try:
            found = _answer(path, args, call)
        except Exception as exc:  # user code again (a signature, a property)
            found = {"problem": f"checking it raised {type(exc).__name__}: {exc}"}
        out.write(json.dumps({"i": index, **found}) + "\n")
        out.flush()
