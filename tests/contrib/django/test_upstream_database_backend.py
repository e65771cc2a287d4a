"""The behavioural tests of the database backend ``django-tasks`` shipped until 17bd95f,
ported to JobdefBackend on SQLite and PostgreSQL, with real workers.

That backend left the package, so its test module
(``../shared/external/django-tasks/database-backend-17bd95f``) does not import; the
tests here state what it showed of a backend that stores tasks in a database and runs
them with a worker, on JobdefBackend with real ``jobdef worker`` processes.
:data:`PORTED` names, for each of its tests that states a contract, the test that
checks it on JobdefBackend (here, elsewhere under ``tests/``, or the framework's own
test that test_upstream_contract runs); :data:`NOT_APPLICABLE` each of the others, with
why: that backend's model, admin, commands, options and query plans.
"""

from __future__ import annotations

import ast
import signal
import sys
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from jd_support import Project, finish
from upstream_suite import UPSTREAM, imported, run_worker, start_worker, tasks_setting

from jobdef.contrib.django.backend import JobdefBackend
from support.polling import eventually

pytestmark = pytest.mark.slow  # worker processes

DATABASE_TESTS = UPSTREAM / "database-backend-17bd95f" / "test_database_backend.py"
TESTS = Path(__file__).resolve().parents[2]

_BACKEND = "DatabaseBackendTestCase."
_WORKER = "DatabaseBackendWorkerTestCase."
_PROCESS = "DatabaseWorkerProcessTestCase."

# That backend's test -> the test of JobdefBackend that checks what it states: a test
# of this module, ``<path under tests/>::<test>``, or ``upstream:<Class>.<test>`` (the
# framework's own test, run by test_upstream_contract).
PORTED: dict[str, str] = {
    f"{_BACKEND}test_enqueue_task": "test_db_enqueue_sends_task_enqueued_and_gives_the_args_back",
    f"{_BACKEND}test_enqueue_task_async": "test_db_aenqueue_aget_result_and_arefresh",
    f"{_BACKEND}test_get_result": "test_db_enqueue_sends_task_enqueued_and_gives_the_args_back",
    f"{_BACKEND}test_get_result_async": "test_db_aenqueue_aget_result_and_arefresh",
    f"{_BACKEND}test_refresh_result": "test_db_a_worker_runs_the_task_and_refresh_reads_it",
    f"{_BACKEND}test_refresh_result_async": "test_db_aenqueue_aget_result_and_arefresh",
    f"{_BACKEND}test_get_missing_result": "test_db_an_unknown_result_does_not_exist",
    f"{_BACKEND}test_async_get_missing_result": "test_db_aenqueue_aget_result_and_arefresh",
    f"{_BACKEND}test_invalid_uuid": "test_db_an_unknown_result_does_not_exist",
    f"{_BACKEND}test_async_invalid_uuid": "test_db_aenqueue_aget_result_and_arefresh",
    f"{_BACKEND}test_meaning_of_life_view": (
        "upstream:DummyBackendTestCase.test_meaning_of_life_view"
    ),
    f"{_BACKEND}test_get_result_from_different_request": (
        "upstream:DummyBackendTestCase.test_get_result_from_different_request"
    ),
    f"{_BACKEND}test_check": "upstream:DummyBackendTestCase.test_check",
    f"{_BACKEND}test_doesnt_wait_until_transaction_commit": (
        "contrib/django/test_django_enqueue.py::test_rollback_stores_nothing_and_commit_stores_one"
    ),
    f"{_BACKEND}test_enqueue_logs": "test_db_enqueue_logs_the_enqueue_in_the_enqueuing_process",
    f"{_BACKEND}test_run_after_tz": "test_db_a_task_due_at_once_has_no_run_after",
    f"{_WORKER}test_run_enqueued_task": "test_db_a_worker_runs_the_task_and_refresh_reads_it",
    f"{_WORKER}test_batch_processes_all_tasks": "test_db_a_batch_runs_every_task",
    f"{_WORKER}test_doesnt_process_different_queue": (
        "test_db_a_worker_of_other_queues_leaves_the_task"
    ),
    f"{_WORKER}test_failing_task": "test_db_failures_are_failed_with_the_exception",
    f"{_WORKER}test_complex_exception": "test_db_failures_are_failed_with_the_exception",
    f"{_WORKER}test_complex_return_value": "test_db_failures_are_failed_with_the_exception",
    f"{_WORKER}test_run_after": "test_db_a_deferred_task_waits_for_its_time",
    f"{_WORKER}test_run_after_priority": "test_db_ready_tasks_run_by_priority_then_run_after",
    f"{_WORKER}test_verbose_logging": "test_db_the_worker_writes_the_framework_log_lines",
    f"{_WORKER}test_worker_doesnt_exit": "test_db_failures_are_failed_with_the_exception",
    f"{_WORKER}test_takes_context": "upstream:ImmediateBackendTestCase.test_takes_context",
    f"{_WORKER}test_context": "upstream:ImmediateBackendTestCase.test_context",
    f"{_PROCESS}test_run_subprocess": "test_db_a_worker_runs_the_task_and_refresh_reads_it",
    f"{_PROCESS}test_interrupt_no_tasks": (
        "test_db_a_signal_lets_the_running_task_finish_and_the_worker_exit_0"
    ),
    f"{_PROCESS}test_interrupt_signals": (
        "test_db_a_signal_lets_the_running_task_finish_and_the_worker_exit_0"
    ),
    f"{_PROCESS}test_repeat_ctrl_c": (
        "test_db_a_second_sigint_stops_at_once_and_fails_the_running_attempt"
    ),
    # Differs: a killed worker's job is RUNNING until its lease expires, then another
    # worker reclaims it (that backend's stayed RUNNING for good).
    f"{_PROCESS}test_kill": (
        "contrib/django/test_django_worker.py::"
        "test_first_run_with_djangos_connection_makes_a_rerun_after_kill_9_harmless"
    ),
    f"{_PROCESS}test_system_exit_task": (
        "test_db_keyboard_interrupt_and_system_exit_fail_the_task_and_the_worker_runs_on"
    ),
    f"{_PROCESS}test_keyboard_interrupt_task": (
        "test_db_keyboard_interrupt_and_system_exit_fail_the_task_and_the_worker_runs_on"
    ),
    f"{_PROCESS}test_multiple_workers": "test_db_three_workers_run_each_task_once",
}

