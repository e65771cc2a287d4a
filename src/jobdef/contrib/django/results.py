"""A jobdef job as Django's ``TaskResult``: status, times, errors and attempts.

=========================  ==========================================================
jobdef state               ``TaskResultStatus``
=========================  ==========================================================
queued (new, or a retry)   READY ("enqueued, or ready to be executed again")
running                    RUNNING
done                       SUCCESSFUL (``return_value``: what the task returned)
dead, cancelled, resolved  FAILED
=========================  ==========================================================

``args`` and ``kwargs`` are the call as it was made: the job's args, the ones passed by
position given back by position (:func:`~jobdef.contrib.django.calls.call_of`);
``task.run_after`` the time a deferred
job may run. ``errors`` holds one ``TaskError`` per failed attempt, oldest first;
``worker_ids`` one worker id per attempt that counted, so ``attempts`` is jobdef's
attempt count. ``return_value`` is what the task of the attempt that finished the job
returned, as JSON (the job's ``result``), as the sheet's ``result:`` keeps it: ``None``
when it returned ``None``, when the sheet says ``result.store: false``, or once
``result.retention`` has passed. A value that is not JSON fails the attempt with a
``TypeError``, as the framework's backends do; one larger than ``result.max_bytes`` or
breaking ``result.schema`` fails it with ``jobdef.ResultRefused``; either is retried
or not as the sheet's ``errors`` say, and a job they end is FAILED with that error.

The result is a :class:`JobdefTaskResult`, the framework's ``TaskResult`` with one
field more: ``receipt``, the job's :class:`~jobdef.backends.records.Receipt` (its id,
the token a browser may hold, and whether the enqueue created the job), None for a
job stored before receipts. Its ``id`` stays the job's id, as the framework's
``get_result(id)`` reads it back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from jobdef.backends.records import AttemptRecord, ErrorInfo, JobRecord, Receipt
from jobdef.contrib.django.calls import call_of
from jobdef.contrib.django.compat import (
    TASK_MAX_PRIORITY,
    TASK_MIN_PRIORITY,
    TaskError,
    TaskResult,
    TaskResultStatus,
)

_STATUS = {
    "queued": "READY",
    "running": "RUNNING",
    "done": "SUCCESSFUL",
    "dead": "FAILED",
    "cancelled": "FAILED",
    "resolved": "FAILED",
}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class JobdefTaskResult(TaskResult):  # type: ignore[misc]  # Django ships no types
    """The framework's ``TaskResult`` and the job's receipt (see the module)."""

    # Not compared: the result an enqueue returns equals the one get_result() reads
    # back, whose receipt says it created nothing.
    receipt: Receipt | None = dataclasses.field(default=None, compare=False)


def _when(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=UTC)


def _run_after(record: JobRecord) -> datetime | None:
    """The task's ``run_after``: None for a job due when it was made (its ``run_after``
    is its ``created_at``), else the time it may run (after a retry, the retry's)."""
    if record.run_after == record.created_at:
        return None
    return _when(record.run_after)


def task_error(error: ErrorInfo) -> Any:
    """jobdef's error as Django's: the class by dotted path (builtins spelled out)."""
    path = error.type if "." in error.type else f"builtins.{error.type}"
    return TaskError(exception_class_path=path, traceback=error.traceback or error.message)


def task_result(
    task: Any,
    record: JobRecord,
    attempts: Sequence[AttemptRecord],
    alias: str,
    *,
    created: bool = False,
) -> Any:
    """The ``TaskResult`` of ``record`` (with its ``attempts``) for ``task``; ``created``:
    the enqueue that returns it stored the job (False: merged into it, or read back)."""
    counted = [a for a in attempts if a.outcome != "released"]
    changes: dict[str, Any] = {}
    if task.backend != alias:  # the module's task, read back through another alias
        changes["backend"] = alias
    if record.queue != task.queue_name:
        changes["queue_name"] = record.queue
    in_range = TASK_MIN_PRIORITY <= record.priority <= TASK_MAX_PRIORITY
    if record.priority != task.priority and in_range:
        changes["priority"] = record.priority
    run_after = _run_after(record)
    if run_after != task.run_after:
        changes["run_after"] = run_after
    if changes:
        task = dataclasses.replace(task, **changes)
    args, kwargs = call_of(task, record.args, record.positional_args)
    receipt = None if record.receipt is None else Receipt(record.id, record.receipt, created)
    made = JobdefTaskResult(
        receipt=receipt,
        task=task,
        id=str(record.id),
        status=TaskResultStatus[_STATUS[record.state]],
        enqueued_at=_when(record.created_at),
        started_at=_when(counted[0].started_at) if counted else None,
        finished_at=_when(record.finished_at) if record.state != "queued" else None,
        last_attempted_at=_when(counted[-1].started_at) if counted else None,
        args=args,
        kwargs=kwargs,
        backend=alias,
        errors=[task_error(a.error) for a in counted if a.error is not None],
        worker_ids=[a.worker_id for a in counted],
    )
    if record.state == "done" and record.result is not None:
        # Not a field of the constructor: the framework's own backends set it so too.
        object.__setattr__(made, "_return_value", record.result)
    return made
