"""``jobdef export --format cloud-tasks``: a Cloud Tasks queue per job (REST ``Queue``).

A Cloud Tasks queue holds the retry policy, so each job gets its own queue,
named ``projects/${PROJECT}/locations/${LOCATION}/queues/<job-name>``. Durations are
the API's ``"Ns"`` strings in whole seconds (the service truncates to seconds).

Cloud Tasks' retry schedule: the first retry after ``minBackoff``, the interval
doubling ``maxDoublings`` times, then growing linearly by ``2**maxDoublings *
minBackoff``, capped at ``maxBackoff``. So a fixed wait (``maxDoublings: 0``,
``minBackoff = maxBackoff``), a linear one (``maxDoublings: 0``) and an exponential
one with multiplier 2 are exact; other schedules are the nearest one, with a note
listing both. ``maxRetryDuration`` is ``0s`` on purpose: Cloud Tasks stops only
when *both* ``maxAttempts`` and ``maxRetryDuration`` are spent, so a positive value
would add attempts past ``max_attempts``.

``task.dispatchDeadline`` is the attempt timeout to set on each task (HTTP tasks
take 15 s to 30 min).
"""

from __future__ import annotations

import math
from typing import Any

from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry
from jobdef.render.export.common import (
    Notes,
    bounded_name,
    clamp_count,
    distinct_names,
    effective_cap,
    note_fatal_timeout,
    note_result,
    queue_policy,
    queue_shared,
    retries,
    same_waits,
    seconds,
    sheet_waits,
    waits_text,
    whole_seconds,
)

NAME_MAX = 100
ATTEMPTS_MAX = 2**31 - 1
# The largest google.protobuf.Duration (10,000 years); the Queue reference names no
# smaller bound for minBackoff, maxBackoff or maxRetryDuration.
DURATION_MAX = 315_576_000_000
DISPATCH_MIN = 15
DISPATCH_MAX = 1800
RATE_MAX = 500.0
CONCURRENT_MAX = 5000
QUEUE_PREFIX = "projects/${PROJECT}/locations/${LOCATION}/queues/"


def schedule(min_backoff: int, max_backoff: int, doublings: int, count: int) -> list[float]:
    """The waits before Cloud Tasks' first ``count`` retries for these settings."""
    waits: list[float] = []
    wait = float(min_backoff)
    step = float(min_backoff) * 2.0 ** min(doublings, 1000)
    for k in range(count):
        if k > 0:
            wait = wait * 2 if k <= doublings else wait + step
        waits.append(min(wait, float(max_backoff)))
    return waits


def _backoff(job: JobPolicy, notes: Notes) -> tuple[int, int, int]:
    """(minBackoff, maxBackoff, maxDoublings) nearest to the sheet's waits."""
    b = job.backoff
    waits = sheet_waits(job)
    first = waits[0] if waits else b.initial
    cap = effective_cap(job)
    low = whole_seconds(first, 0, DURATION_MAX, notes, "backoff.initial", target="minBackoff")
    high = whole_seconds(
        max(cap if cap is not None else first, float(low)),
        low,
        DURATION_MAX,
        notes,
        "backoff.max",
        target="maxBackoff",
    )
    # Exponential (exact at multiplier 2) and lists double until the cap; fixed and
    # linear never double (linear then grows by minBackoff per retry).
    doublings = 0 if b.strategy in ("fixed", "linear") else max(retries(job) - 1, 0)
    if b.strategy == "fixed":
        high = low
    made = schedule(low, high, doublings, len(waits))
    if not same_waits(made, waits):
        why = {
            "exponential": f"Cloud Tasks doubles, the sheet multiplies by {b.multiplier:g}",
            "list": "Cloud Tasks cannot follow a list of waits",
        }.get(b.strategy, "whole seconds")
        notes.add(
            "backoff",
            f"{why}: retries wait {waits_text(made)} instead of {waits_text(waits)}",
        )
    if b.jitter != "none":
        notes.add(
            "backoff.jitter",
            f"Cloud Tasks has no jitter setting; {b.jitter} jitter is dropped",
        )
    return low, high, doublings


def _queue_id(job: JobPolicy, notes: Notes) -> str:
    return bounded_name(job.name, NAME_MAX, notes, "a Cloud Tasks queue id", dns=True)


