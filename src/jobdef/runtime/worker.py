"""The worker: claims jobs, runs them in a pool of child processes, records every outcome.

One loop in one thread. Each turn it completes every job that finished since
the last turn and claims a batch sized to the room left in the children's
queues (each child takes ``depth`` tasks ahead), in one transaction when the
engine can (group commit: the flush to disk is what limits a queue), and hands
the batch to the children at once, so they run what they hold while the worker
waits on the database for the next. It then waits for results, classifies
failures by the sheet, extends the leases of what it holds, and runs the
maintenance services that are due.

A claim is never held back in the worker: it is in a child's hands as soon as
the claim commits, so a worker that dies leaves no claimed job that only it
knew about. Its children give back what they held and had not started
(:mod:`jobdef.runtime.orphan`), without counting an attempt; only the attempts
that started are reclaimed and counted.

Signals move the worker through its phases (:class:`Phase`, read once per
turn): the first SIGTERM/SIGINT starts the drain, which stops claiming, gives
back the jobs not yet started, and lets running ones finish within ``grace``
seconds; when the grace is over, or at a second signal, the worker stops: it
kills what still runs and records each as a failed attempt (``crashed``: the
handler ran, so its attempt is used and the sheet decides on a retry), and
releases what had not started. Either way no job is lost: a released job is
queued again, and if even the record cannot be written, the lease expires and
another worker reclaims the job.

A worker that learns it lost a job's lease (a heartbeat refused: it was frozen
past the lease and another worker reclaimed the job) kills that handler's child
at once and records nothing for it: the job's new attempt belongs to the other
worker. A job cancelled while it ran is learnt the same way (the cancel ended
the attempt in the store, :mod:`jobdef.backends.cancels`): the child is killed,
nothing is recorded, and the line says it was cancelled. A handler's Beat goes
through the same heartbeat, so a cancel reaches a running handler within one
heartbeat period (a third of the lease) and one turn of the loop.

When the store fails under it (a full disk, a server that went away), the
worker keeps running: what finished waits in memory to be recorded, and the
store is tried again after a growing pause (:mod:`jobdef.runtime.outage`).
"""

from __future__ import annotations

import contextlib
import enum
import heapq
import logging
import math
import random
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jobdef.backends.protocol import (
    Backend,
    PendingTurn,
    can_wait_for_jobs,
    complete_and_claim,
    fail_fast,
    holds_maintenance_lock,
    send_turn,
)
from jobdef.backends.records import (
    ClaimOptions,
    ErrorInfo,
    JobRecord,
    Lease,
    Notification,
    Outcome,
    Wakeup,
)
from jobdef.errors import BackendError, UnknownJobError
from jobdef.notify.events import notifications_for
from jobdef.policy.durations import format_wait
from jobdef.policy.leases import TURN_WHILE_RUNNING, heartbeat_period, vouch_span
from jobdef.policy.model import JobPolicy
from jobdef.policy.queue_controls import concurrency_limits, rate_limits
from jobdef.policy.registry import Registry
from jobdef.policy.sizes import UNIT_BYTES
from jobdef.runtime.child import ChildSettings
from jobdef.runtime.claim_window import ClaimWindow
from jobdef.runtime.classify import class_name, class_names
from jobdef.runtime.errors import AttemptTimedOut, HandlerCrashed
from jobdef.runtime.failures import FailedAttempt, record_failure
from jobdef.runtime.handler_pool import child_settings, start_pool
from jobdef.runtime.handlers import (
    check_handlers,
    is_unavailable,
    jobless_queues,
    unavailable_line,
)
from jobdef.runtime.maintenance import MAINTENANCE, MaintenanceContext, Service
from jobdef.runtime.maintenance.gauges import GaugeReader
from jobdef.runtime.maintenance.scheduler import slot_time
from jobdef.runtime.orphan import Unhanded
from jobdef.runtime.outage import StoreOutage
from jobdef.runtime.pool import Beat, Event, Finished, Killed, Pool, Returned
from jobdef.runtime.settings import WorkerSettings, worker_id
from jobdef.runtime.wake_share import Turn, WakeShare
from jobdef.runtime.wire import Task
from jobdef.telemetry.observer import WorkerTelemetry
from jobdef.telemetry.presence import Presence
from jobdef.wake_pipe import WakePipe

log = logging.getLogger("jobdef.worker")

# After a wake-up from the store (a notification) whose claim found nothing, an idle
# worker claims again every RECHECK_INTERVAL for RECHECK_AFTER_WAKE seconds before it
# goes back to the poll interval: the job that caused the notification may be due a few
# milliseconds after the first claim, as the hosts' readings of the server's clock
# differ slightly. A claim that finds a job ends it. Only for a notification that does
# not say by when its jobs were due (Wakeup.at): for one that does, the worker knows
# whether its clock is behind the enqueuer's, and claims once more at that time if so.
RECHECK_AFTER_WAKE = 0.5
RECHECK_INTERVAL = 0.05
# Seconds between the claims of an idle worker while the engine tells it of every
# enqueue (LISTEN is up): a safety net for what no notification announces, a job
# whose run_after or retry backoff comes due; jittered down to three quarters.
SAFETY_POLL = 1.0
# Seconds between two reads of the workers table by an idle worker, at its safety polls,
# so that its turns (runtime.wake_share) follow a fleet that grows or shrinks.
PEERS_READ_IDLE = 2.0
# How long after a retry's backoff ends its worker claims it: the store's clock, which
# dates the job, and this host's may differ by a little.
DUE_MARGIN = 0.01
# How many due times (runtime.worker.Worker._due) an idle worker keeps; past that it
# keeps the soonest half. Each notification of delayed jobs that is this worker's turn
# adds one, so a flood of them (a million delayed enqueues, or a hostile NOTIFY on the
# channel) would otherwise grow without bound; a job whose due time was let go is found
# by the next safety poll, at most SAFETY_POLL late.
MAX_DUES = 1024


class Phase(enum.Enum):
    """Where a worker is between its start and its exit."""

    RUNNING = "running"  # claims, runs and records jobs
    DRAINING = "draining"  # first stop request: no new claims; what runs may finish
    STOPPING = "stopping"  # second request, or the grace is over: kill, release, exit


