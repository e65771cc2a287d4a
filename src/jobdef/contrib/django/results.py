"""A jobdef job as Django's ``TaskResult``: status, times, errors and attempts.

=========================  ==========================================================
jobdef state               ``TaskResultStatus``
=========================  ==========================================================
queued (new, or a retry)   READY ("enqueued, or ready to be executed again")
running                    RUNNING
done                       SUCCESSFUL (``return_value``: what the task returned)
dead, cancelled, resolved  FAILED
=========================  ==========================================================

``errors`` holds one ``TaskError`` per failed attempt, oldest first;
``worker_ids`` one worker id per attempt that counted, so ``attempts`` is jobdef's
attempt count. ``return_value`` is what the task of the attempt that finished the job
returned, as JSON (the job's ``result``, checked in the worker's child): ``None`` when
it returned ``None``, or a value that is not JSON or is larger than 64 KiB (the job is
done all the same, and the worker's log has a warning naming the job).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from jobdef.backends.records import AttemptRecord, ErrorInfo, JobRecord
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


def _when(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=UTC)


def task_error(error: ErrorInfo) -> Any:
    """jobdef's error as Django's: the class by dotted path (builtins spelled out)."""
    path = error.type if "." in error.type else f"builtins.{error.type}"
    return TaskError(exception_class_path=path, traceback=error.traceback or error.message)


def task_result(task: Any, record: JobRecord, attempts: Sequence[AttemptRecord], alias: str) -> Any:
    """The ``TaskResult`` of ``record`` (with its ``attempts``) for ``task``."""
    counted = [a for a in attempts if a.outcome != "released"]
    if record.queue != task.queue_name or record.priority != task.priority:
        changes: dict[str, Any] = {"queue_name": record.queue}
        if TASK_MIN_PRIORITY <= record.priority <= TASK_MAX_PRIORITY:
            changes["priority"] = record.priority
        task = dataclasses.replace(task, **changes)
    made = TaskResult(
        task=task,
        id=str(record.id),
        status=TaskResultStatus[_STATUS[record.state]],
        enqueued_at=_when(record.created_at),
        started_at=_when(counted[0].started_at) if counted else None,
        finished_at=_when(record.finished_at) if record.state != "queued" else None,
        last_attempted_at=_when(counted[-1].started_at) if counted else None,
        args=[],
        kwargs=dict(record.args),
        backend=alias,
        errors=[task_error(a.error) for a in counted if a.error is not None],
        worker_ids=[a.worker_id for a in counted],
    )
    if record.state == "done" and record.result is not None:
        # Not a field of the constructor: the framework's own backends set it so too.
        object.__setattr__(made, "_return_value", record.result)
    return made
