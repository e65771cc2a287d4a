"""Sending a job that died in Celery or RQ back through its runtime (``jobdef requeue``).

jobdef's own requeue leaves such a row alone: jobdef's worker must not run a task
written for another runtime. Instead the job is enqueued again through the
adapter (its args checked by the sheet, a new run under the key's task id), and
its dead row is resolved with a note naming the new run, so the history stays.
"""

from __future__ import annotations

from typing import Any

from jobdef.backends.elsewhere import elsewhere
from jobdef.backends.protocol import Backend
from jobdef.backends.records import JobRecord
from jobdef.errors import UsageError


def resubmit(target: Any, record: JobRecord) -> str:
    """Enqueue ``record`` again through ``target`` (a configured Celery app or a
    :class:`~jobdef.adapters.rq.SheetQueue`); the new task or job id."""
    found = elsewhere(record)
    if found is None:
        raise UsageError(f"job {record.id} ran on jobdef's worker; requeue it without --app")
    runtime = found[0]
    if runtime == "rq":
        from jobdef.adapters.rq import SheetQueue

        if not isinstance(target, SheetQueue):
            raise UsageError(f"job {record.id} died in RQ: --app must name a SheetQueue")
        return str(target.enqueue(record.job, **dict(record.args)).id)
    if runtime == "celery":
        from jobdef.adapters.celery import SheetTask

        tasks = getattr(target, "tasks", None)
        if tasks is None:
            raise UsageError(f"job {record.id} died in Celery: --app must name the Celery app")
        for task in tasks.values():
            if isinstance(task, SheetTask) and (task.jobdef_job or task.name) == record.job:
                return str(task.apply_async(kwargs=dict(record.args)).id)
        raise UsageError(f"the Celery app has no sheet task for job {record.job!r}")
    raise UsageError(f"job {record.id} died in {runtime!r}, which jobdef has no adapter for")


def requeue_elsewhere(backend: Backend, target: Any, records: list[JobRecord]) -> int:
    """Resubmit each record and resolve its dead row; how many went back."""
    count = 0
    for record in records:
        runtime = (elsewhere(record) or ("?", ""))[0]
        new_id = resubmit(target, record)
        backend.resolve(record.id, f"requeued to {runtime} as {new_id}")
        count += 1
    return count
