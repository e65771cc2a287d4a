"""The sheet as the policy of RQ jobs (``pip install 'jobdef[rq]'``)::

    from redis import Redis
    from jobdef.adapters.rq import SheetQueue

    sheets = SheetQueue(Redis(), sheets="jobdefs")
    sheets.enqueue("send_reservation_mail", reservation_id=42)   # on the sheet's queue

and the workers run with the scheduler and jobdef's worker class::

    JOBDEF_DATABASE_URL=postgresql://... \
        rq worker --with-scheduler -w jobdef.adapters.rq.SheetWorker default

The run store is the Redis connection the application gives (the producer's) and
the worker's own (the worker's), never a URL rebuilt from it: a password, TLS or a
unix socket of that connection holds for the run state too. A job carries no
credential: its ``meta`` names the sheets folder, the key prefix and its times;
the worker finds jobdef's database as every jobdef command does
(``JOBDEF_DATABASE_URL``, else ``[tool.jobdef] database``).

Each job is enqueued with the sheet's retries as RQ intervals, every jitter drawn
at enqueue (``Retry(max=max_attempts - 1, interval=[...])``) and ``job_timeout``
from the sheet. The wrapper RQ runs (:func:`perform`) counts the attempt,
classifies what the handler raised by the sheet and, when the sheet says the job
is dead (a fatal error, attempts used up, the deadline), takes RQ's remaining
retries away, stores the dead job in jobdef's database and notifies once.
:class:`SheetWorker` does the same for an attempt whose work horse was killed.
"""

from __future__ import annotations

import importlib
import json
import logging
import math
import random
import time
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from redis import Redis
from rq import Queue, Retry, Worker, get_current_job
from rq.defaults import DEFAULT_JOB_MONITORING_INTERVAL, DEFAULT_MAINTENANCE_TASK_INTERVAL
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.timeouts import JobTimeoutException

from jobdef.adapters.config import sheet_runtime
from jobdef.adapters.core import (
    TIMEOUT_NAMES,
    AlreadyBuried,
    AlreadyEnded,
    Prepared,
    SheetRuntime,
    call_handler,
    error_info,
)
from jobdef.adapters.store import BookkeepingUnavailable, RunStore
from jobdef.backends import describe_store
from jobdef.backends.records import ErrorInfo
from jobdef.errors import JobdefError, UsageError
from jobdef.policy.backoff import next_delay
from jobdef.policy.fields import declares_result
from jobdef.policy.model import JobPolicy
from jobdef.project import load_config
from jobdef.redact import redact, shown_args
from jobdef.runtime.classify import exception_names
from jobdef.runtime.decisions import Decision
from jobdef.telemetry.logs import args_text

LOGGER = logging.getLogger("jobdef.adapters.rq")
RUNTIME = "rq"
META = "jobdef"
# What RQ keeps of a finished job, for `rq info` and the result; jobdef keeps the dead.
FAILURE_TTL = 7 * 86400
# Seconds before RQ delivers again a job whose bookkeeping met an outage (jobdef's
# database or the run store unreachable): doubling from the first, up to the longest.
OUTAGE_FIRST_WAIT = 1
OUTAGE_LONGEST_WAIT = 60
# Seconds before RQ delivers again a job whose worker was lost mid-attempt, once its
# cleanup of abandoned jobs finds it: none, it goes to its queue (no scheduler needed).
LOST_WAIT = 0
# How late RQ may deliver again the job of a worker lost mid-attempt, in seconds: its
# execution's heartbeat expires (the monitoring interval plus RQ's 60 s), then the next
# maintenance of some worker (every 10 minutes by default) finds it abandoned. Every
# lifetime of the run store covers it (``SheetRuntime.redelivery``).
REDELIVERY = float(DEFAULT_JOB_MONITORING_INTERVAL + 60 + DEFAULT_MAINTENANCE_TASK_INTERVAL)


def sampled_waits(policy: JobPolicy, rng: random.Random | None = None) -> list[int]:
    """The wait after each failed attempt but the last, jitter drawn now, rounded up to
    RQ's whole seconds (a wait is never shorter than drawn)."""
    waits: list[int] = []
    previous: float | None = None
    for n in range(1, policy.max_attempts):
        wait = next_delay(policy.backoff, n, rng, previous=previous)
        previous = wait
        waits.append(math.ceil(wait))
    return waits


def job_timeout(policy: JobPolicy) -> int:
    """The sheet's timeout in RQ's whole seconds (rounded up)."""
    return max(1, math.ceil(policy.timeout))


