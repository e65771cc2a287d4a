"""The behavioural tests of the database backend ``django-tasks`` shipped until 17bd95f,
ported to JobdefBackend on SQLite and PostgreSQL, with real workers.

That backend left the package, so its test module does not import; these state what
it showed of a backend that stores tasks in a database and runs them with a worker,
on JobdefBackend with a real worker. Not ported: its model, admin, id_function, query
counts and index plans, the db_worker command's options and output, and metadata,
which are that backend's own (docs/django.md).
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from jd_support import Project
from upstream_suite import imported, run_worker, tasks_setting

from jobdef.contrib.django.backend import JobdefBackend


@pytest.fixture(scope="module")
def upstream() -> Iterator[dict[str, Any]]:
    with imported() as modules:
        yield modules


@pytest.fixture
def suite(
    upstream: dict[str, Any], project: Project, engine_alias: str
) -> Iterator[tuple[Any, JobdefBackend]]:
    """The suite's tasks module, with TASKS's default a JobdefBackend on the engine."""
    from django.test import override_settings

    from jobdef.contrib.django.compat import task_backends

    with override_settings(TASKS=tasks_setting("dummy", engine_alias, project)):
        yield sys.modules["tests.tasks"], task_backends()["default"]


def test_db_enqueue_sends_task_enqueued_and_gives_the_args_back(suite: Any) -> None:
    from jobdef.contrib.django.compat import TaskResultStatus, task_enqueued

    tasks, backend = suite
    for task in (tasks.noop_task, tasks.noop_task_async):
        received: list[tuple[Any, Any]] = []

        def capture(sender: Any, task_result: Any, **kwargs: Any) -> None:
            received.append((sender, task_result))  # noqa: B023  # used at once

        task_enqueued.connect(capture, weak=False)
        try:
            result = task.enqueue(1, two=3)
        finally:
            task_enqueued.disconnect(capture)
        assert result.status == TaskResultStatus.READY
        assert not result.is_finished
        assert (result.started_at, result.last_attempted_at, result.finished_at) == (None,) * 3
        with pytest.raises(ValueError, match="Task has not finished yet"):
            _ = result.return_value
        assert result.task == task
        assert (result.args, result.kwargs, result.attempts) == ([1], {"two": 3}, 0)
        assert received == [(type(backend), result)]
        assert backend.get_result(result.id) == result


def test_db_a_worker_runs_the_task_and_refresh_reads_it(suite: Any, project: Project) -> None:
    from jobdef.contrib.django.compat import TaskResultStatus

    tasks, backend = suite
    result = tasks.noop_task.enqueue()
    run_worker(project, backend)
    assert result.status == TaskResultStatus.READY  # until refreshed
    assert result.attempts == 0
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert result.last_attempted_at is not None
    assert result.attempts == 1


def test_db_a_batch_runs_every_task(suite: Any, project: Project) -> None:
    from jobdef.contrib.django.compat import TaskResultStatus

    tasks, backend = suite
    results = [tasks.noop_task.enqueue() for _ in range(3)]
    failing = tasks.failing_task_value_error.enqueue()
    run_worker(project, backend)
    for result in [*results, failing]:
        result.refresh()
    assert [r.status for r in results] == [TaskResultStatus.SUCCESSFUL] * 3
    assert failing.status == TaskResultStatus.FAILED


def test_db_a_worker_of_other_queues_leaves_the_task(suite: Any, project: Project) -> None:
    from jobdef.contrib.django.compat import TaskResultStatus

    tasks, backend = suite
    result = tasks.noop_task.enqueue()
    run_worker(project, backend, "--queues", "queue_1")
    result.refresh()
    assert result.status == TaskResultStatus.READY
    run_worker(project, backend, "--queues", result.task.queue_name)
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL


def test_db_failures_are_failed_with_the_exception(suite: Any, project: Project) -> None:
    """A raised exception, one holding another, a return value that is not JSON and
    ``exit()``: each FAILED, its class and traceback in ``errors``, the worker alive."""
    from jobdef.contrib.django.compat import TaskResultStatus

    tasks, backend = suite
    expected = {
        tasks.failing_task_value_error: (
            ValueError,
            "ValueError: This task failed due to ValueError",
        ),
        tasks.complex_exception: (ValueError, 'ValueError(ValueError("This task failed"))'),
        tasks.complex_return_value: (TypeError, "is not JSON serializable"),
        tasks.exit_task: (SystemExit, "SystemExit"),
    }
    results = {task: task.enqueue() for task in expected}
    run_worker(project, backend)
    for task, (exception, shown) in expected.items():
        result = results[task]
        result.refresh()
        assert result.status == TaskResultStatus.FAILED, task
        assert result.enqueued_at <= result.started_at <= result.finished_at
        with pytest.raises(ValueError, match="Task failed"):
            _ = result.return_value
        assert result._return_value is None
        [error] = result.errors
        assert error.exception_class is exception, task
        assert shown in error.traceback, error.traceback


def test_db_a_deferred_task_waits_for_its_time(suite: Any, project: Project) -> None:
    from django.utils import timezone

    from jobdef.contrib.django.compat import TaskResultStatus

    tasks, backend = suite
    later = timezone.now() + timedelta(hours=10)
    result = tasks.noop_task.using(run_after=later).enqueue()
    run_worker(project, backend)
    result.refresh()
    assert result.status == TaskResultStatus.READY
    assert result.task.run_after == later


def test_db_ready_tasks_run_by_priority_then_run_after(suite: Any, project: Project) -> None:
    from django.utils import timezone

    from jobdef.contrib.django.compat import TaskResultStatus

    tasks, backend = suite
    noop, now = tasks.noop_task, timezone.now()
    old = noop.using(priority=20, run_after=now - timedelta(hours=2)).enqueue()
    very_old = noop.using(priority=20, run_after=now - timedelta(hours=10)).enqueue()
    far_future = noop.using(run_after=now + timedelta(hours=10)).enqueue()
    high_far_future = noop.using(priority=10, run_after=now + timedelta(hours=10)).enqueue()
    future = noop.using(run_after=now + timedelta(hours=2)).enqueue()
    high = noop.using(priority=10).enqueue()
    low = noop.using(priority=2).enqueue()
    lower = noop.using(priority=-2).enqueue()
    run_worker(project, backend, "--concurrency", "1", "--prefetch", "1")
    ran = [very_old, old, high, low, lower]
    waiting = [far_future, high_far_future, future]
    for result in [*ran, *waiting]:
        result.refresh()
    assert [r.status for r in waiting] == [TaskResultStatus.READY] * 3
    assert sorted(ran, key=lambda r: r.started_at) == ran


def test_db_an_unknown_result_does_not_exist(suite: Any) -> None:
    from jobdef.contrib.django.compat import TaskResultDoesNotExist

    _tasks, backend = suite
    for missing in (str(uuid.uuid4()), "123abc"):
        with pytest.raises(TaskResultDoesNotExist):
            backend.get_result(missing)


def test_db_enqueue_logs_the_enqueue_in_the_enqueuing_process(
    suite: Any, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    tasks, _backend = suite
    with caplog.at_level(logging.DEBUG, logger="django_tasks"):
        result = tasks.noop_task.enqueue()
    [line] = [r.getMessage() for r in caplog.records if r.name.startswith("django_tasks")]
    assert "enqueued" in line
    assert f"id={result.id} " in line


def test_db_the_worker_writes_the_framework_log_lines(suite: Any, project: Project) -> None:
    """What the database backend's worker printed of each task, at ``--verbosity 3``: the
    framework's ``django_tasks`` lines of its start and end, by the worker's process."""
    tasks, backend = suite
    ok = tasks.noop_task.enqueue()
    failed = tasks.failing_task_value_error.enqueue()
    log = run_worker(project, backend, "--concurrency", "1", "--log-level", "info")
    ids = (f" id={ok.id} ", f" id={failed.id} ")
    framework = [
        line.split(" ", 1)[1]
        for line in log.splitlines()
        if " django_tasks " in line and any(i in line for i in ids)
    ]
    noop, failing = "tests.tasks.noop_task", "tests.tasks.failing_task_value_error"
    assert framework == [
        f"django_tasks INFO Task id={ok.id} path={noop} state=RUNNING",
        f"django_tasks INFO Task id={ok.id} path={noop} state=SUCCESSFUL",
        f"django_tasks INFO Task id={failed.id} path={failing} state=RUNNING",
        f"django_tasks ERROR Task id={failed.id} path={failing} state=FAILED",
    ], log
