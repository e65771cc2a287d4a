"""The sheet's policy for a runtime other than jobdef's worker: what every adapter shares.

Celery and RQ each decide retries their own way, and neither matches a sheet
(see docs/runtimes.md), so an adapter takes the decision away from them: it
classifies each error with the sheet (:func:`jobdef.runtime.classify.classify`),
draws the wait with jobdef's backoff and jitter, counts attempts itself (crash
redeliveries included), holds the deadline, and on death stores the job in
jobdef's database with its one notification. The runtime is left only to run
an attempt and to deliver the next one after the wait it is told.

The decisions are the very functions jobdef's own worker calls
(:mod:`jobdef.runtime.decisions`), fed a :class:`~jobdef.backends.records.JobRecord`
made from the run's state, so a sheet means the same on every runtime.

What an adapter calls, and what it does with what comes back:

- ``prepare`` then ``open_run(prepared, wait=<countdown or eta, s>)`` at enqueue;
  False: a run with that task id is active, send nothing. If the send fails,
  ``store.close(task_id)`` frees the key. With ``send_grace``, the adapter says
  ``store.sent(task_id, created_at)`` once the send went through; a run never
  confirmed (its send failed while the run store was down too) is taken as never
  sent after the grace, so its key is not held for the run's whole lifetime.
- ``begin(policy, task_id, args)`` at each delivery, before the handler.
  :class:`AlreadyEnded` (:class:`AlreadyBuried` for a dead run): the message is
  a redelivery of a run that is over; drop it, run nothing. A run that died
  while jobdef's database was down is buried here, from its pending burial,
  then :class:`AlreadyBuried`. ``Begun.lost``: decide about the lost attempt
  (retry, or ``bury``) before running anything.
- ``failed(...)`` after a failed attempt: retry after ``decision.delay``, or
  ``bury(...)``; ``succeeded(...)`` after a success.
- Any of these may raise :class:`~jobdef.adapters.store.BookkeepingUnavailable`
  (import it from :mod:`jobdef.adapters.store`): the run store
  (:class:`~jobdef.adapters.store.RunStoreUnavailable`, nothing of the call was
  written) or jobdef's database (:class:`DatabaseUnavailable`, raised by
  ``bury`` and ``begin`` once the run is marked dead in the run store, so its
  next delivery buries it). The adapter must then keep the message for a
  later delivery (Celery: a retry with a short countdown, else reject with
  requeue; RQ: leave the job retryable), never ack and drop it.
- Lifetimes (:func:`state_ttl`, :func:`ended_ttl`) follow the job and the
  runtime: ``SheetRuntime(redelivery=...)`` is the longest the runtime may take
  to deliver an unacknowledged message again (a Redis or SQS broker's
  visibility timeout), ``wait`` the countdown before the first delivery.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import os
import random
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jobdef.adapters.store import BookkeepingUnavailable, RunState, RunStore
from jobdef.backends import open_backend
from jobdef.backends.elsewhere import AttemptElsewhere, DeadElsewhere, record_dead_elsewhere
from jobdef.backends.protocol import Backend, fail_fast
from jobdef.backends.records import ErrorInfo, JobRecord, Outcome
from jobdef.errors import BackendError, ChannelError, JobdefError
from jobdef.notify.checks import build_channels
from jobdef.notify.events import notifications_for
from jobdef.notify.sender import OutboxSender
from jobdef.policy.backoff import retry_timeline
from jobdef.policy.keys import idempotency_key
from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry
from jobdef.redact import redact, sensitive_values
from jobdef.runtime.classify import class_names, exception_names
from jobdef.runtime.decisions import Decision, after_error, after_reclaim
from jobdef.runtime.errors import AttemptTimedOut
from jobdef.runtime.queue import validate_args

LOGGER = logging.getLogger("jobdef.adapters")

# Task ids derived from idempotency keys live in this namespace (uuid5), so the same
# job and key give the same id on every producer.
TASK_ID_NAMESPACE = uuid.UUID("8d2f3c1e-6b7a-5d4e-9f10-2a3b4c5d6e7f")
# A run's state and its ended marker outlive the longest time the runtime may still
# deliver one of its messages by this much, for a queue slow to drain; then they
# expire, so a run whose message the broker lost does not block its key forever.
STATE_MARGIN = 3600.0
# How often a producer looks again at a run of its key that another producer opened
# and has not confirmed sent yet (seconds).
UNSENT_POLL = 0.05
# No lifetime is longer than this (a sheet with a timeline of years).
LONGEST_TTL = 366 * 86400.0
# The one event an adapter notifies: the terminal one. Attempts that do not end a
# run leave no row in jobdef's database for a message to point at.
TERMINAL_EVENT = "dead"

# The names a timed-out attempt is classified by, as jobdef's worker classifies it.
TIMEOUT_NAMES = class_names(AttemptTimedOut)


def call_handler(handler: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Call ``handler`` as jobdef's own worker does: an ``async def`` handler's coroutine
    is run to its end on an event loop of its own. Neither Celery nor RQ awaits one: left
    to them, the attempt would end at once, "successful", with the work never done."""
    value = handler(*args, **kwargs)
    if inspect.isawaitable(value):
        return asyncio.run(_awaited(value))
    return value


