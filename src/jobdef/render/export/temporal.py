"""``jobdef export --format temporal``: activity options per job, in the Temporal API's JSON.

``activity`` holds the fields of the API's ``ScheduleActivityTaskCommandAttributes``
that the sheet decides (proto3 JSON names, durations as ``"30s"``): the task
queue, ``startToCloseTimeout`` (the attempt timeout), ``scheduleToCloseTimeout``
(the deadline, measured as the sheet measures it, from scheduling and across
retries) and the ``retryPolicy``. ``maximumAttempts`` counts attempts, as the
sheet does. ``maximumInterval`` is always written: Temporal's default is 100 times
``initialInterval``, a cap the sheet may not have. A batch job also gets a
``schedule`` (a Temporal Schedule's ``spec``: ``cronString`` and ``timezoneName``).

Error type names are the classes' own names: Temporal's Python SDK turns a raised
exception into an ``ApplicationError`` whose type is its class's ``__name__``, and
``nonRetryableErrorTypes`` matches that name exactly.
"""

from __future__ import annotations

import math
from typing import Any

from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry
from jobdef.render.export.common import (
    Notes,
    clamp_count,
    effective_cap,
    fitted_rate,
    geometric_waits,
    note_result,
    queue_policy,
    same_waits,
    seconds,
    sheet_waits,
    short_class,
    short_classes,
    timeout_action,
    waits_text,
)

ATTEMPTS_MAX = 2**31 - 1
# The largest google.protobuf.Duration, in seconds.
DURATION_MAX = 315_576_000_000


def proto_duration(value: float, notes: Notes, path: str) -> str:
    """Seconds as a protobuf JSON Duration: ``"30s"``, ``"0.250s"`` (nanosecond precision)."""
    if not math.isfinite(value) or value > DURATION_MAX:
        notes.add(path, f"above the largest Temporal duration; set to {DURATION_MAX}s")
        value = DURATION_MAX
    text = f"{value:.9f}".rstrip("0").rstrip(".")
    return f"{text}s"


def _retry_policy(job: JobPolicy, notes: Notes) -> dict[str, Any]:
    b = job.backoff
    waits = sheet_waits(job)
    first = waits[0] if waits else b.initial
    if b.strategy == "fixed":
        rate = 1.0
    elif b.strategy == "exponential":
        rate = max(b.multiplier, 1.0)  # Temporal's backoffCoefficient is at least 1
    else:
        rate = fitted_rate(waits)
    cap = effective_cap(job)
    top = max(first, cap if cap is not None else first)
    if not math.isfinite(top):
        notes.add("backoff.max", f"unbounded; maximumInterval is set to {DURATION_MAX}s")
        top = DURATION_MAX
    made = geometric_waits(first, rate, top, len(waits))
    if not same_waits(made, waits):
        why = {
            "linear": "Temporal grows waits geometrically",
            "list": "Temporal cannot follow a list of waits",
        }.get(b.strategy, "backoffCoefficient is at least 1, durations at most 10000 years")
        notes.add(
            "backoff", f"{why}: retries wait {waits_text(made)} instead of {waits_text(waits)}"
        )
    if b.jitter != "none":
        notes.add(
            "backoff.jitter", f"Temporal retries without jitter; {b.jitter} jitter is dropped"
        )
    policy: dict[str, Any] = {
        "initialInterval": proto_duration(first, notes, "backoff.initial"),
        "backoffCoefficient": rate,
        "maximumInterval": proto_duration(top, notes, "backoff.max"),
        "maximumAttempts": clamp_count(
            job.max_attempts, 1, ATTEMPTS_MAX, notes, "max_attempts", target="maximumAttempts"
        ),
    }
    fatal = short_classes([c.name for c in job.errors.fatal])
    if fatal:
        policy["nonRetryableErrorTypes"] = fatal
    return policy


def convert(job: JobPolicy, registry: Registry, notes: Notes) -> dict[str, Any]:
    """The activity options (and, for a batch job, the schedule spec) of ``job``."""
    activity: dict[str, Any] = {
        "activityType": {"name": job.name},
        "taskQueue": {"name": job.queue},
    }
    if job.deadline is not None:
        activity["scheduleToCloseTimeout"] = proto_duration(job.deadline, notes, "deadline")
    activity["startToCloseTimeout"] = proto_duration(job.timeout, notes, "timeout")
    activity["retryPolicy"] = _retry_policy(job, notes)
    out: dict[str, Any] = {"activity": activity}
    if job.mode == "batch" and job.schedule:
        out["schedule"] = {"spec": {"cronString": [job.schedule], "timezoneName": job.timezone}}
        if job.catch_up != "latest":
            notes.add(
                "catch_up",
                f"{job.catch_up}: set the Schedule's catchupWindow and overlap policy to match; "
                "a Schedule's default catches up missed runs within a year",
            )
    _notes(job, registry, notes)
    return out


def _notes(job: JobPolicy, registry: Registry, notes: Notes) -> None:
    if job.errors.default == "fatal":
        notes.add(
            "errors.default",
            "fatal cannot be expressed: Temporal retries every error type not listed in "
            "nonRetryableErrorTypes; raise ApplicationError(non_retryable=True) for the others",
        )
    if timeout_action(job.errors) == "fatal":
        notes.add(
            "errors",
            "a start-to-close timeout is always retried by Temporal; the sheet treats a "
            "timeout as fatal",
        )
    dotted = [c.name for c in job.errors.fatal if short_class(c.name) != c.name]
    if job.errors.fatal:
        notes.add(
            "errors.fatal",
            "matched by the exact type name: a subclass of a listed class is retried"
            + (f"; {', '.join(dotted)} matched by the bare class name" if dotted else ""),
        )
    if job.on_reclaim == "fail":
        notes.add(
            "on_reclaim",
            "fail cannot be expressed: a lost worker's attempt times out and is retried",
        )
    if job.idempotency.key:
        notes.add(
            "idempotency.key",
            "use the key as the workflow id: Temporal refuses a second running workflow "
            "with the same id (the reuse policy decides after it closes)",
        )
    if job.priority != 0:
        notes.add("priority", f"not an activity option here ({job.priority})")
    queue = queue_policy(job, registry)
    if queue is not None and (queue.concurrency is not None or queue.rate is not None):
        notes.add(
            "queue",
            f"the limits of queue {job.queue} are worker options in Temporal "
            "(max_concurrent_activities, max_task_queue_activities_per_second)",
        )
    kept = seconds(job.retention.dead) if job.retention.dead else "until resolved"
    notes.add(
        "dead_letter",
        "Temporal keeps no dead jobs: a failed activity fails its workflow, whose history "
        f"the namespace keeps for its retention period (the sheet: {kept})",
    )
    if job.notify.events:
        notes.add("notify", "Temporal sends no notification; alert on failed workflows")
    if job.result.store:
        note_result(
            job,
            notes,
            "the activity's return value is kept in the workflow history for the namespace's "
            "retention period, unchecked by any schema, and Temporal has no receipts or done "
            "notification to carry it",
        )
    else:
        note_result(
            job,
            notes,
            "Temporal records every activity's return value in the workflow history: return "
            "None to keep nothing",
        )