_ITS_CLASS = "it asserts the configured backend is DatabaseBackend"
_MODEL = (
    "it reads or writes rows of that backend's model (DBTaskResult) by hand; a jobdef job's "
    "task is its sheet's handler, which `manage.py check` and the worker's start check"
)
_QUERIES = "it counts or plans that backend's own queries"
_ID_FUNCTION = "id_function is an option of that backend; a jobdef result's id is its job's id"
_INNER_SWAP = "its inner override_settings swaps TASKS to RQBackend: about that backend"
_DB_WORKER = (
    "it tests an option or the output of that backend's db_worker command; "
    "`manage.py jobdef_worker` has jobdef worker's options"
)
_LOCKS = (
    "it tests that backend's row locking (get_locked, select_for_update); jobdef's claims "
    "are the engines' own (tests/backends/postgres/test_claim.py)"
)
_METADATA = "metadata is a field of that backend's results, which the framework does not define"

NOT_APPLICABLE: dict[str, str] = {
    f"{_BACKEND}test_using_correct_backend": _ITS_CLASS,
    f"{_BACKEND}test_invalid_task_path": _MODEL,
    f"{_BACKEND}test_missing_task_path": _MODEL,
    f"{_BACKEND}test_task_name": _MODEL,
    f"{_BACKEND}test_database_backend_app_missing": (
        "it asks for that backend's app in INSTALLED_APPS"
    ),
    f"{_BACKEND}test_priority_range_check": (
        "it tests a constraint of that backend's model (the priority range itself is the "
        "framework's: upstream TaskTestCase.test_invalid_priority)"
    ),
    f"{_BACKEND}test_index_scan_for_ready": _QUERIES,
    f"{_BACKEND}test_run_after_null_0016_migration": "it tests a migration of that backend",
    f"{_BACKEND}test_validate_on_enqueue": _INNER_SWAP,
    f"{_BACKEND}test_validate_on_aenqueue": _INNER_SWAP,
    f"{_BACKEND}test_custom_id_function": _ID_FUNCTION,
    f"{_BACKEND}test_unknown_id_function": _ID_FUNCTION,
    f"{_BACKEND}test_postgres_db_id_function": _ID_FUNCTION,
    f"{_BACKEND}test_postgres_id_function_expression": _ID_FUNCTION,
    f"{_WORKER}test_no_tasks": _QUERIES,
    f"{_WORKER}test_process_all_queues": (
        "queue_name='*' is a db_worker option; a jobdef worker without --queues serves "
        "every queue of its sheets, as every worker here does"
    ),
    f"{_WORKER}test_doesnt_process_different_backend": (
        "db_worker --backend picks a TASKS alias; a jobdef worker serves a store (--db)"
    ),
    f"{_WORKER}test_unknown_backend": _DB_WORKER,
    f"{_WORKER}test_incorrect_backend": _DB_WORKER,
    f"{_WORKER}test_negative_interval": _DB_WORKER,
    f"{_WORKER}test_infinite_interval": _DB_WORKER,
    f"{_WORKER}test_fractional_interval": _DB_WORKER,
    f"{_WORKER}test_negative_max_tasks": _DB_WORKER,
    f"{_WORKER}test_too_long_worker_id": _DB_WORKER,
    f"{_WORKER}test_empty_worker_id": _DB_WORKER,
    f"{_WORKER}test_max_tasks": _DB_WORKER,
    f"{_WORKER}test_invalid_task_path": _MODEL,
    f"{_WORKER}test_missing_task_path": _MODEL,
    f"{_WORKER}test_task_import_string": _MODEL,
    f"{_WORKER}test_worker_with_locked_rows": _LOCKS,
    f"{_WORKER}test_metadata": _METADATA,
    f"{_WORKER}test_save_metadata": _METADATA,
    "DatabaseTaskResultTestCase": (
        "it queries that backend's model across connections and locks its rows; jobdef's "
        "claims are the engines' own (tests/backends/postgres/test_claim.py)"
    ),
    "ConnectionExclusiveTranscationTestCase": (
        "it tests that backend's helper for SQLite's exclusive transactions"
    ),
    "DatabaseBackendPruneTaskResultsTestCase": (
        "it tests that backend's prune_db_task_results command; a jobdef job's retention "
        "is its sheet's"
    ),
}


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
    # What ImmediateBackendTestCase.test_complex_return_value reads after its logs.
    assert "Unsupported type" in results[tasks.complex_return_value].errors[0].traceback


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


