"""The Python API for putting jobs in: ``connect(url, registry)`` gives a :class:`Queue`.

Every rule comes from the job's sheet: args are validated against its ``args``
schema (a bad call raises :class:`~jobdef.errors.ArgsError` and stores nothing),
the idempotency key is computed from its recipe, and queue, priority and
``max_attempts`` are taken from it::

    queue = connect("sqlite:///jobdef.db", load_registry(["jobdefs"]))
    queue.enqueue("send_reservation_mail", {"reservation_id": 42})

    with sqlite3.connect("jobdef.db") as conn:     # the caller's own transaction
        conn.execute("UPDATE reservations SET state = 'confirmed' WHERE id = 42")
        queue.enqueue("send_reservation_mail", {"reservation_id": 42}, connection=conn)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jobdef.backends import open_backend
from jobdef.backends.flows import FlowRecord
from jobdef.backends.protocol import Backend, enqueues_alike
from jobdef.backends.records import JobRecord, NewJob, Receipt
from jobdef.backends.rows import same_token
from jobdef.errors import ArgsError, UsageError
from jobdef.policy.keys import idempotency_key
from jobdef.policy.model import PRIORITIES, JobPolicy
from jobdef.policy.registry import Registry
from jobdef.runtime.flows import new_flow
from jobdef.runtime.receipts import (
    STILL_RUNNING,
    ReceiptStatus,
    StillRunning,
    await_end,
    receipt_status,
    wait_for_end,
)
from jobdef.sheets.args_check import args_check
from jobdef.sheets.args_json import encode_args, where
from jobdef.telemetry import enqueues
from jobdef.telemetry.traces import enqueue_span


def validate_args(policy: JobPolicy, args: Mapping[str, Any]) -> None:
    """Raise :class:`ArgsError` when ``args`` cannot be stored as they are (not plain JSON,
    too large, nested too deep: the same answer on every engine, before any sees them), or
    listing every way they break the sheet's ``args`` schema."""
    stored_args(policy, args)


def stored_args(policy: JobPolicy, args: Mapping[str, Any]) -> str:
    """The JSON text to store of ``args``, validated as :func:`validate_args` says (the
    size check's encode is the one stored)."""
    text, problem = encode_args(args, max_bytes=policy.limits.args_bytes)
    if text is None:
        raise ArgsError(f"job {policy.name!r}: {problem}. Nothing was stored")
    check = args_check(policy)
    if type(args) is dict and check.passes(args):
        return text
    errors = check.errors(args)
    if errors:
        details = "; ".join(f"{where(tuple(e.path))}: {e.message}" for e in errors)
        raise ArgsError(
            f"job {policy.name!r}: {details}. Nothing was stored; pass args that match "
            f"the `args` of {policy.file or 'its sheet'}"
        )
    return text


# The latest time a job may be postponed to: 9999-12-31T23:59:59Z, the last second a
# date can show (every page and listing prints run_after as one).
LATEST_RUN_AFTER = 253_402_300_799


def _storable_time(value: object) -> bool:
    """Whether ``value`` is epoch seconds every page and listing can show as a date."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return 0 <= value <= LATEST_RUN_AFTER  # NaN is neither


def _shown(value: object) -> str:
    """A wrong number (a priority, a run_after) as a message shows it: short, never
    thousands of digits, never a repr."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"of type {type(value).__name__}"
    if isinstance(value, int):
        return str(value) if abs(value) < 10**18 else "of more than 18 digits"
    return "NaN" if math.isnan(value) else f"{value:.6g}"