async def _awaited(value: Any) -> Any:
    return await value


def task_id_for(policy: JobPolicy, key: str | None) -> str:
    """The task id of a run: derived from the idempotency key, else random."""
    if key is None:
        return str(uuid.uuid4())
    return str(uuid.uuid5(TASK_ID_NAMESPACE, f"{policy.name}\x00{key}"))


def state_ttl(policy: JobPolicy, *, wait: float = 0.0, redelivery: float = 0.0) -> int:
    """How long a run's state lives in Redis after a write, in seconds: as long as the
    runtime may still deliver one of the run's messages.

    That is ``wait`` (the countdown or eta before the next delivery), then the slowest
    timeline of the job (every wait at its longest, every attempt timed out; with a
    deadline, no retry starts after it), each attempt's delivery possibly coming again
    ``redelivery`` seconds later (a broker's visibility timeout after a lost worker),
    plus :data:`STATE_MARGIN`.
    """
    worst = retry_timeline(policy).worst_case
    if policy.deadline is not None:
        worst = min(worst, policy.deadline + policy.timeout)
    total = max(0.0, wait) + worst + redelivery * policy.max_attempts + STATE_MARGIN
    return math.ceil(min(total, LONGEST_TTL))


def ended_ttl(policy: JobPolicy, *, redelivery: float = 0.0) -> int:
    """How long an ended run's marker lives: the message of its last attempt may be
    delivered again (the worker lost after the end, before the ack) ``redelivery``
    seconds after that attempt began, which lasted up to the sheet's timeout."""
    return math.ceil(min(redelivery + policy.timeout + STATE_MARGIN, LONGEST_TTL))


@dataclass(frozen=True, slots=True)
class Prepared:
    """A validated call, ready to send: its task id, key and absolute times."""

    policy: JobPolicy
    args: Mapping[str, Any]
    task_id: str
    key: str | None
    created_at: float
    deadline_at: float | None


@dataclass(frozen=True, slots=True)
class Begun:
    """What the start of a delivery found: run attempt ``attempt`` (``lost`` is None),
    or decide first about the lost attempt before it (``lost``: retry or dead)."""

    attempt: int
    state: RunState
    lost: Decision | None = None


def error_info(exc: BaseException, policy: JobPolicy, args: Mapping[str, Any]) -> ErrorInfo:
    """The error an attempt of ``policy`` given ``args`` raised, as jobdef stores it:
    redacted by ErrorInfo, and without the values the displays hide (an exception that
    quotes the password it was given), as jobdef's own worker stores it. Everything
    the adapter keeps of it (the run store, a message's headers, the dead record, the
    notification) holds this; the runtime's own log and result keep the exception."""
    names = exception_names(exc)
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    hidden = sensitive_values(policy, args)
    return ErrorInfo(names[0], redact(str(exc), hidden), redact(text, hidden))


class AlreadyEnded(JobdefError):
    """A message of a run that is over came back (the worker was lost between the end
    and the ack): nothing runs, the message is dropped."""


class AlreadyBuried(AlreadyEnded):
    """A message of a run that is already dead came back: nothing runs, it is dropped."""


class DatabaseUnavailable(BookkeepingUnavailable):
    """jobdef's database cannot take a dead record now; the run is marked dead in the
    run store, and the next delivery of its message stores the record."""


