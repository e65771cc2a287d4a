"""What a receipt tells: a job's state in the words its caller's screen shows, and waiting
for its end.

Every enqueue returns a :class:`~jobdef.backends.records.Receipt`; its token is
what a browser or another service holds. ``Queue.status`` reads the job it
names as a :class:`ReceiptStatus`, and ``Queue.wait`` / ``Queue.wait_async``
return one when the job has ended, through the waiters of
:mod:`jobdef.backends.waiters` (one thread per process, whatever the number of
waiters).

=====================  ===================================================
the job's row          ``ReceiptStatus.state``
=====================  ===================================================
queued, no attempt     ``accepted`` (a requeued job starts over: accepted)
queued after attempts  ``retry_waiting`` (``next_start``: the retry's time)
running                ``running``
done                   ``done`` (``result``: what the handler returned)
dead                   ``dead`` (waiting for an operator)
resolved               ``failed`` (an operator closed it)
cancelled              ``cancelled``
=====================  ===================================================

A job has ended when it is done, dead, failed or cancelled: a job that is
retried has not, until its last attempt.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from typing import Any, Literal

from jobdef.backends.records import JobRecord
from jobdef.backends.waiters import job_waiters
from jobdef.policy.registry import Registry
from jobdef.records import Record, record

ReceiptState = Literal[
    "accepted", "running", "retry_waiting", "done", "dead", "failed", "cancelled"
]
ENDED: tuple[ReceiptState, ...] = ("done", "dead", "failed", "cancelled")


@record
class ReceiptStatus(Record):
    """A job as its receipt shows it (see the module for the states)."""

    state: ReceiptState
    job: str
    """The job's name in its sheet."""
    title: str | None
    """The sheet's title (None: no sheet of this queue names the job)."""
    attempts: int
    """Attempts started so far (the running one included)."""
    max_attempts: int
    progress: Mapping[str, Any] | None
    """What the handler last reported with ``ctx.heartbeat(progress)``."""
    result: Any
    """What the handler returned, when the job is done and it was stored; else None."""
    next_start: float | None
    """When a queued job may start (epoch seconds): a retry's time, or a delayed job's."""
    created_at: float
    updated_at: float
    started_at: float | None
    """When the newest attempt started."""
    finished_at: float | None
    job_id: int
    token: str | None
    """The receipt token (None: the job was enqueued before receipts)."""

    @property
    def ended(self) -> bool:
        """Whether the job has ended: done, dead, failed or cancelled."""
        return self.state in ENDED


def receipt_state(record: JobRecord) -> ReceiptState:
    """The state a receipt shows for ``record`` (the module's table)."""
    if record.state == "waiting":  # a step of a flow, held until its parents end
        return "accepted"
    if record.state == "queued":
        return "accepted" if record.attempt == 0 else "retry_waiting"
    if record.state == "resolved":
        return "failed"
    state: ReceiptState = record.state
    return state


def receipt_status(record: JobRecord, registry: Registry) -> ReceiptStatus:
    """``record`` as its receipt shows it, titled by its sheet in ``registry``."""
    policy = registry.jobs.get(record.job)
    return ReceiptStatus(
        state=receipt_state(record),
        job=record.job,
        title=policy.title if policy is not None else None,
        attempts=record.attempt,
        max_attempts=record.max_attempts,
        progress=record.progress,
        result=record.result if record.state == "done" else None,
        next_start=record.run_after if record.state == "queued" else None,
        created_at=record.created_at,
        updated_at=record.updated_at,
        started_at=record.started_at,
        finished_at=record.finished_at,
        job_id=record.id,
        token=record.receipt,
    )


class StillRunning:
    """What :func:`wait_for_end` returns when the timeout passed first."""


STILL_RUNNING = StillRunning()


def wait_for_end(url: str, job_id: int, timeout: float) -> JobRecord | StillRunning | None:
    """Block until job ``job_id`` of the store at ``url`` has ended (its record), is gone
    (None) or ``timeout`` seconds passed (:data:`STILL_RUNNING`)."""
    hub = job_waiters(url)
    answered = threading.Event()
    found: list[JobRecord | None] = []

    def on_end(record: JobRecord | None) -> None:
        found.append(record)
        answered.set()

    watch = hub.watch(job_id, on_end)
    if not answered.wait(max(0.0, timeout)):
        hub.unwatch(watch)
    return found[0] if found else STILL_RUNNING


async def await_end(url: str, job_id: int, timeout: float) -> JobRecord | StillRunning | None:
    """:func:`wait_for_end` on asyncio: the event loop is never blocked (the waiters'
    thread answers through ``call_soon_threadsafe``)."""
    import asyncio  # here, not at the top: a process that never waits on asyncio skips it

    loop = asyncio.get_running_loop()
    answer: asyncio.Future[JobRecord | None] = loop.create_future()

    def settle(record: JobRecord | None) -> None:
        if not answer.done():
            answer.set_result(record)

    def on_end(record: JobRecord | None) -> None:
        # A loop closed meanwhile (RuntimeError): nobody waits any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, record)

    hub = job_waiters(url)
    watch = hub.watch(job_id, on_end)
    try:
        await asyncio.wait({answer}, timeout=max(0.0, timeout))
    finally:
        if not answer.done():  # timed out, or the caller's task was cancelled
            hub.unwatch(watch)
            answer.cancel()
    return STILL_RUNNING if answer.cancelled() else answer.result()
