"""Value types that cross the backend seam: new jobs, leases, job and attempt records."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any, Literal, get_args

from jobdef.records import Record, record
from jobdef.redact import redact

# ``waiting``: a step of a flow held until its parents end (no claim reads it).
State = Literal["waiting", "queued", "running", "done", "dead", "resolved", "cancelled"]
ACTIVE_STATES: tuple[State, ...] = ("queued", "running")
FINAL_STATES: tuple[State, ...] = ("done", "dead", "resolved", "cancelled")

# How one attempt ended.
Outcome = Literal[
    "done", "retry", "dead", "timeout", "crashed", "reclaimed", "released", "cancelled"
]
# Every outcome, in that order: the ``outcome`` label of ``jobdef_jobs_finished_total``.
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
# The outcomes that are neither a success nor a failure: a worker that stopped handed
# the job back unrun (``released``), an operator stopped it (``cancelled``). A failure
# rate leaves them out; every other outcome but ``done`` is a failed attempt.
NEITHER_OUTCOMES: frozenset[Outcome] = frozenset({"released", "cancelled"})


@record
class ErrorInfo(Record):
    """What an attempt raised: the exception's class path, its message, the traceback.

    Message and traceback are redacted here, so no stored error, outbox payload or
    listing holds a password or token a handler's exception quoted in a URL.
    """

    type: str
    message: str
    traceback: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", redact(self.message))
        object.__setattr__(self, "traceback", redact(self.traceback))


@record
class NewJob(Record):
    """A job to store. ``idempotency_key`` is computed from the sheet's recipe by the caller.

    ``dedupe_window``: seconds after a job with the same key finished during
    which a new enqueue still returns that job (``None``: only while active).
    ``slot``: for scheduled batch jobs, the cron slot (epoch seconds); the store
    keeps each (job, slot) at most once, ever.
    """

    job: str
    args: Mapping[str, Any]
    queue: str
    priority: int = 0
    max_attempts: int = 1
    idempotency_key: str | None = None
    run_after: float | None = None
    dedupe_window: float | None = None
    slot: float | None = None
    # The enqueuer's trace context (W3C traceparent as JSON, jobdef.telemetry.traces).
    trace_context: str | None = None
    # How many args the enqueuer passed by position, in the order of the handler's
    # parameters (a django.tasks call); None when all were named, as a sheet's are.
    positional_args: int | None = None
    # The JSON text of ``args`` to store, when the caller encoded them already (the
    # queue does, checking their size; it is what ``dump_json(args)`` makes of them);
    # None: the store encodes ``args``.
    args_json: str | None = None


@record
class Receipt(Record):
    """What an enqueue hands back: the stored job's id, its receipt token, and whether
    this call created it (False: it merged into a job with the same idempotency key,
    whose receipt this is).

    The token (136 random bits, url-safe text) is what a browser or another service
    may hold to ask about the job (``Queue.status``, ``Queue.wait``): unlike the id it
    cannot be guessed from another job's. ``str(receipt)`` is the token; ``id`` is the
    job's id, as an enqueue returned it before receipts. The token is ``""`` only when
    the job a cron slot merged into was pruned since (the scheduler's enqueue).
    """

    job_id: int
    token: str
    created: bool

    @property
    def id(self) -> int:
        """The job's id (``job_id``)."""
        return self.job_id

    def __str__(self) -> str:
        return self.token

    def __repr__(self) -> str:
        # Only the token's start: a log line or a traceback that shows the receipt
        # does not hand out what reads the job.
        shown = f"{self.token[:4]}..." if self.token else ""
        return f"Receipt(job_id={self.job_id}, token={shown!r}, created={self.created})"


@record
class Lease(Record):
    """The right to finish one attempt of one job; ``attempt`` is the fencing token."""

    job_id: int
    attempt: int
    worker_id: str
    # The flow the job is a step of (None: a plain job): its end settles that flow's
    # waiting steps in the same transaction (jobdef.backends.flows).
    flow_id: int | None = None


@record
class JobRecord(Record):
    """One row of the jobs table."""

    id: int
    job: str
    queue: str
    priority: int
    args: Mapping[str, Any]
    state: State
    attempt: int
    max_attempts: int
    idempotency_key: str | None
    run_after: float
    created_at: float
    updated_at: float
    finished_at: float | None = None
    worker_id: str | None = None
    lease_until: float | None = None
    last_error: ErrorInfo | None = None
    # The wait drawn after the previous failed attempt (decorrelated jitter needs it).
    last_delay: float | None = None
    progress: Mapping[str, Any] | None = None
    note: str | None = None
    slot: float | None = None
    trace_context: str | None = None
    # What the handler of the attempt that finished ``done`` returned (JSON), if anything.
    result: Any = None
    positional_args: int | None = None
    # The job's receipt token (None: enqueued before receipts, and never merged into since).
    receipt: str | None = None
    # When the newest attempt started (None: no attempt yet).
    started_at: float | None = None
    # The flow this job is a step of and the step's name (None: a plain job).
    flow_id: int | None = None
    step: str | None = None

    @property
    def lease(self) -> Lease:
        """The lease a claim of this row handed out (valid only while ``state == 'running'``)."""
        return Lease(self.id, self.attempt, self.worker_id or "", self.flow_id)


@record
class AttemptRecord(Record):
    """One attempt of a job: when, which worker, how it ended."""

    job_id: int
    attempt: int
    worker_id: str
    started_at: float
    finished_at: float | None
    outcome: Outcome | None
    error: ErrorInfo | None = None


@record
class Notification(Record):
    """An outbox message, written in the same transaction as the transition it reports.

    ``message_id`` is stable for the life of the message, so a receiver can drop
    a copy that a crash made the sender deliver twice.
    """

    channel: str
    event: str
    job: str
    payload: Mapping[str, Any]
    message_id: str


@record
class OutboxRecord(Record):
    """A stored outbox message and its delivery state."""

    id: int
    notification: Notification
    attempts: int
    next_at: float
    created_at: float
    delivered_at: float | None = None
    last_error: str | None = None


@record
class StateCount(Record):
    """How many jobs of one name are in one state, and the oldest queued one's age."""

    job: str
    queue: str
    state: State
    count: int
    oldest_age: float | None = None


@record
class RetentionRule(Record):
    """Prune rows of ``job``: done/cancelled/resolved after ``done``, dead after ``dead``.

    ``None`` keeps the rows of that state forever (dead: until resolved).
    """

    job: str
    done: float | None
    dead: float | None


@record
class ResultRetention(Record):
    """Clear the stored results of ``job``'s done jobs ``keep`` seconds after each ended
    (the sheet's ``result.retention``, when shorter than its ``retention.done``)."""

    job: str
    keep: float


@record
class QueueInfo(Record):
    """Live state of one queue."""

    queue: str
    paused: bool
    queued: int = 0
    running: int = 0
    oldest_queued_age: float | None = None


@record
class ClaimOptions(Record):
    """What one claim may take.

    ``queues``: only these queues (``None``: all). ``limit``: at most this many
    jobs. ``queue_limits``: per-queue cap on jobs running across all workers.
    ``queue_rates``: per-queue starts per second across all workers, a token
    bucket stored with the queue (:mod:`jobdef.policy.queue_controls`). Paused queues
    are never claimed from.
    """

    worker_id: str
    lease_seconds: float
    limit: int = 1
    queues: Sequence[str] | None = None
    queue_limits: Mapping[str, int] = field(default_factory=dict)
    queue_rates: Mapping[str, float] = field(default_factory=dict)
    # The start the claim writes on its jobs (started_at, epoch seconds on the engine's
    # clock); None: the engine's clock as the claim runs. A worker names each claim by
    # it, so that should it die before it hands the jobs out, its handler processes
    # can give them back uncounted (jobdef.runtime.orphan). An engine that reads its
    # clock inside its write lock (SQLite: attempt times follow commit order) writes
    # the later of the two; a claim under queue limits, the time it took the queues.
    started_at: float | None = None


@record
class StoreSettings(Record):
    """A database as an application's settings name it (Django's ``DATABASES``), from
    which its engine's driver builds the store's URL. ``name`` is the database's name,
    or a file's path; ``schema`` is where jobdef's tables go, on an engine that has
    schemas (None: its default)."""

    name: str
    user: str = ""
    password: str = field(default="", repr=False)
    host: str = ""
    port: str = ""
    schema: str | None = None


# A count or id of a wake-up: ASCII digits, at most a bigint's.
_WHOLE = re.compile(r"[0-9]{1,19}")


@record
class Wakeup(Record):
    """Why an idle worker's wait for jobs ended early.

    ``count`` jobs were enqueued on ``queue``, the first of them with id ``first_id``;
    ``count`` None: jobs became runnable there in some other way (a release, a
    requeue), in an unknown number. ``queue`` None: look at every queue (the wait was
    ended on purpose, or the engine can no longer tell). ``due``: every one of those
    jobs was enqueued with a delay, and the first comes due then (the engine's clock,
    epoch seconds): claim then, not now. ``at``: the enqueuer's reading of the
    engine's clock when it stored them, by which those not delayed were due (None:
    not said). ``turn``: this worker's part in them, ``first`` or ``backup``, when the
    enqueue chose the workers it told (None: every listening worker was told, and
    each takes its turn itself; jobdef.runtime.wake_share).
    """

    queue: str | None = None
    count: int | None = None
    first_id: int | None = None
    due: float | None = None
    at: float | None = None
    turn: str | None = None

    @classmethod
    def parse(cls, payload: str) -> Wakeup:
        """The wake-up an enqueue's notification carries: ``queue``, ``queue count id``,
        ``queue count id due``, ``queue count id due at`` (``due`` ``-``: none) or
        ``queue count id due at turn``."""
        queue, _, rest = payload.partition(" ")
        count, _, rest = rest.partition(" ")
        first, _, rest = rest.partition(" ")
        due, _, rest = rest.partition(" ")
        at, _, turn = rest.partition(" ")
        # Any role that can connect may NOTIFY on the channel: what is not our own
        # payload is read as a wake-up of the queue, never raised.
        if not (_WHOLE.fullmatch(count) and _WHOLE.fullmatch(first)):
            return cls(queue or None)
        told = turn if turn in TURNS else None
        return cls(queue or None, int(count), int(first), _epoch(due), _epoch(at), told)


# The turns an enqueue gives the workers it tells (Wakeup.turn).
TURNS = ("first", "backup")


def _epoch(text: str) -> float | None:
    """A finite number of seconds in a notification, or None (absent, ``-``, or not one)."""
    try:
        seconds = float(text)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) else None
