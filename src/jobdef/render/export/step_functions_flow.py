"""``jobdef export FLOW --format step-functions``: a Workflow as one ASL state machine.

The steps are nested as sequences and ``Parallel`` states (:func:`nest`): a chain is
a sequence, independent groups of steps are the branches of a ``Parallel``, and a
fan-in ends one. Each step is the ``Task`` that ``jobdef export JOB --format
step-functions`` writes for its job (its retriers and its catch into a
``RecordDead`` message from the job's sheet); what happens after its ``RecordDead``
follows the edges out of the step:

- every edge ``run`` or ``ignore``: the step's failure ends its branch normally, and
  the flow goes on (the error is dropped);
- otherwise (a ``cancel`` edge, or no child): the failure fails the step's branch,
  which fails its ``Parallel`` (Step Functions stops the other branches), and so on
  up to the top, so nothing after it runs.

A failure at the top is caught into the ``finally`` step when the flow has one
(the error under ``$.error``), which then ends the execution in ``Failed``; after
success it ends in ``Done``. Without ``finally`` a failure ends in ``Failed``.

What the machine cannot say is a note: a step that waits for more than its parents
(a graph that is not series-parallel), a ``run`` edge beside a ``cancel`` edge of the
same parent, siblings stopped by a failing branch, args read from a parent's result.
"""

from __future__ import annotations

from typing import Any

from jobdef.policy.registry import Registry
from jobdef.policy.workflow import WorkflowPolicy
from jobdef.render.export.common import Notes
from jobdef.render.export.step_functions import (
    RECORD_STATE,
    STATE_NAME_MAX,
    convert,
    state_machine,
)

# The notes of a job's own export that do not hold for it as a step: the flow has its own
# key, notify, deadline and history, and a step's result is not the execution's output.
_JOB_ONLY = ("retention", "deadline", "result", "idempotency", "notify")

FAILED_STATE = "Failed"
DONE_STATE = "Done"
ENDED_STATE = "Ended"


# A piece of the flow: a step's name, or a Parallel state's branches, each a sequence.
Item = str | list[list["Item"]]


def nest(flow: WorkflowPolicy) -> list[Item]:
    """The steps (``finally`` apart) as a sequence of steps and Parallel states.

    Of the steps left, the only one waiting for none of the others comes first; steps
    that fall apart into groups with no edge between them are a Parallel state, a
    branch per group; in a group with several first steps, a step that every other
    one waits for or is waited for by (a fan-in) splits it in two, its ancestors
    before it. A group with none of these (a graph that is not series-parallel, or a
    full fan-in of several steps) takes its first steps as a Parallel state of their
    own, then the rest: a step may then wait for more than its parents (noted by the
    caller).
    """
    steps = [name for name in flow.order() if not flow.steps[name].is_finally]
    return _sequence(flow, steps)


def _sequence(flow: WorkflowPolicy, names: list[str]) -> list[Item]:
    out: list[Item] = []
    left = list(names)
    while left:
        inside = set(left)
        groups = _groups(flow, left)
        if len(groups) > 1:
            out.append([_sequence(flow, group) for group in groups])
            return out
        firsts = [n for n in left if not any(p in inside for p in flow.steps[n].after)]
        join = _join(flow, left) if len(firsts) > 1 else None
        if join is not None:  # what join waits for, then join: a series split
            before = [n for n in left if n in flow.ancestors(join)]
            out.extend(_sequence(flow, before))
            out.append(join)
            left = [n for n in left if n not in before and n != join]
            continue
        out.append(firsts[0] if len(firsts) == 1 else [[name] for name in firsts])
        left = [n for n in left if n not in firsts]
    return out


def _join(flow: WorkflowPolicy, names: list[str]) -> str | None:
    """The first of ``names`` that every other one waits for or is waited for by."""
    for name in names:
        before = flow.ancestors(name)
        if all(o == name or o in before or name in flow.ancestors(o) for o in names):
            return name
    return None