def phase_of(stop_requests: int, drain_deadline: float | None, now: float) -> Phase:
    """The phase after ``stop_requests`` calls of ``request_stop`` at ``now`` (monotonic),
    for a worker whose drain, once begun, ends at ``drain_deadline``."""
    if stop_requests == 0:
        return Phase.RUNNING
    if stop_requests >= 2 or (drain_deadline is not None and now > drain_deadline):
        return Phase.STOPPING
    return Phase.DRAINING


@dataclass
class WorkerStats:
    """What one worker run did, by outcome."""

    claimed: int = 0
    done: int = 0
    retried: int = 0
    dead: int = 0
    timed_out: int = 0
    crashed: int = 0
    released: int = 0
    refused: int = 0
    # Jobs this worker retried whose next attempt it did not take (not yet due when a
    # burst ended, or when it stopped), and when the first of them is due (epoch s).
    waiting: int = 0
    next_due: float | None = None

    def __str__(self) -> str:
        return (
            f"claimed {self.claimed}: {self.done} done, {self.retried} retried, "
            f"{self.dead} dead, {self.timed_out} timed out, {self.crashed} crashed, "
            f"{self.released} released, {self.refused} late writes refused"
        )


@dataclass(slots=True)
class _TurnOut:
    """A turn sent to the store (``pending``), its answer not read yet: what it completes
    (``helds``), what it claims (``options``), how many jobs were held besides when it was
    sent (``holding``), and when (``sent_at``, monotonic: the leases it claims run from
    about then)."""

    pending: PendingTurn
    helds: list[_Held]
    options: ClaimOptions
    holding: int
    sent_at: float


@dataclass(slots=True)
class _Held:
    """A job this worker holds a lease on."""

    record: JobRecord
    policy: JobPolicy | None
    last_beat: float
    # What the handler returned, as JSON text, once it has (stored by the completion).
    result: str | None = None

    @property
    def lease(self) -> Lease:
        return self.record.lease


def _say_lost(held: _Held, started: bool) -> None:
    """Log that the lease of ``held`` was lost (another worker reclaimed its job) and what
    became of its handler: stopped if it had ``started``, else never started."""
    log.warning(
        "lease of job %s (%s) attempt %d was lost (the job was reclaimed): %s",
        held.record.id,
        held.record.job,
        held.record.attempt,
        "its handler was stopped and nothing is recorded for it"
        if started
        else "its handler had not started and does not; nothing is recorded",
    )


