"""``jobdef export FLOW --format step-functions``: a Workflow as one ASL state machine.

The steps run in topological layers (a step's layer is one more than its deepest
parent's): a layer of one step is that step's states, a layer of several is a
``Parallel`` state with one branch per step. Each step is the ``Task`` that
``jobdef export JOB --format step-functions`` writes for its job (its retriers and
its catch into a ``RecordDead`` message from the job's sheet); what happens after
its ``RecordDead`` follows the edges out of the step:

- every edge ``run`` or ``ignore``: the step's failure ends its branch normally, and
  the flow goes on (the error is dropped);
- otherwise (a ``cancel`` edge, or no child): the failure fails the step's branch,
  which fails the layer's ``Parallel`` (Step Functions stops its other branches), so
  no later layer runs.

A failed layer is caught into the ``finally`` step when the flow has one (the
error under ``$.error``), which then ends the execution in ``Failed``; after
success it ends in ``Done``. Without ``finally`` a failed layer ends in ``Failed``.

What the layers cannot say is a note: a step that waits for more than its parents
(a graph that is not layer by layer: a step whose parents are not the whole layer
before it), a ``run`` edge beside a ``cancel`` edge of the same parent, siblings
stopped by a failing branch, args read from a parent's result.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from jobdef.policy.registry import Registry
from jobdef.policy.workflow import WorkflowPolicy
from jobdef.render.export.common import Notes, whole_seconds
from jobdef.render.export.step_functions import (
    INTEGER_MAX,
    RECORD_STATE,
    STATE_NAME_MAX,
    convert,
)

# The notes of a job's own export that do not hold for it as a step: the flow has its own
# key, notify, deadline and history, and a step's result is not the execution's output.
_JOB_ONLY = ("retention", "deadline", "result", "idempotency", "notify")

FAILED_STATE = "Failed"
DONE_STATE = "Done"
ENDED_STATE = "Ended"


def layers(flow: WorkflowPolicy) -> list[list[str]]:
    """The steps (``finally`` apart) by layer: each step one layer after its deepest parent,
    in sheet order within a layer."""
    depth: dict[str, int] = {}
    for name in flow.order():
        step = flow.steps[name]
        if step.is_finally:
            continue
        depth[name] = 1 + max((depth[p] for p in step.after if p in depth), default=-1)
    out: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for name, level in depth.items():
        out[level].append(name)
    return out


def _goes_on(flow: WorkflowPolicy, step: str, notes: Notes) -> bool:
    """Whether the flow goes on after ``step`` is dead: every edge out of it runs anyway."""
    children = flow.children(step)
    policies = {child: flow.steps[child].after[step] for child in children}
    cancelled = [c for c, p in policies.items() if p == "cancel"]
    running = [c for c, p in policies.items() if p != "cancel"]
    if running and cancelled:
        for child in running:
            notes.add(
                f"steps.{child}.after.{step}",
                f"{policies[child]} cannot be kept: {step} also has cancel edges "
                f"({', '.join(cancelled)}), so its failure ends the flow and {child} "
                "does not run",
            )
    return bool(running) and not cancelled


def _step_states(
    flow: WorkflowPolicy,
    registry: Registry,
    name: str,
    notes: Notes,
    *,
    then: str | None,
    on_dead: str | None,
) -> dict[str, Any]:
    """The states of one step: its job's Task, its RecordDead, and (``on_dead`` None: the
    failure ends the branch normally) a Fail state of its own when ``on_dead`` is ``""``.

    ``then``: the next state after success (None: the branch ends); ``on_dead``: the
    state after RecordDead (``""``: a Fail state for this step, None: go on as ``then``).
    """
    step = flow.steps[name]
    job = registry.job(step.job)
    own = Notes(job.name)
    machine = convert(job, registry, own)["definition"]
    task = dict(machine["States"][machine["StartAt"]])
    kept = [n for n in own.items if n.field.partition(".")[0] not in _JOB_ONLY]
    for note in kept:
        notes.add(f"steps.{name}.{note.field}", note.text)
    task.pop("Comment", None)
    if kept:
        task["Comment"] = "jobdef notes: " + " | ".join(f"{n.field}: {n.text}" for n in kept)
    if job.deadline is not None:
        notes.add(
            f"steps.{name}.deadline",
            "a job's deadline has no place on a Task in a flow; the flow's deadline is the "
            "state machine's TimeoutSeconds",
        )
    record = f"{name}.{RECORD_STATE}"[:STATE_NAME_MAX]
    task.pop("End", None)
    task.pop("ResultSelector", None)
    task["ResultPath"] = None  # each step passes the flow's input on to the next
    task["Catch"] = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": record}]
    if then is None:
        task["End"] = True
    else:
        task["Next"] = then
    record_state: dict[str, Any] = {
        "Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage",
        "Parameters": {"QueueUrl": "${DeadLetterQueueUrl}", "MessageBody.$": "$"},
        "ResultPath": None,
    }
    states: dict[str, Any] = {name: task, record: record_state}
    if on_dead == "":
        dead = f"{name}.Dead"[:STATE_NAME_MAX]
        record_state["Next"] = dead
        states[dead] = {
            "Type": "Fail",
            "Error": "jobdef.Dead",
            "Cause": f"step {name} ({job.name}) is dead: a fatal error, or its last attempt failed",
        }
    elif on_dead is None:
        # The error is dropped: what comes next reads the flow's input as it was.
        task["Catch"][0]["ResultPath"] = None
        if then is None:
            record_state["End"] = True
        else:
            record_state["Next"] = then
    else:
        record_state["Next"] = on_dead
    return states


def _note_layers(flow: WorkflowPolicy, levels: list[list[str]], notes: Notes) -> None:
    """A note per step that waits, in layers, for steps that are not its ancestors."""
    before: list[str] = []
    for level in levels:
        for name in level:
            extra = [s for s in before if s not in flow.ancestors(name)]
            if extra:
                notes.add(
                    f"steps.{name}.after",
                    f"Step Functions runs the flow in layers, so {name} also waits for "
                    f"{', '.join(extra)}, which the sheet does not make it wait for",
                )
        before.extend(level)
    if any(len(level) > 1 for level in levels):
        notes.add(
            "steps",
            "a failing branch stops the other branches of its Parallel state; jobdef lets "
            "the steps that do not wait for it run on",
        )


def convert_flow(flow: WorkflowPolicy, registry: Registry, notes: Notes) -> dict[str, Any]:
    """The state machine definition of ``flow``."""
    levels = layers(flow)
    last = flow.finally_step
    failed = last.name if last is not None else FAILED_STATE
    heads = [level[0] if len(level) == 1 else f"layer {i + 1}" for i, level in enumerate(levels)]
    after_body = last.name if last is not None else None
    states: dict[str, Any] = {}
    for i, level in enumerate(levels):
        then = heads[i + 1] if i + 1 < len(heads) else after_body
        if len(level) == 1:
            name = level[0]
            on_dead = None if _goes_on(flow, name, notes) else failed
            states.update(_step_states(flow, registry, name, notes, then=then, on_dead=on_dead))
            continue
        branches = []
        for name in level:
            on_dead = None if _goes_on(flow, name, notes) else ""
            branch = _step_states(flow, registry, name, notes, then=None, on_dead=on_dead)
            branches.append({"StartAt": name, "States": branch})
        parallel: dict[str, Any] = {
            "Type": "Parallel",
            "Branches": branches,
            "ResultPath": None,
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": failed}],
        }
        if then is None:
            parallel["End"] = True
        else:
            parallel["Next"] = then
        states[heads[i]] = parallel
    if last is not None:
        states.update(
            _step_states(flow, registry, last.name, notes, then=ENDED_STATE, on_dead=FAILED_STATE)
        )
        states[ENDED_STATE] = {
            "Type": "Choice",
            "Choices": [{"Variable": "$.error", "IsPresent": True, "Next": FAILED_STATE}],
            "Default": DONE_STATE,
        }
        states[DONE_STATE] = {"Type": "Succeed"}
    states[FAILED_STATE] = {
        "Type": "Fail",
        "Error": "jobdef.FlowFailed",
        "Cause": f"a step of {flow.name} is dead",
    }
    _note_layers(flow, levels, notes)
    _note_flow(flow, notes)
    sheet = PurePath(flow.file).name or "its sheet"
    machine: dict[str, Any] = {"Comment": f"{flow.name}: exported by jobdef from {sheet}"}
    machine["StartAt"] = heads[0] if heads else failed
    if flow.deadline is not None:
        machine["TimeoutSeconds"] = whole_seconds(
            flow.deadline,
            1,
            INTEGER_MAX,
            notes,
            "deadline",
            target="the state machine's TimeoutSeconds",
        )
        notes.add(
            "deadline",
            "an execution past its TimeoutSeconds fails with States.Timeout uncaught: "
            "finally does not run for it",
        )
    machine["States"] = states
    return {"definition": machine}


def _note_flow(flow: WorkflowPolicy, notes: Notes) -> None:
    for step in flow.steps.values():
        read = sorted({str(src) for src in step.args.values() if src.step is not None})
        if read:
            notes.add(
                f"steps.{step.name}.args",
                f"each step's Lambda gets the execution's input (the flow's args), not "
                f"{', '.join(read)}: map a parent's result with the Task's Parameters",
            )
    going_on = [s for s in flow.steps if not flow.steps[s].is_finally and _quiet_goes_on(flow, s)]
    if going_on:
        notes.add(
            "steps",
            f"a dead {', '.join(going_on)} lets the execution go on and succeed, where jobdef "
            "ends the flow failed",
        )
    if flow.idempotency is not None and flow.idempotency.key:
        notes.add(
            "idempotency.key",
            "start each execution with the key as its name: a Standard state machine "
            "refuses a duplicate name for 90 days",
        )
    if flow.notify is not None and flow.notify.events:
        notes.add(
            "notify",
            "not sent by Step Functions; alarm on ExecutionsFailed or add an SNS Publish "
            "before Failed",
        )


def _quiet_goes_on(flow: WorkflowPolicy, step: str) -> bool:
    return _goes_on(flow, step, Notes(flow.name))
