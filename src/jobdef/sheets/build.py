"""A folder of sheets turned into effective policies: the registry everything reads.

:func:`build_registry` merges each ``Defaults`` document into every ``Job`` and
returns frozen :class:`~jobdef.policy.model.JobPolicy` objects. It assumes documents
that passed validation; :func:`load_registry` is the one entry point that loads,
validates and builds, and raises :class:`~jobdef.errors.SheetError` on findings.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jobdef.policy.durations import parse_duration
from jobdef.policy.fields import FIELDS, JOB_FIELDS, PolicyField
from jobdef.policy.model import (
    ChannelPolicy,
    ErrorClass,
    IdempotencyPolicy,
    JobPolicy,
    Origin,
    QueuePolicy,
    RuntimesPolicy,
    Source,
)
from jobdef.policy.sizes import parse_size
from jobdef.policy.values import freeze
from jobdef.sheets.document import Document, Path_
from jobdef.sheets.field_paths import MERGED_MAPPINGS, RUNTIME, field_paths

if TYPE_CHECKING:
    from jobdef.policy.registry import Registry
    from jobdef.policy.workflow import ArgSource, EdgePolicy, Step, WorkflowPolicy


def _merged_runtime(inherited: Any, own: Any) -> Any:
    """A Job's entry of one runtime (``runtime.celery``) over the Defaults' entry: its
    ``accept`` adds to the Defaults' list. An accept acknowledges how a runtime treats a
    field's value, and a Job keeps every value of the Defaults it does not set itself, so
    it keeps their acknowledgements too (a Job's list replacing them would fail `jobdef
    check` on fields the Job never wrote)."""
    if not (isinstance(inherited, Mapping) and isinstance(own, Mapping)):
        return own
    accept = [*inherited.get("accept", ()), *own.get("accept", ())]
    merged = {**inherited, **own}
    if accept:
        merged["accept"] = list(dict.fromkeys(accept))
    return merged


def _effective(
    job: Document, defaults: Sequence[Document]
) -> tuple[dict[Path_, Any], dict[str, Origin]]:
    """Merge defaults under the job's own values, recording each value's origin."""
    values: dict[Path_, Any] = {}
    origins: dict[str, Origin] = {}
    sources: list[tuple[Document, Source]] = [*((d, "defaults") for d in defaults), (job, "sheet")]
    for doc, source in sources:
        for path, value in field_paths(doc.data).items():
            if path[0] in ("apiVersion", "kind") or (source == "defaults" and path[0] == "name"):
                continue
            if source == "sheet" and path[0] in MERGED_MAPPINGS and len(path) == 1:
                continue
            if path[0] == RUNTIME and len(path) == 2:
                values[path] = _merged_runtime(values.get(path), value)
            else:
                values[path] = value
            origins[".".join(map(str, path))] = doc.origin(path, source)
    return values, origins


def _error_classes(entries: Iterable[Any]) -> tuple[ErrorClass, ...]:
    classes = []
    for entry in entries or ():
        if isinstance(entry, Mapping):
            classes.append(ErrorClass(str(entry["class"]), entry.get("description")))
        else:
            classes.append(ErrorClass(str(entry)))
    return tuple(classes)


def args_schema(args: Mapping[str, Any] | None) -> dict[str, Any]:
    """The JSON Schema of a job's args object; each arg's schema is one of its ``properties``.

    Each arg is required unless its schema says ``required: false``. Only a boolean
    ``required`` is jobdef's; a list is draft-07's (the names an object arg must
    hold) and stays in the arg's schema, the arg itself being required. Each arg's
    schema is a root of its own (its refs resolve inside it): check args with
    :func:`jobdef.sheets.args_check.args_check`, not with this schema as one.
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, arg in (args or {}).items():
        schema = dict(arg)
        flag = schema.pop("required") if isinstance(schema.get("required"), bool) else True
        if flag is not False:
            required.append(name)
        properties[name] = schema
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


@functools.cache
def _prefixes(path: str) -> tuple[tuple[Path_, tuple[str, ...]], ...]:
    """``a.b.c`` -> ``((a,b,c), ()), ((a,b), (c,)), ((a,), (b,c))``: longest first."""
    parts = tuple(path.split("."))
    return tuple((parts[:cut], parts[cut:]) for cut in range(len(parts), 0, -1))


def _written(values: Mapping[Path_, Any], path: str) -> Any:
    """The value written at the dotted ``path`` (``runtime.rq.accept``), or ``None``.

    A mapping that merges (``backoff``) was opened into its fields; one that does
    not (``runtime``, ``decision``) is looked into here.
    """
    for key, below in _prefixes(path):
        if key in values:
            node = values[key]
            for part in below:
                node = node.get(part) if isinstance(node, Mapping) else None
            return node
    return None


# How each kind of field is read from what a sheet writes: a value, or each item of a list.
_SCALARS: Mapping[str, Callable[[Any], Any]] = {
    "text": str,
    "integer": int,
    "number": float,
    "duration": parse_duration,
    "bytes": parse_size,
    "flag": bool,
    "answer": bool,
}
_LISTS: Mapping[str, Callable[[Any], Any]] = {"names": str, "durations": parse_duration}


def _read(field: PolicyField, written: Any) -> Any:
    """The policy's value of ``field`` from what the sheet or Defaults wrote (or its default)."""
    raw = field.default if written is None else written
    scalar = _SCALARS.get(field.kind)
    if scalar is not None:
        return None if raw is None or raw == field.unset else scalar(raw)
    if field.kind in _LISTS:
        return tuple(map(_LISTS[field.kind], raw or ()))
    if field.kind == "errors":
        return _error_classes(raw)
    if field.kind == "schema":
        return None if raw is None else freeze(raw)
    if field.kind == "selection":  # true, false or a list of names
        return raw if isinstance(raw, bool) else tuple(map(str, raw))
    return freeze(args_schema(raw))  # args


@functools.cache
def _plan(cls: type, prefix: str) -> tuple[tuple[str, str, type | None, bool], ...]:
    """For each attribute of dataclass ``cls`` below ``prefix``: its name, its dotted path,
    the dataclass it holds (``None`` for a plain value) and whether it may be ``None``
    instead (``decision``)."""
    plan = []
    for attribute in dataclasses.fields(cls):
        options = _annotated_types(cls, attribute)
        part = next(
            (o for o in options if isinstance(o, type) and dataclasses.is_dataclass(o)), None
        )
        plan.append((attribute.name, prefix + attribute.name, part, type(None) in options))
    return tuple(plan)


def _annotated_types(cls: type, attribute: dataclasses.Field[Any]) -> list[Any]:
    """The members of the union ``attribute`` is annotated with (``DecisionAnswers | None``)
    that are ``None`` or a name of ``cls``'s module; the others (``tuple[str, ...]``,
    ``str``) are left out. The model's annotations are text (``from __future__ import
    annotations``), read here without evaluating them: typing.get_type_hints compiles
    each one, 0.8 ms of every `jobdef validate` of a Job."""
    names = vars(sys.modules[cls.__module__])
    written = [member.strip() for member in str(attribute.type).split("|")]
    return [
        type(None) if name == "None" else names[name]
        for name in written
        if name in names or name == "None"
    ]


def _assemble(cls: type, values: Mapping[str, Any], written: Collection[str], prefix: str) -> Any:
    """An instance of ``cls`` from ``values`` by dotted attribute path, its parts assembled
    in turn; a part that may be ``None`` is, unless the sheet or Defaults writes it."""
    kwargs: dict[str, Any] = {}
    for name, path, part, optional in _plan(cls, prefix):
        if path in values:
            kwargs[name] = values[path]
        elif part is not None:
            absent = optional and path not in written
            kwargs[name] = None if absent else _assemble(part, values, written, path + ".")
    return cls(**kwargs)


def build_job(job: Document, defaults: Sequence[Document] = ()) -> JobPolicy:
    """The effective policy of one validated ``Job`` document: each field of
    :data:`~jobdef.policy.fields.JOB_FIELDS` read by its kind, or its default."""
    v, origins = _effective(job, defaults)
    name = str(v[("name",)])
    values: dict[str, Any] = {}
    for field in JOB_FIELDS:
        written = _written(v, field.path)
        if written is None and field.inherits:  # read after the field it inherits
            values[field.where] = values[FIELDS[field.inherits].where]
        else:
            values[field.where] = _read(field, written)
    # The one text that depends on another field: `{name}` in the re-run procedure.
    values["rerun"] = values["rerun"].replace("{name}", name)
    values |= {"name": name, "origins": freeze(origins), "file": job.file}
    # A runtime the sheet or its Defaults names (`runtime: {rq: {}}`) runs the job.
    values |= {
        f"{RUNTIME}.{runtime.name}.named": (RUNTIME, runtime.name) in v
        for runtime in dataclasses.fields(RuntimesPolicy)
    }
    policy: JobPolicy = _assemble(JobPolicy, values, {str(path[0]) for path in v}, "")
    return policy


def build_channel(doc: Document) -> ChannelPolicy:
    """The policy of one validated ``Channel`` document."""
    own = ("apiVersion", "kind", "name", "type")
    settings = {k: v for k, v in doc.data.items() if k not in own}
    return ChannelPolicy(
        name=str(doc.data["name"]),
        type=doc.data["type"],
        settings=freeze(settings),
        # "name" and "type" too: a finding about a setting the channel lacks points there.
        origins=freeze({k: doc.origin((k,), "sheet") for k in (*settings, "name", "type")}),
        file=doc.file,
    )


_RATE_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def build_queue(doc: Document) -> QueuePolicy:
    """The limits of one validated ``Queue`` document."""
    rate = doc.data.get("rate")
    per_second = None
    if rate is not None:
        count, _, unit = str(rate).partition("/")
        per_second = int(count) / _RATE_UNITS[unit]
    return QueuePolicy(
        name=str(doc.data["name"]),
        concurrency=doc.data.get("concurrency"),
        rate=per_second,
        description=str(doc.data.get("description", "")),
        file=doc.file,
    )


def arg_source(written: Any) -> ArgSource:
    """One arg of a step as the sheet writes it: ``{from: "steps.charge.result.id"}``,
    ``{value: {...}}`` (a literal mapping) or any other literal."""
    from jobdef.policy.workflow import ArgSource  # here: sheets without a workflow skip it

    if isinstance(written, Mapping):
        if "from" in written:
            return ArgSource(path=tuple(str(written["from"]).split(".")))
        return ArgSource(literal=freeze(written.get("value")))
    return ArgSource(literal=freeze(written))


def edges(written: Any) -> dict[str, EdgePolicy]:
    """A step's ``after:`` as parent -> edge policy: a list takes the default edge."""
    from jobdef.policy.workflow import DEFAULT_EDGE

    if isinstance(written, Mapping):
        return {str(parent): policy for parent, policy in written.items()}
    return {str(parent): DEFAULT_EDGE for parent in written or ()}


def _step(name: str, written: Mapping[str, Any], is_finally: bool = False) -> Step:
    from jobdef.policy.workflow import Step

    return Step(
        name=name,
        job=str(written["job"]),
        args=freeze({str(k): arg_source(v) for k, v in (written.get("args") or {}).items()}),
        after=freeze(edges(written.get("after"))),
        is_finally=is_finally,
    )


def build_workflow(doc: Document) -> WorkflowPolicy:
    """The policy of one validated ``Workflow`` document."""
    from jobdef.policy.workflow import FINALLY, FlowNotifyPolicy, WorkflowPolicy

    data = doc.data
    steps = {str(name): _step(str(name), step) for name, step in data["steps"].items()}
    if isinstance(data.get("finally"), Mapping):
        steps[FINALLY] = _step(FINALLY, data["finally"], is_finally=True)
    idempotency = data.get("idempotency")
    notify = data.get("notify")
    window = idempotency.get("dedupe_window") if isinstance(idempotency, Mapping) else None
    return WorkflowPolicy(
        name=str(data["name"]),
        title=str(data.get("title", "")),
        description=str(data.get("description", "")),
        owner=str(data.get("owner", "")),
        args=freeze(args_schema(data.get("args"))),
        idempotency=None
        if not isinstance(idempotency, Mapping)
        else IdempotencyPolicy(
            key=idempotency.get("key"),
            dedupe_window=None if window is None else parse_duration(window),
        ),
        deadline=None if data.get("deadline") is None else parse_duration(data["deadline"]),
        notify=None
        if not isinstance(notify, Mapping)
        else FlowNotifyPolicy(
            channel=notify.get("channel"),
            events=tuple(notify.get("events") or ()),
            key_args=tuple(map(str, notify.get("key_args") or ())),
        ),
        steps=freeze(steps),
        origins=freeze(
            {".".join(map(str, path)): doc.origin(path, "sheet") for path in doc.positions if path}
        ),
        file=doc.file,
    )


def build_registry(
    documents: Sequence[Document], jobs: Sequence[JobPolicy] | None = None
) -> Registry:
    """Build every job, workflow, channel and queue from validated documents.

    ``jobs``: the jobs' policies when the caller already built them (validation
    does, to run its rules); otherwise they are built here.
    """
    from jobdef.policy.registry import Registry  # here: validating builds none

    if jobs is None:
        defaults = [d for d in documents if d.kind == "Defaults"]
        jobs = [build_job(d, defaults) for d in documents if d.kind == "Job"]
    by_name = {p.name: p for p in jobs}
    channels = {c.name: c for c in (build_channel(d) for d in documents if d.kind == "Channel")}
    queues = {q.name: q for q in (build_queue(d) for d in documents if d.kind == "Queue")}
    flows = {w.name: w for w in (build_workflow(d) for d in documents if d.kind == "Workflow")}
    return Registry(
        jobs=freeze(by_name),
        channels=freeze(channels),
        queues=freeze(queues),
        workflows=freeze(flows),
    )
