"""Jobs that ran in another runtime (Celery, RQ) and died there, kept in jobdef's store.

Such a job has no row while it lives: its runtime's broker holds it. When it
dies, the adapter (:mod:`jobdef.adapters`) stores it here as a ``dead`` row of
the jobs table, with its attempts and the sheet's notification in the outbox,
so ``jobdef jobs --state dead``, ``jobdef requeue``, retention and the
dashboard see it as any other dead job.

Its ``worker_id`` is ``<runtime>/<task id>`` (jobdef's own worker ids are
``host:pid:hex``, and a host name has no slash): that marks the row as another
runtime's, so jobdef's own requeue leaves it alone and jobdef's worker never
runs it. Together with ``created_at`` (when the run was enqueued) it names the
run, so a death reported twice (a redelivered message) is stored once; the
attempts and the outbox message are written so that a repeat adds nothing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jobdef.backends.records import ErrorInfo, JobRecord, Notification, Outcome
from jobdef.backends.rows import Row, dump_json, error_text, job_record
from jobdef.backends.sql import Statement
from jobdef.errors import BackendError
from jobdef.records import Record, record

SEPARATOR = "/"


def worker_name(runtime: str, task_id: str) -> str:
    """The ``worker_id`` of a job that died in ``runtime`` as task ``task_id``."""
    return f"{runtime}{SEPARATOR}{task_id}"


def elsewhere(record: JobRecord) -> tuple[str, str] | None:
    """``(runtime, task id)`` of a row another runtime's adapter stored, else ``None``."""
    runtime, sep, task_id = (record.worker_id or "").partition(SEPARATOR)
    return (runtime, task_id) if sep and runtime and task_id else None


@record
class AttemptElsewhere(Record):
    """One attempt another runtime ran: where, when, how it ended."""

    attempt: int
    worker: str
    started_at: float
    finished_at: float
    outcome: Outcome
    error: ErrorInfo | None = None


@record
class DeadElsewhere(Record):
    """A job that died in ``runtime`` as task ``task_id``, enqueued at ``created_at``."""

    runtime: str
    task_id: str
    job: str
    queue: str
    args: Mapping[str, Any]
    max_attempts: int
    created_at: float
    error: ErrorInfo
    attempts: Sequence[AttemptElsewhere]
    idempotency_key: str | None = None
    priority: int = 0
    last_delay: float | None = None


class ElsewhereVerbs(ABC):
    """The verb that stores another runtime's dead job, over the shared primitives of each
    engine (:class:`~jobdef.backends.verbs.SharedVerbs` gives them)."""

    clock: Callable[[], float]

    @abstractmethod
    def _read(self, name: str, params: Mapping[str, Any]) -> Sequence[Row]: ...

    @abstractmethod
    def _write_all(self, statements: Sequence[Statement]) -> Sequence[Sequence[Row]]: ...

    @abstractmethod
    def _decode(self, value: Any) -> Any: ...

    def record_dead_elsewhere(
        self,
        dead: DeadElsewhere,
        notifications: Callable[[JobRecord], Sequence[Notification]],
    ) -> JobRecord:
        """Store ``dead`` as a dead job with its attempts, and the notifications that
        ``notifications`` computes from the stored row into the outbox; return the row.

        Two transactions: the row, then its attempts and messages. A repeat (the same
        death reported again, e.g. after a crash between the two) finds the row and adds
        only what is missing, so the outbox holds each message once.
        """
        worker_id = worker_name(dead.runtime, dead.task_id)
        now = self.clock()
        last = dead.attempts[-1] if dead.attempts else None
        self._write_all(
            [
                Statement(
                    "insert_dead_elsewhere",
                    {
                        "job": dead.job,
                        "queue": dead.queue,
                        "priority": dead.priority,
                        "args": dump_json(dead.args),
                        "attempt": len(dead.attempts),
                        "max_attempts": dead.max_attempts,
                        "key": dead.idempotency_key,
                        "created_at": dead.created_at,
                        "started_at": last.started_at if last else None,
                        "now": now,
                        "worker_id": worker_id,
                        "error": error_text(dead.error),
                        "last_delay": dead.last_delay,
                    },
                )
            ]
        )
        find = {"job": dead.job, "worker_id": worker_id, "created_at": dead.created_at}
        [row] = self._read("find_dead_elsewhere", find)
        record = job_record(row, self._decode)
        statements = [
            Statement(
                "insert_attempt_elsewhere",
                {
                    "job_id": record.id,
                    "attempt": a.attempt,
                    "worker_id": a.worker,
                    "started_at": a.started_at,
                    "finished_at": a.finished_at,
                    "outcome": a.outcome,
                    "error": error_text(a.error),
                },
            )
            for a in dead.attempts
        ]
        statements += [
            Statement(
                "insert_outbox_elsewhere",
                {
                    "message_id": n.message_id,
                    "channel_name": n.channel,
                    "event": n.event,
                    "job": n.job,
                    "payload": dump_json(n.payload),
                    "now": now,
                },
            )
            for n in notifications(record)
        ]
        if statements:
            self._write_all(statements)
        return record


def record_dead_elsewhere(
    backend: object,
    dead: DeadElsewhere,
    notifications: Callable[[JobRecord], Sequence[Notification]],
) -> JobRecord:
    """Store ``dead`` in ``backend`` (see :meth:`ElsewhereVerbs.record_dead_elsewhere`)."""
    if not isinstance(backend, ElsewhereVerbs):
        raise BackendError(f"{type(backend).__name__} cannot store jobs of other runtimes")
    return backend.record_dead_elsewhere(dead, notifications)
