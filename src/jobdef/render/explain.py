"""``jobdef explain NAME``: the effective policy of one job, every value with its origin.

Text and Markdown come from the ``explain.txt.j2`` / ``explain.md.j2``
templates; JSON is :func:`explain_data`, with durations in seconds, for tools.
The retry timeline is :func:`jobdef.policy.backoff.retry_timeline`, the schedule the
runtime follows, with a second latest start for when the earlier attempts were lost
(their worker died or froze), which assumes the worker's default lease unless
``--lease`` says which the worker runs with.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from jobdef.errors import UsageError
from jobdef.policy.fields import declares_result
from jobdef.policy.leases import DEFAULT_LEASE
from jobdef.policy.model import DecisionAnswers, JobPolicy
from jobdef.policy.registry import Registry
from jobdef.policy.values import thaw
from jobdef.render import describe
from jobdef.render.context import job_context, next_run_times
from jobdef.render.labels import translate

FORMATS = ("text", "markdown", "json")


def explain_data(
    job: JobPolicy,
    registry: Registry,
    lang: str = "en",
    base: str | Path | None = None,
    now: float | None = None,
    *,
    lease: float | None = None,
) -> dict[str, Any]:
    """The explanation as plain data: raw values (seconds) beside their text.

    ``lease`` (seconds): the lease of the worker that runs the job, which the
    timeline's latest starts after a lost attempt assume; the worker's default
    when None.
    """
    context = job_context(job, registry, lang, base, lease=lease)
    timeline = context["timeline"]
    channel = context["channel"]
    return {
        "name": job.name,
        "title": job.title,
        "sheet": context["sheet_file"],
        "owner": job.owner,
        "queue": job.queue,
        "priority": job.priority,
        "handler": job.handler,
        "trigger": job.trigger,
        "mode": job.mode,
        "schedule": job.schedule,
        "timezone": job.timezone if job.mode == "batch" else None,
        "next_runs": next_run_times(job, now),
        "dst_rule": translate(context["dst_rule"], lang) if context["dst_rule"] else None,
        "items": [
            {"key": item.key, "label": label, "hint": hint, "value": value}
            for item, (label, hint, value) in zip(
                describe.sheet_items(job), context["rows"], strict=True
            )
        ],
        "fields": [
            {
                "path": row.path,
                "value": row.value,
                "source": row.source,
                "origin": _origin(job, row.path, base),
                "origin_text": row.origin,
            }
            for row in context["fields"]
        ],
        "timeline": {
            "rows": [
                {
                    "attempt": row.attempt,
                    "wait_min": row.wait_min,
                    "wait_max": row.wait_max,
                    "earliest_start": row.earliest_start,
                    "latest_start": row.latest_start,
                    "latest_end": row.latest_end,
                    "within_deadline": row.within_deadline,
                    "latest_start_lost": row.latest_start_lost,
                }
                for row in timeline.rows
            ],
            "worst_case": timeline.worst_case,
            "deadline": timeline.deadline,
            "fits_deadline": timeline.fits_deadline,
            "text": describe.worst_case(timeline, lang),
            "lost_attempt": {
                "assumed_lease": timeline.lease,
                "lease_is_default": timeline.lease == DEFAULT_LEASE,
                "reclaim_interval": timeline.reclaim_interval,
                "slack": timeline.lost_slack,
                "worst_case_lost": timeline.worst_case_lost,
                "text": describe.lost_attempts(timeline, lang),
            },
        },
        "errors": [
            {"class": row.name, "text": row.text, "action": row.action, "treatment": row.treatment}
            for row in context["errors"]
        ],
        "worker_dies": {
            "on_reclaim": job.on_reclaim,
            "text": describe.on_reclaim(job.on_reclaim, lang),
        },
        "dead_letter": {
            "target": job.dead_letter,
            "text": describe.dead_letter(job.dead_letter, lang),
        },
        "notify": {
            "channel": job.notify.channel,
            "type": channel.type if channel else None,
            "description": _channel_description(channel),
            "events": list(job.notify.events),
            "text": describe.job_notify(job, channel, lang),
        },
        "rerun": job.rerun,
        "retention": {
            "done": job.retention.done,
            "dead": job.retention.dead,
            "text": describe.retention(job.retention, lang),
        },
        "result": _result(job, lang),
        "decision": None if job.decision is None else _decision(job.decision),
        "recommended_mode": context["recommended"],
    }


def _result(job: JobPolicy, lang: str) -> dict[str, Any]:
    """The result policy: ``retention`` in seconds (None: as long as the job's row),
    ``retention_inherited`` when it is ``retention.done``'s, the schema as written."""
    result = job.result
    return {
        "declared": declares_result(job),
        "store": result.store,
        "max_bytes": result.max_bytes,
        "retention": result.retention,
        "retention_inherited": job.origin("result.retention") is None,
        "schema": None if result.schema is None else thaw(result.schema),
        "public": result.public if isinstance(result.public, bool) else list(result.public),
        "notify": list(result.notify),
        "text": describe.result(result, job.retention.done, lang),
    }


def _decision(answers: DecisionAnswers) -> dict[str, bool | None]:
    return {f.name: getattr(answers, f.name) for f in fields(answers)}


def _channel_description(channel: Any) -> str | None:
    if channel is None:
        return None
    description = channel.settings.get("description")
    return None if description is None else str(description)


def _origin(job: JobPolicy, path: str, base: str | Path | None) -> dict[str, Any] | None:
    origin = job.origin(path)
    if origin is None:
        return None
    return {
        "file": describe.display_path(origin.file, base),
        "line": origin.line,
        "column": origin.column,
        "source": origin.source,
    }


def explain(
    job: JobPolicy,
    registry: Registry,
    fmt: str = "text",
    *,
    lang: str = "en",
    templates: str | Path | None = None,
    base: str | Path | None = None,
    now: float | None = None,
    lease: float | None = None,
) -> str:
    """The explanation of ``job`` in ``fmt`` (``text``, ``markdown`` or ``json``).

    ``now`` (epoch seconds, default the current time) is where the list of a
    batch job's next run times starts. ``lease`` (seconds, default the worker's
    default lease) is what the latest starts after a lost attempt assume.
    """
    if fmt == "json":
        data = explain_data(job, registry, lang, base, now, lease=lease)
        return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    from jobdef.render.templates import environment, render  # Jinja2 only when needed

    env = environment(lang, templates)
    context = job_context(job, registry, lang, base, lease=lease)
    name = "explain.md.j2" if fmt == "markdown" else "explain.txt.j2"
    return render(env, name, **context, next_runs=next_run_times(job, now)).rstrip() + "\n"