def test_db_aenqueue_aget_result_and_arefresh(suite: Any, project: Project) -> None:
    from asgiref.sync import async_to_sync

    from jobdef.contrib.django.compat import TaskResultDoesNotExist, TaskResultStatus

    tasks, backend = suite

    async def enqueued() -> list[tuple[Any, Any]]:
        made = [await task.aenqueue() for task in (tasks.noop_task, tasks.noop_task_async)]
        return [(result, await backend.aget_result(result.id)) for result in made]

    pairs = async_to_sync(enqueued)()
    for result, fetched in pairs:
        assert result.status == TaskResultStatus.READY
        assert (result.args, result.kwargs, result.attempts) == ([], {}, 0)
        assert fetched == result
    run_worker(project, backend)

    async def refreshed() -> None:
        for result, _fetched in pairs:
            await result.arefresh()
        for missing in (str(uuid.uuid4()), "123"):
            with pytest.raises(TaskResultDoesNotExist):
                await backend.aget_result(missing)

    async_to_sync(refreshed)()
    for result, _fetched in pairs:
        assert result.status == TaskResultStatus.SUCCESSFUL
        assert result.attempts == 1


@pytest.mark.parametrize("use_tz", [True, False])
def test_db_a_task_due_at_once_has_no_run_after(suite: Any, use_tz: bool) -> None:
    from django.test import override_settings

    tasks, backend = suite
    with override_settings(USE_TZ=use_tz):
        result = tasks.noop_task.enqueue()
        assert result.task.run_after is None
        assert backend.get_result(result.id).task.run_after is None


def test_db_keyboard_interrupt_and_system_exit_fail_the_task_and_the_worker_runs_on(
    suite: Any, project: Project
) -> None:
    from jobdef.contrib.django.compat import TaskResultStatus

    tasks, backend = suite
    expected = {
        tasks.failing_task_keyboard_interrupt: KeyboardInterrupt,
        tasks.failing_task_system_exit: SystemExit,
    }
    results = {task: task.enqueue() for task in expected}
    after = tasks.noop_task.enqueue()
    run_worker(project, backend, "--concurrency", "1")  # exits 0
    for task, exception in expected.items():
        result = results[task]
        result.refresh()
        assert result.status == TaskResultStatus.FAILED, task
        [error] = result.errors
        assert error.exception_class is exception
        assert f"This task failed due to {exception.__name__}" in error.traceback
    after.refresh()
    assert after.status == TaskResultStatus.SUCCESSFUL