def _resolve(handler: str) -> Callable[..., Any]:
    module, _, name = handler.replace(":", ".").rpartition(".")
    found: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return found


class SheetQueue:
    """Enqueue the jobs of the sheets under ``sheets`` on RQ over ``connection``, each on
    the RQ queue named by its sheet's ``queue``; the run state goes to ``connection``
    too, under ``prefix``."""

    def __init__(
        self,
        connection: Redis,
        *,
        sheets: str | Path,
        prefix: str = "jobdef",
        rng: random.Random | None = None,
    ) -> None:
        self.connection = connection
        self.sheets = str(sheets)
        self.prefix = prefix
        self.rng = rng
        self._runtime: SheetRuntime | None = None

    @property
    def jobdef(self) -> SheetRuntime:
        if self._runtime is None:
            store = RunStore(self.connection, self.prefix)
            self._runtime = sheet_runtime(
                RUNTIME, self.sheets, worker_database(), store, redelivery=REDELIVERY
            )
        return self._runtime

    def enqueue(self, job: str, /, **args: Any) -> Job:
        """Validate ``args`` against the sheet of ``job`` and enqueue it, unless a run with
        the same idempotency key is active (then that run's RQ job is returned)."""
        runtime = self.jobdef
        prepared = runtime.prepare(job, args)
        for _ in range(2):
            if runtime.open_run(prepared):
                return self._send(runtime, prepared)
            active = self._active(runtime, prepared.task_id)
            if active is not None:
                LOGGER.info("%s: run %s is active; not enqueued", job, prepared.task_id)
                return active
        raise JobdefError(
            f"{job}: the run of task {prepared.task_id} was opened by another producer "
            "while this one freed it; enqueue it again"
        )

    def _pointer(self, task_id: str) -> str:
        return f"{self.prefix}:rq-job:{task_id}"

    def _send(self, runtime: SheetRuntime, prepared: Prepared) -> Job:
        policy = prepared.policy
        waits = sampled_waits(policy, self.rng)
        meta = {
            "sheets": self.sheets,
            "prefix": self.prefix,
            "job": policy.name,
            "task_id": prepared.task_id,
            "created_at": prepared.created_at,
            "deadline_at": prepared.deadline_at,
            "waits": waits,
        }
        job_id = rq_job_id(prepared.task_id, prepared.created_at)
        try:
            lifetime = runtime.state_ttl(policy) + math.ceil(policy.idempotency.dedupe_window or 0)
            self.connection.set(self._pointer(prepared.task_id), job_id, ex=lifetime)
            queue = Queue(policy.queue, connection=self.connection)
            return queue.enqueue(
                perform,
                args=(policy.name, policy.handler, dict(prepared.args)),
                # RQ logs and shows the description (by default the call, args and all).
                description=f"{policy.name} {args_text(shown_args(policy, prepared.args))}",
                job_id=job_id,
                job_timeout=job_timeout(policy),
                retry=Retry(max=len(waits), interval=waits) if waits else None,
                failure_ttl=FAILURE_TTL,
                result_ttl=result_ttl(policy),
                meta={META: meta},
            )
        except Exception:
            runtime.store.close(prepared.task_id)  # nothing was enqueued: the key is free
            raise

    def _active(self, runtime: SheetRuntime, task_id: str) -> Job | None:
        """The RQ job of the run that holds ``task_id``, or None once a run that can no
        longer go on (its RQ job gone, or ended in RQ with no burial pending: deleted,
        cancelled, stopped, or failed outside the adapter) is freed."""
        state = runtime.store.load(task_id)
        if state is None:  # done within its dedupe_window: the job that did it
            pointer = self.connection.get(self._pointer(task_id))
            named = pointer.decode() if isinstance(pointer, bytes) else pointer or task_id
            found = _fetch(str(named), self.connection)
            if found is None:
                raise JobdefError(
                    f"task {task_id} ran within its dedupe_window; RQ no longer keeps its job"
                )
            return found
        found = _fetch(rq_job_id(task_id, state.created_at), self.connection)
        if found is not None and (
            state.burial is not None or found.get_status(refresh=False) not in _OVER
        ):
            return found
        if not runtime.store.forget(task_id, state.created_at):
            return None  # another producer freed it first: open a run again, or find theirs
        LOGGER.warning(
            "run %s was active with its RQ job %s; it can no longer go on and is freed",
            task_id,
            "gone" if found is None else found.get_status(refresh=False),
        )
        return None


