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

Everything else the rest of jobdef asks of an engine goes through its
:class:`Driver`, found by the store URL's scheme in :mod:`jobdef.backends.engines`:
opening a store (:func:`jobdef.backends.open_backend` builds one from a URL and
runs :meth:`Backend.migrate`), naming it in messages, a read-only
:class:`Reader` for pages, a :class:`Watcher` of changes where the engine can
tell one, a scratch store for a test, and the URL of a database an application's
settings name. No module outside :mod:`jobdef.backends` names an engine
(``tests/test_engine_names.py``).

Each engine keeps its SQL in named blocks beside it (``queries.sql`` for the
verbs, ``reader.sql`` for the reader, read by :mod:`jobdef.backends.sql`), with
the same query names in every engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeGuard, runtime_checkable

from jobdef.backends.cancels import CancelledFrom
from jobdef.backends.flows import NO_FLOW_CURSOR, FlowRecord, NewFlow
from jobdef.backends.records import (
    AttemptRecord,
    ClaimOptions,
    ErrorInfo,
    JobRecord,
    Lease,
    NewJob,
    Notification,
    OutboxRecord,
    Outcome,
    QueueInfo,
    Receipt,
    ResultRetention,
    RetentionRule,
    State,
    StateCount,
    StoreSettings,
    Wakeup,
)
from jobdef.backends.schema import Versioned


class Backend(Versioned, Protocol):
    """A job store. Each verb is one transaction; fenced verbs return False when refused."""

    url: str
    """The URL it was opened at: a process or thread of its own (a worker's outbox
    sender, an embedded worker) opens the same store from it."""

    clock: Callable[[], float]
    """The store's clock, epoch seconds: the one its rows' times are on (PostgreSQL:
    the server's, which every host shares)."""

    def migrate(self) -> None:
        """Create or upgrade the schema to the newest numbered migration (idempotent)."""

    def close(self) -> None:
        """Release connections."""

    def enqueue(self, jobs: Sequence[NewJob], connection: Any = None) -> list[Receipt]:
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

    def cancel(self, job_id: int, reason: str = "cancelled") -> CancelledFrom | None:
        """Cancel a queued or running job with ``reason`` as its note; a running one's
        attempt ends ``cancelled`` and its worker stops the handler at its next
        heartbeat (:mod:`jobdef.backends.cancels`). The state the job was in, or None
        when it was neither queued nor running."""

    def requeue(
        self, job_ids: Sequence[int] = (), job: str | None = None, state: State = "dead"
    ) -> int:
        """Queue dead (or ``state``) jobs again with attempts back to 0; history is kept."""

    def resolve(self, job_id: int, note: str) -> bool:
        """Close a dead job: an operator handled it."""

    def expired_leases(self, limit: int = 100) -> list[JobRecord]:
        """Running jobs whose lease has expired (their worker died); the caller retries or buries
        each through the fenced verbs, so two reclaimers cannot both act on one job."""

    def release_unhanded(self, worker_id: str, started_at: Sequence[float]) -> int:
        """Give back, as :meth:`release` does (the attempt not counted), the running jobs of
        ``worker_id`` that its claims stamped ``started_at``
        (:attr:`ClaimOptions.started_at`): claims whose answer it never read. The
        handler processes of a worker that died call it (:mod:`jobdef.runtime.orphan`).
        How many it gave back."""

    def prune(
        self, rules: Sequence[RetentionRule], batch_size: int = 1000, *, dry_run: bool = False
    ) -> int:
        """Delete finished rows (and their attempts) older than their retention, in batches.

        Returns how many jobs were deleted; with ``dry_run`` nothing is deleted and the
        count is of what would be.
        """

    def expire_results(self, rules: Sequence[ResultRetention], batch_size: int = 1000) -> int:
        """Clear the stored results of done jobs that ended longer ago than their rule's
        ``keep`` (the rows stay), in batches of ``batch_size``, each its own short
        transaction, through an index of the rows that have a result. Returns how many."""

    def stats(self) -> list[StateCount]:
        """Counts per job and state."""

    def store_id(self) -> str:
        """The id this store holds, the same through every URL that reaches it."""

    def get(self, job_id: int) -> JobRecord | None:
        """One job, or None."""

    def find_receipt(self, token: str) -> JobRecord | None:
        """The job whose receipt token is ``token`` (compared in constant time), or None."""

    def watch_jobs(self, ids: Sequence[int]) -> tuple[list[JobRecord], list[int]]:
        """Start waiting for the jobs ``ids`` (an engine that tells waiters marks them, so
        the statement that ends each tells): those that ended already, and the ids of
        those that are gone."""

    def ended_jobs(self, ids: Sequence[int]) -> tuple[list[JobRecord], list[int]]:
        """Of the jobs ``ids``, those that ended, and the ids of those that are gone."""

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

    # Flows (jobdef.backends.flows): a workflow's steps stored as jobs.
    def start_flow(self, flow: NewFlow, connection: Any = None) -> Receipt:
        """Store a flow and every step in one transaction (roots queued, the others
        ``waiting``), or return the receipt of the flow with the same key it merges into."""

    def cancel_flow(self, flow_id: int, reason: str) -> bool:
        """Cancel a running flow: its waiting, queued and running steps are cancelled
        with ``reason`` (a running one as :meth:`cancel` does) and the flow ends
        ``cancelled``; False when the flow is not running."""

    def sweep_flows(self, limit: int = 100) -> tuple[int, int]:
        """Settle the running flows no step's end can settle any more, cancel those
        past their deadline and the waiting steps of flows that are gone."""

    def get_flow(self, flow_id: int) -> FlowRecord | None:
        """One flow and its steps' states, or None."""

    def find_flow(self, token: str) -> FlowRecord | None:
        """The flow whose receipt token is ``token``, or None."""

    def list_flows(
        self,
        state: str | None = None,
        name: str | None = None,
        limit: int = 100,
        *,
        before: int = NO_FLOW_CURSOR,
        floor: int = 0,
    ) -> list[FlowRecord]:
        """Flows, newest first, with ids in [``floor``, ``before``): a window of the
        primary key bounds a filter's walk."""

    def flow_counts(self) -> list[tuple[str, str, int]]:
        """(flow name, state, count) of every flow stored."""

    def prune_flows(self, batch_size: int = 1000, *, dry_run: bool = False) -> int:
        """Delete, in batches, the ended flows none of whose steps' rows remain (each
        step goes by its own job's retention: a flow outlives its last step). Returns
        how many; with ``dry_run`` nothing is deleted and the count is of what would be."""

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

    def wait_for_jobs(self, timeout: float) -> list[Wakeup]:
        """Block until jobs may have become runnable (what the engine heard, never empty),
        or ``timeout`` passed (empty)."""

    @property
    def listening(self) -> bool:
        """Whether a wait hears enqueues as they commit (else an idle worker must poll)."""

    def wake(self) -> None:
        """End a ``wait_for_jobs`` at once (the worker was asked to stop); signal-safe."""