class Worker:
    """Runs the jobs of ``registry`` stored in ``backend``, as ``settings`` say.

    The store is opened again from ``backend.url`` where a process of the worker's
    needs its own connection (each handler process, the outbox sender).
    ``telemetry`` (log lines, metrics, health), ``services`` (the maintenance
    services, default :data:`~jobdef.runtime.maintenance.MAINTENANCE`), ``clock``
    (default the store's) and ``rng`` are the worker's parts, given to replace
    them, in tests for one.
    """

    def __init__(
        self,
        backend: Backend,
        registry: Registry,
        settings: WorkerSettings | None = None,
        *,
        telemetry: WorkerTelemetry | None = None,
        services: Sequence[Callable[[MaintenanceContext], Service]] | None = None,
        clock: Callable[[], float] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.backend = backend
        self.registry = registry
        self.settings = settings = settings or WorkerSettings()
        # The store's clock unless one is given: on PostgreSQL the server's, which all
        # hosts share, so retries, reclaim and cron slots do not follow a skewed host.
        self.clock = backend.clock if clock is None else clock
        self.rng = rng or random.Random()
        self.id = settings.id or worker_id()
        self.stats = WorkerStats()
        # Job id -> when its next attempt is due, for the jobs a burst retried and has not
        # claimed again: what it leaves waiting (WorkerStats.waiting). Kept in a burst
        # only: another worker may claim the job, and the entry would never be dropped.
        self._retry_due: dict[int, float] = {}
        # When (monotonic, a heap) the jobs this worker knows of come due, the retries it
        # scheduled and the delayed enqueues whose notification gave it the turn: an idle
        # worker claims at each rather than at its next safety poll (no notification
        # says that a wait is over).
        self._dues: list[float] = []
        # Log lines per attempt, and metrics and health when asked for (jobdef.telemetry).
        self.telemetry = telemetry or WorkerTelemetry()
        self.telemetry.worker_id = self.id
        self.telemetry.registry = registry  # --log-args hides the args it marks sensitive
        self._presence = Presence(
            backend,
            self.id,
            queues=self.settings.queues,
            # The jobs it may run at once, as `jobdef workers` and the dashboard show it.
            concurrency=settings.concurrency * settings.async_per_process,
            lease_seconds=settings.lease_seconds,
        )
        # Whose turn a wake-up is (runtime.wake_share), from the workers table's rows.
        self._share = WakeShare(self.id, self.settings.queues)
        if can_wait_for_jobs(backend):
            self._presence.on_rows = self._share.seen
        self.queue_limits = concurrency_limits(registry.queues)
        self.queue_rates = rate_limits(registry.queues)
        ctx = MaintenanceContext(
            backend,
            registry,
            self.id,
            self.clock,
            self.rng,
            log,
            telemetry=self.telemetry,
            made_runnable=self._claim_now,
        )
        factories = list(MAINTENANCE if services is None else services)
        if self.telemetry.metrics is not None:
            factories.append(GaugeReader)
        self.services = [factory(ctx) for factory in factories]
        self._held: dict[int, _Held] = {}
        # How many jobs this worker holds at once (runtime.claim_window says why): with
        # async handlers each process starts its slots at once, and holds no more.
        slots = settings.async_per_process
        held_per_process = slots if slots > 1 else settings.prefetch
        self._window = ClaimWindow(
            settings.concurrency * slots, settings.concurrency * held_per_process
        )
        self._starved = False
        self._said_most_by_args = False
        self._backlog: deque[int] = deque()
        self._completions: list[int] = []
        # A turn sent to the store, its answer not read yet (SendsTurns).
        self._turn: _TurnOut | None = None
        # The claims held that no handler process has, named for the processes to give
        # back should this one die (runtime.orphan): the pool's, once it is started.
        self._unhanded: Unhanded | None = None
        self._last_stamp = 0.0
        # Jobs whose heartbeat was refused this turn: their handlers are stopped.
        self._lost: list[int] = []
        self._failures: list[FailedAttempt] = []
        self._outage = StoreOutage()
        self._idle = False
        # Until when (monotonic) an idle turn looks again soon after a notification
        # (RECHECK_AFTER_WAKE says why).
        self._recheck_until = 0.0
        # When each service is next due, on ``clock``; a first tick on the first turn.
        self._next_tick = [0.0] * len(self.services)
        # An idle worker woken for a maintenance service before its poll claims at the
        # poll's time, not at once (monotonic; see _wait_budget).
        self._claim_at = 0.0
        # Whether the last turn ended at a wake-up, before its maintenance, so that its
        # claim went out first (the next one ends whole).
        self._claimed_first = False
        # Whether this worker held the maintenance lease at its last round: if not, only
        # the services every worker runs wake it (the others ask for the lease at its
        # rounds and claims anyway).
        self._elected = True
        # Ends the loop's wait on its handler processes when a stop is requested.
        self._wakes = WakePipe()
        self._wake_fd: int | None = None  # its read end, opened by run()
        # Written by request_stop (a signal handler, or another thread); read once per
        # turn, by phase_of, into ``phase``.
        self._stop_requests = 0
        self._drain_deadline: float | None = None
        self._stop_lock = threading.Lock()
        self.phase = Phase.RUNNING
        # Why the worker stopped on its own, when the cause needs the operator (a handler
        # that no longer imports): the command exits non-zero with it.
        self.failure: str | None = None

    # -- control ----------------------------------------------------------------

    def request_stop(self) -> None:
        """One stop request: the first drains, the second stops now (see :class:`Phase`)."""
        with self._stop_lock:
            self._stop_requests += 1
        # End an idle wait at once: on the store's notifications, or on the handlers.
        if can_wait_for_jobs(self.backend):
            self.backend.wake()
        self._wakes.wake()

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.request_stop()

    def _claim_now(self) -> None:
        """A maintenance round made jobs runnable: an idle worker claims at its next turn,
        not at its poll's time (see _wait_budget)."""
        self._claim_at = 0.0

    def run(self, pool: Pool | None = None) -> WorkerStats:
        """Work until stopped (or, with ``burst``, until nothing is runnable).

        ``pool``: the handler processes, started beforehand by
        :func:`~jobdef.runtime.handler_pool.start_pool` with this worker's
        :func:`~jobdef.runtime.handler_pool.child_settings` (they boot while the caller
        opens the store); by default the worker starts them here. Either way it stops
        them when it ends.

        Raises :class:`~jobdef.errors.HandlerError` before taking any job when a handler
        of a served queue cannot be called (:mod:`jobdef.runtime.handlers`)."""
        if pool is None:
            # The handler processes start first: they import the handlers while this
            # process does the same to check them (an application's import can take
            # seconds).
            children = child_settings(
                self.backend.url,
                self.registry,
                self.settings,
                worker_id=self.id,
                log_format=self.telemetry.log_format,
            )
            pool = self._pool(children)
        elif (pool.settings.worker_id, pool.settings.store_url) != (self.id, self.backend.url):
            pool.close(grace=0.0)
            raise ValueError(
                "the handler processes were started for another worker or store: start "
                "them with child_settings(backend.url, ..., worker_id=settings.id) of this "
                "worker's"
            )
        self._unhanded = pool.unhanded
        try:
            check_handlers(self.registry, self.settings.queues)
        except BaseException:
            pool.close(grace=0.0)  # they hold nothing, and may be importing for a while yet
            raise
        # The loop rides out a lost store between its turns (runtime.outage): a call
        # that waited for the server would hold up signals, timeouts and heartbeats.
        fail_fast(self.backend)
        self._wake_fd = self._wakes.fileno()
        in_main = threading.current_thread() is threading.main_thread()
        previous = {}
        if in_main:
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, self._on_signal)
        log.info(
            "worker %s started: concurrency %d%s",
            self.id,
            self.settings.concurrency,
            f", {slots} async jobs per process"
            if (slots := self.settings.async_per_process) > 1
            else "",
        )
        jobless = jobless_queues(self.registry, self.settings.queues)
        if jobless:
            log.warning(
                "worker %s serves %s, on which no job of its sheets runs: it takes nothing "
                "there (the sheets' queues: %s); check --queues",
                self.id,
                ", ".join(jobless),
                ", ".join(sorted({policy.queue for policy in self.registry})) or "none",
            )
        try:
            pool.wait_ready(60.0, lambda: self._phase_now() is not Phase.RUNNING)
            self._vouch(pool, time.monotonic())  # nothing held yet: any claim is fresh
            self._presence.start(time.monotonic())
            self._loop(pool)
        finally:
            self.telemetry.stopped()
            self._presence.stop()
            if self._held:
                self._stop_children(pool)
            pool.close()
            for service in self.services:
                close = getattr(service, "close", None)
                if close is not None:
                    close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._wakes.close()
        self.stats.waiting = len(self._retry_due)
        self.stats.next_due = min(self._retry_due.values(), default=None)
        log.info("worker %s stopped: %s", self.id, self.stats)
        return self.stats

    def _pool(self, children: ChildSettings) -> Pool:
        """The handler processes, started (:func:`~jobdef.runtime.handler_pool.start_pool`)."""
        return start_pool(self.settings, children)

    # -- the loop ---------------------------------------------------------------

    def _loop(self, pool: Pool) -> None:
        while True:
            try:
                if self._step(pool):
                    return
            except BackendError as exc:
                if not self._outage.worked:
                    raise  # a store that never worked is a setup error, not an outage
                # The store failed (disk full, server gone): keep everything held and
                # keep reading the children's results until it is time to try again.
                self._outage.failed(exc, time.monotonic(), len(self._held))
                self._await_store(pool)

    def _step(self, pool: Pool) -> bool:
        """One turn of the loop; True when the worker is done."""
        mono = time.monotonic()
        phase = self._enter(self._phase_now(mono), pool, mono)
        if phase is Phase.STOPPING:
            return True

        # Children that finished their tasks start the next ones (claimed last turn)
        # before this turn waits on the database: the two overlap.
        self._dispatch(pool)
        if not self._outage.ready(mono):
            self._await_store(pool)
            return False
        self._record_failures()
        if phase is Phase.DRAINING:
            self._flush_completions(pool)
        else:
            if self._turn is not None and self._turn.pending.ready():
                self._end_turn(pool)  # its answer came: what it claimed goes out below
            if self._turn is None:
                holding = len(self._held) - len(self._completions)
                # Woken for maintenance only, an idle worker claims nothing before its poll.
                claims = not (self._idle and mono < self._claim_at)
                options = self._claim_options(pool) if claims else None
                # Sent only while the handler processes have work meanwhile: else the
                # worker has nothing to do but wait, which the call does for less.
                busy = self.settings.pipeline_turns and (bool(self._backlog) or pool.busy())
                if not (busy and self._send_turn(options, holding)):
                    found_nothing = self._exchange(options)
                    if claims:
                        self._idle = found_nothing
                    if not holding and self._held:
                        self._vouch(pool, mono)  # the only leases held are this claim's
            self._dispatch(pool)  # at once: a claim waits in a child, never in the worker
            if self._turn is None and self._burst_done(self._idle):
                self._outage.recovered(time.monotonic())  # its last call worked: say so
                return True
        # Before the outage is declared over: a heartbeat that failed is tried again here.
        self._heartbeat(pool, time.monotonic())
        self._outage.recovered(time.monotonic())
        self._dispatch(pool)

        waiting = self._wait_budget(pool, phase, mono)
        if (
            self._idle
            and self._turn is None
            and not pool.in_flight()
            and can_wait_for_jobs(self.backend)
        ):
            if self._wait_for_jobs(waiting) and not self._claimed_first:
                # Woken for jobs: the claim goes out first, at the top of the next turn;
                # what comes here (maintenance may take a round trip to the store) waits
                # for it, not the job. Never twice in a row: a stream of wake-ups whose
                # jobs other workers take must not hold maintenance off.
                self._claimed_first = True
                return False
            waiting = 0.0
        self._claimed_first = False
        self._collect(pool, waiting, phase)
        if self._backlog and pool.room()[1] == 0 and not pool.starting():
            # Every child is busy with a slow job: let other workers take these.
            self._give_back([])

        self._stop_lost(pool)
        self._maintain()
        return phase is Phase.DRAINING and not self._held

    def _phase_now(self, mono: float | None = None) -> Phase:
        """The phase the stop requests and the drain deadline put the worker in now."""
        now = time.monotonic() if mono is None else mono
        return phase_of(self._stop_requests, self._drain_deadline, now)

    def _enter(self, phase: Phase, pool: Pool, mono: float) -> Phase:
        """Move to ``phase`` (this turn's), doing once what entering it takes."""
        if phase is self.phase:
            return phase
        self._settle_turn(pool)  # what it claimed is held, to give back or to stop
        if phase is Phase.DRAINING:
            self._drain_deadline = mono + self.settings.grace
            log.info("draining: no new claims; %d jobs running", len(pool.in_flight()))
            self._give_back(pool.recall_all())
        elif phase is Phase.STOPPING:
            if self._stop_requests >= 2:
                log.warning("second stop signal: stopping %d jobs now", len(self._held))
            else:
                log.warning("grace period over: stopping %d jobs", len(self._held))
            self._stop_children(pool)
        self.phase = phase
        return phase

    def _wait_for_jobs(self, budget: float) -> bool:
        """Idle: wait up to ``budget`` seconds for the engine to tell of new jobs (PostgreSQL
        LISTEN/NOTIFY) that it is this worker's turn to claim (runtime.wake_share); True
        when told so (claim now), False when the wait ran out."""
        assert can_wait_for_jobs(self.backend)
        deadline = time.monotonic() + budget
        while (left := deadline - time.monotonic()) > 0:
            wakeups = self.backend.wait_for_jobs(left)
            if not wakeups:
                # The poll: claim anyway, and see who else is there now (the turns of
                # the next wake-ups are taken among them).
                self._presence.read_rows(time.monotonic(), PEERS_READ_IDLE)
                return False
            delayed = [wakeup for wakeup in wakeups if wakeup.due is not None]
            if delayed and self._share.turn(delayed) is not None:
                # Its turn to claim jobs that are not due yet: at their time, not now.
                soonest = min(wakeup.due for wakeup in delayed if wakeup.due is not None)
                at = self._due(soonest - self.clock())
                deadline, self._claim_at = min(deadline, at), min(self._claim_at, at)
            due_now = [wakeup for wakeup in wakeups if wakeup.due is None]
            turn = self._share.turn(due_now)
            if turn is None:
                continue  # other workers' turn, or nothing due yet
            if turn is Turn.FIRST:
                self._look_again_if_behind(due_now)
            self._claim_at = 0.0  # jobs for this worker: claim them now
            return True
        return False

    def _look_again_if_behind(self, wakeups: list[Wakeup]) -> None:
        """After a first turn at ``wakeups`` (the claim comes next): if the claim may miss
        their jobs because this host's reading of the store's clock is behind the
        enqueuer's, claim once more when they are due by it. A claim that finds nothing
        at a clock past the enqueue's ``at`` means another worker took the jobs: no
        look again. A wake-up that does not say ``at`` (a release, an older enqueuer)
        is looked at again for RECHECK_AFTER_WAKE seconds."""
        mine = [w for w in wakeups if w.queue is None or self._share.serves(w.queue)]
        if any(w.at is None for w in mine):
            self._recheck_until = time.monotonic() + RECHECK_AFTER_WAKE
            return
        latest = max((w.at for w in mine if w.at is not None), default=None)
        if latest is not None and (behind := latest - self.clock()) > 0:
            self._due(behind)

    def _idle_poll(self, mono: float) -> float:
        """Seconds between two claims of an idle worker: the poll interval, or, while the
        engine hears enqueues (LISTEN is up), the longer safety poll, jittered so that a
        fleet's polls do not fall together, cut short when a retry this worker scheduled
        or a delayed job it is to claim (its enqueue's notification said when) comes
        due. A worker of a rate-limited queue keeps the poll interval: no notification
        tells it that the queue's tokens refilled."""
        poll = self.settings.poll_interval
        if self.queue_rates or not can_wait_for_jobs(self.backend):
            return poll
        if self.backend.listening:
            poll = max(poll, SAFETY_POLL * self.rng.uniform(0.75, 1.0))
        due = self._next_due(mono)
        return poll if due is None else min(poll, due - mono)

    def _next_due(self, mono: float) -> float | None:
        """The soonest of :attr:`_dues` still to come; those past are dropped (the claim
        of this turn's end takes them)."""
        while self._dues and self._dues[0] <= mono:
            heapq.heappop(self._dues)
        return self._dues[0] if self._dues else None

    def _due(self, delay: float) -> float:
        """Note that a job this worker is to claim comes due in ``delay`` seconds; when
        that is, monotonic."""
        now = time.monotonic()
        self._next_due(now)  # a busy worker keeps only what is to come
        at = now + delay + DUE_MARGIN
        heapq.heappush(self._dues, at)
        if len(self._dues) > MAX_DUES:
            self._dues = heapq.nsmallest(MAX_DUES // 2, self._dues)  # sorted: a heap
        return at

    def _wait_budget(self, pool: Pool, phase: Phase, mono: float) -> float:
        """How long this turn may wait for the children (or, idle, for new jobs)."""
        # Idle, the poll interval; with work claimed, no wait.
        waiting = self._idle_poll(mono) if self._idle else 0.0
        if self._idle and mono < self._recheck_until:
            waiting = min(waiting, RECHECK_INTERVAL)
        if pool.in_flight():
            # Results come in any time: look again soon, and at the earliest timeout.
            deadline = pool.next_deadline()
            turn = TURN_WHILE_RUNNING
            waiting = min(turn, max(0.0, deadline - mono) if deadline is not None else turn)
        elif self._turn is not None:
            waiting = TURN_WHILE_RUNNING  # its answer ends the wait
        elif pool.starting():
            waiting = max(waiting, 0.05)  # a child's "ready" ends the wait
        if self._turn is not None and self._turn.pending.ready():
            # Its answer is in (read already, perhaps, by another call): its jobs go to
            # the handler processes now, not after the next result of one of them.
            waiting = 0.0
        if phase is Phase.DRAINING:
            waiting = min(waiting, 0.05)  # the drain ends as soon as the last job does
        elif self._idle and not pool.in_flight():
            # A maintenance service is due before the next claim (a long --poll): wake for
            # it, and claim at the poll's time. Else cron would start late, leases expire
            # unreclaimed, and the health probe would see the loop stand still.
            if mono < self._claim_at:  # woken so before: the claim keeps its time
                waiting = min(waiting, self._claim_at - mono)
            # Not sooner than RECHECK_INTERVAL: a service that is always due (an interval
            # of 0) must not make an idle loop spin.
            service_due = max(RECHECK_INTERVAL, self._next_service_at() - self.clock())
            if service_due < waiting:
                self._claim_at = mono + waiting
                waiting = service_due
        return waiting

    def _collect(self, pool: Pool, waiting: float, phase: Phase) -> None:
        """Wait up to ``waiting`` seconds for the children, then act on what they report."""
        self.telemetry.turned(
            handlers_ready=not pool.starting(), store_outage=self._outage.since is not None
        )
        waits_on = [self._wake_fd] if self._wake_fd is not None else []
        if self._turn is not None and not self._turn.pending.ready():
            # Its answer ends the wait: the claims it brings go out. (One read already, by
            # another call, or that failed, is taken in at the next turn of the loop.)
            waits_on.append(self._turn.pending.fileno())
        events = pool.poll(waiting, waits_on)
        if self._stop_requests:  # what writes the pipe: read it, or the next wait ends at once
            self._wakes.drain()
        events.extend(pool.enforce())
        for event in events:
            self._handle(event, phase)

    def _await_store(self, pool: Pool) -> None:
        """While the store is out: run and collect what is held, until it is time to retry
        or the worker is to stop (a second stop request, or the drain's grace is over)."""
        while self._phase_now() is not Phase.STOPPING:
            left = self._outage.retry_at - time.monotonic()
            if left <= 0:
                return
            self._collect(pool, min(0.1, left), self.phase)
            self._dispatch(pool)

    def _maintain(self) -> None:
        """Run the maintenance services that are due (on PostgreSQL: if elected, except
        those every worker runs, as the lease reclaimer)."""
        now = self.clock()
        due = [i for i, at in enumerate(self._next_tick) if now >= at]
        for index in due:
            self._next_tick[index] = now + self.services[index].interval
        # On an engine shared by many hosts only the elected worker maintains.
        elected: bool | None = None
        for index in due:
            service = self.services[index]
            if not getattr(service, "every_worker", False):
                if elected is None:
                    elected = self._elected = holds_maintenance_lock(self.backend)
                if not elected:
                    continue
            try:
                service.tick(now)
            except BackendError as exc:
                # The store refused it or is out of reach: one line, which says why. Not
                # an outage of the worker's own: a service refused at every round (a
                # role without the right to delete) must not hold up the jobs, and a
                # store that is gone is met, and reported once, by the next claim.
                log.warning("maintenance service %s failed: %s; retrying later", service.name, exc)
            except Exception:
                log.exception("maintenance service %s failed; retrying later", service.name)

    def _next_service_at(self) -> float:
        """When the next maintenance service this worker runs is due (on ``clock``): one
        every worker runs, or, while it maintains, any."""
        return min(
            (
                at
                for at, service in zip(self._next_tick, self.services, strict=True)
                if self._elected or getattr(service, "every_worker", False)
            ),
            default=math.inf,
        )

    def _stop_children(self, pool: Pool) -> None:
        """Kill the children; record what they finished (reported or not) and, as a failed
        attempt, what they were running (it ran: its attempt is used, as after a crash);
        release the jobs not started."""
        events = pool.kill_all("the worker stopped the handler: its drain's grace was over")
        for event in events:
            if isinstance(event, Finished | Killed):
                self._handle(event, self.phase)
        self._last_flush(pool)
        self._give_back([event.task for event in events if isinstance(event, Returned)])

    def _stop_lost(self, pool: Pool) -> None:
        """Stop the handlers of the jobs whose lease this worker lost, recording nothing:
        the job was reclaimed, its next attempt is another worker's."""
        lost, self._lost = self._lost, []
        for job_id in lost:
            held = self._held.get(job_id)
            sending = self._turn is not None and held in self._turn.helds
            if held is None or job_id in self._completions or sending:
                continue  # finished already: its fenced completion is refused and logged
            if any(failed.record.id == job_id for failed in self._failures):
                continue
            del self._held[job_id]
            with contextlib.suppress(ValueError):
                self._backlog.remove(job_id)
            cancelled = self._cancelled_here(held.lease)
            task = next((t for t in pool.in_flight() if t.job_id == job_id), None)
            events, started = pool.abandon(task) if task is not None else ([], False)
            if cancelled:
                self.telemetry.finished(
                    held.record,
                    "cancelled",
                    detail="it was running: its handler was stopped, and the cancel "
                    "recorded the attempt",
                )
            else:
                _say_lost(held, started)
            for event in events:
                self._handle(event, self.phase)

    def _cancelled_here(self, lease: Lease) -> bool:
        """Whether the refused ``lease`` was ended by a cancel of its very attempt (else
        the job was reclaimed): the job's row read once, cancelled with this attempt and
        worker still on it (a reclaim clears the worker)."""
        try:
            now = self.backend.get(lease.job_id)
        except BackendError:
            return False  # said as a lost lease: either way the handler is stopped
        return (
            now is not None
            and now.state == "cancelled"
            and now.attempt == lease.attempt
            and now.worker_id == lease.worker_id
        )

    def _last_flush(self, pool: Pool) -> None:
        """Record what finished before stopping; if the store cannot take it, the leases
        expire and other workers reclaim those jobs (their sheets' ``on_reclaim`` applies)."""
        try:
            self._record_failures()
            self._flush_completions(pool)
        except BackendError as exc:
            log.error(
                "stopping without recording %d finished job(s): %s; their leases expire and "
                "the jobs are reclaimed",
                len(self._completions) + len(self._failures),
                exc,
            )

    def _claim_options(self, pool: Pool, coming: int = 0, done: int = 0) -> ClaimOptions | None:
        """What to claim now: what the claim window lets this worker hold more
        (:mod:`jobdef.runtime.claim_window`), within what the children can take ahead
        (:meth:`Pool.capacity`) less what already waits for them, and within what their
        args may take (:meth:`_most_by_args`), once a quarter of the window is free (or a
        child sits idle), so claims come in batches."""
        starved = pool.idle_children() > 0
        # ``coming``: jobs a turn brings that are not held yet; ``done``: held jobs that
        # finished, sent to be completed (a turn whose answer is not taken in yet).
        holding = len(self._held) - len(self._completions) - done + coming
        most = self._most_by_args(pool)
        free = min(
            pool.capacity() - len(self._backlog) - coming,
            self._window.want(holding),
            most - holding,
        )
        if free <= 0 or (free < min(self._window.size, most) // 4 and not starved):
            return None
        self._starved = starved
        return ClaimOptions(
            worker_id=self.id,
            lease_seconds=self.settings.lease_seconds,
            limit=free,
            queues=self.settings.queues,
            queue_limits=self.queue_limits,
            queue_rates=self.queue_rates,
            started_at=self._stamp(),
        )

    def _stamp(self) -> float:
        """A claim's name (``ClaimOptions.started_at``): its start on the store's clock, in
        whole microseconds, later than the last claim's, so no two claims of this worker
        share one (runtime.orphan gives back by it)."""
        stamp = max(round(self.clock(), 6), round(self._last_stamp + 1e-6, 6))
        self._last_stamp = stamp
        return stamp

    def _most_by_args(self, pool: Pool) -> int:
        """The most jobs this worker holds while its jobs' args take what they take now
        (:attr:`Pool.task_bytes`): ``prefetch_mib`` of them, never fewer than the claim
        window starts at. Said once in the log when it binds."""
        if pool.task_bytes <= 0:
            return self._window.most
        fit = int(self.settings.prefetch_mib * UNIT_BYTES["MiB"] // pool.task_bytes)
        most = min(self._window.most, max(self._window.least, fit))
        if most < self._window.most and not self._said_most_by_args:
            self._said_most_by_args = True
            log.info(
                "worker %s holds at most %d jobs while their args take about %.0f KiB each "
                "(--prefetch-mib %d)",
                self.id,
                most,
                pool.task_bytes / UNIT_BYTES["KiB"],
                self.settings.prefetch_mib,
            )
        return most

    def _exchange(self, options: ClaimOptions | None) -> bool:
        """Complete what finished and claim per ``options``, in one transaction when the
        engine can (group commit). True when a claim found nothing runnable."""
        helds = [self._held[job_id] for job_id in self._completions]
        if not helds and options is None:
            return False
        notes, results = self._completion_parts(helds)
        self._sending(options)
        claimed_at = time.monotonic()  # before the engine stamps the leases it claims
        accepted, records = complete_and_claim(
            self.backend, [h.lease for h in helds], notes, options, results
        )
        self._completions = []
        return self._took(helds, accepted, records, options, claimed_at)

    def _sending(self, options: ClaimOptions | None) -> None:
        """A claim per ``options`` goes out: named first (runtime.orphan), so that should
        this process die before it reads the answer, its handler processes give back
        what the claim took."""
        if options is not None and options.started_at is not None and self._unhanded is not None:
            self._unhanded.sent(options.started_at)

    def _completion_parts(
        self, helds: Sequence[_Held]
    ) -> tuple[dict[int, list[Notification]], dict[int, str]]:
        """The messages of the finished jobs ``helds`` (their sheets' notify on done) and
        the values their handlers returned."""
        now = self.clock()
        notes = {}
        for held in helds:
            if held.policy is not None and "done" in held.policy.notify.events:
                notes[held.record.id] = notifications_for(
                    held.policy, "done", held.record, None, now, result=held.result
                )
        return notes, {h.record.id: h.result for h in helds if h.result is not None}

    def _send_turn(self, options: ClaimOptions | None, holding: int) -> bool:
        """Send the turn of :meth:`_exchange` and go on without its answer, when the
        worker pipelines its turns (``pipeline_turns``) and the engine can (SendsTurns:
        what finished to complete, and a claim): True if sent.
        ``holding``: the jobs held besides the finished ones."""
        if not (self.settings.pipeline_turns and self._completions and options is not None):
            return False
        helds = [self._held[job_id] for job_id in self._completions]
        notes, results = self._completion_parts(helds)
        self._sending(options)
        sent_at = time.monotonic()  # before the engine stamps the leases it claims
        turn = send_turn(self.backend, [h.lease for h in helds], notes, options, results)
        if turn is None:
            return False
        self._turn = _TurnOut(turn, helds, options, holding, sent_at)
        self._completions = []
        return True

    def _end_turn(self, pool: Pool, chain: bool = True) -> None:
        """Take the answer of the turn sent (waiting for it if need be): its completions
        and its claims, as :meth:`_exchange` takes its own. With ``chain``, the next
        turn goes first, as soon as the answer says how many jobs it brings: the server
        runs it while this one's jobs are read and handed out. A turn that failed gives
        its completions back, to be recorded by the next call."""
        out, self._turn = self._turn, None
        assert out is not None
        done = len(out.helds)
        try:
            coming = out.pending.leased()
            self._window.claimed(out.options.limit, coming, self._starved)
            if chain:
                after = len(self._held) - len(self._completions) - done + coming
                self._send_turn(self._claim_options(pool, coming, done), after)
            accepted, records = out.pending.result()
        except BackendError:
            self._completions[:0] = [held.record.id for held in out.helds]
            raise
        # Its leases as of the send, not of now: an answer that came late (the server
        # held the turn on a lock, or this process was frozen) may bring leases that
        # expired meanwhile, which the handler processes must not start unvouched; the
        # jobs' heartbeats are due at once, and renew them or find them lost.
        self._took(out.helds, accepted, records, None, out.sent_at, stamp=out.options.started_at)
        self._idle = not records
        if not out.holding and self._held:
            self._vouch(pool, out.sent_at)  # the only leases held are this claim's

    def _settle_turn(self, pool: Pool) -> None:
        """End the turn sent, if any (before the worker drains, stops or records what
        finished without claiming: what it claimed is then held)."""
        if self._turn is not None:
            self._end_turn(pool, chain=False)

    def _took(
        self,
        helds: Sequence[_Held],
        accepted: Sequence[bool],
        records: Sequence[JobRecord],
        options: ClaimOptions | None,
        claimed_at: float,
        *,
        stamp: float | None = None,
    ) -> bool:
        """What a turn's answer does: the finished ``helds`` done (or refused), the
        ``records`` claimed held (their leases taken at ``claimed_at``, monotonic, when
        the call went out: their first heartbeat is due a period after), named now by
        their ids instead of their claim's ``stamp`` (``options``' when it has one).
        True when its claim found nothing runnable."""
        # Only now that the store took them: a failed call leaves them to record later.
        for held in helds:
            del self._held[held.record.id]
        for held, ok in zip(helds, accepted, strict=True):
            if ok:
                self.stats.done += 1
                self.telemetry.finished(held.record, "done")
            else:
                self._refused("complete", held.record)
        for record in records:
            self._retry_due.pop(record.id, None)
            self._held[record.id] = _Held(record, self._policy(record), claimed_at)
            self._backlog.append(record.id)
        if self._unhanded is not None:
            stamp = stamp if options is None else options.started_at
            self._unhanded.taken(stamp, self._held_back())
        self.stats.claimed += len(records)
        self.telemetry.claimed(records)
        if records:
            self._recheck_until = 0.0  # what woke the worker was found
        if options is not None:
            self._window.claimed(options.limit, len(records), self._starved)
        return options is not None and not records

    def _burst_done(self, idle: bool) -> bool:
        """Whether a burst worker stops: its last claim found nothing runnable and it holds
        nothing, unless a rate-limited queue it serves has runnable jobs that only the
        queue's token bucket holds back (it waits for the tokens and runs them)."""
        if not (self.settings.burst and idle and not self._held):
            return False
        served = set(self.queue_rates)
        if self.settings.queues is not None:
            served &= set(self.settings.queues)
        if not served:
            return True
        return not any(
            info.queue in served and not info.paused and (info.oldest_queued_age or 0) > 0
            for info in self.backend.queues()
        )

    def _policy(self, record: JobRecord) -> JobPolicy | None:
        return self.registry.jobs.get(record.job)

    def _dispatch(self, pool: Pool) -> None:
        tasks: list[Task] = []
        room = pool.capacity()
        while self._backlog and len(tasks) < room:
            held = self._held[self._backlog.popleft()]
            if held.policy is None:
                self._bury_unknown(held)
                continue
            record, policy = held.record, held.policy
            # By position, in Task's order: a named tuple's __new__ given its twelve
            # fields by name takes about twice as long, once a job.
            tasks.append(
                Task(
                    pool.next_seq(),  # seq
                    record.id,  # job_id
                    record.attempt,  # attempt
                    record.job,  # job
                    policy.handler,  # handler
                    dict(record.args),  # args
                    record.idempotency_key,  # idempotency_key
                    record.max_attempts,  # max_attempts
                    policy.timeout,  # timeout
                    slot_time(record, policy),  # slot
                    record.queue,  # queue
                    record.trace_context,  # trace_context
                )
            )
        if tasks:
            if self._unhanded is not None:  # before they go: a name there is never a child's job
                self._unhanded.holding(self._held_back())
            # A child may have turned slow since capacity() was read: keep its share.
            kept = pool.dispatch(tasks)
            if kept:
                self._backlog.extendleft(reversed([t.job_id for t in kept]))
                if self._unhanded is not None:
                    self._unhanded.holding(self._held_back())

    def _held_back(self) -> list[tuple[int, int]]:
        """The jobs waiting for a handler process, (id, attempt) each: what
        runtime.orphan's Unhanded names."""
        return [(job_id, self._held[job_id].record.attempt) for job_id in self._backlog]

    # -- outcomes ---------------------------------------------------------------

    def _handle(self, event: Event, phase: Phase) -> None:
        held = self._held.get(event.task.job_id)
        if held is None or held.record.attempt != event.task.attempt:
            return
        if isinstance(event, Finished):  # the common event first: one check for it
            self.telemetry.ran(held.record.id, held.record.attempt, event.duration)
            if event.error is None:
                held.result = event.result
                self._completions.append(held.record.id)
            elif is_unavailable(event.error_names):
                self._handler_unavailable(held, event.task, event.error)
            else:
                self._fail(held, event.error, event.error_names, outcome=None)
        elif isinstance(event, Beat):
            try:
                kept = self.backend.heartbeat(
                    held.lease, self.settings.lease_seconds, event.progress
                )
            except BackendError as exc:  # the other events of this batch must still count
                self._outage.failed(exc, time.monotonic(), len(self._held))
                return
            held.last_beat = time.monotonic()  # only now: a failed beat is tried again
            if not kept:
                self._lost.append(held.record.id)
        elif isinstance(event, Returned):
            if phase is not Phase.RUNNING:
                self._give_back([event.task])
            else:
                self._backlog.appendleft(event.task.job_id)
                if self._unhanded is not None:  # no process has it now (runtime.orphan)
                    self._unhanded.holding(self._held_back())
        elif isinstance(event, Killed):
            self.telemetry.ran(held.record.id, held.record.attempt, event.duration)
            cls = AttemptTimedOut if event.timed_out else HandlerCrashed
            error = ErrorInfo(class_name(cls), event.detail)
            outcome: Outcome = "timeout" if event.timed_out else "crashed"
            self._fail(held, error, class_names(cls), outcome)

    def _flush_completions(self, pool: Pool) -> None:
        self._settle_turn(pool)
        self._exchange(None)

    def _fail(
        self,
        held: _Held,
        error: ErrorInfo,
        names: Sequence[str],
        outcome: Outcome | None,
    ) -> None:
        """Record a failed attempt; while the store cannot take it, keep it for later."""
        assert held.policy is not None
        failed = FailedAttempt(held.record, held.policy, error, tuple(names), outcome)
        try:
            self._record_failure(failed)
        except BackendError as exc:
            self._failures.append(failed)
            self._outage.failed(exc, time.monotonic(), len(self._held))

    def _record_failures(self) -> None:
        """Record the failed attempts kept while the store was out, oldest first."""
        pending, self._failures = self._failures, []
        for index, failed in enumerate(pending):
            try:
                self._record_failure(failed)
            except BackendError:
                self._failures = pending[index:] + self._failures
                raise

    def _record_failure(self, failed: FailedAttempt) -> None:
        """Retry or bury a failed attempt per its sheet (fenced), then count and log it."""
        recorded = record_failure(self.backend, failed, self.clock(), self.rng)
        record, decision = failed.record, recorded.decision
        del self._held[record.id]
        if failed.outcome == "timeout":
            self.stats.timed_out += 1
        elif failed.outcome == "crashed":
            self.stats.crashed += 1
        if not recorded.moved:
            self._refused(decision.action if decision.action == "retry" else "bury", record)
            return
        if decision.action == "retry":
            self.stats.retried += 1
            self._due(decision.delay or 0.0)
            if self.settings.burst:  # only a burst reports them; a long-lived worker keeps none
                self._retry_due[record.id] = self.clock() + (decision.delay or 0.0)
            detail = f"next attempt in {format_wait(decision.delay or 0.0)}"
        else:
            self.stats.dead += 1
            detail = f"dead: {decision.reason}"
        outcome = failed.outcome or decision.action
        self.telemetry.finished(record, outcome, error_type=failed.error.type, detail=detail)

    def _handler_unavailable(self, held: _Held, task: Task, error: ErrorInfo) -> None:
        """A handler that imported at start no longer does: release the job (its attempt
        is not counted) and drain, since every job of that handler would fail here."""
        log.error(unavailable_line(held.record, error))
        self._give_back([task])
        if self.failure is None:
            self.failure = (
                f"stopped: {error.message}; the code under this worker changed since it "
                "started, and its jobs were released; restart it once the deployment is whole"
            )
        if self._stop_requests == 0:
            self.request_stop()

    def _bury_unknown(self, held: _Held) -> None:
        known = ", ".join(sorted(self.registry.jobs)) or "none"
        error = ErrorInfo(
            class_name(UnknownJobError),
            f"no sheet of this worker defines job {held.record.job!r} (jobs: {known}); "
            "start the worker with the sheets folder that defines it, then requeue the job",
        )
        del self._held[held.record.id]
        try:
            if self.backend.bury(held.lease, error):
                self.stats.dead += 1
                self.telemetry.finished(held.record, "dead", error_type=error.type)
        except BackendError as exc:
            # Its lease expires; whichever worker reclaims it without the sheet buries it.
            self._outage.failed(exc, time.monotonic(), len(self._held))

    def _refused(self, verb: str, record: JobRecord) -> None:
        self.stats.refused += 1
        self.telemetry.refused(record)
        if self._cancelled_here(record.lease):
            log.info(
                "late %s of job %s attempt %d refused: the job was cancelled while it ran, "
                "and the cancel recorded the attempt",
                verb,
                record.id,
                record.attempt,
            )
            return
        log.warning(
            "late %s of job %s attempt %d refused: its lease expired and the job was reclaimed",
            verb,
            record.id,
            record.attempt,
        )

    def _give_back(self, tasks: Sequence[Task]) -> None:
        """Release the given tasks' jobs and everything waiting in the backlog."""
        ids = [t.job_id for t in tasks if t.job_id in self._held] + list(self._backlog)
        self._backlog.clear()
        helds = [held for job_id in dict.fromkeys(ids) if (held := self._held.pop(job_id, None))]
        for index, held in enumerate(helds):
            try:
                if self.backend.release(held.lease):
                    self.stats.released += 1
                    self.telemetry.finished(held.record, "released")
                elif not self._cancelled_here(held.lease):
                    _say_lost(held, started=False)  # given back: none had started
            except BackendError as exc:
                # The leases still expire and other workers reclaim the jobs: nothing is
                # lost. The store is out, so the rest are not tried one by one.
                log.error(
                    "could not release %d job(s) (%s); their leases expire and other workers "
                    "reclaim them",
                    len(helds) - index,
                    exc,
                )
                return

    def _vouch(self, pool: Pool, mono: float) -> None:
        """Every lease this worker holds was taken or renewed at ``mono`` or less than a
        heartbeat period before: its handler processes may start what they hold for a
        while yet (:func:`~jobdef.policy.leases.vouch_span`)."""
        pool.vouch(mono + vouch_span(self.settings.lease_seconds))

    def _heartbeat(self, pool: Pool, mono: float) -> None:
        """Keep the leases of held jobs alive while this worker lives; then vouch for
        them. A round that raised (the store may be out) or found a lease lost vouches
        for nothing."""
        # While the store is out, every turn that tries it again beats: a call that
        # works is what ends the outage.
        period = heartbeat_period(self.settings.lease_seconds)
        every = period if self._outage.since is None else 0.0
        due = [held for held in self._held.values() if mono - held.last_beat >= every]
        if due and self._turn is not None:
            # One finished, whose completion is in the turn sent, is not beaten: the turn
            # may have ended its lease, and a refused beat would read as a lost one.
            sent = {held.record.id for held in self._turn.helds}
            due = [held for held in due if held.record.id not in sent]
        for held in due:
            kept = self.backend.heartbeat(held.lease, self.settings.lease_seconds)
            held.last_beat = mono  # after the call: one that failed is tried next turn
            if not kept:
                self._lost.append(held.record.id)
        if not self._lost:  # else the children wait until this turn took those back
            self._vouch(pool, mono)
        # The worker's own row, on the same cadence: `jobdef workers` sees it alive.
        self._presence.beat(mono)
