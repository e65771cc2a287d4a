"""A workflow sheet turned into the flow the store keeps (:mod:`jobdef.backends.flows`).

``Queue.start`` checks the flow's args against the sheet's ``args``, fills in the
roots' args (they read only the flow's args) and checks them against each root's
job, and stores the flow with the graph the store settles it by: each step's job,
its parents with their edge policies, and where each arg comes from. The graph is
the flow as the sheet said at its start, so a sheet edited later changes only the
flows started after it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from jobdef.backends.flows import NewFlow, NewStep
from jobdef.errors import ArgsError
from jobdef.policy.keys import idempotency_key, key_placeholders
from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry
from jobdef.policy.values import DEFAULT_ARGS_BYTES, thaw
from jobdef.sheets.args_check import ArgsCheck
from jobdef.sheets.args_json import args_problem, where

if TYPE_CHECKING:
    from jobdef.policy.workflow import ArgSource, Step, WorkflowPolicy

CheckArgs = Callable[[JobPolicy, Mapping[str, Any]], None]

# The flow args of a workflow are checked against its schema built once per policy.
_checks: dict[str, tuple[Mapping[str, Any], ArgsCheck]] = {}


def new_flow(registry: Registry, name: str, args: Mapping[str, Any], check: CheckArgs) -> NewFlow:
    """Validate a start of the workflow ``name`` and turn it into the flow to store
    (raises :class:`ArgsError`, storing nothing); ``check`` is the check of a job's
    args (``jobdef.runtime.queue.validate_args``)."""
    flow = registry.workflow(name)
    args = dict(args)
    _check_args(flow, args)
    steps = []
    for step_name in flow.order():
        step = flow.steps[step_name]
        job = registry.job(step.job)
        root = not step.after and not step.is_finally
        step_args = _root_args(flow, step, args) if root else None
        if step_args is not None:
            try:
                check(job, step_args)
            except ArgsError as exc:
                raise ArgsError(f"workflow {flow.name!r}, step {step.name}: {exc}") from None
        steps.append(
            NewStep(
                step=step.name,
                job=job.name,
                queue=job.queue,
                priority=job.priority,
                max_attempts=job.max_attempts,
                args=step_args,
                idempotency_key=None if step_args is None else idempotency_key(job, step_args),
            )
        )
    idempotency = flow.idempotency
    return NewFlow(
        name=flow.name,
        args=args,
        graph=flow_graph(flow, registry),
        steps=steps,
        idempotency_key=_key(flow, args),
        dedupe_window=None if idempotency is None else idempotency.dedupe_window,
        deadline=flow.deadline,
    )


def flow_graph(flow: WorkflowPolicy, registry: Registry) -> dict[str, Any]:
    """The graph a flow is stored with and settled by (JSON). Each step carries its
    job's idempotency key recipe, filled in with the step's args when it is released
    (a handler's ``first_run`` reads the key)."""
    notify = flow.notify
    return {
        "title": flow.title,
        "steps": {
            name: {
                "job": step.job,
                "after": dict(step.after),
                "args": {arg: _source(src) for arg, src in step.args.items()},
                "finally": step.is_finally,
                "key": registry.job(step.job).idempotency.key,
            }
            for name, step in ((n, flow.steps[n]) for n in flow.order())
        },
        "notify": None
        if notify is None or notify.channel is None
        else {
            "channel": notify.channel,
            "events": list(notify.events),
            "key_args": list(notify.key_args),
        },
    }


def _source(source: ArgSource) -> dict[str, Any]:
    if source.path is None:
        return {"value": thaw(source.literal)}
    return {"from": list(source.path)}


def _check_args(flow: WorkflowPolicy, args: Mapping[str, Any]) -> None:
    problem = args_problem(args, max_bytes=DEFAULT_ARGS_BYTES)
    if problem is not None:
        raise ArgsError(f"workflow {flow.name!r}: {problem}. Nothing was stored")
    cached = _checks.get(flow.name)
    if cached is None or cached[0] is not flow.args:
        cached = _checks[flow.name] = (flow.args, ArgsCheck(flow.args))
    errors = cached[1].errors(args)
    if errors:
        details = "; ".join(f"{where(tuple(e.path))}: {e.message}" for e in errors)
        raise ArgsError(
            f"workflow {flow.name!r}: {details}. Nothing was stored; pass args that match "
            f"the `args` of {flow.file or 'its sheet'}"
        )


def _root_args(flow: WorkflowPolicy, step: Step, args: Mapping[str, Any]) -> dict[str, Any]:
    """A root's args: literals, and values read from the flow's args."""
    resolved: dict[str, Any] = {}
    for arg, source in step.args.items():
        if source.path is None:
            resolved[arg] = thaw(source.literal)
            continue
        value: Any = args
        for part in source.path[1:]:
            if source.path[0] != "args" or not isinstance(value, Mapping) or part not in value:
                raise ArgsError(
                    f"workflow {flow.name!r}: step {step.name} reads {source}, which the "
                    "start did not pass. Nothing was stored; pass it in the flow's args"
                )
            value = value[part]
        resolved[arg] = value
    return resolved


def _key(flow: WorkflowPolicy, args: Mapping[str, Any]) -> str | None:
    recipe = None if flow.idempotency is None else flow.idempotency.key
    if recipe is None:
        return None
    missing = [name for name in key_placeholders(recipe) if name and name not in args]
    if missing:
        raise ArgsError(
            f"workflow {flow.name!r}: the idempotency key {recipe!r} uses "
            f"{', '.join(missing)}, which the start did not pass. Nothing was stored; pass it"
        )
    return recipe.format_map(dict(args))
