"""The backend protocol: the verbs a job store offers the queue API and the worker.

Two engines implement it (SQLite, PostgreSQL) and one conformance suite
(``tests/backends/``) runs against both. Each verb is one transaction. Every
transition of a running job is *fenced*: it names the :class:`Lease` it holds
(job id, attempt number, worker id) and is refused (returns ``False``) when the
job is no longer running under that lease, e.g. because the lease expired and
another worker reclaimed it.

All timestamps are ``float`` seconds since the epoch, taken from the backend's
injectable ``clock`` so tests can steer time. Rows keep their history: every
attempt is recorded in an attempts table.

Engines are classes constructed as ``Engine(url, *, clock=None)`` (``clock``
defaults to :func:`time.time`); :func:`jobdef.backends.open_backend` builds one
from a URL and runs :meth:`Backend.migrate`. Each engine keeps its SQL in named
blocks beside it (``<engine>.sql``, read by :mod:`jobdef.backends.sql`), with the
same query names in every engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeGuard, runtime_checkable

from jobdef.backends.records import (
    AttemptRecord,
    ClaimOptions,
    EnqueueResult,
    ErrorInfo,
    JobRecord,
    Lease,
    NewJob,
    Notification,
    OutboxRecord,
    Outcome,
    QueueInfo,
    RetentionRule,
    State,
    StateCount,
)


class Backend(Protocol):
    """A job store. Each verb is one transaction; fenced verbs return False when refused."""

    def migrate(self) -> None:
        """Create or upgrade the schema to the newest numbered migration (idempotent)."""

    def close(self) -> None:
        """Release connections."""

    def enqueue(self, jobs: Sequence[NewJob], connection: Any = None) -> list[EnqueueResult]:
        """Store jobs, merging duplicates of an active job with the same idempotency key.

        A job's ``dedupe_window`` also merges it into a job with the same key that
        finished ``done`` within the window; dead, cancelled and resolved jobs never
        absorb a new enqueue (a new request after a failure is a new job).

        With ``connection`` (the caller's own DB-API connection, in a transaction)
        the rows are written on it and exist only if the caller commits.
        """

    def claim(self, options: ClaimOptions) -> list[JobRecord]:
        """Atomically take runnable jobs: priority desc, run_after, id; lease them to the worker."""

    def heartbeat(self, lease: Lease, lease_seconds: float, progress: Any = None) -> bool:
        """Extend a running job's lease (and record progress)."""

    def complete(
        self,
        leases: Sequence[Lease],
        notifications: Mapping[int, Sequence[Notification]] | None = None,
        results: Mapping[int, str] | None = None,
    ) -> list[bool]:
        """Mark several attempts done in one transaction (group commit).

        ``notifications`` (by job id, a ``done`` event) go to the outbox only for
        the leases that the call accepted. ``results`` (by job id): what each
        handler returned, as JSON text the caller checked (plain JSON, bounded);
        stored in the job's ``result``, which a job left out gets as ``NULL``.
        """

    def retry(
        self,
        lease: Lease,
        error: ErrorInfo,
        run_after: float,
        delay: float,
        *,
        outcome: Outcome = "retry",
        notifications: Sequence[Notification] = (),
    ) -> bool:
        """Record a failed attempt and queue the job again at ``run_after``."""

    def bury(
        self,
        lease: Lease,
        error: ErrorInfo,
        *,
        outcome: Outcome = "dead",
        notifications: Sequence[Notification] = (),
    ) -> bool:
        """Record a failed attempt and move the job to ``dead`` (fatal, or attempts used up)."""

    def release(self, lease: Lease) -> bool:
        """Give a running job back to the queue without counting the attempt (shutdown).

        The job's ``attempt`` goes down by one; the attempt row is kept with outcome
        ``released``.
        """

    def cancel(self, job_id: int) -> bool:
        """Cancel a queued job."""

    def requeue(
        self, job_ids: Sequence[int] = (), job: str | None = None, state: State = "dead"
    ) -> int:
        """Queue dead (or ``state``) jobs again with attempts back to 0; history is kept."""

    def resolve(self, job_id: int, note: str) -> bool:
        """Close a dead job: an operator handled it."""

    def expired_leases(self, limit: int = 100) -> list[JobRecord]:
        """Running jobs whose lease has expired (their worker died); the caller retries or buries
        each through the fenced verbs, so two reclaimers cannot both act on one job."""

    def prune(
        self, rules: Sequence[RetentionRule], batch_size: int = 1000, *, dry_run: bool = False
    ) -> int:
        """Delete finished rows (and their attempts) older than their retention, in batches.

        Returns how many jobs were deleted; with ``dry_run`` nothing is deleted and the
        count is of what would be.
        """

    def stats(self) -> list[StateCount]:
        """Counts per job and state."""

    def store_id(self) -> str:
        """The id this store holds, the same through every URL that reaches it."""

    def get(self, job_id: int) -> JobRecord | None:
        """One job, or None."""

    def list_jobs(
        self, state: State | None = None, job: str | None = None, limit: int = 100
    ) -> list[JobRecord]:
        """Jobs, newest first."""

    def attempts(self, job_id: int) -> list[AttemptRecord]:
        """Every attempt of one job, oldest first."""

    def get_on(self, connection: Any, job_id: int) -> tuple[JobRecord | None, list[AttemptRecord]]:
        """One job (or None) and its attempts, read on the caller's ``connection`` (as
        ``enqueue(connection=...)`` takes it) inside its transaction, so a job enqueued
        there and not committed yet is seen, as the caller's own writes are."""

    def record_processed_key(self, connection: Any, key: str, job_id: int) -> bool:
        """Record ``key`` in the processed-keys table on the handler's own connection.

        Returns False when the key was already recorded: the work was done by an
        earlier run and must not be done again.
        """

    # Outbox: notifications written with the transitions above, delivered by a sender.
    def outbox_claim(self, limit: int, lease_seconds: float) -> list[OutboxRecord]:
        """Take due undelivered messages for sending (leased, so two senders do not race)."""

    def outbox_delivered(self, ids: Sequence[int]) -> None:
        """Mark messages delivered."""

    def outbox_failed(self, id: int, error: str, next_at: float) -> None:
        """Record a failed delivery and when to try again."""

    def outbox_retry(self, ids: Sequence[int]) -> int:
        """Make undelivered messages due at once and free their lease (an operator's
        "retry now"); delivered ones are left alone. Returns how many were changed."""

    def outbox_pending(self) -> list[OutboxRecord]:
        """Undelivered messages, oldest first (for status and tests)."""

    def last_slot(self, job: str) -> float | None:
        """The newest cron slot ever stored for ``job`` (``None``: never scheduled).

        The scheduler starts from it after a restart, to see which slots were missed.
        """

    # Queue controls.
    def set_paused(self, queue: str, paused: bool) -> None:
        """Pause or resume claiming from a queue; running workers see it at their next claim."""

    def queues(self) -> list[QueueInfo]:
        """Depth, running count, oldest waiting age and pause state per queue."""


# Optional capabilities. An engine that serves many hosts (PostgreSQL) offers
# them and names them among its bases, so the type checker holds it to them; the
# worker asks through the functions below, so an engine without them (SQLite)
# needs no code: it polls, and every worker maintains.


@runtime_checkable
class WakesWorkers(Protocol):
    """An engine that can tell an idle worker that jobs were enqueued (LISTEN/NOTIFY)."""

    def wait_for_jobs(self, timeout: float) -> bool:
        """Block until an enqueue may have made jobs runnable (True) or ``timeout`` passed."""

    def wake(self) -> None:
        """End a ``wait_for_jobs`` at once (the worker was asked to stop); signal-safe."""


@runtime_checkable
class ElectsMaintainer(Protocol):
    """An engine that lets one worker at a time run the maintenance services."""

    def try_maintenance_lock(self) -> bool:
        """True when this engine holds (or just took) the maintenance lock."""


@runtime_checkable
class WaitsForItsServer(Protocol):
    """An engine whose calls wait a while for a lost server to come back (PostgreSQL)."""

    def fail_fast(self) -> None:
        """From now on, report a lost server at once, after one quick try to reconnect."""


def fail_fast(backend: object) -> None:
    """Have ``backend`` report a lost server at once: for a caller that rides out an
    outage itself, between its own work (the worker, :mod:`jobdef.runtime.outage`)."""
    if isinstance(backend, WaitsForItsServer):
        backend.fail_fast()


def can_wait_for_jobs(backend: object) -> TypeGuard[WakesWorkers]:
    """Whether ``backend`` wakes idle workers itself (else the worker polls)."""
    return isinstance(backend, WakesWorkers)


def elects_maintainer(backend: object) -> TypeGuard[ElectsMaintainer]:
    """Whether ``backend`` lets one worker at a time maintain (else every worker does)."""
    return isinstance(backend, ElectsMaintainer)


def holds_maintenance_lock(backend: object) -> bool:
    """Whether this worker should run the maintenance services now.

    Engines without an election let every worker maintain: reclaim and the
    scheduler go through fenced or idempotent verbs, so doing it twice is safe,
    only wasted work.
    """
    return not elects_maintainer(backend) or backend.try_maintenance_lock()


class CompletesAndClaims(Protocol):
    """An engine that can finish a worker's turn in one transaction (optional).

    Both databases are limited by the flush to disk, so a worker that completes
    what finished and claims what comes next in one commit doubles its drain
    rate. Engines without it get two calls, ``complete`` then ``claim``.
    """

    def complete_and_claim(
        self,
        leases: Sequence[Lease],
        notifications: Mapping[int, Sequence[Notification]] | None,
        options: ClaimOptions,
        results: Mapping[int, str] | None = None,
    ) -> tuple[list[bool], list[JobRecord]]:
        """``complete(leases, notifications, results)`` and ``claim(options)`` in one
        transaction."""


def completes_and_claims(backend: object) -> TypeGuard[CompletesAndClaims]:
    """Whether ``backend`` offers :class:`CompletesAndClaims`."""
    return callable(getattr(backend, "complete_and_claim", None))


def complete_and_claim(
    backend: Backend,
    leases: Sequence[Lease],
    notifications: Mapping[int, Sequence[Notification]] | None,
    options: ClaimOptions | None,
    results: Mapping[int, str] | None = None,
) -> tuple[list[bool], list[JobRecord]]:
    """Complete ``leases`` (storing ``results``) and claim per ``options`` (None: no
    claim), in one transaction when the engine offers :class:`CompletesAndClaims`."""
    if leases and options is not None and completes_and_claims(backend):
        return backend.complete_and_claim(leases, notifications, options, results)
    accepted = backend.complete(leases, notifications, results) if leases else []
    return accepted, backend.claim(options) if options is not None else []