def check_names(registry: Registry) -> None:
    """Refuse an export in which two jobs of ``registry`` would be one queue."""
    distinct_names(registry, lambda job: _queue_id(job, Notes(job.name)), "the Cloud Tasks queue")


def convert(job: JobPolicy, registry: Registry, notes: Notes) -> dict[str, Any]:
    """The Queue resource of ``job`` and the dispatch deadline for its tasks."""
    queue_id = _queue_id(job, notes)
    attempts = clamp_count(
        job.max_attempts, 1, ATTEMPTS_MAX, notes, "max_attempts", target="maxAttempts"
    )
    low, high, doublings = _backoff(job, notes)
    queue: dict[str, Any] = {"name": QUEUE_PREFIX + queue_id}
    limits = _rate_limits(job, registry, notes)
    if limits:
        queue["rateLimits"] = limits
    queue["retryConfig"] = {
        "maxAttempts": attempts,
        "maxRetryDuration": "0s",
        "minBackoff": f"{low}s",
        "maxBackoff": f"{high}s",
        "maxDoublings": doublings,
    }
    deadline = whole_seconds(
        job.timeout,
        DISPATCH_MIN,
        DISPATCH_MAX,
        notes,
        "timeout",
        target="an HTTP task's dispatchDeadline",
    )
    _notes(job, notes)
    return {"queue": queue, "task": {"dispatchDeadline": f"{deadline}s"}}


def _rate_limits(job: JobPolicy, registry: Registry, notes: Notes) -> dict[str, Any]:
    policy = queue_policy(job, registry)
    if policy is None or (policy.rate is None and policy.concurrency is None):
        return {}
    limits: dict[str, Any] = {}
    if policy.rate is not None:
        rate = policy.rate
        if rate > RATE_MAX:
            notes.add("queue.rate", f"{rate:g}/s is above Cloud Tasks' 500/s; set to 500/s")
            rate = RATE_MAX
        limits["maxDispatchesPerSecond"] = rate
        notes.add(
            "queue.rate",
            "Cloud Tasks chooses the bucket size (maxBurstSize) itself; jobdef's holds one "
            "second's worth of starts",
        )
    if policy.concurrency is not None:
        limits["maxConcurrentDispatches"] = clamp_count(
            policy.concurrency,
            1,
            CONCURRENT_MAX,
            notes,
            "queue.concurrency",
            target="maxConcurrentDispatches",
        )
    if queue_shared(job, registry):
        notes.add(
            "queue",
            f"jobdef's queue {job.queue} shares its limits among its jobs; each Cloud Tasks "
            "queue here has its own",
        )
    return limits


def _notes(job: JobPolicy, notes: Notes) -> None:
    if job.errors.retry or job.errors.fatal or job.errors.default == "fatal":
        notes.add(
            "errors",
            "Cloud Tasks sees HTTP status codes, not error classes: the handler answers 2xx "
            "after recording a fatal error, or the task is retried",
        )
    note_fatal_timeout(job, notes, "an attempt past its dispatchDeadline is retried")
    if job.deadline is not None:
        notes.add(
            "deadline",
            f"not expressible ({seconds(job.deadline)}): maxRetryDuration only adds attempts "
            "past maxAttempts; the handler checks the task's age",
        )
    notes.add(
        "dead_letter",
        "Cloud Tasks deletes a task after its last attempt: no dead-letter queue; the "
        "handler records the last failure itself",
    )
    if job.idempotency.key:
        window = job.idempotency.dedupe_window
        notes.add(
            "idempotency.key",
            "name the task from the key: Cloud Tasks refuses a duplicate name while the task "
            "exists and for about an hour after"
            + (f" (not {seconds(window)})" if window and math.isfinite(window) else ""),
        )
    if job.priority != 0:
        notes.add("priority", f"Cloud Tasks has no priorities ({job.priority})")
    if job.mode == "batch":
        notes.add(
            "schedule",
            f"create the task from a Cloud Scheduler job: schedule {job.schedule!r}, "
            f"timeZone {job.timezone}",
        )
    if job.notify.events:
        notes.add("notify", "Cloud Tasks sends no notification; alert on the handler's logs")
    if job.result.store:
        note_result(
            job,
            notes,
            "Cloud Tasks discards the target's response: the handler stores its value itself "
            "(say, in a table keyed by the task name), within the sheet's bounds",
        )
