"""A real job store on a virtual clock, with the worker's decisions run in the test's process.

:class:`VirtualQueue` stores jobs in a real engine (a temporary SQLite file, or
a fresh schema of a PostgreSQL database), validates args against the sheets as
:class:`~jobdef.runtime.queue.Queue` does, and runs what is due with
:meth:`VirtualQueue.drain`: each attempt is claimed with a lease, its handler
called (:mod:`jobdef.testing.attempt`), and its end recorded by the same code
the worker uses: the fenced ``complete``, or
:func:`~jobdef.runtime.failures.record_failure` (the sheet's ``errors``
classification, ``max_attempts``, ``backoff`` with its jitter drawn from a seeded
random source, ``deadline``, ``dead_letter`` and ``notify`` into the outbox).
Between attempts the clock jumps to the next ``run_after``; an attempt that
returns or raises takes no virtual time, one that times out takes the sheet's
``timeout``, so the attempts' start times can be held against ``jobdef
explain``'s timeline.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import random
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.backends.records import (
    ClaimOptions,
    ErrorInfo,
    JobRecord,
    Notification,
    Receipt,
    State,
)
from jobdef.errors import HandlerError, UnknownJobError, UsageError
from jobdef.notify.checks import build_channels
from jobdef.notify.events import notifications_for
from jobdef.notify.sender import OutboxSender, SendReport
from jobdef.policy.durations import format_duration, parse_duration
from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry
from jobdef.render.explain import explain_data
from jobdef.runtime.classify import class_name, class_names
from jobdef.runtime.context import Context
from jobdef.runtime.errors import AttemptTimedOut, ResultRefused
from jobdef.runtime.failures import FailedAttempt, record_failure
from jobdef.runtime.maintenance.results import result_retentions
from jobdef.runtime.maintenance.scheduler import slot_job, slot_time
from jobdef.runtime.payloads import (
    MAX_PROGRESS_BYTES,
    MAX_PROGRESS_DEPTH,
    RefusedPayload,
    plain_json,
)
from jobdef.runtime.queue import Queue
from jobdef.runtime.receipts import ReceiptStatus
from jobdef.runtime.results import kept_result, result_rule
from jobdef.schedule.cron import zone
from jobdef.schedule.slots import schedule_of
from jobdef.sheets.handlers import handler_problems
from jobdef.testing import messages
from jobdef.testing.attempt import Attempt, run_attempt
from jobdef.testing.clock import VirtualClock, seconds

log = logging.getLogger("jobdef.testing")

# A claim's lease on the virtual clock: the clock moves only between attempts and by a
# timed-out attempt's timeout, so no lease the kit takes may expire under it.
LEASE_SECONDS = 10 * 365 * 86400.0
# How many attempts one drain runs at most: a job that keeps retrying (or a handler
# that enqueues another job every time) ends the drain with a message, not a hang.
DRAIN_LIMIT = 10_000
_ALL = 1_000_000
# assert_result's "any value": None is a value a test may expect (it never is stored).
_ANY: Any = object()


class VirtualQueue:
    """A job store for tests: enqueue, look, drain on a virtual clock, read the outbox.

    ``timeout_scale`` turns a sheet's ``timeout`` into the real seconds a handler may
    run (0.01: a 30s timeout fails an attempt after 0.3s of real time); the virtual
    clock still moves by the sheet's own timeout. ``seed`` seeds the random source
    the backoff's jitter is drawn from, so a run is repeatable.
    """

    __test__ = False  # pytest: not a test class

    def __init__(
        self,
        registry: Registry,
        url: str,
        *,
        start: float | datetime | None = None,
        seed: int = 0,
        timeout_scale: float = 1.0,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        if timeout_scale <= 0:
            raise UsageError(f"timeout_scale must be above 0, got {timeout_scale!r}")
        self.registry = registry
        self.url = url
        self.clock = VirtualClock(start)
        self.backend: Backend = open_backend(url, clock=self.clock)
        self.queue = Queue(self.backend, registry, clock=self.clock)
        self.rng = random.Random(seed)
        self.timeout_scale = timeout_scale
        self.worker_id = f"jobdef-testing:{uuid.uuid4().hex[:6]}"
        self._on_close = on_close
        self._closed = False

    # -- the clock ----------------------------------------------------------------

    @property
    def now(self) -> float:
        """The virtual time, epoch seconds."""
        return self.clock()

    def advance(self, by: float | str) -> None:
        """Move the virtual clock forwards by seconds or a duration (``"5m"``); stored
        results whose ``result.retention`` passed are cleared, as a worker's service does."""
        self.clock.advance(_duration(by))
        self._expire_results()

    def _expire_results(self) -> None:
        """Clear the stored results past their sheet's ``result.retention`` at the virtual
        time (the worker's :class:`~jobdef.runtime.maintenance.results.ResultExpirer`
        does it every minute; the kit at once, so a test sees the exact moment)."""
        rules = result_retentions(self.registry)
        if rules:
            self.backend.expire_results(rules)

    # -- putting jobs in ------------------------------------------------------------

    def enqueue(
        self,
        job: str,
        args: Mapping[str, Any] | None = None,
        *,
        run_after: float | datetime | None = None,
        delay: float | str | None = None,
        priority: int | None = None,
        connection: Any = None,
    ) -> Receipt:
        """As :meth:`jobdef.runtime.queue.Queue.enqueue`, on the virtual clock; ``delay``
        may be a duration (``"10m"``), ``run_after`` an aware datetime."""
        return self.queue.enqueue(
            job,
            args,
            run_after=None if run_after is None else seconds(run_after),
            delay=None if delay is None else _duration(delay),
            priority=priority,
            connection=connection,
        )

    def enqueue_many(
        self, job: str, args_list: Iterable[Mapping[str, Any]], *, connection: Any = None
    ) -> list[Receipt]:
        return self.queue.enqueue_many(job, args_list, connection=connection)

    # -- looking --------------------------------------------------------------------

    def status(self, receipt: Receipt | str | int) -> ReceiptStatus | None:
        """As :meth:`jobdef.runtime.queue.Queue.status`: the job a receipt (or its token,
        or a job id) names, as the application's receipt page would show it."""
        return self.queue.status(receipt)

    def get(self, job_id: int) -> JobRecord:
        record = self.backend.get(job_id)
        if record is None:
            raise AssertionError(f"no job #{job_id} in the store: {messages.listing(self.jobs())}")
        return record

    def jobs(self, job: str | None = None, state: State | None = None) -> list[JobRecord]:
        """Every stored job (of ``job``, in ``state``), oldest first."""
        return sorted(self.backend.list_jobs(state=state, job=job, limit=_ALL), key=_by_id)

    def enqueued(
        self,
        job: str | None = None,
        args: Mapping[str, Any] | None = None,
        *,
        state: State | None = None,
    ) -> list[JobRecord]:
        """The stored jobs of ``job`` whose args hold every key of ``args`` with that value
        (other args may be there too), in any state unless ``state`` is given."""
        return [r for r in self.jobs(job, state) if _args_match(r.args, args)]

    def assert_enqueued(
        self,
        job: str,
        args: Mapping[str, Any] | None = None,
        *,
        count: int | None = None,
        state: State | None = None,
    ) -> JobRecord:
        """Fail unless such a job was stored (exactly ``count`` of them, if given); the
        first match is returned."""
        if count is not None and count < 1:
            raise UsageError(f"assert_enqueued({job!r}, count={count}): use assert_not_enqueued")
        self._known(job)
        found = self.enqueued(job, args, state=state)
        if found and (count is None or len(found) == count):
            return found[0]
        raise AssertionError(
            messages.not_enqueued(
                job, args, state=state, count=count, found=found, everything=self.jobs()
            )
        )

    def assert_not_enqueued(
        self, job: str, args: Mapping[str, Any] | None = None, *, state: State | None = None
    ) -> None:
        """Fail if a job of ``job`` with ``args`` (those keys) was stored."""
        self._known(job)
        found = self.enqueued(job, args, state=state)
        if found:
            raise AssertionError(messages.was_enqueued(job, args, found))

    def assert_state(self, job_id: int, state: State) -> JobRecord:
        """Fail unless job ``job_id`` is in ``state``; the message shows its attempts and
        its last error with the traceback."""
        record = self.get(job_id)
        if record.state != state:
            raise AssertionError(messages.wrong_state(record, state, self.attempts(job_id)))
        return record

    def assert_result(self, job: int | Receipt, expected: Any = _ANY) -> Any:
        """Fail unless the job (an id or its receipt) ended done with a stored result
        (equal to ``expected``, as JSON reads it back, when given); the result is
        returned. The message says why there is none: the job is not done (its
        attempts and last error), its sheet keeps no value (``result.store: false``),
        the handler returned None, or ``result.retention`` has passed."""
        job_id = job.job_id if isinstance(job, Receipt) else job
        record = self.get(job_id)
        if record.state != "done":
            raise AssertionError(messages.wrong_state(record, "done", self.attempts(job_id)))
        policy = self.registry.jobs.get(record.job)
        if record.result is None:
            raise AssertionError(messages.no_result(record, policy, self.clock()))
        if expected is not _ANY and record.result != expected:
            raise AssertionError(messages.other_result(record, expected))
        return record.result

    def attempts(self, job_id: int) -> list[Attempt]:
        """The attempts of job ``job_id``, oldest first, with their virtual start times."""
        record = self.get(job_id)
        return [
            Attempt(
                job_id=row.job_id,
                job=record.job,
                number=row.attempt,
                started_at=row.started_at,
                finished_at=row.finished_at,
                offset=row.started_at - record.created_at,
                outcome=row.outcome,
                error=row.error,
            )
            for row in self.backend.attempts(job_id)
        ]

    def explain_timeline(self, job: str) -> list[dict[str, Any]]:
        """The rows of ``jobdef explain JOB --format json``'s retry timeline."""
        rows: list[dict[str, Any]] = explain_data(self.registry.job(job), self.registry)[
            "timeline"
        ]["rows"]
        return rows

    def assert_timeline(self, job_id: int) -> list[Attempt]:
        """Fail unless every attempt of the job started inside the window ``jobdef explain``
        gives for it (``earliest_start`` to ``latest_start`` after the enqueue)."""
        attempts = self.attempts(job_id)
        record = self.get(job_id)
        rows = {row["attempt"]: row for row in self.explain_timeline(record.job)}
        outside = [
            a
            for a in attempts
            if a.number not in rows
            or not rows[a.number]["earliest_start"] - 1e-6
            <= a.offset
            <= rows[a.number]["latest_start"] + 1e-6
        ]
        if outside:
            raise AssertionError(messages.off_timeline(record, attempts, rows, outside))
        return attempts

    # -- the outbox -------------------------------------------------------------------

    @property
    def outbox(self) -> list[Notification]:
        """Every message the transitions wrote to the outbox, oldest first. The kit sends
        none of them: no channel is called, no environment variable is needed."""
        return [row.notification for row in self.backend.outbox_pending()]

    def notifications(
        self, channel: str | None = None, event: str | None = None, job: str | None = None
    ) -> list[Notification]:
        return [
            n
            for n in self.outbox
            if (channel is None or n.channel == channel)
            and (event is None or n.event == event)
            and (job is None or n.job == job)
        ]

    def assert_notified(
        self,
        channel: str,
        event: str,
        job: str | None = None,
        *,
        count: int | None = None,
    ) -> Notification:
        """Fail unless ``channel`` got a message of ``event`` (for ``job``), exactly
        ``count`` of them if given; the first is returned."""
        if count is not None and count < 1:
            raise UsageError(f"assert_notified(count={count}): use assert_not_notified")
        found = self.notifications(channel, event, job)
        if found and (count is None or len(found) == count):
            return found[0]
        raise AssertionError(
            messages.not_notified(channel, event, job, count=count, found=found, outbox=self.outbox)
        )

    def assert_not_notified(
        self, channel: str | None = None, event: str | None = None, job: str | None = None
    ) -> None:
        found = self.notifications(channel, event, job)
        if found:
            raise AssertionError(messages.was_notified(channel, event, job, found))

    def send_notifications(self, environ: Mapping[str, str] | None = None) -> SendReport:
        """Deliver what waits in the outbox through the sheets' channels, once, as the
                worker's sender does (a webhook is really called: point its ``url_env`` at a test
                server in ``environ``, default ``os.environ``; only the channels that have messages
        are set up). Delivered messages leave
                :attr:`outbox`; one whose delivery failed stays there, its error recorded."""
        waiting = {note.channel for note in self.outbox}
        if not waiting:
            return SendReport()
        # Only the channels with messages need their settings (a webhook's url_env).
        channels = build_channels(
            self.registry, os.environ if environ is None else environ, waiting
        )
        sender = OutboxSender(self.backend, channels, clock=self.clock, rng=self.rng)
        try:
            report = sender.run_once(wait=True)
            flushed = sender.flush()
        finally:
            sender.close()
        report.delivered += flushed.delivered
        report.failed += flushed.failed
        report.digests += flushed.digests
        return report

    # -- running ------------------------------------------------------------------------

    def drain(
        self, until: float | str | datetime | None = None, *, limit: int = DRAIN_LIMIT
    ) -> list[Attempt]:
        """Run every job that is due, moving the clock to each next ``run_after``, until
        nothing is queued (or, with ``until``, nothing is due by then: a duration from now
        or an aware datetime; the clock is left there). Returns the attempts run."""
        stop_at = None if until is None else self._moment(until)
        ran: list[Attempt] = []
        while True:
            options = ClaimOptions(worker_id=self.worker_id, lease_seconds=LEASE_SECONDS)
            claimed = self.backend.claim(options)
            if claimed:
                if len(ran) >= limit:
                    self.backend.release(claimed[0].lease)
                    raise AssertionError(messages.drain_limit(limit, ran))
                ran.append(self._run(claimed[0]))
                continue
            due = self._next_due()
            if due is None or (stop_at is not None and due > stop_at) or due <= self.clock():
                break  # nothing left; or not by then; or held back (a paused queue)
            self.clock.set(due)
        if stop_at is not None and stop_at > self.clock():
            self.clock.set(stop_at)
        self._expire_results()
        return ran

    def run_batch_slot(self, job: str, at: datetime | str) -> JobRecord:
        """Store the job of one cron slot of batch job ``job`` as the scheduler does, move
        the clock to the slot if it is earlier, and drain. ``at`` is the slot, an aware
        datetime or ISO 8601 text (without an offset: in the sheet's time zone)."""
        policy = self.registry.job(job)
        if policy.mode != "batch" or policy.schedule is None:
            raise UsageError(
                f"job {job!r} is not a batch job (mode: {policy.mode}); "
                "enqueue it with enqueue() and run it with drain()"
            )
        moment = _slot_moment(at, policy)
        slot = next(schedule_of(policy).at_or_before(moment), None)
        if slot is None or slot.timestamp() != moment.timestamp():
            raise UsageError(messages.not_a_slot(policy, moment, slot, schedule_of(policy)))
        if self.clock() < slot.timestamp():
            self.clock.set(slot.timestamp())
        [result] = self.backend.enqueue([slot_job(policy, slot)])
        self.drain()
        return self.get(result.id)

    def _run(self, record: JobRecord) -> Attempt:
        if record.job not in self.registry.jobs:
            return self._bury_unknown(record)
        policy = self.registry.job(record.job)
        beats: list[Any] = []
        ctx = Context(
            job_id=record.id,
            job=record.job,
            attempt=record.attempt,
            max_attempts=record.max_attempts,
            idempotency_key=record.idempotency_key,
            database_url=self.url,
            slot=slot_time(record, policy),
            _send=beats.append,
        )
        handler = self._handler(record, policy)
        ran = run_attempt(handler, ctx, dict(record.args), policy.timeout * self.timeout_scale)
        if beats:
            self._beat(record, beats[-1])
        if ran.timed_out:
            self.clock.advance(policy.timeout)  # as if it ran to the timeout, then was killed
            detail = f"killed after running past its timeout of {format_duration(policy.timeout)}"
            error = ErrorInfo(class_name(AttemptTimedOut), detail)
            failed = FailedAttempt(record, policy, error, class_names(AttemptTimedOut), "timeout")
        elif ran.error_type is not None:
            error = ErrorInfo(ran.error_type, ran.message, ran.traceback)
            failed = FailedAttempt(record, policy, error, ran.names)
        else:
            # Held to the sheet's `result:` as the worker's child holds it: a value it
            # refuses fails the attempt, one it does not keep is not stored.
            try:
                text = kept_result(
                    result_rule(policy), ran.result, record.id, record.job, record.attempt
                )
            except ResultRefused as exc:
                error = ErrorInfo(class_name(ResultRefused), str(exc))
                failed = FailedAttempt(record, policy, error, class_names(ResultRefused))
            else:
                notes = notifications_for(policy, "done", record, None, self.clock())
                results = {} if text is None else {record.id: text}
                self.backend.complete([record.lease], {record.id: notes}, results)
                return self._last_attempt(record)
        record_failure(self.backend, failed, self.clock(), self.rng)
        return self._last_attempt(record)

    def _bury_unknown(self, record: JobRecord) -> Attempt:
        """A stored job no loaded sheet defines is buried, as the worker buries it."""
        known = ", ".join(sorted(self.registry.jobs)) or "none"
        error = ErrorInfo(
            class_name(UnknownJobError),
            f"no sheet of this worker defines job {record.job!r} (jobs: {known}); "
            "start the worker with the sheets folder that defines it, then requeue the job",
        )
        self.backend.bury(record.lease, error)
        return self._last_attempt(record)

    def _handler(self, record: JobRecord, policy: JobPolicy) -> Callable[..., Any]:
        """The handler, looked up anew for each attempt, so a monkeypatch applies."""
        module_name, _, attr = policy.handler.partition(":")
        try:
            target: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError) as exc:
            self.backend.release(record.lease)
            raise HandlerError(
                f"job {record.job!r}: handler {policy.handler} does not import "
                f"({class_name(type(exc))}: {exc}); fix the handler path in "
                f"{policy.file or 'its sheet'}, or put its folder on the pythonpath "
                "([tool.jobdef] pythonpath)"
            ) from None
        # The worker's own check at start, so a handler it would refuse never runs here.
        problems = handler_problems([policy])
        if problems:
            self.backend.release(record.lease)
            raise HandlerError(
                f"{problems[0]}; a worker refuses to start with this handler, so the kit "
                "does not run it either (`jobdef validate --check-imports` finds it too)"
            )
        handler: Callable[..., Any] = target
        return handler

    def _beat(self, record: JobRecord, progress: Any) -> None:
        """Record the last progress the handler reported, as the worker's heartbeat does."""
        try:
            if progress is not None:
                progress = plain_json(
                    progress, max_bytes=MAX_PROGRESS_BYTES, max_depth=MAX_PROGRESS_DEPTH
                )
        except RefusedPayload as exc:
            log.warning("job %s (%s): progress dropped, %s", record.id, record.job, exc)
            progress = None
        self.backend.heartbeat(record.lease, LEASE_SECONDS, progress)

    def _last_attempt(self, record: JobRecord) -> Attempt:
        return next(a for a in reversed(self.attempts(record.id)) if a.number == record.attempt)

    def _next_due(self) -> float | None:
        paused = {info.queue for info in self.backend.queues() if info.paused}
        due = [
            r.run_after
            for r in self.backend.list_jobs(state="queued", limit=_ALL)
            if r.queue not in paused
        ]
        return min(due) if due else None

    def _moment(self, until: float | str | datetime) -> float:
        if isinstance(until, datetime):
            return seconds(until)
        return self.clock() + _duration(until)

    def _known(self, job: str) -> None:
        if job not in self.registry.jobs:
            known = ", ".join(sorted(self.registry.jobs)) or "none"
            raise AssertionError(
                f"no sheet defines a job named {job!r} (jobs: {known}); check the name, or "
                "load the sheets that define it (--jobdef-sheets, [tool.jobdef] sheets)"
            )

    # -- life -------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.backend.close()
        finally:
            if self._on_close is not None:
                self._on_close()

    def __enter__(self) -> VirtualQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"VirtualQueue({len(self.registry.jobs)} jobs, {self.clock!r})"


def _by_id(record: JobRecord) -> int:
    return record.id


def _args_match(stored: Mapping[str, Any], wanted: Mapping[str, Any] | None) -> bool:
    if wanted is None:
        return True
    return all(key in stored and _same(stored[key], value) for key, value in wanted.items())


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON (the store keeps args as JSON: a tuple comes back a list)."""
    return bool(json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True, default=str))


def _duration(value: float | str) -> float:
    if isinstance(value, str):
        return parse_duration(value)
    return float(value)


def _slot_moment(at: datetime | str, policy: JobPolicy) -> datetime:
    moment = datetime.fromisoformat(at) if isinstance(at, str) else at
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone(policy.timezone))
    return moment