class SheetRuntime:
    """The policy of the sheets in ``registry`` for one runtime, over a Redis run store
    and jobdef's database at ``database_url`` (where dead jobs and the outbox live).

    Safe across ``fork``: the database connection is opened in the process that uses it.
    """

    def __init__(
        self,
        runtime: str,
        registry: Registry,
        database_url: str,
        store: RunStore,
        *,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        environ: Mapping[str, str] | None = None,
        redelivery: float = 0.0,
    ) -> None:
        self.runtime = runtime
        self.redelivery = redelivery
        """How late the runtime may deliver an unacknowledged message again, in seconds
        (a Redis or SQS broker's visibility timeout; 0 when a lost worker's message
        comes back at once): every lifetime of the run store covers it."""
        self.registry = registry
        self.database_url = database_url
        self.store = store
        self.clock = clock
        self.rng = rng
        self.environ = environ
        self._backend: Backend | None = None
        self._backend_pid = 0

    # -- producing ----------------------------------------------------------------------

    def job(self, name: str) -> JobPolicy:
        return self.registry.job(name)

    def prepare(self, name: str, args: Mapping[str, Any]) -> Prepared:
        """Check a call against its sheet (raises :class:`~jobdef.errors.ArgsError`)."""
        policy = self.job(name)
        args = dict(args)
        validate_args(policy, args)
        key = idempotency_key(policy, args)
        now = self.clock()
        deadline_at = None if policy.deadline is None else now + policy.deadline
        return Prepared(policy, args, task_id_for(policy, key), key, now, deadline_at)

    def state_ttl(self, policy: JobPolicy, wait: float = 0.0) -> int:
        """:func:`state_ttl` on this runtime."""
        return state_ttl(policy, wait=wait, redelivery=self.redelivery)

    def open_run(self, prepared: Prepared, *, wait: float = 0.0, send_grace: float = 0.0) -> bool:
        """Register the run, to be delivered in ``wait`` seconds (a countdown or eta);
        False when one with its task id is active (send nothing).

        ``send_grace``: the run is unsent until ``store.sent`` (the caller confirms its
        send) and taken as never sent after that many seconds. A run of another
        producer found unsent is waited for, up to what is left of its grace: it is
        sent (False), or its send failed and it is opened anew here (True), never
        refused while its message may not exist.
        """
        while True:
            opening = self.store.open(
                prepared.task_id,
                prepared.policy.name,
                prepared.created_at,
                prepared.deadline_at,
                self.state_ttl(prepared.policy, wait),
                send_grace=send_grace,
            )
            if opening.opened or opening.unsent_for is None:
                return opening.opened
            time.sleep(min(UNSENT_POLL, max(opening.unsent_for, 0.001)))

    # -- consuming ----------------------------------------------------------------------

    def current(
        self, policy: JobPolicy, task_id: str, args: Mapping[str, Any] | None = None
    ) -> RunState | None:
        """The run's state at a delivery of its message, if it is still going.

        Raises :class:`AlreadyEnded` (:class:`AlreadyBuried`) when the run is over. A
        run marked dead whose record jobdef's database could not take is buried now
        (``args``: the message's, for its record), then :class:`AlreadyBuried`.
        """
        state = self.store.load(task_id)
        if state is None:
            ended = self.store.ended(task_id)
            if ended == "dead":
                raise AlreadyBuried(f"task {task_id} is dead already; its redelivery is dropped")
            if ended == "done":
                raise AlreadyEnded(f"task {task_id} is done already; its redelivery is dropped")
            return None
        if state.burial is not None:
            try:
                self._store_dead(policy, state, args or {}, state.burial)
            except DatabaseUnavailable:
                # Still waiting: the mark lives on for as long as the message may.
                self.store.pend_burial(task_id, state.burial, self.state_ttl(policy))
                raise
            raise AlreadyBuried(f"task {task_id} is buried now; its message is dropped")
        return state

    def begin(
        self, policy: JobPolicy, task_id: str, args: Mapping[str, Any] | None = None
    ) -> Begun:
        """The start of a delivery: count the attempt, or find the previous one lost
        (see :meth:`current` for a run that is over, and ``args``)."""
        ttl = self.state_ttl(policy)
        state = self.current(policy, task_id, args)
        if state is None:
            # Sent without the adapter (send_task, an old message) or expired: a new run.
            state = self.reopen(policy, task_id)
        if state.lost:
            decision = self._decide_lost(policy, state)
            return Begun(state.started, state, decision)
        attempt = self.store.start(task_id, self.clock(), ttl)
        return Begun(attempt, state)

    def reopen(self, policy: JobPolicy, task_id: str, started: int = 0) -> RunState:
        """A run for a message whose run state is gone (sent without the adapter, or its
        state expired while the store was out of reach longer than it lives), from now;
        ``started``: the attempts the message says were made, so none is made twice."""
        now = self.clock()
        deadline_at = None if policy.deadline is None else now + policy.deadline
        ttl = self.state_ttl(policy)
        self.store.open(task_id, policy.name, now, deadline_at, ttl, started=started)
        state = self.store.load(task_id)
        if state is None:
            raise JobdefError(f"the run state of task {task_id} could not be stored")
        return state

    def _record(self, policy: JobPolicy, state: RunState, attempt: int) -> JobRecord:
        """The run as the row jobdef's decisions read (attempt ``attempt`` just ended)."""
        return JobRecord(
            id=0,
            job=policy.name,
            queue=policy.queue,
            priority=policy.priority,
            args={},
            state="running",
            attempt=attempt,
            max_attempts=policy.max_attempts,
            idempotency_key=None,
            run_after=state.created_at,
            created_at=state.created_at,
            updated_at=state.created_at,
            last_delay=state.last_delay,
        )

    def _decide_lost(self, policy: JobPolicy, state: RunState) -> Decision:
        now = self.clock()
        decision = after_reclaim(policy, self._record(policy, state, state.started), now, self.rng)
        entry = self._entry(
            state.started,
            "reclaimed",
            decision=decision,
            error=None,
            now=now,
            started_at=state.started_at,
        )
        ttl = self.state_ttl(policy, decision.delay or 0.0)
        self.store.end(state.task_id, entry, decision.delay, ttl)
        return decision

    @staticmethod
    def _entry(
        attempt: int,
        outcome: Outcome,
        *,
        decision: Decision | None,
        error: ErrorInfo | None,
        now: float,
        started_at: float | None,
        worker: str = "",
    ) -> dict[str, Any]:
        return {
            "attempt": attempt,
            "outcome": outcome,
            "started_at": started_at,
            "finished_at": now,
            "worker": worker,
            "action": decision.action if decision else "",
            "reason": decision.reason if decision else "",
            "delay": decision.delay if decision else None,
            "error": None if error is None else [error.type, error.message, error.traceback],
        }

    def failed(
        self,
        policy: JobPolicy,
        task_id: str,
        attempt: int,
        names: tuple[str, ...],
        error: ErrorInfo,
        *,
        started_at: float,
        worker: str,
        timed_out: bool = False,
    ) -> Decision:
        """Attempt ``attempt`` raised (or timed out): retry after the sheet's wait, or dead."""
        state = self.store.load(task_id)
        if state is None:
            raise JobdefError(f"task {task_id} has no run state; was it started by the adapter?")
        now = self.clock()
        decision = after_error(policy, self._record(policy, state, attempt), names, now, self.rng)
        outcome: Outcome = "timeout" if timed_out else decision.action
        entry = self._entry(
            attempt,
            outcome,
            decision=decision,
            error=error,
            now=now,
            started_at=started_at,
            worker=worker,
        )
        self.store.end(
            task_id, entry, decision.delay, self.state_ttl(policy, decision.delay or 0.0)
        )
        return decision

    def succeeded(self, policy: JobPolicy, task_id: str) -> None:
        """The run is done: its task id is free again (after the dedupe window), and a
        redelivery of its message runs nothing."""
        ttl = ended_ttl(policy, redelivery=self.redelivery)
        self.store.close(task_id, policy.idempotency.dedupe_window, ended="done", ttl=ttl)

    # -- death --------------------------------------------------------------------------

    def backend(self) -> Backend:
        """jobdef's database, opened once per process (a forked child opens its own).
        A server that went away is reported at once (:class:`DatabaseUnavailable` from
        :meth:`bury`), not waited for: the message waits in the broker instead."""
        if self._backend is None or self._backend_pid != os.getpid():
            backend = open_backend(self.database_url)
            fail_fast(backend)
            self._backend, self._backend_pid = backend, os.getpid()
        return self._backend

    def bury(
        self,
        policy: JobPolicy,
        task_id: str,
        args: Mapping[str, Any],
        decision: Decision,
        error: ErrorInfo | None,
    ) -> JobRecord:
        """Store the dead run in jobdef's database with its attempts and its one
        notification, deliver the outbox once, and end the run.

        The run is marked dead in the run store first: when jobdef's database cannot
        take the record (:class:`DatabaseUnavailable`), the next delivery of the
        message stores it (:meth:`current`) instead of running the handler again.
        """
        state = self.store.load(task_id)
        if state is None:
            raise JobdefError(f"task {task_id} has no run state to bury")
        last = error or ErrorInfo("jobdef.adapters.Dead", "")
        burial = {"reason": decision.reason, "error": [last.type, last.message, last.traceback]}
        self.store.pend_burial(task_id, burial, self.state_ttl(policy))
        return self._store_dead(policy, state, args, burial)

    def _store_dead(
        self,
        policy: JobPolicy,
        state: RunState,
        args: Mapping[str, Any],
        burial: Mapping[str, Any],
    ) -> JobRecord:
        """The dead record of a run marked dead (``burial``: its reason and last error),
        stored once however often this is called (the record names the run)."""
        kind, message, trace = burial["error"]
        final = ErrorInfo(kind, f"{message}; dead: {burial['reason']}", trace)
        dead = DeadElsewhere(
            runtime=self.runtime,
            task_id=state.task_id,
            job=policy.name,
            queue=policy.queue,
            args=args,
            max_attempts=policy.max_attempts,
            created_at=state.created_at,
            error=final,
            attempts=[_attempt(entry) for entry in state.history],
            idempotency_key=idempotency_key(policy, args),
            priority=policy.priority,
            last_delay=state.last_delay,
        )

        def notes(record: JobRecord) -> list[Any]:
            at = record.finished_at or record.updated_at
            return notifications_for(policy, TERMINAL_EVENT, record, final, at)

        try:
            record = record_dead_elsewhere(self.backend(), dead, notes)
        except BackendError as exc:
            self._drop_backend()
            raise DatabaseUnavailable(
                f"task {state.task_id} is dead; jobdef's database cannot take its record "
                f"yet ({redact(str(exc))}); the next delivery of its message stores it"
            ) from None
        ttl = ended_ttl(policy, redelivery=self.redelivery)
        self.store.close(state.task_id, ended="dead", ttl=ttl)
        try:
            self.deliver()
        except BackendError as exc:
            LOGGER.warning("the outbox waits for its next round: %s", redact(str(exc)))
        return record

    def _drop_backend(self) -> None:
        """Forget a database connection that failed; the next use opens a new one."""
        backend, self._backend = self._backend, None
        if backend is not None:
            try:
                backend.close()
            except Exception:  # a connection already broken
                LOGGER.debug("closing a failed database connection", exc_info=True)

    def deliver(self) -> None:
        """One round of the outbox sender: what a death just queued goes out now; a
        delivery that fails waits in the outbox for the next round (any adapter's next
        death, or jobdef's worker)."""
        try:
            environ = os.environ if self.environ is None else self.environ
            channels = build_channels(self.registry, environ)
        except ChannelError as exc:
            LOGGER.error("%s", redact(str(exc)))
            return
        if not channels:
            return
        sender = OutboxSender(self.backend(), channels, clock=self.clock)
        try:
            sender.run_once(wait=True)
            sender.flush()
        finally:
            sender.close()


def recorded(state: RunState, attempt: int) -> tuple[Decision, ErrorInfo | None] | None:
    """What the store holds of how attempt ``attempt`` ended: the decision taken after it
    and its error; ``None`` when its end was never recorded."""
    for entry in reversed(state.history):
        action = entry.get("action")
        if int(entry["attempt"]) == attempt and action in ("retry", "dead"):
            delay = entry.get("delay")
            decision = Decision(
                action,
                str(entry.get("reason") or ""),
                delay=None if delay is None else float(delay),
            )
            error = entry.get("error")
            return decision, (ErrorInfo(*error) if error else None)
    return None


def _attempt(entry: Mapping[str, Any]) -> AttemptElsewhere:
    error = entry.get("error")
    finished = float(entry["finished_at"])
    started = entry.get("started_at")
    return AttemptElsewhere(
        attempt=int(entry["attempt"]),
        worker=str(entry.get("worker") or ""),
        started_at=finished if started is None else float(started),
        finished_at=finished,
        outcome=entry["outcome"],
        error=None if not error else ErrorInfo(*error),
    )