def _running_now(result: Any) -> bool:
    from jobdef.contrib.django.compat import TaskResultStatus

    result.refresh()
    return bool(result.status == TaskResultStatus.RUNNING)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_db_a_signal_lets_the_running_task_finish_and_the_worker_exit_0(
    suite: Any, project: Project, sig: signal.Signals
) -> None:
    from jobdef.contrib.django.compat import TaskResultStatus

    tasks, backend = suite
    result = tasks.sleep_for.enqueue(2)
    assert result.args == [2]
    process = start_worker(project, backend, "--concurrency", "1", "--grace", "60s")
    try:
        eventually(lambda: _running_now(result), what="the task to run")
        assert len(result.worker_ids) == 1
        process.send_signal(sig)
        code, _out, err = finish(process, timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert code == 0, err
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.attempts == 1


def test_db_a_second_sigint_stops_at_once_and_fails_the_running_attempt(
    suite: Any, project: Project, tmp_path: Path
) -> None:
    """The first SIGINT drains (the task runs on), the second stops at once: the running
    attempt is FAILED, as the database backend recorded it. Differs: its error is jobdef's
    HandlerCrashed, not SystemExit (the worker kills the task's process), and the sheet
    decides on a retry (this one's ``errors: {default: fatal}`` buries it)."""
    from jobdef.contrib.django.compat import TaskResultStatus
    from jobdef.runtime.errors import HandlerCrashed

    tasks, backend = suite
    result = tasks.hang.enqueue()
    log_path = tmp_path / "worker.log"
    with log_path.open("w", encoding="utf-8") as log:
        flags = ("--concurrency", "1", "--grace", "60s", "--log-level", "info")
        process = start_worker(project, backend, *flags, log=log)
    try:
        eventually(lambda: _running_now(result), what="the task to run")
        process.send_signal(signal.SIGINT)
        eventually(lambda: " draining: " in log_path.read_text("utf-8"), what="the drain")
        assert _running_now(result)  # the first signal drains: the task runs on
        process.send_signal(signal.SIGINT)
        code, _out, _err = finish(process, timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert code == 0, log_path.read_text("utf-8")
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    [error] = result.errors
    assert error.exception_class is HandlerCrashed
    assert result.attempts == 1


def test_db_three_workers_run_each_task_once(suite: Any, project: Project) -> None:
    from jobdef.contrib.django.compat import TaskResultStatus

    tasks, backend = suite
    results = [tasks.sleep_for.enqueue(0.1) for _ in range(10)]
    workers = [
        start_worker(project, backend, "--burst", "--concurrency", "2", "--log-level", "info")
        for _ in range(3)
    ]
    logs = ""
    for process in workers:
        code, _out, err = finish(process, timeout=120)
        assert code == 0, err
        logs += err
    for result in results:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL
        assert (result.attempts, len(result.worker_ids)) == (1, 1)
        assert logs.count(f" Task id={result.id} path=tests.tasks.sleep_for state=RUNNING") == 1


def _tests_of(path: Path) -> dict[str, list[str]]:
    """Each ``*TestCase`` class of ``path`` with its ``test_`` methods."""
    found: dict[str, list[str]] = {}
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.ClassDef) and node.name.endswith("TestCase"):
            found[node.name] = [
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                and item.name.startswith("test_")
            ]
    return found


def _defines(path: Path, name: str) -> bool:
    return any(
        isinstance(node, ast.FunctionDef) and node.name == name
        for node in ast.parse(path.read_text("utf-8")).body
    )


def test_every_test_of_the_database_backend_is_ported_or_not_applicable() -> None:
    from test_upstream_contract import DIFFERS, NAMES

    if not DATABASE_TESTS.is_file():
        pytest.skip(f"the database backend's tests are not at {DATABASE_TESTS}")
    theirs = _tests_of(DATABASE_TESTS)
    listed = [*PORTED, *NOT_APPLICABLE]
    assert len(listed) == len(set(listed))
    for cls, methods in theirs.items():
        for method in methods:
            name = f"{cls}.{method}"
            assert cls in NOT_APPLICABLE or name in listed, f"{name} is neither ported nor listed"
    for name in listed:
        cls, _, method = name.partition(".")
        assert cls in theirs, name
        assert not method or method in theirs[cls], name
    for name, ours in PORTED.items():
        if ours.startswith("upstream:"):
            run = ours.removeprefix("upstream:")
            assert run in NAMES, f"{name}: {run} is not run"
            assert run not in DIFFERS, f"{name}: {run} does not pass"
        elif "::" in ours:
            path, _, test = ours.partition("::")
            assert _defines(TESTS / path, test), f"{name}: {ours} is no test"
        else:
            assert _defines(Path(__file__), ours), f"{name}: {ours} is no test here"
