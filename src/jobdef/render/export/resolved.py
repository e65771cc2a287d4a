"""``jobdef export --format json``: every job's resolved policy, for tools.

The document follows ``schema/jobdef-export-v1.schema.json`` (``jobdef schema
export`` prints it): durations in seconds (``null`` for none, or for forever
where the field says so), the effective backoff cap, the error classes with
how a timeout is treated, and where each value was written (file:line).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from jobdef.policy.backoff import delay_range, retry_timeline
from jobdef.policy.model import ErrorClass, JobPolicy, Origin, thaw
from jobdef.policy.registry import Registry
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


def resolved_job(job: JobPolicy, registry: Registry, base: str | Path | None) -> dict[str, Any]:
    """One job's resolved policy as plain data (the schema's ``Job``)."""
    b = job.backoff
    timeline = retry_timeline(job)
    queue = queue_policy(job, registry)
    batch = job.mode == "batch"
    return {
        "name": job.name,
        "title": job.title,
        "handler": job.handler,
        "owner": job.owner,
        "mode": job.mode,
        "schedule": job.schedule if batch else None,
        "timezone": job.timezone if batch else None,
        "catch_up": job.catch_up if batch else None,
        "queue": job.queue,
        "queue_limits": {
            "concurrency": queue.concurrency if queue else None,
            "rate": queue.rate if queue else None,
        },
        "priority": job.priority,
        "max_attempts": job.max_attempts,
        "retries": retries(job),
        "timeout": job.timeout,
        "deadline": job.deadline,
        "backoff": {
            "strategy": b.strategy,
            "initial": b.initial,
            "multiplier": b.multiplier,
            "max": b.max,
            "jitter": b.jitter,
            "delays": list(b.delays),
            "effective_max": _finite(effective_cap(job)),
            "waits": [
                {"retry": n, "min": _finite(low), "max": _finite(high)}
                for n in range(1, retries(job) + 1)
                for low, high in [delay_range(b, n)]
            ],
        },
        "worst_case": _finite(timeline.worst_case),
        "fits_deadline": timeline.fits_deadline,
        "errors": {
            "retry": _classes(job.errors.retry),
            "fatal": _classes(job.errors.fatal),
            "default": job.errors.default,
            "timeout": timeout_action(job.errors),
        },
        "on_reclaim": job.on_reclaim,
        "dead_letter": {"target": job.dead_letter},
        "idempotency": {
            "key": job.idempotency.key,
            "dedupe_window": job.idempotency.dedupe_window,
        },
        "notify": {
            "channel": job.notify.channel,
            "events": list(job.notify.events),
            "key_args": list(job.notify.key_args),
        },
        "rerun": job.rerun,
        "retention": {"done": job.retention.done, "dead": job.retention.dead},
        "limits": {"args_bytes": job.limits.args_bytes},
        "args": thaw(job.args_schema),
        "origins": {path: _origin(job.origin(path), base) for path in effective_fields(job)},
        "sheet": display_path(job.file, base),
    }


def resolved_document(
    jobs: list[JobPolicy], registry: Registry, base: str | Path | None = None
) -> dict[str, Any]:
    """The whole ``--format json`` document."""
    return {
        "$schema": SCHEMA_ID,
        "format": FORMAT,
        "jobs": [resolved_job(job, registry, base) for job in jobs],
    }
