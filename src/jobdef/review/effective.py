"""One job's effective policy as a flat table of dotted field paths and plain values.

The diff compares these tables, so every value that can change what a job does
is listed here once: a new field of :class:`~jobdef.policy.model.JobPolicy` only needs
a line below to take part in reviews. Durations stay float seconds; lists become
lists, mappings dicts, so the table is JSON-ready.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from jobdef.policy.model import JobPolicy, Origin, thaw


def _args(job: JobPolicy) -> dict[str, Any]:
    """``args.<name>`` -> the arg's schema as the sheet writes it (``required: false`` kept)."""
    schema = thaw(job.args_schema)
    required = set(schema.get("required", ()))
    out: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        entry = dict(prop)
        if name not in required:
            entry["required"] = False
        out[f"args.{name}"] = entry
    return out


def effective_values(job: JobPolicy) -> dict[str, Any]:
    """Every reviewable value of ``job`` by dotted path, in sheet order."""
    values: dict[str, Any] = {
        "title": job.title,
        "description": job.description,
        "owner": job.owner,
        "trigger": job.trigger,
        "mode": job.mode,
        "schedule": job.schedule,
        "timezone": job.timezone,
        "catch_up": job.catch_up,
        "handler": job.handler,
        "queue": job.queue,
        "priority": job.priority,
        **_args(job),
        "max_attempts": job.max_attempts,
        "backoff.strategy": job.backoff.strategy,
        "backoff.initial": job.backoff.initial,
        "backoff.multiplier": job.backoff.multiplier,
        "backoff.max": job.backoff.max,
        "backoff.jitter": job.backoff.jitter,
        "backoff.delays": list(job.backoff.delays),
        "timeout": job.timeout,
        "deadline": job.deadline,
        "idempotency.key": job.idempotency.key,
        "idempotency.dedupe_window": job.idempotency.dedupe_window,
        "errors.retry": [c.name for c in job.errors.retry],
        "errors.fatal": [c.name for c in job.errors.fatal],
        "errors.default": job.errors.default,
        "on_reclaim": job.on_reclaim,
        "dead_letter.target": job.dead_letter,
        "notify.channel": job.notify.channel,
        "notify.events": list(job.notify.events),
        "notify.key_args": list(job.notify.key_args),
        "rerun": job.rerun,
        "retention.done": job.retention.done,
        "retention.dead": job.retention.dead,
    }
    if job.decision is not None:
        for answer in fields(job.decision):
            values[f"decision.{answer.name}"] = getattr(job.decision, answer.name)
    return values


def value_origin(job: JobPolicy, path: str) -> Origin | None:
    """Where the value at ``path`` was written, or ``None`` for a built-in default."""
    origin = job.origin(path)
    if origin is None or origin.source == "builtin":
        return None
    return origin