def rq_job_id(task_id: str, created_at: float) -> str:
    """The RQ job id of the run ``task_id`` enqueued at ``created_at``: one per run, so a
    new run under the same key never shares an RQ job with an older one RQ may still be
    closing (RQ writes a job back after it ran)."""
    return f"{task_id}-{round(created_at * 1_000_000)}"


# RQ states in which a job runs no more.
_OVER = (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED)


def _fetch(job_id: str, connection: Redis) -> Job | None:
    try:
        return Job.fetch(job_id, connection=connection)
    except NoSuchJobError:
        return None


@cache
def worker_database() -> str:
    """jobdef's database, where this process stores the jobs that die: found as every
    jobdef command finds it (``JOBDEF_DATABASE_URL``, else ``[tool.jobdef] database``)."""
    return load_config().database


# The runtime of each (sheets, prefix) over a worker's connection, built once per process.
_RUNTIMES: dict[tuple[str, str], tuple[Redis, SheetRuntime]] = {}


def _meta(job: Job) -> Mapping[str, Any]:
    meta = job.meta.get(META) if isinstance(job.meta, Mapping) else None
    if not isinstance(meta, Mapping):
        raise UsageError(f"RQ job {job.id} was not enqueued through jobdef.adapters.rq.SheetQueue")
    return meta


def _task_id(job: Job) -> str:
    """The run's task id (the RQ job id is the task id and the run's enqueue time)."""
    return str(_meta(job).get("task_id") or job.id)


def _same_run(runtime: SheetRuntime, job: Job, task_id: str) -> None:
    """:class:`AlreadyEnded` when the run now under ``task_id`` is another RQ job's: a
    late delivery of an earlier run's job (that run over, the key's next run open)."""
    state = runtime.store.load(task_id)
    if state is None:
        return
    owner = rq_job_id(task_id, state.created_at)
    if owner != job.id and Job.exists(owner, connection=job.connection):
        raise AlreadyEnded(f"RQ job {job.id} is of an earlier run of task {task_id}; dropped")


def _runtime_of(job: Job) -> SheetRuntime:
    """The runtime of ``job``'s sheets, its run state on the worker's own connection."""
    meta = _meta(job)
    key = (str(meta["sheets"]), str(meta["prefix"]))
    found = _RUNTIMES.get(key)
    if found is None or found[0] is not job.connection:
        store = RunStore(job.connection, key[1])
        runtime = sheet_runtime(RUNTIME, key[0], worker_database(), store, redelivery=REDELIVERY)
        found = job.connection, runtime
        _RUNTIMES[key] = found
    return found[1]


def _wait_after(job: Job, attempt: int) -> float | None:
    waits = job.meta.get(META, {}).get("waits") or []
    return float(waits[attempt - 1]) if 0 < attempt <= len(waits) else None


def _decide(
    runtime: SheetRuntime, job: Job, policy: JobPolicy, decision: Decision, attempt: int
) -> Decision:
    """The sheet's decision, with RQ's wait: the one drawn at enqueue (a retry past the
    deadline with it is dead)."""
    if decision.action != "retry":
        return decision
    wait = _wait_after(job, attempt)
    if wait is None:
        return Decision("dead", f"attempts used up ({attempt} of {policy.max_attempts})")
    deadline_at = job.meta.get(META, {}).get("deadline_at")
    if deadline_at is not None and runtime.clock() + wait > float(deadline_at):
        return Decision("dead", "the next attempt would start after the deadline")
    return Decision("retry", decision.reason, delay=wait)


def _stop_retrying(job: Job) -> None:
    """RQ's remaining retries are taken away: the sheet says the job is dead."""
    job.retries_left = 0


def retry_interval(wait: float, now: float) -> int:
    """The whole seconds to give RQ for a delivery no sooner than ``wait`` seconds after
    ``now`` (epoch seconds, read before RQ schedules the retry).

    RQ schedules a retry at its clock plus the interval and stores that time cut to
    the whole second, so ``ceil(wait)`` alone could deliver it up to a second early
    (a fixed 1 s backoff, failed at 0.94 past a second, ran 0.06 s later). Counting
    the interval from the whole second ``now`` is in makes the stored time at least
    ``now + wait`` whenever RQ reads its clock after ``now``; the delivery is then
    late by less than a second, never early.
    """
    if wait <= 0:
        return 0
    return math.ceil(wait + now % 1.0)