@runtime_checkable
class EnqueuesAlike(Protocol):
    """An engine that stores a batch of jobs alike but for their args while the caller
    is still checking them (``Queue.enqueue_many`` of a job without a key): its server
    writes the first jobs of the batch while the caller checks the args of the next."""

    def enqueue_alike(
        self, job: NewJob, args_json: Iterable[str], connection: Any = None
    ) -> list[Receipt]:
        """Store one job per args text (the JSON the args are stored as, in order), each
        ``job`` but for its args (``job.args`` is not read; ``job`` has no idempotency key
        and no slot), in one transaction; none when iterating ``args_json`` raises.
        ``connection``: as :meth:`Backend.enqueue` takes it."""


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


def enqueues_alike(backend: object) -> TypeGuard[EnqueuesAlike]:
    """Whether ``backend`` stores a batch alike but for the args as the caller checks it."""
    return isinstance(backend, EnqueuesAlike)


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


class PendingTurn(Protocol):
    """A worker's turn sent to the store, its answer not read yet (:class:`SendsTurns`)."""

    def fileno(self) -> int:
        """A file that turns readable once the answer starts to arrive."""

    def ready(self) -> bool:
        """Whether :meth:`result` would not wait (the answer came, or was read already:
        the store reads it before any other statement of its session)."""

    def leased(self) -> int:
        """How many jobs the turn's claim leased, waiting for its answer if need be, before
        :meth:`result` reads them (a worker sends its next turn first); raises what the
        turn raised."""

    def result(self) -> tuple[list[bool], list[JobRecord]]:
        """What :meth:`CompletesAndClaims.complete_and_claim` returns, waiting for it if
        need be; raises what it would raise."""


class SendsTurns(Protocol):
    """An engine that can send a worker's turn and answer it later (optional).

    On a server, a turn's statement takes as long to run as the worker takes to use
    its answer (hand out the jobs, collect what finished): a worker that waits for
    each answer leaves the server idle while it works and itself idle while the
    server runs the turn. One that sends the turn and goes on with its handler
    processes keeps both at work. The store's session answers the turn before any
    other statement it runs, so the worker's other calls need no care.
    """

    def send_turn(
        self,
        leases: Sequence[Lease],
        notifications: Mapping[int, Sequence[Notification]] | None,
        options: ClaimOptions,
        results: Mapping[int, str] | None = None,
    ) -> PendingTurn | None:
        """:meth:`CompletesAndClaims.complete_and_claim`, sent; None when this turn
        cannot be (the caller then makes the call and waits)."""


def send_turn(
    backend: Backend,
    leases: Sequence[Lease],
    notifications: Mapping[int, Sequence[Notification]] | None,
    options: ClaimOptions | None,
    results: Mapping[int, str] | None = None,
) -> PendingTurn | None:
    """The turn of :func:`complete_and_claim`, sent, if the engine offers
    :class:`SendsTurns` and can send this one (leases to complete, a claim to make)."""
    sender = getattr(backend, "send_turn", None)
    if not leases or options is None or not callable(sender):
        return None
    turn: PendingTurn | None = sender(leases, notifications, options, results)
    return turn


