"""The sheet as the policy of Celery tasks (``pip install 'jobdef[celery]'``)::

    from celery import Celery
    from jobdef.adapters.celery import configure, sheet_task

    app = Celery("shop", broker="redis://127.0.0.1:6379/0")
    configure(app, sheets="jobdefs", database="sqlite:///jobdef.db",
              redis="redis://127.0.0.1:6379/0")

    @sheet_task(app, "send_reservation_mail")
    def send_reservation_mail(reservation_id: int) -> None: ...

    send_reservation_mail.delay(reservation_id=42)

or ``@app.task(base=SheetTask)`` with the task's name (or ``jobdef_job``) the
sheet's job name. Celery's own retry settings are not used: the task decides
each retry from the sheet and tells Celery exactly when
(``self.retry(countdown=..., max_retries=max_attempts - 1)``); see
docs/runtimes.md for what this fixes and what Celery still cannot honour.

When jobdef's own bookkeeping fails (the run store or jobdef's database cannot be
reached), the message is never acked and dropped: the task sends it again after a
short, growing countdown (carrying how the attempt ended, when the run store could
not take it), or rejects it with requeue when the broker refuses that too.
"""

from __future__ import annotations

import inspect
import logging
import math
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, NoReturn, TypeVar
from weakref import WeakKeyDictionary

from celery import Celery, Task
from celery.exceptions import Reject, Retry, SoftTimeLimitExceeded, TimeLimitExceeded
from celery.signals import task_revoked

from jobdef.adapters.config import Settings, runtime_for
from jobdef.adapters.core import (
    TIMEOUT_NAMES,
    AlreadyEnded,
    Prepared,
    SheetRuntime,
    call_handler,
    error_info,
    recorded,
)
from jobdef.adapters.store import BookkeepingUnavailable
from jobdef.backends.records import ErrorInfo
from jobdef.errors import JobdefError, UsageError
from jobdef.policy.model import JobPolicy
from jobdef.redact import shown_args
from jobdef.runtime.classify import exception_names
from jobdef.runtime.decisions import Decision
from jobdef.telemetry.logs import args_text

LOGGER = logging.getLogger("jobdef.adapters.celery")
RUNTIME = "celery"

_SETTINGS: WeakKeyDictionary[Celery, Settings] = WeakKeyDictionary()
_resending = threading.local()

# Seconds a run opened by .delay() stays unconfirmed before its send is taken as failed
# (the broker and the run store gone at once, the producer killed mid-send): longer
# than Celery's publish takes with its default retries (4 tries, each within the
# broker's 4 s connection timeout). Another producer's call with the key waits for
# the confirmation meanwhile, so it is neither refused for a message that does not
# exist nor sent twice.
SEND_GRACE = 30.0
# Runs whose send failed in this process while the run store could not be told (task
# id: created_at): this process's next call with the key frees the run at once.
_unfreed: dict[str, float] = {}

# Message headers of a delivery sent again because jobdef's bookkeeping failed: how
# the attempt ended (when the run store could not take it), and how many times the
# message was sent again so (the countdown doubles from LATER_FIRST to LATER_LONGEST).
OUTCOME = "jobdef_outcome"
LATER = "jobdef_later"
LATER_FIRST = 1.0
LATER_LONGEST = 60.0
# The end of a traceback carried in a header (a broker limits a header's size).
CARRIED_TRACEBACK = 8000

F = TypeVar("F", bound=Callable[..., Any])


class RunDead(JobdefError):
    """The run is dead by its sheet (stored in jobdef's database); Celery records FAILURE."""


class _NextAttempt(Exception):
    """Eager mode: the sheet says retry; the next attempt runs at once, in a loop (not a
    recursion, however many attempts the sheet allows)."""


def configure(
    app: Celery, *, sheets: str, database: str, redis: str | None = None, prefix: str = "jobdef"
) -> None:
    """Point ``app``'s sheet tasks at their sheets, jobdef's database and the run store
    (``redis``; default: the app's broker URL when it is Redis).

    Call it after the app's broker settings: the run store's lifetimes cover the
    broker's ``visibility_timeout`` (a Redis or SQS broker redelivers an unacked
    message that late).
    """
    url = redis or str(app.conf.broker_url or "")
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise UsageError(
            "the Celery adapter keeps attempt counts and idempotency keys in Redis; pass "
            "configure(app, ..., redis='redis://host:6379/0')"
        )
    _SETTINGS[app] = Settings(
        sheets=str(sheets),
        database=database,
        redis=url,
        prefix=prefix,
        redelivery=visibility_timeout(app) or 0.0,
    )