def _next_delivery(job: Job, wait: float) -> None:
    """RQ delivers the job once more, ``wait`` seconds after this delivery fails; what
    follows that one is decided then. The sheet decides every retry, so RQ is never
    left a count of its own to run out of while a run can still go on."""
    job.retry_intervals = [retry_interval(wait, time.time())]
    job.retries_left = 1


def _held_for_loss(job: Job) -> None:
    """While a delivery runs, the job in Redis keeps one more: if the whole worker is
    lost (kill -9, a lost host), RQ's cleanup of abandoned jobs delivers it again, and
    that delivery counts the lost attempt and decides by the sheet (or stores a pending
    burial), instead of RQ moving the job to its failed registry with the run's key
    left active."""
    _next_delivery(job, LOST_WAIT)
    job.connection.hset(
        job.key,
        mapping={"retries_left": 1, "retry_intervals": json.dumps(job.retry_intervals)},
    )


def _deliver_again(job: Job, exc: BaseException) -> None:
    """jobdef's own bookkeeping could not be done (``exc``): RQ is to deliver the job again
    after a wait that doubles with each delivery meeting the outage, up to
    :data:`OUTAGE_LONGEST_WAIT`. That delivery finds what this one left (a dead run's
    burial pending, a lost attempt) and goes on from there: the job is neither dropped
    nor run twice for it."""
    meta = job.meta[META]
    outages = int(meta.get("outages", 0)) + 1
    meta["outages"] = outages
    wait = min(OUTAGE_LONGEST_WAIT, OUTAGE_FIRST_WAIT * 2 ** (outages - 1))
    _next_delivery(job, wait)
    why = exc.message if isinstance(exc, JobdefError) else "bookkeeping ran past the job timeout"
    LOGGER.warning("RQ job %s: %s; RQ delivers it again in %ds", job.id, redact(why), wait)


def result_ttl(policy: JobPolicy) -> int | None:
    """How long RQ keeps a done job and its result (``result_ttl``): the sheet's
    ``result.retention`` (default ``retention.done``) when the sheet or its Defaults
    declare a ``result:``, in whole seconds rounded up (-1, RQ's "forever", for a value
    kept as long as a job that is kept forever); else None, RQ's own default (500 s),
    as before ``result:`` existed, so a sheet that says nothing of results changes
    nothing in Redis. A value not stored (``result.store: false``) is None in RQ."""
    if not policy.result.store or not declares_result(policy):
        return None
    retention = policy.result.retention
    return -1 if retention is None else max(1, math.ceil(retention))


def perform(name: str, handler: str, args: dict[str, Any]) -> Any:
    """What RQ runs: one attempt of job ``name`` under its sheet.

    When jobdef's database or the run store cannot be reached for the bookkeeping
    (:class:`~jobdef.adapters.store.BookkeepingUnavailable`), the job stays retryable
    in RQ (:func:`_deliver_again`); RQ's timeout cutting that bookkeeping short is
    the same (the handler's own timeout is caught inside :func:`_attempt`).
    """
    job = get_current_job()
    if job is None:
        raise UsageError("jobdef.adapters.rq.perform runs inside an RQ worker")
    runtime = _runtime_of(job)
    policy = runtime.job(name)
    try:
        return_value, raised = _attempt(runtime, job, policy, handler, args)
    except (BookkeepingUnavailable, JobTimeoutException) as exc:
        _deliver_again(job, exc)
        raise
    if raised is not None:
        raise raised  # the handler's error, as RQ records it
    return return_value