class Queue:
    """Enqueue jobs of the sheets in ``registry`` into ``backend``."""

    def __init__(
        self,
        backend: Backend,
        registry: Registry,
        *,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.backend = backend
        self.registry = registry
        # The store's clock unless one is given: a ``delay`` becomes a ``run_after`` on
        # the clock the store compares with (on PostgreSQL the server's, not this host's).
        self.clock = backend.clock if clock is None else clock

    def new_job(
        self,
        job: str,
        args: Mapping[str, Any] | None = None,
        *,
        run_after: float | None = None,
        delay: float | None = None,
        priority: int | None = None,
        trace_context: str | None = None,
    ) -> NewJob:
        """Validate a call and turn it into the row to store (raises :class:`ArgsError`)."""
        policy = self.registry.job(job)
        args = dict(args or {})
        text = stored_args(policy, args)
        if priority is not None and (type(priority) is not int or priority not in PRIORITIES):
            raise ArgsError(
                f"job {policy.name!r}: priority {_shown(priority)} is not a whole "
                f"number from {PRIORITIES[0]} to {PRIORITIES[-1]}. Nothing was stored; write "
                "one in that range (higher runs first), as a sheet's priority"
            )
        if delay is not None:
            run_after = self.clock() + delay
        if run_after is not None and not _storable_time(run_after):
            raise ArgsError(
                f"job {policy.name!r}: run_after {_shown(run_after)} is not a time from "
                f"1970-01-01 to 9999-12-31 (epoch seconds 0 to {LATEST_RUN_AFTER:,}). Nothing "
                "was stored; give a run_after or a delay that falls in that range"
            )
        return NewJob(
            job=policy.name,
            args=args,
            queue=policy.queue,
            priority=policy.priority if priority is None else priority,
            max_attempts=policy.max_attempts,
            idempotency_key=idempotency_key(policy, args),
            run_after=run_after,
            dedupe_window=policy.idempotency.dedupe_window,
            trace_context=trace_context,
            args_json=text,
        )

    def enqueue(
        self,
        job: str,
        args: Mapping[str, Any] | None = None,
        *,
        run_after: float | None = None,
        delay: float | None = None,
        priority: int | None = None,
        connection: Any = None,
    ) -> Receipt:
        """Store one job (or return the active duplicate with the same idempotency key).

        ``run_after`` (epoch seconds) or ``delay`` (seconds from now) postpone it;
        ``connection`` joins the caller's open transaction on the same database.
        """
        policy = self.registry.job(job)
        with enqueue_span(policy.name, policy.queue) as span:
            new = self.new_job(
                job,
                args,
                run_after=run_after,
                delay=delay,
                priority=priority,
                trace_context=span.context,
            )
            [result] = self.backend.enqueue([new], connection=connection)
            span.stored([result.id])
        enqueues.count(policy.name, policy.queue, [result])
        return result

    def enqueue_many(
        self,
        job: str,
        args_list: Iterable[Mapping[str, Any]],
        *,
        connection: Any = None,
    ) -> list[Receipt]:
        """Store many jobs of one kind in one transaction; every call is validated, and
        one that fails stores none of them (raises :class:`ArgsError`)."""
        policy = self.registry.job(job)
        calls = list(args_list)
        with enqueue_span(policy.name, policy.queue, len(calls)) as span:
            if calls and policy.idempotency.key is None and enqueues_alike(self.backend):
                # No job of the batch can merge into another: alike but for the args,
                # checked as the engine stores them.
                alike = NewJob(
                    job=policy.name,
                    args={},
                    queue=policy.queue,
                    priority=policy.priority,
                    max_attempts=policy.max_attempts,
                    trace_context=span.context,
                )
                texts = (stored_args(policy, dict(call or {})) for call in calls)
                results = self.backend.enqueue_alike(alike, texts, connection=connection)
            else:
                jobs = [self.new_job(job, call, trace_context=span.context) for call in calls]
                results = self.backend.enqueue(jobs, connection=connection)
            span.stored([result.id for result in results])
        enqueues.count(policy.name, policy.queue, results)
        return results

    def get(self, job_id: int) -> JobRecord | None:
        return self.backend.get(job_id)

    # -- flows --------------------------------------------------------------------------

    def start(
        self, flow: str, args: Mapping[str, Any] | None = None, *, connection: Any = None
    ) -> Receipt:
        """Start the workflow ``flow``: its row and every step stored in one transaction
        (``connection``: the caller's), roots queued, the others waiting for their
        parents. A start whose key (the sheet's ``idempotency``) matches a running flow,
        or one done within its window, returns that flow's receipt (``created`` False).
        The receipt's ``id`` is the flow's id."""
        new = new_flow(self.registry, flow, dict(args or {}), validate_args)
        return self.backend.start_flow(new, connection=connection)

    def cancel_flow(self, receipt: Receipt | str | int, reason: str = "cancelled") -> bool:
        """Cancel a running flow: its waiting, queued and running steps are cancelled
        and the flow ends ``cancelled`` at once; a running step's attempt ends
        ``cancelled`` and its worker stops the handler at its next heartbeat."""
        found = self.flow(receipt)
        return found is not None and self.backend.cancel_flow(found.id, reason)

    def flow(self, receipt: Receipt | str | int) -> FlowRecord | None:
        """The flow a receipt names (a :class:`Receipt` of :meth:`start`, its token, or
        a flow id), with its steps' states; None when none has it."""
        if isinstance(receipt, Receipt):
            return self.backend.find_flow(receipt.token)
        if isinstance(receipt, str):
            return self.backend.find_flow(receipt)
        if isinstance(receipt, int) and not isinstance(receipt, bool):
            return self.backend.get_flow(receipt) if 1 <= receipt < 2**63 else None
        raise UsageError(
            f"a flow's receipt is a Receipt, its token (str) or a flow id (int), not a "
            f"{type(receipt).__name__}; pass what start() returned, or str() of it"
        )

    # -- receipts -----------------------------------------------------------------------

    def status(self, receipt: Receipt | str | int) -> ReceiptStatus | None:
        """The job a receipt names (a :class:`Receipt`, its token, or a job id for an
        operator's tools) as :class:`~jobdef.runtime.receipts.ReceiptStatus`; None when
        no job has that token or id (never stored, or pruned)."""
        record = self._record(receipt)
        return None if record is None else receipt_status(record, self.registry)

    def wait(self, receipt: Receipt | str | int, timeout: float) -> ReceiptStatus | None:
        """The job's status once it has ended (done, dead, failed, cancelled), or when
        ``timeout`` seconds passed first (then not ended); None when no job has that
        token or id. Woken by the store (PostgreSQL) or its poll (SQLite, every 50 ms),
        through one thread of this process for every waiter (see
        :mod:`jobdef.backends.waiters`)."""
        target = self._wait_target(receipt)
        if not isinstance(target, tuple):
            return target
        ended = wait_for_end(self.backend.url, target[0], _seconds(timeout))
        return self._after_wait(receipt, target[1], ended)

    async def wait_async(
        self, receipt: Receipt | str | int, timeout: float
    ) -> ReceiptStatus | None:
        """:meth:`wait` on asyncio: the event loop is never blocked (the store's reads
        run in a worker thread, the wait on the waiters' thread)."""
        import asyncio  # here, not at the top: `jobdef enqueue` never waits on asyncio

        target = await asyncio.to_thread(self._wait_target, receipt)
        if not isinstance(target, tuple):
            return target
        ended = await await_end(self.backend.url, target[0], _seconds(timeout))
        return await asyncio.to_thread(self._after_wait, receipt, target[1], ended)

    def _record(self, receipt: Receipt | str | int) -> JobRecord | None:
        if isinstance(receipt, Receipt):
            return self.backend.find_receipt(receipt.token) if receipt.token else None
        if isinstance(receipt, str):
            return self.backend.find_receipt(receipt)
        if isinstance(receipt, int) and not isinstance(receipt, bool):
            return self.backend.get(receipt) if 1 <= receipt < 2**63 else None
        raise UsageError(
            f"a receipt is a Receipt, its token (str) or a job id (int), not a "
            f"{type(receipt).__name__}; pass what enqueue() returned, or str() of it"
        )

    def _wait_target(
        self, receipt: Receipt | str | int
    ) -> tuple[int, str | None] | ReceiptStatus | None:
        """The job id to wait for and the token its record must hold; or the answer at
        once: a token no job holds (None), or a job that ended already."""
        if isinstance(receipt, Receipt):
            return (receipt.job_id, receipt.token) if receipt.token else None
        if isinstance(receipt, int) and not isinstance(receipt, bool):
            return (receipt, None) if 1 <= receipt < 2**63 else None
        record = self._record(receipt)  # a token: its job id is read from the store
        if record is None:
            return None
        status = receipt_status(record, self.registry)
        return status if status.ended else (record.id, record.receipt)

    def _after_wait(
        self,
        receipt: Receipt | str | int,
        token: str | None,
        ended: JobRecord | StillRunning | None,
    ) -> ReceiptStatus | None:
        if ended is STILL_RUNNING:
            return self.status(receipt)  # as it stands now
        if not isinstance(ended, JobRecord):
            return None  # gone
        if token is not None and not same_token(ended.receipt, token):
            return None  # a receipt of another job that had this id
        return receipt_status(ended, self.registry)

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> Queue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _seconds(timeout: float) -> float:
    """A wait's ``timeout``, checked: seconds, 0 or more."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0:
        raise UsageError(
            f"a wait's timeout is seconds, 0 or more, got {_shown(timeout)}; pass e.g. timeout=30"
        )
    return float(timeout)


def connect(url: str, registry: Registry, *, clock: Callable[[], float] | None = None) -> Queue:
    """A :class:`Queue` on the job database at ``url`` (created and migrated if needed)."""
    backend = open_backend(url, clock=clock)
    return Queue(backend, registry, clock=clock)