class Reader(Protocol):
    """A read-only session on a store for the pages that show it (the dashboard), opened
    by :func:`jobdef.backends.open_reader`: a page can never change a row.

    It runs the named queries of its engine's ``reader.sql``, which has the same
    names and parameters in every engine, each bounded (a window of the primary key,
    one partial index, or a cap). A list parameter is given as a Python list; the
    reader passes it as its dialect does.
    """

    engine: str
    """The engine's name, to show an operator which kind of store this is."""

    args_index: bool
    """Whether an args qualifier searches every job through an index (the query
    ``jobs_by_args``); else it filters the window that ``jobs_window`` walks."""

    def rows(self, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The rows of the named query, each a dict by column name."""

    def args_params(self, key: str | None, value: str) -> dict[str, Any]:
        """The query parameters of the qualifier ``args.KEY:VALUE`` (see
        :mod:`jobdef.backends.reads`); with ``key`` None, those of no qualifier."""

    def job(self, row: Mapping[str, Any]) -> JobRecord:
        """A row of the jobs table, as its record."""

    def close(self) -> None:
        """Release the session."""


class Watcher(Protocol):
    """Tells a watcher (the dashboard's live updates) that the store may have changed.

    It calls the ``on_change`` it was made with, in a thread of its own, after each
    burst of changes and whenever :attr:`listening` flips, so the watcher looks at the
    store again when it may have missed something.
    """

    listening: bool
    """True while changes are being heard; False while they cannot be (poll instead)."""

    def start(self) -> None:
        """Begin watching, in a thread of its own."""

    def stop(self) -> None:
        """Ask the thread to end; returns at once."""


class Driver(Protocol):
    """One engine as the rest of jobdef reaches it (as River's driver is): all that is
    not a verb on an open store. Each engine's package has one, registered by URL
    scheme in :mod:`jobdef.backends.engines`."""

    name: str
    """The engine's name, to show an operator (the dashboard's header)."""

    migrations: str
    """The package of its numbered migrations (``NNNN_*.sql``)."""

    def open(
        self, url: str, *, clock: Callable[[], float] | None = None, create: bool = True
    ) -> Backend:
        """The store at ``url``, its schema untouched (see :func:`jobdef.backends.open_backend`)."""

    def describe(self, url: str) -> str:
        """Where the store is, for messages, without a password: a file's path, or a
        schema at a server."""

    def open_reader(self, url: str) -> Reader:
        """A read-only session on the store at ``url`` for pages."""

    def scratch_store(self, url: str | None, folder: Path | None) -> tuple[str, Callable[[], None]]:
        """``(url, cleanup)`` of a new, empty store for one test, beside ``url`` (the
        same server; None: anywhere this engine can make one, e.g. a file in ``folder``);
        ``cleanup`` removes it."""

    def url_from_settings(self, settings: StoreSettings) -> str:
        """The URL of the database an application's settings name (Django's
        ``DATABASES``). A database no worker process can share raises a
        :class:`~jobdef.errors.BackendError` whose message follows the database's name
        ("is an in-memory SQLite database, ...")."""

    def record_processed_key(
        self, connection: Any, key: str, job_id: int, now: float, store_url: str
    ) -> bool:
        """Record ``key`` on a handler's own DB-API ``connection`` of a module this engine
        is registered for, in its transaction; False when it was recorded before.
        ``store_url`` is the job store's, whatever its engine."""

    def end_signal(self, url: str) -> EndSignal:
        """How the waiters of one process hear that jobs of the store at ``url`` ended
        (a new one for each thread of :mod:`jobdef.backends.waiters`, not started)."""


class EndSignal(Protocol):
    """What tells the waiters' thread (:mod:`jobdef.backends.waiters`) that jobs ended:
    PostgreSQL's LISTEN on the waiters' channel, or nothing on an engine that is polled."""

    @property
    def poll_seconds(self) -> float:
        """How often the thread reads every waited job anyway: the only way on an engine
        that tells nothing; a fallback for a notification lost on one that does."""

    def listen(self) -> bool:
        """Make sure ends are heard from now on; True when some may have been missed
        since the last call (a new listening session): the thread then reads every
        waited job again. Never raises: a store out of reach is polled meanwhile."""

    def heard(self, timeout: float) -> set[int]:
        """The ids of jobs whose end was told, waiting up to ``timeout`` seconds for one;
        returns early (maybe with none) when :meth:`wake` was called."""

    def wake(self) -> None:
        """End a :meth:`heard` at once (a new waiter came); safe from any thread."""

    def close(self) -> None:
        """Release the session, if any."""


@runtime_checkable
class ListensForChanges(Protocol):
    """A driver whose stores tell watchers when they change (PostgreSQL's NOTIFY); the
    others are polled."""

    def listen_for_changes(self, url: str, on_change: Callable[[], None]) -> Watcher:
        """A watcher of the store at ``url`` (not started)."""