def settings_of(app: Celery) -> Settings:
    try:
        return _SETTINGS[app]
    except KeyError:
        raise UsageError(
            f"Celery app {app.main!r} has no jobdef settings; call "
            "jobdef.adapters.celery.configure(app, sheets=..., database=...) first"
        ) from None


def time_limits(policy: JobPolicy) -> tuple[float, float]:
    """``(soft_time_limit, time_limit)``: the sheet's timeout, and a hard kill a little
    later (a tenth of it, at least 1 s and at most 30 s) for a task that ignores the soft
    one."""
    grace = min(30.0, max(1.0, policy.timeout / 10))
    return policy.timeout, policy.timeout + grace


class SheetTask(Task):  # type: ignore[misc]
    """A Celery task whose retries, timeouts, deadline and dead letters follow its sheet."""

    abstract = True
    # A crash redelivers the message; the adapter counts the redelivery as an attempt.
    acks_late = True
    reject_on_worker_lost = True
    # Never Celery's own retry policy: the adapter calls self.retry itself.
    autoretry_for = ()
    jobdef_job: str | None = None

    # -- the sheet --------------------------------------------------------------------

    @property
    def jobdef(self) -> SheetRuntime:
        return runtime_for(RUNTIME, settings_of(self.app))

    @property
    def sheet(self) -> JobPolicy:
        return self.jobdef.job(self.jobdef_job or self.name)

    def _call_args(self, args: Any, kwargs: Any) -> dict[str, Any]:
        """The call's arguments by name, as the sheet's ``args`` names them."""
        positional, named = tuple(args or ()), dict[str, Any](kwargs or {})
        if not positional:
            return named
        try:
            bound = inspect.signature(self.run).bind(*positional, **named)
        except TypeError as exc:
            raise UsageError(f"task {self.name}: {exc}") from None
        arguments: dict[str, Any] = dict(bound.arguments)
        return arguments

    # -- producing ----------------------------------------------------------------------

    def apply_async(
        self, args: Any = None, kwargs: Any = None, task_id: str | None = None, **options: Any
    ) -> Any:
        """Validate the call against the sheet, derive the task id from the idempotency
        key, and send it with the sheet's time limits, unless a run with that id is
        active (then the active run's result is returned and nothing is sent).

        With ``task_always_eager`` the same checks hold and the run is counted in the
        run store as a worker counts it; it then runs at once, in this process.
        """
        if getattr(_resending, "on", False):
            return super().apply_async(args, kwargs, task_id=task_id, **options)
        runtime = self.jobdef
        prepared = runtime.prepare(self.jobdef_job or self.name, self._call_args(args, kwargs))
        wait = delivery_wait(options, runtime.clock())
        unfreed = _unfreed.get(prepared.task_id)
        if unfreed is not None:  # this process's send of it failed, the store down too
            runtime.store.forget(prepared.task_id, unfreed)
            _unfreed.pop(prepared.task_id, None)
        if not runtime.open_run(prepared, wait=wait, send_grace=SEND_GRACE):
            LOGGER.info("%s: task %s is active; not sent", self.name, prepared.task_id)
            return self.AsyncResult(prepared.task_id)
        soft, hard = time_limits(prepared.policy)
        options.setdefault("queue", prepared.policy.queue)
        headers = dict(options.pop("headers", None) or {})
        headers["jobdef_created_at"] = prepared.created_at
        headers["jobdef_deadline_at"] = prepared.deadline_at
        # What Celery's logs, events and monitors show of the call (default: its repr).
        options.setdefault("kwargsrepr", args_text(shown_args(prepared.policy, prepared.args)))
        try:
            result = super().apply_async(
                (),
                prepared.args,
                task_id=prepared.task_id,
                soft_time_limit=soft,
                time_limit=hard,
                headers=headers,
                **options,
            )
        except Exception:
            self._free(prepared)
            raise
        try:
            runtime.store.sent(prepared.task_id, prepared.created_at)
        except BookkeepingUnavailable as exc:
            LOGGER.warning(
                "%s: task %s was sent; %s, so a call with its key %gs from now may send it "
                "again before its first attempt starts",
                self.name,
                prepared.task_id,
                exc,
                SEND_GRACE,
            )
        return result

    def _free(self, prepared: Prepared) -> None:
        """Nothing was sent for the run: its key is free again. When the run store cannot
        be told, the run is taken as never sent after :data:`SEND_GRACE` (this process's
        next call with the key frees it at once)."""
        try:
            self.jobdef.store.forget(prepared.task_id, prepared.created_at)
        except BookkeepingUnavailable as exc:
            _unfreed[prepared.task_id] = prepared.created_at
            LOGGER.error(
                "%s: %s; the key is taken as free %gs after the call", self.name, exc, SEND_GRACE
            )

    # -- consuming ----------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.request.called_directly:
            return self.run(*args, **kwargs)
        while True:
            try:
                return self._deliver(args, kwargs)
            except _NextAttempt:
                continue

    def _deliver(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """One delivery of the message: settle, bury, or run one attempt."""
        runtime, policy, task_id = self.jobdef, self.sheet, str(self.request.id)
        call = self._call_args(args, kwargs)
        carried = _header(self.request, OUTCOME)
        try:
            if isinstance(carried, Mapping):
                return self._settle(policy, carried, call)
            begun = runtime.begin(policy, task_id, call)
            if begun.lost is not None:
                lost = ErrorInfo(
                    "jobdef.runtime.errors.LeaseExpired",
                    f"the worker was lost during attempt {begun.attempt} (a crash redelivery)",
                )
                return self._after(policy, begun.lost, call, lost, None)
        except AlreadyEnded as exc:
            LOGGER.warning("%s", exc)
            return None
        except (BookkeepingUnavailable, SoftTimeLimitExceeded) as exc:
            self._later(policy, call, _unavailable(exc), carried)
        return self._attempt(policy, begun.attempt, args, kwargs, call)

    def _attempt(
        self,
        policy: JobPolicy,
        attempt: int,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        call: Mapping[str, Any],
    ) -> Any:
        """Run attempt ``attempt`` of the handler, once, and record how it ended."""
        runtime, task_id = self.jobdef, str(self.request.id)
        started = runtime.clock()
        try:
            return_value = call_handler(self.run, *args, **kwargs)
        except Retry:
            raise
        except SoftTimeLimitExceeded as exc:
            names, timed_out, raised = TIMEOUT_NAMES, True, exc
        except Exception as exc:
            names, timed_out, raised = exception_names(exc), False, exc
        else:
            try:
                runtime.succeeded(policy, task_id)
            except (BookkeepingUnavailable, SoftTimeLimitExceeded) as exc:
                self._later(policy, call, _unavailable(exc), {"attempt": attempt, "ok": True})
            return return_value
        error = error_info(raised, policy, call)
        if timed_out:
            why = f"ran past its timeout of {policy.timeout:g}s"
            error = ErrorInfo(names[0], why, error.traceback)
        outcome = {
            "attempt": attempt,
            "names": list(names),
            "error": [error.type, error.message, error.traceback[-CARRIED_TRACEBACK:]],
            "started_at": started,
            "worker": str(self.request.hostname or ""),
            "timed_out": timed_out,
        }
        try:
            return self._settle(policy, outcome, call, raised)
        except AlreadyEnded as exc:
            LOGGER.warning("%s", exc)
            return None
        except BookkeepingUnavailable as exc:
            self._later(policy, call, exc, outcome)
        except SoftTimeLimitExceeded as exc:
            if exc is raised:
                raise  # the handler's own timeout, re-raised once the run is buried
            self._later(policy, call, _unavailable(exc), outcome)

    def _settle(
        self,
        policy: JobPolicy,
        outcome: Mapping[str, Any],
        call: Mapping[str, Any],
        raised: BaseException | None = None,
    ) -> Any:
        """Record how attempt ``outcome['attempt']`` ended (once, however often this
        delivery comes), then retry or bury as the sheet says."""
        runtime, task_id = self.jobdef, str(self.request.id)
        attempt = int(outcome["attempt"])
        state = runtime.current(policy, task_id, call)
        if outcome.get("ok"):
            runtime.succeeded(policy, task_id)
            return None
        if state is None:
            # Its state expired while the store was out of reach longer than it lives:
            # the attempt this message carries is recorded on the run opened again.
            state = runtime.reopen(policy, task_id, started=attempt)
        error = ErrorInfo(*outcome["error"])
        before = None if state is None else recorded(state, attempt)
        if before is not None:
            decision = before[0]  # recorded by an earlier delivery, not acted on
        else:
            decision = runtime.failed(
                policy,
                task_id,
                attempt,
                tuple(outcome["names"]),
                error,
                started_at=float(outcome["started_at"]),
                worker=str(outcome.get("worker") or ""),
                timed_out=bool(outcome.get("timed_out")),
            )
        return self._after(policy, decision, call, error, raised)

    def _later(
        self,
        policy: JobPolicy,
        call: Mapping[str, Any],
        exc: BookkeepingUnavailable,
        outcome: Mapping[str, Any] | None,
    ) -> NoReturn:
        """jobdef's bookkeeping failed: send the message again after a short countdown,
        with ``outcome`` (how the attempt ended, when the run store could not take it),
        so nothing is lost and the handler does not run again for it; when the broker
        refuses that too, reject the message with requeue (never an ack)."""
        if self.request.is_eager:
            raise exc  # no broker to keep the message: the caller sees the outage
        tries = int(_header(self.request, LATER) or 0)
        countdown = min(LATER_LONGEST, LATER_FIRST * 2**tries)
        task_id = str(self.request.id)
        LOGGER.warning(
            "%s[%s]: %s; the message comes back in %gs", self.name, task_id, exc, countdown
        )
        headers = {OUTCOME: None if outcome is None else dict(outcome), LATER: tries + 1}
        try:
            retries = int(self.request.retries or 0)
            self._resend(
                policy, task_id, call, countdown=countdown, retries=retries, headers=headers
            )
        except Exception as failed:
            LOGGER.error("%s[%s]: cannot send it again (%s); requeued", self.name, task_id, failed)
            raise Reject(exc, requeue=True) from None
        raise Retry(str(exc), exc, when=countdown)

    def _after(
        self,
        policy: JobPolicy,
        decision: Decision,
        kwargs: Mapping[str, Any],
        error: ErrorInfo,
        raised: BaseException | None,
    ) -> Any:
        """Retry after the sheet's wait (``self.retry`` with explicit values), or bury."""
        if decision.action == "retry" and self.request.is_eager:
            # Eager: the next attempt runs here and now (no wait), as its delivery
            # would; Celery's eager retry raises Retry at the caller when
            # task_eager_propagates is on.
            raise _NextAttempt
        if decision.action == "retry":
            _resending.on = True
            try:
                raise self.retry(
                    kwargs=dict(kwargs),
                    exc=raised,
                    countdown=decision.delay or 0.0,
                    max_retries=policy.max_attempts - 1,
                    headers={OUTCOME: None, LATER: 0},  # a new attempt, not a settlement
                )
            except Reject as refused:
                # The broker refused the retry: Celery would drop the message; keep it
                # (its redelivery starts the next attempt, the failure is recorded).
                raise Reject(refused.reason, requeue=True) from None
            finally:
                _resending.on = False
        self.jobdef.bury(policy, str(self.request.id), kwargs, decision, error)
        if raised is not None:
            raise raised
        raise RunDead(f"{policy.name}: dead: {decision.reason}")

    def on_failure(self, exc: Any, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        """The hard time limit killed the attempt (Celery reports it here, in the worker's
        main process, acks the message and never retries it): decide per the sheet as
        for a timeout. When jobdef's bookkeeping fails here, the message is sent again:
        its delivery counts the killed attempt as lost, or buries the run."""
        if not isinstance(exc, TimeLimitExceeded):
            return
        policy, call = self.sheet, dict(kwargs or {})
        try:
            self._killed(policy, task_id, call, exc)
        except BookkeepingUnavailable as failed:
            LOGGER.warning("%s[%s]: %s; the message is sent again", self.name, task_id, failed)
            self._resend(policy, task_id, call, countdown=LATER_FIRST, retries=0)

    def _killed(
        self, policy: JobPolicy, task_id: str, call: dict[str, Any], exc: TimeLimitExceeded
    ) -> None:
        runtime = self.jobdef
        state = runtime.store.load(task_id)
        if state is None or not state.lost:
            return
        error = ErrorInfo(TIMEOUT_NAMES[0], f"killed at the hard time limit ({exc})")
        decision = runtime.failed(
            policy,
            task_id,
            state.started,
            TIMEOUT_NAMES,
            error,
            started_at=state.started_at or runtime.clock(),
            worker="",
            timed_out=True,
        )
        if decision.action == "dead":
            runtime.bury(policy, task_id, call, decision, error)
            return
        # No request context here to call self.retry from: the same message it would
        # send, with the same task id and the retry counted.
        self._resend(policy, task_id, call, countdown=decision.delay or 0.0, retries=state.started)

    def _resend(
        self,
        policy: JobPolicy,
        task_id: str,
        call: Mapping[str, Any],
        *,
        countdown: float,
        retries: int,
        headers: Mapping[str, Any] | None = None,
    ) -> None:
        """Send the run's message again, as it is, after ``countdown`` seconds."""
        soft, hard = time_limits(policy)
        _resending.on = True
        try:
            self.apply_async(
                (),
                dict(call),
                task_id=task_id,
                countdown=countdown,
                retries=retries,
                queue=policy.queue,
                soft_time_limit=soft,
                time_limit=hard,
                headers=dict(headers or {}),
            )
        finally:
            _resending.on = False


def _revoked(sender: Any = None, request: Any = None, expired: bool = False, **_: Any) -> None:
    """A sheet task's message revoked or expired (the worker drops it unrun, or stops
    it mid-attempt): the run can no longer go on, so its key is free at once.

    An expired message also puts its task id in the worker's set of revoked ids, which
    would drop the key's next run (the same task id) unrun for hours: the expiry was
    the message's, so the id leaves the set. A revoke asked for by id stays (Celery
    then drops every run of that key on the worker for as long as it remembers it).
    """
    if not isinstance(sender, SheetTask) or request is None:
        return
    task_id = str(request.id)
    if expired:
        from celery.worker import state

        state.revoked.discard(task_id)
    try:
        sender.jobdef.store.close(task_id)
    except BookkeepingUnavailable as exc:
        LOGGER.error("%s[%s] revoked: %s; its key expires later", sender.name, task_id, exc)
        return
    LOGGER.info("%s[%s] revoked: its key is free", sender.name, task_id)


task_revoked.connect(_revoked, weak=False)


def sheet_task(app: Celery, job: str, **options: Any) -> Callable[[F], Any]:
    """``@sheet_task(app, "job_name")``: a :class:`SheetTask` for the sheet of ``job``.

    The sheet's ``timeout`` becomes the task's ``soft_time_limit`` (and a hard
    ``time_limit`` a little later), ``max_attempts - 1`` its ``max_retries``;
    ``options`` go to ``app.task`` as they are.
    """
    policy = runtime_for(RUNTIME, settings_of(app)).job(job)
    soft, hard = time_limits(policy)
    defaults: dict[str, Any] = {
        "base": SheetTask,
        "jobdef_job": job,
        "soft_time_limit": soft,
        "time_limit": hard,
        "max_retries": policy.max_attempts - 1,
    }
    decorator: Callable[[F], Any] = app.task(**(defaults | options))
    return decorator


def _unavailable(exc: BaseException) -> BookkeepingUnavailable:
    """A bookkeeping call that failed, or that the soft time limit cut short (a store
    that hangs rather than refuses): either way the message is kept."""
    if isinstance(exc, BookkeepingUnavailable):
        return exc
    return BookkeepingUnavailable("jobdef's bookkeeping did not answer within the time limit")


def _header(request: Any, name: str) -> Any:
    """A header jobdef put on the message (Celery makes each one an attribute of the
    request; an eager run keeps them under ``headers``)."""
    value = getattr(request, name, None)
    if value is None:
        value = (getattr(request, "headers", None) or {}).get(name)
    return value


def delivery_wait(options: Mapping[str, Any], now: float) -> float:
    """How long after ``now`` the broker holds a message sent with ``options``
    (``countdown``, or ``eta``: an aware datetime, a naive one in UTC, or ISO 8601)."""
    wait = float(options.get("countdown") or 0.0)
    eta = options.get("eta")
    if isinstance(eta, str):
        eta = datetime.fromisoformat(eta)
    if isinstance(eta, datetime):
        moment = eta if eta.tzinfo is not None else eta.replace(tzinfo=UTC)
        wait = max(wait, moment.timestamp() - now)
    return max(0.0, wait)


def worst_countdown(policy: JobPolicy) -> float:
    """The longest wait the adapter may ask Celery to hold a retry for (seconds)."""
    from jobdef.policy.backoff import delay_range

    waits = [delay_range(policy.backoff, n)[1] for n in range(1, policy.max_attempts)]
    return max(waits, default=0.0)


def visibility_timeout(app: Celery) -> float | None:
    """The broker's visibility timeout (Redis and SQS brokers redeliver an unacked
    message after it); ``None`` for brokers without one (AMQP)."""
    url = str(app.conf.broker_url or "")
    if not url.startswith(("redis", "rediss", "sqs", "unix")):
        return None
    value = (app.conf.broker_transport_options or {}).get("visibility_timeout", 3600)
    return float(value) if math.isfinite(float(value)) else None