def _attempt(
    runtime: SheetRuntime, job: Job, policy: JobPolicy, handler: str, args: dict[str, Any]
) -> tuple[Any, BaseException | None]:
    """One attempt and its bookkeeping: the handler's return value, or what it raised."""
    task_id = _task_id(job)
    _held_for_loss(job)
    try:
        _same_run(runtime, job, task_id)
        begun = runtime.begin(policy, task_id, args)
    except AlreadyBuried as exc:  # a run over, or its pending burial just stored
        LOGGER.warning("%s", exc)
        _stop_retrying(job)
        raise
    except AlreadyEnded as exc:
        LOGGER.warning("%s", exc)
        _stop_retrying(job)
        return None, None
    job.meta[META]["outages"] = 0
    if begun.lost is not None:
        decision = _decide(runtime, job, policy, begun.lost, begun.attempt)
        if decision.action == "dead":
            lost = ErrorInfo(
                "jobdef.runtime.errors.LeaseExpired",
                f"the worker was lost during attempt {begun.attempt}",
            )
            _stop_retrying(job)
            runtime.bury(policy, task_id, args, decision, lost)
            raise RuntimeError(f"{policy.name}: dead: {decision.reason}")
        begun = runtime.begin(policy, task_id, args)
    started = runtime.clock()
    raised: BaseException
    try:
        return_value = call_handler(_resolve(handler), **args)
        return_value = runtime.kept(policy, task_id, begun.attempt, return_value)
    except JobTimeoutException as exc:
        names, timed_out, raised = TIMEOUT_NAMES, True, exc
    except Exception as exc:
        names, timed_out, raised = exception_names(exc), False, exc
    else:
        runtime.succeeded(policy, task_id)
        return return_value, None
    error = error_info(raised, policy, args)
    if timed_out:
        why = f"ran past its timeout of {policy.timeout:g}s"
        error = ErrorInfo(names[0], why, error.traceback)
    decision = runtime.failed(
        policy,
        task_id,
        begun.attempt,
        names,
        error,
        started_at=started,
        worker=str(job.worker_name or ""),
        timed_out=timed_out,
    )
    decision = _decide(runtime, job, policy, decision, begun.attempt)
    if decision.action == "retry":
        _next_delivery(job, decision.delay or 0.0)
    else:
        _stop_retrying(job)
        runtime.bury(policy, task_id, args, decision, error)
    return None, raised


# Seconds the thread of an RQ worker's command channel waits at most between two reads
# (SheetWorker.subscribe): also the longest its exit waits for the thread.
_COMMANDS_POLL = 1.0


class SheetWorker(Worker):
    """An RQ worker that counts an attempt whose work horse was killed (kill -9, OOM)
    as a failed attempt of the sheet: the job retries per the sheet or dies, once.

    It says at start where the jobs that die go (``JOBDEF_DATABASE_URL``, else
    ``[tool.jobdef] database``), and stops with one line when that is no database URL.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        try:
            where = describe_store(worker_database())  # a scheme of no engine is named
        except JobdefError as exc:
            raise SystemExit(f"jobdef: {exc.message}") from None
        self.log.info("jobs that die under their sheets are stored in %s", where)

    def subscribe(self) -> None:
        """Listen on this worker's command channel (RQ's ``rq`` commands), as RQ does, but
        with the listening thread waking every second, not every minute. redis-py 8's
        ``stop()`` waits for that thread, and a thread that read the reply to the
        worker's unsubscribe before RQ stopped it (a busy machine) then waits its whole
        sleep for a new subscription: a ``--burst`` worker took a minute to exit."""
        self.log.info("Worker %s: subscribing to channel %s", self.name, self.pubsub_channel_name)
        self.pubsub = self.connection.pubsub()
        self.pubsub.subscribe(**{self.pubsub_channel_name: self.handle_payload})
        # RQ declares the attribute as None, unannotated: mypy takes it for None alone.
        self.pubsub_thread = self.pubsub.run_in_thread(  # type: ignore[assignment]
            sleep_time=_COMMANDS_POLL,
            daemon=True,
            exception_handler=getattr(self, "_pubsub_exception_handler", None),
        )

    def handle_work_horse_killed(self, job: Job, retpid: int, ret_val: int, rusage: Any) -> None:
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)  # type: ignore[no-untyped-call]
        meta = job.meta.get(META) if isinstance(job.meta, Mapping) else None
        if not isinstance(meta, Mapping):
            return
        try:
            self._count_killed(job, str(meta["job"]), ret_val)
        except BookkeepingUnavailable as exc:
            _deliver_again(job, exc)  # the next delivery counts the lost attempt

    def _count_killed(self, job: Job, name: str, ret_val: int) -> None:
        runtime = _runtime_of(job)
        policy = runtime.job(name)
        task_id = _task_id(job)
        state = runtime.store.load(task_id)
        if state is None or not state.lost:
            return
        error = ErrorInfo(
            "jobdef.runtime.errors.HandlerCrashed",
            f"the work horse died (waitpid returned {ret_val})",
        )
        names = exception_names(_crashed())
        decision = runtime.failed(
            policy,
            task_id,
            state.started,
            names,
            error,
            started_at=state.started_at or runtime.clock(),
            worker=self.name,
        )
        decision = _decide(runtime, job, policy, decision, state.started)
        if decision.action == "retry":
            _next_delivery(job, decision.delay or 0.0)
        else:
            _stop_retrying(job)
            args = job.args[2] if len(job.args) > 2 else {}
            runtime.bury(policy, task_id, args, decision, error)


def _crashed() -> BaseException:
    from jobdef.runtime.errors import HandlerCrashed

    return HandlerCrashed()
