"""Plan beside reality: a job's real attempts placed on the retry timeline of its sheet.

The plan is :func:`jobdef.policy.backoff.retry_timeline`, the function ``jobdef
explain`` prints: for attempt *n*, the earliest and latest start, in seconds
after the enqueue, if every earlier attempt failed at once with the shortest
wait or ran to its timeout with the longest one. The real attempts come from
the attempts table. A requeue starts a new run (attempts back to 1), timed from
the first start of that run, since the store keeps no time of the requeue.

An attempt recorded as ``reclaimed`` was lost (its worker died or froze): the
job came back only when its lease had expired and a reclaimer found it, up to
the workers' lease (the default one unless the dashboard is told another,
``jobdef dashboard --lease``) plus the reclaim interval after its timeout
(:attr:`~jobdef.policy.backoff.Timeline.lost_slack`). So each reclaimed attempt
of a run moves the latest start of the attempts after it by that much, as
``jobdef explain``'s "latest start if lost" does, and may itself show a
duration up to its timeout plus that much (its end is the reclaim). An attempt
after ordinary failures keeps the plain bound.

A divergence is flagged when reality left the plan: an attempt started before
its window (the backoff was not honoured), or later than its window by more
than :data:`LATE_GRACE` (the queue was backed up, paused, or no worker ran),
ran past its timeout, more attempts than ``max_attempts`` in one run, or an
error the sheet calls fatal was retried.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jobdef.backends.records import AttemptRecord, JobRecord
from jobdef.policy.backoff import Timeline, retry_timeline
from jobdef.policy.leases import DEFAULT_LEASE
from jobdef.policy.model import JobPolicy
from jobdef.runtime.classify import classify

# Seconds by which an attempt may start before its planned earliest start (clock
# steps, rounding), and after its latest (the claim poll, a busy queue), unflagged.
EARLY_GRACE = 1.0
LATE_GRACE = 30.0
# Seconds an attempt may run past its timeout (the kill and the write) unflagged.
TIMEOUT_GRACE = 5.0


@dataclass(frozen=True, slots=True)
class PlacedAttempt:
    """One real attempt and where it fell on the plan."""

    run: int
    attempt: int
    worker_id: str
    started_at: float
    finished_at: float | None
    outcome: str | None
    error_type: str | None
    error_message: str | None
    traceback: str | None
    offset: float  # seconds after the start of its run
    duration: float | None
    window: tuple[float, float] | None  # planned (earliest, latest) start; None: unplanned
    divergences: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Plan:
    """The timeline of the sheet and the attempts placed on it."""

    rows: list[dict[str, Any]]
    attempts: list[PlacedAttempt]
    worst_case: float
    deadline: float | None
    divergences: list[str] = field(default_factory=list)


def place(
    job: JobRecord,
    history: list[AttemptRecord],
    policy: JobPolicy | None,
    *,
    lease: float = DEFAULT_LEASE,
) -> Plan:
    """``history`` (oldest first) of ``job`` on the timeline of ``policy``, for workers
    holding ``lease``."""
    timeline: Timeline | None = None
    if policy is not None:
        timeline = retry_timeline(policy, lease=lease)
    placed: list[PlacedAttempt] = []
    run, run_start, previous, lost = 0, job.created_at, None, 0
    for record in history:
        if previous is None or record.attempt <= previous:
            run += 1
            run_start = job.created_at if run == 1 else record.started_at
            lost = 0
        previous = record.attempt
        window = _window(timeline, record.attempt, lost)
        placed.append(_placed(record, run, run_start, window, policy=policy, timeline=timeline))
        lost += record.outcome == "reclaimed"
    flagged = [f"run {a.run} attempt {a.attempt}: {d}" for a in placed for d in a.divergences]
    rows = [
        {
            "attempt": r.attempt,
            "earliest_start": r.earliest_start,
            "latest_start": r.latest_start,
            "latest_end": r.latest_end,
            "wait_min": r.wait_min,
            "wait_max": r.wait_max,
            "latest_start_lost": r.latest_start_lost,
        }
        for r in (timeline.rows if timeline else ())
    ]
    return Plan(
        rows=rows,
        attempts=placed,
        worst_case=timeline.worst_case if timeline else 0.0,
        deadline=timeline.deadline if timeline else None,
        divergences=flagged,
    )


def _window(timeline: Timeline | None, attempt: int, lost: int) -> tuple[float, float] | None:
    """The planned (earliest, latest) start of ``attempt`` after ``lost`` reclaimed
    attempts in its run; None when the timeline has no such attempt."""
    if timeline is None or not 1 <= attempt <= len(timeline.rows):
        return None
    earliest = timeline.rows[attempt - 1].earliest_start
    return earliest, timeline.latest_start_after(attempt, min(lost, attempt - 1))


def _placed(
    record: AttemptRecord,
    run: int,
    run_start: float,
    window: tuple[float, float] | None,
    *,
    policy: JobPolicy | None,
    timeline: Timeline | None,
) -> PlacedAttempt:
    offset = max(0.0, record.started_at - run_start)
    duration = None if record.finished_at is None else record.finished_at - record.started_at
    flags: list[str] = []
    if policy is not None:
        if window is None:
            flags.append(f"more attempts than max_attempts ({policy.max_attempts})")
        else:
            earliest, latest = window
            if offset < earliest - EARLY_GRACE:
                flags.append(
                    f"started {_secs(earliest - offset)} before its earliest planned start"
                )
            elif offset > latest + LATE_GRACE:
                flags.append(f"started {_secs(offset - latest)} after its latest planned start")
        # A reclaimed attempt's end is the reclaim: its lease ran out after the worker was
        # lost, up to the lease and one reclaim interval after the timeout.
        lost_slack = timeline.lost_slack if timeline and record.outcome == "reclaimed" else 0.0
        if duration is not None and duration > policy.timeout + lost_slack + TIMEOUT_GRACE:
            flags.append(f"ran {_secs(duration)}, past its timeout of {_secs(policy.timeout)}")
        error = record.error
        # The stored class path as the worker wrote it, never imported: it is
        # data from the store. Only the sheet's own names are resolved.
        if (
            error is not None
            and record.outcome == "retry"
            and classify(policy.errors, [error.type]).action == "fatal"
        ):
            flags.append(f"{error.type} is fatal in the sheet but was retried")
    error = record.error
    return PlacedAttempt(
        run=run,
        attempt=record.attempt,
        worker_id=record.worker_id,
        started_at=record.started_at,
        finished_at=record.finished_at,
        outcome=record.outcome,
        error_type=error.type if error else None,
        error_message=error.message if error else None,
        traceback=error.traceback if error else None,
        offset=offset,
        duration=duration,
        window=window,
        divergences=tuple(flags),
    )


def _secs(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"
