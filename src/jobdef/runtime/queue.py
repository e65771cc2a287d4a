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
from jobdef.backends.protocol import Backend
from jobdef.backends.records import JobRecord, NewJob, Receipt
from jobdef.errors import ArgsError
from jobdef.policy.keys import idempotency_key
from jobdef.policy.model import PRIORITIES, JobPolicy
from jobdef.policy.registry import Registry
from jobdef.sheets.args_check import args_check
from jobdef.sheets.args_json import args_problem, where
from jobdef.telemetry import enqueues
from jobdef.telemetry.traces import enqueue_span


def validate_args(policy: JobPolicy, args: Mapping[str, Any]) -> None:
    """Raise :class:`ArgsError` when ``args`` cannot be stored as they are (not plain JSON,
    too large, nested too deep: the same answer on every engine, before any sees them), or
    listing every way they break the sheet's ``args`` schema."""
    problem = args_problem(args, max_bytes=policy.limits.args_bytes)
    if problem is not None:
        raise ArgsError(f"job {policy.name!r}: {problem}. Nothing was stored")
    errors = args_check(policy).errors(args)
    if errors:
        details = "; ".join(f"{where(tuple(e.path))}: {e.message}" for e in errors)
        raise ArgsError(
            f"job {policy.name!r}: {details}. Nothing was stored; pass args that match "
            f"the `args` of {policy.file or 'its sheet'}"
        )


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
        validate_args(policy, args)
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
        """Store many jobs of one kind in one transaction; every call is validated first."""
        policy = self.registry.job(job)
        calls = list(args_list)
        with enqueue_span(policy.name, policy.queue, len(calls)) as span:
            jobs = [self.new_job(job, args, trace_context=span.context) for args in calls]
            results = self.backend.enqueue(jobs, connection=connection)
            span.stored([result.id for result in results])
        enqueues.count(policy.name, policy.queue, results)
        return results

    def get(self, job_id: int) -> JobRecord | None:
        return self.backend.get(job_id)

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> Queue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(url: str, registry: Registry, *, clock: Callable[[], float] | None = None) -> Queue:
    """A :class:`Queue` on the job database at ``url`` (created and migrated if needed)."""
    backend = open_backend(url, clock=clock)
    return Queue(backend, registry, clock=clock)
