"""Workflow graphs (JD351-JD356): every step runs a known job, waits for known steps, and
the steps form a graph without a cycle, so that every step can start.

"Unreachable" in a flat graph with roots means one thing: a step that waits, directly
or through others, for a step on a cycle. Such a step can never start (the cycle never
ends), so the flow could never end. A step without parents and children is not
unreachable: it starts with the flow, beside the others.

:mod:`jobdef.policy.workflow` is imported by the checks that reach a Workflow, not
here: every `jobdef validate` and `jobdef enqueue` loads these rules, and a project
without a workflow need not pay for that module.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from jobdef.sheets.diagnostics import Diagnostic, Location
from jobdef.sheets.document import Document, Path_
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context
from jobdef.sheets.rules.schema import UNKNOWN_FIELD, WRONG_TYPE
from jobdef.sheets.schema_check import dotted
from jobdef.sheets.words import did_you_mean

if TYPE_CHECKING:
    from jobdef.policy.workflow import Step, WorkflowPolicy

UNKNOWN_JOB = Rule(
    "JD351",
    "workflow-unknown-job",
    "error",
    "A step runs a Job sheet by name; a name no sheet defines could never be enqueued.",
)
UNKNOWN_PARENT = Rule(
    "JD352",
    "workflow-unknown-parent",
    "error",
    "A step waiting for a step the flow does not have would wait forever.",
)
CYCLE = Rule(
    "JD353",
    "workflow-cycle",
    "error",
    "Steps that wait for each other never start: a flow is a graph without cycles.",
)
UNREACHABLE = Rule(
    "JD354",
    "workflow-unreachable-step",
    "error",
    "A step that waits, directly or through others, for a step on a cycle can never start.",
)
RESERVED_STEP = Rule(
    "JD355",
    "workflow-step-named-finally",
    "error",
    "`finally` names the flow's closing step; a step of that name would be two steps at once.",
)
NAME_TAKEN = Rule(
    "JD356",
    "workflow-name-taken",
    "error",
    "Jobs and workflows share one name space (docs pages, explain, status); one name, one thing.",
)
ARG_SHAPE = Rule(
    "JD357",
    "step-arg-shape",
    "error",
    "A mapping under a step's args is `{from: <path>}` or `{value: <literal>}`, exactly one: "
    "anything else could be read two ways.",
)
NO_STEPS = Rule(
    "JD358",
    "workflow-without-steps",
    "error",
    "A flow without steps would end the moment it starts, doing nothing.",
)
RULES = (
    UNKNOWN_JOB,
    UNKNOWN_PARENT,
    CYCLE,
    UNREACHABLE,
    RESERVED_STEP,
    NAME_TAKEN,
    ARG_SHAPE,
    NO_STEPS,
)


def step_path(step: Step) -> Path_:
    """Where a step is written in its sheet: ``("steps", name)`` or ``("finally",)``."""
    from jobdef.policy.workflow import FINALLY

    return (FINALLY,) if step.is_finally else ("steps", step.name)


def at(doc: Document, path: Path_, key: bool = False) -> Location:
    """The position of ``path`` in ``doc`` (its key when asked and it has one), else the
    nearest written parent's."""
    if key and path in doc.key_positions:
        return Location(doc.file, *doc.key_positions[path])
    while path:
        if path in doc.positions:
            return Location(doc.file, *doc.positions[path])
        if path in doc.key_positions:
            return Location(doc.file, *doc.key_positions[path])
        path = path[:-1]
    return Location(doc.file, doc.line, 1)


def step_at(doc: Document, step: Step) -> Location:
    """The step's name in the sheet (its key)."""
    return at(doc, step_path(step), key=True)


def edge_at(doc: Document, step: Step, parent: str) -> Location:
    """Where ``after:`` names ``parent``: the list item or the mapping's key."""
    after = doc.data.get("steps", {}).get(step.name, {}).get("after")
    path = (*step_path(step), "after")
    if isinstance(after, list) and parent in after:
        return at(doc, (*path, after.index(parent)))
    return at(doc, (*path, parent), key=True)


