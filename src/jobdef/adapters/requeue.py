"""Sending a job that died in Celery or RQ back through its runtime (``jobdef requeue
--app``, the dashboard started with ``--app``).

jobdef's own requeue leaves such a row alone: jobdef's worker must not run a task
written for another runtime. Instead the job is enqueued again through the
adapter (its args checked by the sheet, a new run under the key's task id), and
its dead row is resolved with a note naming the new run, so the history stays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jobdef.backends.elsewhere import elsewhere
from jobdef.backends.protocol import Backend
from jobdef.backends.records import JobRecord
from jobdef.errors import UsageError

APP_HINT = "module:obj (the Celery app, or the jobdef.adapters.rq.SheetQueue)"


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


def check_target(target: Any, spec: str) -> None:
    """Refuse, in one line, an ``--app`` object no job can be requeued through."""
    try:
        from jobdef.adapters.rq import SheetQueue

        if isinstance(target, SheetQueue):
            return
    except ImportError:  # RQ not installed: the object is not a SheetQueue
        pass
    try:
        from celery import Celery

        if isinstance(target, Celery):
            return
    except ImportError:  # Celery not installed: the object is not a Celery app
        pass
    raise UsageError(f"--app {spec!r} is a {type(target).__name__}; name {APP_HINT}")


def requeue_through(
    target: Any, record: JobRecord, resolve: Callable[[int, str], object], by: str = ""
) -> str:
    """Resubmit ``record`` through ``target``, then resolve its dead row (``resolve``, the
    backend's verb) with a note naming the new run and ``by`` whom; the new id."""
    runtime = (elsewhere(record) or ("?", ""))[0]
    new_id = resubmit(target, record)
    resolve(record.id, f"requeued to {runtime} as {new_id}{f' by {by}' if by else ''}")
    return new_id


def needs_app(record: JobRecord, where: str) -> str:
    """Why ``record`` (a job that died in another runtime) was not requeued: no
    application object to send it through; ``where`` says how to give one."""
    runtime, _, task_id = (record.worker_id or "").partition("/")
    return (
        f"job {record.id} died in {runtime} (task {task_id}) and goes back only through "
        f"{runtime}: {where} --app {APP_HINT}"
    )


def requeue_elsewhere(backend: Backend, target: Any, records: list[JobRecord]) -> int:
    """Resubmit each record and resolve its dead row; how many went back."""
    for record in records:
        requeue_through(target, record, backend.resolve)
    return len(records)
