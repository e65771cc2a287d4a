"""The sheet as the policy of RQ jobs (``pip install 'jobdef[rq]'``)::

    from redis import Redis
    from jobdef.adapters.rq import SheetQueue

    sheets = SheetQueue(Redis(), sheets="jobdefs", database="sqlite:///jobdef.db")
    sheets.enqueue("send_reservation_mail", reservation_id=42)   # on the sheet's queue

and the workers run with the scheduler and jobdef's worker class::

    rq worker --with-scheduler -w jobdef.adapters.rq.SheetWorker default

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
import logging
import math
import random
from collections.abc import Callable, Mapping
from typing import Any

from redis import Redis
from rq import Queue, Retry, Worker, get_current_job
from rq.job import Job
from rq.timeouts import JobTimeoutException

from jobdef.adapters.config import Settings, runtime_for
from jobdef.adapters.core import TIMEOUT_NAMES, AlreadyBuried, SheetRuntime, error_info
from jobdef.backends.records import ErrorInfo
from jobdef.errors import UsageError
from jobdef.policy.backoff import next_delay
from jobdef.policy.model import JobPolicy
from jobdef.runtime.classify import exception_names
from jobdef.runtime.decisions import Decision

LOGGER = logging.getLogger("jobdef.adapters.rq")
RUNTIME = "rq"
META = "jobdef"
# What RQ keeps of a finished job, for `rq info` and the result; jobdef keeps the dead.
FAILURE_TTL = 7 * 86400


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
    the RQ queue named by its sheet's ``queue``.

    ``redis`` (the URL of the run store) defaults to ``connection``'s server.
    """

    def __init__(
        self,
        connection: Redis,
        *,
        sheets: str,
        database: str,
        redis: str | None = None,
        prefix: str = "jobdef",
        rng: random.Random | None = None,
    ) -> None:
        if redis is None:
            kwargs = connection.connection_pool.connection_kwargs
            redis = "redis://{}:{}/{}".format(
                kwargs.get("host", "127.0.0.1"), kwargs.get("port", 6379), kwargs.get("db", 0)
            )
        self.connection = connection
        self.settings = Settings(sheets=str(sheets), database=database, redis=redis, prefix=prefix)
        self.rng = rng

    @property
    def jobdef(self) -> SheetRuntime:
        return runtime_for(RUNTIME, self.settings)

    def enqueue(self, job: str, /, **args: Any) -> Job:
        """Validate ``args`` against the sheet of ``job`` and enqueue it, unless a run with
        the same idempotency key is active (then that run's RQ job is returned)."""
        runtime = self.jobdef
        prepared = runtime.prepare(job, args)
        if not runtime.open_run(prepared):
            LOGGER.info("%s: a run with job id %s is active; not enqueued", job, prepared.task_id)
            return Job.fetch(prepared.task_id, connection=self.connection)
        policy = prepared.policy
        waits = sampled_waits(policy, self.rng)
        meta = {
            "sheets": self.settings.sheets,
            "database": self.settings.database,
            "redis": self.settings.redis,
            "prefix": self.settings.prefix,
            "job": policy.name,
            "created_at": prepared.created_at,
            "deadline_at": prepared.deadline_at,
            "waits": waits,
        }
        try:
            queue = Queue(policy.queue, connection=self.connection)
            return queue.enqueue(
                perform,
                args=(policy.name, policy.handler, dict(prepared.args)),
                job_id=prepared.task_id,
                job_timeout=job_timeout(policy),
                retry=Retry(max=len(waits), interval=waits) if waits else None,
                failure_ttl=FAILURE_TTL,
                meta={META: meta},
            )
        except Exception:
            runtime.store.close(prepared.task_id)  # nothing was enqueued: the key is free
            raise


def _settings(job: Job) -> Settings:
    meta = job.meta.get(META)
    if not isinstance(meta, Mapping):
        raise UsageError(f"RQ job {job.id} was not enqueued through jobdef.adapters.rq.SheetQueue")
    return Settings(
        sheets=meta["sheets"], database=meta["database"], redis=meta["redis"], prefix=meta["prefix"]
    )


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


def perform(name: str, handler: str, args: dict[str, Any]) -> Any:
    """What RQ runs: one attempt of job ``name`` under its sheet."""
    job = get_current_job()
    if job is None:
        raise UsageError("jobdef.adapters.rq.perform runs inside an RQ worker")
    runtime = runtime_for(RUNTIME, _settings(job))
    policy = runtime.job(name)
    try:
        begun = runtime.begin(policy, job.id)
    except AlreadyBuried as exc:
        LOGGER.warning("%s", exc)
        _stop_retrying(job)
        return None
    if begun.lost is not None:
        decision = _decide(runtime, job, policy, begun.lost, begun.attempt)
        if decision.action == "dead":
            lost = ErrorInfo(
                "jobdef.runtime.errors.LeaseExpired",
                f"the worker was lost during attempt {begun.attempt}",
            )
            _stop_retrying(job)
            runtime.bury(policy, job.id, args, decision, lost)
            raise RuntimeError(f"{name}: dead: {decision.reason}")
        begun = runtime.begin(policy, job.id)
    started = runtime.clock()
    raised: BaseException
    try:
        return_value = _resolve(handler)(**args)
    except JobTimeoutException as exc:
        names, timed_out, raised = TIMEOUT_NAMES, True, exc
    except Exception as exc:
        names, timed_out, raised = exception_names(exc), False, exc
    else:
        runtime.succeeded(policy, job.id)
        return return_value
    error = error_info(raised)
    if timed_out:
        why = f"ran past its timeout of {policy.timeout:g}s"
        error = ErrorInfo(names[0], why, error.traceback)
    decision = runtime.failed(
        policy,
        job.id,
        begun.attempt,
        names,
        error,
        started_at=started,
        worker=str(job.worker_name or ""),
        timed_out=timed_out,
    )
    decision = _decide(runtime, job, policy, decision, begun.attempt)
    if decision.action == "dead":
        _stop_retrying(job)
        runtime.bury(policy, job.id, args, decision, error)
    raise raised


class SheetWorker(Worker):
    """An RQ worker that counts an attempt whose work horse was killed (kill -9, OOM)
    as a failed attempt of the sheet: the job retries per the sheet or dies, once."""

    def handle_work_horse_killed(self, job: Job, retpid: int, ret_val: int, rusage: Any) -> None:
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)  # type: ignore[no-untyped-call]
        meta = job.meta.get(META) if isinstance(job.meta, Mapping) else None
        if not isinstance(meta, Mapping):
            return
        runtime = runtime_for(RUNTIME, _settings(job))
        policy = runtime.job(str(meta["job"]))
        state = runtime.store.load(job.id)
        if state is None or not state.lost:
            return
        error = ErrorInfo(
            "jobdef.runtime.errors.HandlerCrashed",
            f"the work horse died (waitpid returned {ret_val})",
        )
        names = exception_names(_crashed())
        decision = runtime.failed(
            policy,
            job.id,
            state.started,
            names,
            error,
            started_at=state.started_at or runtime.clock(),
            worker=self.name,
        )
        decision = _decide(runtime, job, policy, decision, state.started)
        if decision.action == "dead":
            _stop_retrying(job)
            args = job.args[2] if len(job.args) > 2 else {}
            runtime.bury(policy, job.id, args, decision, error)


def _crashed() -> BaseException:
    from jobdef.runtime.errors import HandlerCrashed

    return HandlerCrashed()