def _groups(flow: WorkflowPolicy, names: list[str]) -> list[list[str]]:
    """``names`` in groups joined by edges (either way), each in ``names``' order."""
    inside = set(names)
    group: dict[str, int] = {}
    for start in names:
        if start in group:
            continue
        group[start] = start_id = len(set(group.values()))
        stack = [start]
        while stack:
            node = stack.pop()
            near = [p for p in flow.steps[node].after if p in inside]
            near += [c for c in flow.children(node) if c in inside]
            for other in near:
                if other not in group:
                    group[other] = start_id
                    stack.append(other)
    count = len(set(group.values()))
    return [[n for n in names if group[n] == i] for i in range(count)]


def _waits(
    items: list[Item], before: frozenset[str], out: dict[str, frozenset[str]]
) -> frozenset[str]:
    """What each step waits for in the state machine (``out``); returns the steps ended
    after ``items``."""
    done = before
    for item in items:
        if isinstance(item, str):
            out[item] = done
            done = done | {item}
        else:
            ended = [_waits(branch, done, out) for branch in item]
            done = done.union(*ended)
    return done


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


def _note_waits(flow: WorkflowPolicy, items: list[Item], notes: Notes) -> None:
    """A note per step that waits, in the state machine, for steps that are not its
    ancestors; one for the branches a failing branch stops."""
    waits: dict[str, frozenset[str]] = {}
    _waits(items, frozenset(), waits)
    for name in flow.order():
        extra = [
            s for s in flow.order() if s in waits.get(name, ()) and s not in flow.ancestors(name)
        ]
        if extra:
            notes.add(
                f"steps.{name}.after",
                f"the graph is not series-parallel, so in Step Functions {name} also waits "
                f"for {', '.join(extra)}, which the sheet does not make it wait for",
            )
    if any(not isinstance(item, str) for item in items):
        notes.add(
            "steps",
            "a failing branch stops the other branches of its Parallel state; jobdef lets "
            "the steps that do not wait for it run on",
        )


class _Builder:
    """The states of a sequence of items, Parallel states named in order."""

    def __init__(self, flow: WorkflowPolicy, registry: Registry, notes: Notes, failed: str):
        self.flow, self.registry, self.notes, self.failed = flow, registry, notes, failed
        self.count = 0
        self.heads: dict[int, str] = {}

    def head(self, item: Item) -> str:
        if isinstance(item, str):
            return item
        if id(item) not in self.heads:
            self.count += 1
            self.heads[id(item)] = f"parallel {self.count}"
        return self.heads[id(item)]

    def sequence(self, items: list[Item], then: str | None, *, top: bool) -> dict[str, Any]:
        states: dict[str, Any] = {}
        heads = [self.head(item) for item in items]
        for i, item in enumerate(items):
            after = heads[i + 1] if i + 1 < len(heads) else then
            if isinstance(item, str):
                on_dead = None
                if not _goes_on(self.flow, item, self.notes):
                    on_dead = self.failed if top else ""
                states.update(
                    _step_states(
                        self.flow, self.registry, item, self.notes, then=after, on_dead=on_dead
                    )
                )
                continue
            parallel: dict[str, Any] = {
                "Type": "Parallel",
                "Branches": [
                    {
                        "StartAt": self.head(branch[0]),
                        "States": self.sequence(branch, None, top=False),
                    }
                    for branch in item
                ],
                "ResultPath": None,
            }
            if top:
                parallel["Catch"] = [
                    {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": self.failed}
                ]
            if after is None:
                parallel["End"] = True
            else:
                parallel["Next"] = after
            states[heads[i]] = parallel
        return states


def convert_flow(flow: WorkflowPolicy, registry: Registry, notes: Notes) -> dict[str, Any]:
    """The state machine definition of ``flow``."""
    items = nest(flow)
    last = flow.finally_step
    failed = last.name if last is not None else FAILED_STATE
    builder = _Builder(flow, registry, notes, failed)
    start = builder.head(items[0]) if items else failed
    states = builder.sequence(items, last.name if last is not None else None, top=True)
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
    _note_waits(flow, items, notes)
    _note_flow(flow, notes)
    machine = state_machine(flow.name, flow.file, start, flow.deadline, notes, catch="finally")
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
