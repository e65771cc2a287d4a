"""What Django documents for a tasks backend, checked on JobdefBackend.

``enqueue`` returns a ``TaskResult`` (status READY, a string id, the args); the
backend supports deferred, async and prioritised tasks and results read from any
process; ``get_result`` of an unknown id raises ``TaskResultDoesNotExist``; the
statuses follow the job's state. docs/django.md says which side wins where the
contract and the sheet disagree (the sheet).
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from jd_support import Project, unique

from jobdef.backends.records import ClaimOptions, ErrorInfo
from jobdef.contrib.django.compat import (
    PACKAGE,
    InvalidTask,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_enqueued,
)


def test_the_backend_declares_what_it_supports(project: Project) -> None:
    backend = project.backend("default")
    assert backend.supports_defer is True
    assert backend.supports_async_task is True
    assert backend.supports_get_result is True
    assert backend.supports_priority is True
    assert PACKAGE in ("django.tasks", "django_tasks")


def test_enqueue_returns_a_ready_result(project: Project) -> None:
    from jdproject import tasks

    sent: list[Any] = []

    def receiver(sender: Any, task_result: Any, **kwargs: Any) -> None:
        sent.append(task_result)

    task_enqueued.connect(receiver)
    try:
        reservation = unique()
        result = tasks.send_confirmation.enqueue(reservation)
    finally:
        task_enqueued.disconnect(receiver)
    assert isinstance(result.id, str)
    assert result.id.isdigit()
    assert result.status == TaskResultStatus.READY
    assert not result.is_finished
    assert result.attempts == 0
    assert result.errors == []
    assert result.backend == "default"
    assert result.args == [reservation]  # as it was passed
    assert result.kwargs == {}
    assert result.enqueued_at.tzinfo is not None
    assert result.task.func is tasks.send_confirmation.func
    with pytest.raises(ValueError, match="not finished"):
        _ = result.return_value
    assert [r.id for r in sent] == [result.id]
    same = tasks.send_confirmation.get_result(result.id)
    assert same.id == result.id
    assert same.status == TaskResultStatus.READY


def test_an_unknown_result_does_not_exist(project: Project) -> None:
    backend = project.backend("default")
    for missing in ("999999999", "not-a-number", "0", str(2**70)):
        with pytest.raises(TaskResultDoesNotExist):
            backend.get_result(missing)


def test_deferred_tasks_need_an_aware_datetime(project: Project) -> None:
    from jdproject import tasks

    with pytest.raises(InvalidTask, match="aware"):
        tasks.flaky.using(run_after=datetime.now() + timedelta(minutes=5))
    later = datetime.now(tz=UTC) + timedelta(minutes=5)
    result = tasks.flaky.using(run_after=later).enqueue(item=1)
    record = project.backend("default").engine().get(int(result.id))
    assert record.run_after == pytest.approx(later.timestamp(), abs=0.01)


def test_priority_outside_djangos_range_is_refused(project: Project) -> None:
    from jdproject import tasks

    with pytest.raises(InvalidTask, match="priority"):
        tasks.flaky.using(priority=101)


def test_aenqueue_and_aget_result(project: Project) -> None:
    from jdproject import tasks

    async def both() -> tuple[Any, Any]:
        result = await tasks.ping.aenqueue(item=unique())
        return result, await tasks.ping.aget_result(result.id)

    result, fetched = asyncio.run(both())
    assert fetched.id == result.id
    assert fetched.status == TaskResultStatus.READY


def test_statuses_follow_the_jobs_state(project: Project) -> None:
    """queued → READY, running → RUNNING, a failed attempt queued again → READY with its
    error, cancelled → FAILED; the worker id of each attempt that counted."""
    from jdproject import tasks

    engine = project.backend("default").engine()
    result = tasks.send_confirmation.enqueue(unique())
    job_id = int(result.id)
    taken = engine.claim(
        ClaimOptions(worker_id="w-1", lease_seconds=30, limit=1000, queues=["mail"])
    )
    [mine] = [r for r in taken if r.id == job_id]
    for other in taken:
        if other.id != job_id:
            engine.release(other.lease)
    result.refresh()
    assert result.status == TaskResultStatus.RUNNING
    assert result.worker_ids == ["w-1"]
    assert result.last_attempted_at is not None

    error = ErrorInfo("ConnectionError", "down", "Traceback (most recent call last): ...")
    assert engine.retry(mine.lease, error, time.time() + 3600, 3600)
    result.refresh()
    assert result.status == TaskResultStatus.READY
    assert result.attempts == 1
    [failed] = result.errors
    assert failed.exception_class is ConnectionError
    assert failed.traceback.startswith("Traceback")

    assert engine.cancel(job_id)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.is_finished
    with pytest.raises(ValueError, match="failed"):
        _ = result.return_value


def test_the_context_of_a_task_is_jobdefs_with_djangos_task_result(project: Project) -> None:
    from jdproject import tasks

    from jobdef import Context
    from jobdef.contrib.django import JobContext

    result = tasks.award.enqueue(order_id=unique(), points=5)
    record = project.backend("default").engine().get(int(result.id))
    ctx = Context(
        job_id=record.id,
        job=record.job,
        attempt=1,
        max_attempts=record.max_attempts,
        idempotency_key=record.idempotency_key,
        database_url=project.backend("default").database_url,
    )
    context = JobContext.of(ctx, "default")
    assert context.attempt == 1  # Django's TaskContext.attempt
    assert context.idempotency_key == record.idempotency_key
    assert context.task_result.id == result.id
    assert context.task_result.task.func is tasks.award.func
