"""A folder of sheets turned into effective policies: the registry everything reads.

:func:`build_registry` merges each ``Defaults`` document into every ``Job`` and
returns frozen :class:`~jobdef.policy.model.JobPolicy` objects. It assumes documents
that passed validation; :func:`load_registry` is the one entry point that loads,
validates and builds, and raises :class:`~jobdef.errors.SheetError` on findings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jobdef.policy.durations import parse_duration
from jobdef.policy.model import (
    DEFAULT_ARGS_BYTES,
    BackoffPolicy,
    ChannelPolicy,
    DecisionAnswers,
    ErrorClass,
    ErrorPolicy,
    IdempotencyPolicy,
    JobPolicy,
    LimitsPolicy,
    NotifyPolicy,
    Origin,
    QueuePolicy,
    RetentionPolicy,
    RuntimeFit,
    RuntimesPolicy,
    Source,
    freeze,
)
from jobdef.policy.registry import Registry
from jobdef.sheets.document import Document, Path_

# Fields a Job may inherit from Defaults, merged one level deep for mappings.
_MERGED_MAPPINGS = (
    "backoff",
    "idempotency",
    "errors",
    "dead_letter",
    "notify",
    "retention",
    "limits",
)


# ``runtime`` is opened one level too, into one entry per runtime (``runtime.celery``):
# a Job's entry is merged with the Defaults' (:func:`_merged_runtime`).
_RUNTIME = "runtime"


def _flatten(data: Mapping[str, Any], prefix: Path_ = ()) -> dict[Path_, Any]:
    out: dict[Path_, Any] = {}
    for key, value in data.items():
        path = (*prefix, key)
        opened = key in _MERGED_MAPPINGS or key == _RUNTIME
        if opened and isinstance(value, Mapping) and not prefix:
            out.update({(*path, k): v for k, v in value.items()})
        else:
            out[path] = value
    return out


def field_paths(data: Mapping[str, Any]) -> dict[Path_, Any]:
    """The fields a document sets, mappings that merge (``backoff``...) and ``runtime``
    opened one level."""
    return _flatten(data)


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
        for path, value in _flatten(doc.data).items():
            if path[0] in ("apiVersion", "kind") or (source == "defaults" and path[0] == "name"):
                continue
            if source == "sheet" and path[0] in _MERGED_MAPPINGS and len(path) == 1:
                continue
            if path[0] == _RUNTIME and len(path) == 2:
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


def _optional_duration(value: Any) -> float | None:
    return None if value is None else parse_duration(value)


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


def _runtimes(entries: Mapping[str, Any]) -> RuntimesPolicy:
    """``runtime: {celery: {accept: [...]}, rq: {...}}`` (each entry merged with the
    Defaults') as the policy holds it."""

    def fit(name: str) -> RuntimeFit:
        entry = entries.get(name)
        accept = entry.get("accept") if isinstance(entry, Mapping) else None
        return RuntimeFit(tuple(str(f) for f in accept or ()), named=name in entries)

    return RuntimesPolicy(celery=fit("celery"), rq=fit("rq"))


def build_job(job: Document, defaults: Sequence[Document] = ()) -> JobPolicy:
    """The effective policy of one validated ``Job`` document."""
    v, origins = _effective(job, defaults)
    name = str(v[("name",)])

    def get(*path: str, default: Any = None) -> Any:
        return v.get(path, default)

    strategy = get("backoff", "strategy", default="fixed")
    backoff = BackoffPolicy(
        strategy=strategy,
        initial=parse_duration(get("backoff", "initial", default="0s")),
        multiplier=float(get("backoff", "multiplier", default=2)),
        max=_optional_duration(get("backoff", "max")),
        jitter=get("backoff", "jitter", default="full"),
        delays=tuple(parse_duration(d) for d in get("backoff", "delays", default=()) or ()),
    )
    dead = get("retention", "dead", default="until_resolved")
    decision = get("decision")
    return JobPolicy(
        name=name,
        handler=str(get("handler")),
        title=str(get("title", default="")),
        description=str(get("description", default="")),
        owner=str(get("owner", default="")),
        trigger=str(get("trigger", default="")),
        mode=get("mode", default="async"),
        schedule=get("schedule"),
        timezone=str(get("timezone", default="UTC")),
        catch_up=get("catch_up", default="latest"),
        queue=str(get("queue", default="default")),
        priority=int(get("priority", default=0)),
        args_schema=freeze(args_schema(get("args"))),
        max_attempts=int(get("max_attempts", default=1)),
        backoff=backoff,
        timeout=parse_duration(get("timeout", default="60s")),
        deadline=_optional_duration(get("deadline")),
        idempotency=IdempotencyPolicy(
            key=get("idempotency", "key"),
            dedupe_window=_optional_duration(get("idempotency", "dedupe_window")),
        ),
        errors=ErrorPolicy(
            retry=_error_classes(get("errors", "retry", default=())),
            fatal=_error_classes(get("errors", "fatal", default=())),
            default=get("errors", "default", default="retry"),
        ),
        on_reclaim=get("on_reclaim", default="retry"),
        dead_letter=str(get("dead_letter", "target", default="table")),
        notify=NotifyPolicy(
            channel=get("notify", "channel"),
            events=tuple(get("notify", "events", default=()) or ()),
            key_args=tuple(get("notify", "key_args", default=()) or ()),
        ),
        rerun=str(get("rerun", default="")).replace("{name}", name),
        retention=RetentionPolicy(
            done=_optional_duration(get("retention", "done")),
            dead=None if dead == "until_resolved" else parse_duration(dead),
        ),
        limits=LimitsPolicy(
            args_bytes=int(get("limits", "args_bytes", default=DEFAULT_ARGS_BYTES))
        ),
        runtime=_runtimes({str(p[1]): value for p, value in v.items() if p[0] == _RUNTIME}),
        decision=DecisionAnswers(**decision) if isinstance(decision, Mapping) else None,
        origins=freeze(origins),
        file=job.file,
    )


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


def build_registry(
    documents: Sequence[Document], jobs: Sequence[JobPolicy] | None = None
) -> Registry:
    """Build every job and channel from validated documents.

    ``jobs``: the jobs' policies when the caller already built them (validation
    does, to run its rules); otherwise they are built here.
    """
    if jobs is None:
        defaults = [d for d in documents if d.kind == "Defaults"]
        jobs = [build_job(d, defaults) for d in documents if d.kind == "Job"]
    by_name = {p.name: p for p in jobs}
    channels = {c.name: c for c in (build_channel(d) for d in documents if d.kind == "Channel")}
    queues = {q.name: q for q in (build_queue(d) for d in documents if d.kind == "Queue")}
    return Registry(jobs=freeze(by_name), channels=freeze(channels), queues=freeze(queues))
