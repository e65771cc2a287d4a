"""Workflow step args (JD361-JD367): each step's args, literal or read with ``from:``,
checked against its job's args schema, the flow's args schema and the parents' results.

A ``from:`` path is checked as far as the schemas say: a field a schema closes
(``additionalProperties: false``) or lists no property of is unknown; a source whose
``type`` the job's arg does not accept is a mismatch (an integer fits a number).
Reading a parent's result needs three things at once: the step waits for it
(directly or through others), its job stores results, and it cannot be anything but
done when this step runs: a chain of ``cancel`` edges leads to it. With a ``run`` or
``ignore`` edge on the way, the parent may have ended dead or been pruned, and there
would be no result to read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from jobdef.sheets.args_check import args_check
from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context
from jobdef.sheets.rules.idempotency import recipe_findings
from jobdef.sheets.rules.notify import UNKNOWN_CHANNEL
from jobdef.sheets.rules.workflows import at, step_path
from jobdef.sheets.words import did_you_mean, listing

if TYPE_CHECKING:
    from jobdef.policy.model import JobPolicy
    from jobdef.policy.workflow import ArgSource, Step, WorkflowPolicy

UNKNOWN_ARG = Rule(
    "JD361",
    "step-arg-unknown",
    "error",
    "An arg the step's job does not define is refused at enqueue: the step would die at once.",
)
MISSING_ARG = Rule(
    "JD362",
    "step-arg-missing",
    "error",
    "An arg the step's job requires and the step does not give is refused at enqueue.",
)
LITERAL_INVALID = Rule(
    "JD363",
    "step-arg-literal-invalid",
    "error",
    "A literal the job's args schema refuses would fail every run of the flow at that step.",
)
UNKNOWN_PATH = Rule(
    "JD364",
    "step-arg-path-unknown",
    "error",
    "A `from:` path must name something the flow's args or the parent's result schema has.",
)
TYPE_MISMATCH = Rule(
    "JD365",
    "step-arg-type-mismatch",
    "error",
    "A value whose type the job's arg does not accept fails the step's enqueue at run time.",
)
RESULT_NOT_STORED = Rule(
    "JD366",
    "step-reads-unstored-result",
    "error",
    "A job with `result.store: false` keeps no result: there is nothing for a child to read.",
)
RESULT_NOT_SURE = Rule(
    "JD367",
    "step-reads-result-not-ensured",
    "error",
    "A step may read only the result of a step that is surely done when it runs: an "
    "ancestor reached through `cancel` edges only.",
)
MAYBE_ABSENT = Rule(
    "JD368",
    "step-arg-maybe-absent",
    "warning",
    "A value the schemas allow to be absent (an optional flow arg, a result field not "
    "required), passed to an arg the job requires, fails the step whenever it is absent.",
)
RULES = (
    UNKNOWN_ARG,
    MISSING_ARG,
    LITERAL_INVALID,
    UNKNOWN_PATH,
    TYPE_MISMATCH,
    RESULT_NOT_STORED,
    RESULT_NOT_SURE,
    MAYBE_ABSENT,
)


def ensured(flow: WorkflowPolicy, step: str, ancestor: str) -> bool:
    """Whether ``ancestor`` is surely done whenever ``step`` runs: a ``cancel`` edge leads
    from ``step`` to it, or to a step of which this holds (that step ran, so it was done
    only after its own ``cancel`` parents were done)."""
    seen: set[str] = set()
    stack = [step]
    while stack:
        node = flow.steps.get(stack.pop())
        if node is None or node.name in seen:
            continue
        seen.add(node.name)
        for parent, policy in node.after.items():
            if policy != "cancel":
                continue
            if parent == ancestor:
                return True
            stack.append(parent)
    return False


def _types(schema: Mapping[str, Any] | None) -> frozenset[str] | None:
    """The JSON types a schema allows, when it says (``type`` or ``const``/``enum``)."""
    if not isinstance(schema, Mapping):
        return None
    written = schema.get("type")
    if isinstance(written, str):
        return frozenset({written})
    if isinstance(written, tuple | list):
        return frozenset(map(str, written))
    return None


def _accepts(target: frozenset[str], source: str) -> bool:
    return source in target or (source == "integer" and "number" in target)


def _optional(schema: Mapping[str, Any] | None, fields: tuple[str, ...]) -> str | None:
    """The first of ``fields`` that ``schema`` lists as a property without requiring it."""
    node = schema
    for name in fields:
        if not isinstance(node, Mapping) or not isinstance(node.get("properties"), Mapping):
            return None
        if name in node["properties"] and name not in node.get("required", ()):
            return name
        node = node["properties"].get(name)
    return None


def _descend(
    schema: Mapping[str, Any] | None, fields: tuple[str, ...]
) -> tuple[Mapping[str, Any] | None, str | None]:
    """The schema at ``fields`` inside ``schema`` and the first field it has not
    (``None``: found, or the schema does not say)."""
    node = schema
    for name in fields:
        if not isinstance(node, Mapping):
            return None, None
        props = node.get("properties")
        if isinstance(props, Mapping) and name in props:
            node = props[name]
            continue
        closed = node.get("additionalProperties") is False
        types = _types(node)
        if closed or (types is not None and "object" not in types):
            return None, name
        return None, None  # open: anything may be there
    return node, None


class _Step:
    """The findings about one step's args, and where each is."""

    def __init__(self, doc: Document, flow: WorkflowPolicy, step: Step) -> None:
        self.doc, self.flow, self.step = doc, flow, step

    def arg_at(self, name: str, key: bool = True) -> Any:
        return at(self.doc, (*step_path(self.step), "args", name), key=key)

    def source_at(self, name: str) -> Any:
        return at(self.doc, (*step_path(self.step), "args", name, "from"))

    def check(self, job: JobPolicy, jobs: Mapping[str, JobPolicy]) -> Iterator[Diagnostic]:
        step = self.step
        props: Mapping[str, Any] = job.args_schema.get("properties", {})
        required = job.args_schema.get("required", ())
        who = f"step {step.name!r} (job {job.name!r})"
        missing = [name for name in required if name not in step.args]
        if missing:
            listed = listing(missing)
            yield MISSING_ARG.at_origin(
                at(self.doc, (*step_path(step), "args"), key=True)
                if step.args
                else at(self.doc, (*step_path(step), "job")),
                f"{who} does not give the arg{'s' if len(missing) > 1 else ''} {listed} its "
                f"job requires; add {'them' if len(missing) > 1 else 'it'} under args:, e.g. "
                f"{missing[0]}: {{from: args.{missing[0]}}}",
            )
        for name, source in step.args.items():
            if name not in props:
                known = listing(props)
                hint = did_you_mean(name, props) or f" (its args: {known})"
                yield UNKNOWN_ARG.at_origin(
                    self.arg_at(name),
                    f"{who} gives arg {name!r}, which job {job.name!r} does not define{hint}; "
                    "remove it or fix its name",
                )
                continue
            if source.path is None:
                errors = args_check(job).arg_errors(name, source.literal)
                if errors:
                    yield LITERAL_INVALID.at_origin(
                        self.arg_at(name, key=False),
                        f"{who}: the literal for arg {name!r} breaks the job's args schema "
                        f"({errors[0].message}); write a value the job accepts",
                    )
                continue
            yield from self._source(name, source, props[name], jobs, name in required)

    def _source(
        self,
        name: str,
        source: ArgSource,
        target: Any,
        jobs: Mapping[str, JobPolicy],
        needed: bool,
    ) -> Iterator[Diagnostic]:
        step, flow = self.step, self.flow
        path = source.path or ()
        where = self.source_at(name)
        if path[0] == "args":
            flow_props: Mapping[str, Any] = flow.args.get("properties", {})
            if path[1] not in flow_props:
                yield UNKNOWN_PATH.at_origin(
                    where,
                    f"step {step.name!r} reads {source}, but workflow {flow.name!r} has no arg "
                    f"{path[1]!r}{did_you_mean(path[1], flow_props)}; add it under the flow's "
                    "args: or fix the path",
                )
                return
            found, lacking = _descend(flow_props[path[1]], path[2:])
            owner = f"the flow's arg {path[1]!r}"
            absent = _optional(flow.args, path[1:])
            if absent == path[1]:
                owner = f"workflow {flow.name!r}"
        else:
            parent = path[1]
            if step.is_finally:
                yield RESULT_NOT_SURE.at_origin(
                    where,
                    f"the finally step reads {source}, but it runs whatever happened, also "
                    f"when {parent!r} never ran; read only the flow's args (args.<name>) there",
                )
                return
            if parent not in flow.steps or parent not in flow.ancestors(step.name):
                hint = (
                    f"add {parent!r} to its after:"
                    if parent in flow.steps
                    else f"no step is named {parent!r}"
                    f"{did_you_mean(parent, list(flow.ancestors(step.name)))}"
                )
                yield RESULT_NOT_SURE.at_origin(
                    where,
                    f"step {step.name!r} reads {source}, but does not wait for {parent!r} "
                    f"(directly or through others), so that result may not exist yet; {hint}",
                )
                return
            parent_job = jobs.get(flow.steps[parent].job)
            if parent_job is None:
                return  # reported as an unknown job
            if not parent_job.result.store:
                yield RESULT_NOT_STORED.at_origin(
                    where,
                    f"step {step.name!r} reads {source}, but job {parent_job.name!r} (step "
                    f"{parent!r}) has result.store: false, so it keeps no result; set "
                    "result.store: true in its sheet, or read the value from the flow's args",
                )
                return
            if not ensured(flow, step.name, parent):
                yield RESULT_NOT_SURE.at_origin(
                    where,
                    f"step {step.name!r} reads {source}, but a `run` or `ignore` edge on the "
                    f"way lets it run when {parent!r} ended dead, cancelled or missing, with "
                    "no result; make every edge from this step to it `cancel` (the default), "
                    "or read something else",
                )
                return
            found, lacking = _descend(parent_job.result.schema, path[3:])
            owner = f"the result schema of job {parent_job.name!r}"
            absent = _optional(parent_job.result.schema, path[3:])
        if lacking is not None:
            yield UNKNOWN_PATH.at_origin(
                where,
                f"step {step.name!r} reads {source}, but {owner} has no field {lacking!r}; "
                "fix the path or add the field to that schema",
            )
            return
        if needed and absent is not None:
            yield MAYBE_ABSENT.at_origin(
                where,
                f"step {step.name!r} passes {source} as arg {name!r}, which its job "
                f"requires, but {owner} does not require {absent!r}: the step fails whenever "
                f"it is absent; require {absent!r} there, or give the job's arg "
                "`required: false`",
            )
        have, want = _types(found), _types(target)
        if have is None or want is None:
            return
        refused = sorted(t for t in have if not _accepts(want, t))
        if refused:
            yield TYPE_MISMATCH.at_origin(
                where,
                f"step {step.name!r} passes {source} ({' or '.join(sorted(have))}) as arg "
                f"{name!r}, which accepts {' or '.join(sorted(want))} only; the "
                f"{', '.join(refused)} case would fail the step; read a field of the right "
                "type, or align the two schemas",
            )


def check(context: Context) -> Iterator[Diagnostic]:
    jobs = {policy.name: policy for _, policy in context.jobs}
    channels = context.channels
    for doc, flow in context.workflows:
        for step in flow.steps.values():
            job = jobs.get(step.job)
            if job is not None:
                yield from _Step(doc, flow, step).check(job, jobs)
        yield from _flow_fields(doc, flow, channels)


def _flow_fields(
    doc: Document, flow: WorkflowPolicy, channels: Mapping[str, Document]
) -> Iterator[Diagnostic]:
    """The flow's own key recipe and notify channel, under the rules a Job's obey
    (JD241-JD245, JD251)."""
    recipe = flow.idempotency.key if flow.idempotency is not None else None
    if recipe is not None:
        yield from recipe_findings(recipe, flow.args, at(doc, ("idempotency", "key")), "flow")
    channel = flow.notify.channel if flow.notify is not None else None
    if channel is not None and channel not in channels:
        yield UNKNOWN_CHANNEL.at_origin(
            at(doc, ("notify", "channel")),
            f"notify.channel {channel!r} is not defined by any Channel"
            f"{did_you_mean(channel, channels)}; add a Channel document with that name or "
            "fix the name",
        )
