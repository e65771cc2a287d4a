"""``jobdef export --format json``: every job's resolved policy, for tools.

The document follows ``schema/jobdef-export-v1.schema.json`` (``jobdef schema
export`` prints it): durations in seconds (``null`` for none, or for forever
where the field says so), the effective backoff cap, the error classes with
how a timeout is treated, and where each value was written (file:line).

The sheet's fields come from :data:`~jobdef.policy.fields.JOB_FIELDS`, each as
JSON holds its kind, nested as a sheet writes them; jobdef's reading of them
(retries, waits, worst case, queue limits) is added beside them, and every
object's keys are laid out in the order the schema lists its properties.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jobdef.policy.backoff import delay_range, retry_timeline
from jobdef.policy.fields import JOB_FIELDS, PolicyField, batch_only, policy_value
from jobdef.policy.model import ErrorClass, JobPolicy, Origin
from jobdef.policy.registry import Registry
from jobdef.policy.values import thaw
from jobdef.render.describe import display_path, effective_fields
from jobdef.render.export.common import effective_cap, queue_policy, retries, timeout_action

SCHEMA_ID = "https://raw.githubusercontent.com/jobdef/jobdef/main/src/jobdef/render/export/schema/jobdef-export-v1.schema.json"
FORMAT = "jobdef-export/v1"


def schema_text() -> str:
    """The shipped JSON Schema of ``--format json`` (draft-07, as the sheet schema), as written."""
    return (Path(__file__).parent / "schema" / "jobdef-export-v1.schema.json").read_text("utf-8")


def _finite(value: float | None) -> float | None:
    """JSON has no infinity: an unbounded wait (an exponential schedule without a cap that
    overflows) is ``null``, which the schema documents as unbounded."""
    return None if value is None or not math.isfinite(value) else value


def _classes(classes: tuple[ErrorClass, ...]) -> list[dict[str, Any]]:
    return [{"class": c.name, "description": c.description} for c in classes]


def _origin(origin: Origin | None, base: str | Path | None) -> dict[str, Any]:
    if origin is None or origin.source == "builtin":
        return {"source": "builtin"}
    return {
        "source": origin.source,
        "file": display_path(origin.file, base),
        "line": origin.line,
        "column": origin.column,
    }


# Sheet fields the export leaves out: prose and the review's answers, which no tool acts on.
LEFT_OUT = ("description", "trigger", "runtime", "decision")


def _json(field: PolicyField, job: JobPolicy) -> Any:
    """The value of ``field`` in ``job`` as the export writes it."""
    if field.applies is batch_only and not batch_only(job):
        return None  # a schedule's fields mean nothing for an async job
    value = policy_value(job, field.path)
    if field.kind == "errors":
        return _classes(value)
    if field.kind in ("args", "schema"):
        return thaw(value)
    return list(value) if isinstance(value, tuple) else value


def _sheet_fields(job: JobPolicy) -> dict[str, Any]:
    """The fields of ``job`` the export holds, nested by their sheet paths."""
    out: dict[str, Any] = {}
    for field in JOB_FIELDS:
        if field.path.partition(".")[0] in LEFT_OUT:
            continue
        *parents, leaf = field.path.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = _json(field, job)
    return out


@functools.cache
def _layout() -> Mapping[str, Any]:
    """The schema of one exported job, whose properties give the order of its keys."""
    layout: Mapping[str, Any] = json.loads(schema_text())["definitions"]["Job"]
    return layout


def _laid_out(data: dict[str, Any], node: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with its keys in the order of the schema ``node``'s properties (any other
    key after them), and so on in each object the schema describes property by property."""
    properties = node.get("properties")
    if not properties:
        return data
    order = {name: rank for rank, name in enumerate(properties)}
    keys = sorted(data, key=lambda key: order.get(key, len(order)))
    return {
        key: _laid_out(data[key], properties[key])
        if isinstance(data[key], dict) and key in order
        else data[key]
        for key in keys
    }


def resolved_job(job: JobPolicy, registry: Registry, base: str | Path | None) -> dict[str, Any]:
    """One job's resolved policy as plain data (the schema's ``Job``)."""
    b = job.backoff
    timeline = retry_timeline(job)
    queue = queue_policy(job, registry)
    out = _sheet_fields(job)
    out["queue_limits"] = {
        "concurrency": queue.concurrency if queue else None,
        "rate": queue.rate if queue else None,
    }
    out["retries"] = retries(job)
    out["backoff"]["effective_max"] = _finite(effective_cap(job))
    out["backoff"]["waits"] = [
        {"retry": n, "min": _finite(low), "max": _finite(high)}
        for n in range(1, retries(job) + 1)
        for low, high in [delay_range(b, n)]
    ]
    out["worst_case"] = _finite(timeline.worst_case)
    out["fits_deadline"] = timeline.fits_deadline
    out["errors"]["timeout"] = timeout_action(job.errors)
    out["origins"] = {path: _origin(job.origin(path), base) for path in effective_fields(job)}
    out["sheet"] = display_path(job.file, base)
    return _laid_out(out, _layout())


def resolved_document(
    jobs: list[JobPolicy], registry: Registry, base: str | Path | None = None
) -> dict[str, Any]:
    """The whole ``--format json`` document."""
    return {
        "$schema": SCHEMA_ID,
        "format": FORMAT,
        "jobs": [resolved_job(job, registry, base) for job in jobs],
    }