def _cycles(flow: WorkflowPolicy) -> list[tuple[str, ...]]:
    """Each cycle once, as the steps on it in order of waiting (a -> b: a waits for b)."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []
    found: list[tuple[str, ...]] = []
    seen: set[frozenset[str]] = set()

    def visit(name: str) -> None:
        state[name] = 1
        stack.append(name)
        for parent in flow.steps[name].after:
            if parent not in flow.steps:
                continue
            if state.get(parent) == 1:
                cycle = tuple(stack[stack.index(parent) :])
                if frozenset(cycle) not in seen:
                    seen.add(frozenset(cycle))
                    found.append(cycle)
            elif parent not in state:
                visit(parent)
        stack.pop()
        state[name] = 2

    for name in flow.steps:
        if name not in state:
            visit(name)
    return found


def on_cycles(flow: WorkflowPolicy) -> frozenset[str]:
    """The steps on a cycle (which validation refuses)."""
    return frozenset(name for cycle in _cycles(flow) for name in cycle)


_SOURCES = frozenset({"from", "value"})


def _written_steps(doc: Document) -> Iterator[tuple[Path_, Any]]:
    from jobdef.policy.workflow import FINALLY

    steps = doc.data.get("steps")
    if isinstance(steps, Mapping):
        for name, step in steps.items():
            yield ("steps", name), step
    if "finally" in doc.data:
        yield (FINALLY,), doc.data[FINALLY]


def check_document(doc: Document) -> Iterator[tuple[Path_, Diagnostic]]:
    """The shape the schema cannot say well: one key in each arg mapping, some steps."""
    if doc.kind != "Workflow":
        return
    if doc.data.get("steps") == {}:
        yield (
            ("steps",),
            NO_STEPS.at_origin(
                at(doc, ("steps",), key=True),
                "steps is empty; list at least one step (name: {job: <a job's name>})",
            ),
        )
    for path, step in _written_steps(doc):
        yield from _after_shape(doc, path, step)
        args = step.get("args") if isinstance(step, Mapping) else None
        if not isinstance(args, Mapping):
            continue
        for name, value in args.items():
            if not isinstance(value, Mapping) or (len(value) == 1 and set(value) <= _SOURCES):
                continue
            where = (*path, "args", name)
            yield (
                where,
                ARG_SHAPE.at_origin(
                    at(doc, where),
                    f"arg {name!r} of {dotted(path)} is a mapping with "
                    f"{', '.join(map(str, value)) or 'no key'}; write {{from: args.<name>}} or "
                    f"{{from: steps.<step>.result.<field>}} to read a value, or {{value: ...}} "
                    "around a literal mapping",
                ),
            )


def _after_shape(doc: Document, path: Path_, step: Any) -> Iterator[tuple[Path_, Diagnostic]]:
    """``after:`` written as one name, or under ``finally``: said in the sheet's words."""
    if not isinstance(step, Mapping) or "after" not in step:
        return
    from jobdef.policy.workflow import FINALLY

    where = (*path, "after")
    if path == (FINALLY,):
        yield (
            where,
            UNKNOWN_FIELD.at_origin(
                at(doc, where, key=True),
                "finally has no after: it waits for every other step of the flow by definition; "
                "remove after: here",
            ),
        )
    elif isinstance(step["after"], str):
        name = step["after"]
        yield (
            where,
            WRONG_TYPE.at_origin(
                at(doc, where),
                f"{dotted(where)}: expected a list or a mapping, got the string {name!r}; write "
                f"after: [{name}], or after: {{{name}: cancel}} to name the edge's policy",
            ),
        )


def check(context: Context) -> Iterator[Diagnostic]:
    jobs = {policy.name for _, policy in context.jobs}
    job_docs = {
        str(doc.data["name"]): doc
        for doc in context.documents
        if doc.kind == "Job" and isinstance(doc.data.get("name"), str)
    }
    for doc, flow in context.workflows:
        if flow.name in job_docs:
            other = job_docs[flow.name]
            yield NAME_TAKEN.at_origin(
                at(doc, ("name",)),
                f"workflow {flow.name!r} has the name of the job defined at {other.file}:"
                f"{other.positions.get(('name',), (other.line, 1))[0]}; rename the workflow "
                "(e.g. add _flow)",
            )
        yield from _graph(doc, flow, jobs | set(job_docs))


def _graph(doc: Document, flow: WorkflowPolicy, jobs: set[str]) -> Iterator[Diagnostic]:
    from jobdef.policy.workflow import FINALLY

    written = doc.data.get("steps", {})
    if FINALLY in written:
        yield RESERVED_STEP.at_origin(
            at(doc, ("steps", FINALLY), key=True),
            "a step may not be named 'finally': that word names the flow's closing step; "
            "rename the step, or move it to a top-level `finally:` if it must run whatever "
            "happened",
        )
    for step in flow.steps.values():
        if step.is_finally and step.name in written:
            continue  # the step named finally, reported above
        if step.job not in jobs:
            yield UNKNOWN_JOB.at_origin(
                at(doc, (*step_path(step), "job")),
                f"step {step.name!r} runs job {step.job!r}, which no sheet defines"
                f"{did_you_mean(step.job, jobs)}; fix the name or add a Job sheet for it",
            )
        for parent in step.after:
            if parent in flow.steps and not flow.steps[parent].is_finally:
                continue
            if parent == FINALLY:
                hint = "; nothing can wait for `finally`: it runs after every other step"
            else:
                steps = [s for s in flow.steps if s not in (FINALLY, step.name)]
                hint = did_you_mean(parent, steps) or (
                    f" (steps: {', '.join(steps) or 'none'}); name one of them"
                )
            yield UNKNOWN_PARENT.at_origin(
                edge_at(doc, step, parent),
                f"step {step.name!r} waits for {parent!r}, which is no step of workflow "
                f"{flow.name!r}{hint}",
            )
    cycles = _cycles(flow)
    for cycle in cycles:
        first = flow.steps[cycle[0]]
        ring = " -> ".join((*cycle, cycle[0]))
        yield CYCLE.at_origin(
            edge_at(doc, first, cycle[1] if len(cycle) > 1 else cycle[0]),
            f"steps wait for each other ({ring}, where a -> b means a waits for b), so none "
            f"of them can start; remove one of these edges from `after:`",
        )
    looped = {name for cycle in cycles for name in cycle}
    for step in flow.steps.values():
        if step.name in looped or step.is_finally:
            continue
        blocked = sorted(flow.ancestors(step.name) & looped)
        if blocked:
            yield UNREACHABLE.at_origin(
                step_at(doc, step),
                f"step {step.name!r} can never start: it waits (directly or through others) "
                f"for {', '.join(map(repr, blocked))}, on a cycle; break the cycle "
                "(see the workflow-cycle finding)",
            )
