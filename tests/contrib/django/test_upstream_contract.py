"""The tasks framework's own test suite, run against JobdefBackend on SQLite and PostgreSQL.

The test classes of the ``django-tasks`` 0.12.0 backport (``TaskTestCase``,
``DummyBackendTestCase``, ``ImmediateBackendTestCase``) are imported from
``../shared/external/django-tasks`` as they are, never copied here; each runs with
``TASKS`` pointed at :class:`~jobdef.contrib.django.JobdefBackend` on one of the test
project's databases, and the tasks it enqueues run under the sheets of
``upstream_jobdefs/``. Where the class stands for a backend that runs a task when it
is enqueued (``ImmediateBackend``, the ``immediate`` backend of ``TaskTestCase``), the
backend is :class:`WorkedBackend`: ``enqueue`` runs a real ``jobdef worker --burst``
before it answers. The suite is absent: every test skips (under ``CI=true`` a skip
fails the run, :mod:`tests.conftest`).

:data:`NOT_APPLICABLE` lists the tests that state no contract of a backend that
stores jobs and runs them in workers, each with its reason; :data:`DIFFERS` the ones
that fail because JobdefBackend does otherwise, each with why (docs/django.md's
contract table says the same). Every other test must pass.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import unittest
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from jd_support import HERE, REPO, Project, finish

from jobdef.contrib.django.backend import JobdefBackend
from support.external import EXTERNAL

UPSTREAM = EXTERNAL / "django-tasks"
SUITE = UPSTREAM / "tests" / "tests"
SHEETS = HERE / "upstream_jobdefs"

# (module, class): what the class's TASKS stood for, and so what it is run against.
CLASSES = {
    ("test_tasks", "TaskTestCase"): "dummy",
    ("test_dummy_backend", "DummyBackendTestCase"): "dummy",
    ("test_immediate_backend", "ImmediateBackendTestCase"): "immediate",
}

_BACKEND_CLASS = "the test asserts the configured backend is the framework's own class"
_DUMMY_STORE = "it reads or clears DummyBackend's in-memory list (.results, .clear())"
_NO_RESULTS = "ImmediateBackend cannot read results back; JobdefBackend can (supports_get_result)"
_CALLER_RAISES = (
    "ImmediateBackend runs the task in the caller, so the task's KeyboardInterrupt reaches "
    "enqueue(); a worker records the interrupted attempt instead"
)
_INNER_SWAP = (
    "its inner override_settings swaps TASKS back to the framework's own backend, so "
    "the assertion is about that backend, not JobdefBackend"
)
_HELPERS = "it tests the package's own helper functions, which no backend provides"
_CUSTOM = "it tests a backend class of its own (CustomBackend), not the configured one"

NOT_APPLICABLE: dict[str, str] = {
    "TaskTestCase.test_using_correct_backend": _BACKEND_CLASS,
    "TaskTestCase.test_get_backend": _BACKEND_CLASS,
    "TaskTestCase.test_enqueue_task": _DUMMY_STORE,
    "TaskTestCase.test_enqueue_task_async": _DUMMY_STORE,
    "DummyBackendTestCase.test_using_correct_backend": _BACKEND_CLASS,
    "DummyBackendTestCase.test_enqueue_task": _DUMMY_STORE,
    "DummyBackendTestCase.test_enqueue_task_async": _DUMMY_STORE,
    "DummyBackendTestCase.test_refresh_result": _DUMMY_STORE,
    "DummyBackendTestCase.test_refresh_result_async": _DUMMY_STORE,
    "DummyBackendTestCase.test_clear": _DUMMY_STORE,
    "DummyBackendTestCase.test_validate_on_enqueue": _INNER_SWAP,
    "DummyBackendTestCase.test_validate_on_aenqueue": _INNER_SWAP,
    "ImmediateBackendTestCase.test_using_correct_backend": _BACKEND_CLASS,
    "ImmediateBackendTestCase.test_cannot_get_result": _NO_RESULTS,
    "ImmediateBackendTestCase.test_cannot_refresh_result": _NO_RESULTS,
    "ImmediateBackendTestCase.test_get_result_from_different_request": _NO_RESULTS,
    "ImmediateBackendTestCase.test_cannot_pass_run_after": (
        "ImmediateBackend cannot defer a task; JobdefBackend can (supports_defer)"
    ),
    "ImmediateBackendTestCase.test_throws_keyboard_interrupt": _CALLER_RAISES,
    "ImmediateBackendTestCase.test_validate_on_enqueue": _INNER_SWAP,
    "ImmediateBackendTestCase.test_validate_on_aenqueue": _INNER_SWAP,
    "CustomBackendTestCase": _CUSTOM,
    "CustomTaskTestCase": _CUSTOM,
    "DjangoCompatTestCase": _HELPERS,
    "IsModuleLevelFunctionTestCase": _HELPERS,
    "JSONNormalizeTestCase": _HELPERS,
    "RandomIdTestCase": _HELPERS,
    "ExceptionTracebackTestCase": _HELPERS,
}

_WORKER_LOGS = (
    "the task runs in a worker process, which writes the framework's django_tasks lines of "
    "its start and end (test_db_the_worker_writes_the_framework_log_lines); the enqueuing "
    "process logs the enqueue only"
)

_NOT_LOGGED = "no logs of level ERROR or higher triggered on django_tasks"

# name: (why, a line of the failure that shows it is that difference and no other)
DIFFERS: dict[str, tuple[str, str]] = {
    "TaskTestCase.test_task_error_invalid_exception": (
        _WORKER_LOGS,
        "no logs of level INFO or higher triggered on django_tasks",
    ),
    "TaskTestCase.test_task_error_unknown_module": (
        _WORKER_LOGS,
        "no logs of level INFO or higher triggered on django_tasks",
    ),
    "ImmediateBackendTestCase.test_catches_exception": (_WORKER_LOGS, "AssertionError: 0 != 1"),
    "ImmediateBackendTestCase.test_complex_exception": (_WORKER_LOGS, _NOT_LOGGED),
    "ImmediateBackendTestCase.test_complex_return_value": (_WORKER_LOGS, _NOT_LOGGED),
    "ImmediateBackendTestCase.test_enqueue_logs": (_WORKER_LOGS, "AssertionError: 1 != 3"),
    "ImmediateBackendTestCase.test_failed_logs": (_WORKER_LOGS, "AssertionError: 1 != 3"),
}


def _suite_tests() -> dict[str, list[str]]:
    """Each upstream test class of the suite's files, with its ``test_`` methods (read
    from the files, not imported: the classes need Django set up, which the ``project``
    fixture does); empty when the suite is absent."""
    found: dict[str, list[str]] = {}
    for path in sorted(SUITE.glob("test_*.py")):
        for node in ast.parse(path.read_text("utf-8")).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("TestCase"):
                found[node.name] = [
                    item.name
                    for item in node.body
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                    and item.name.startswith("test_")
                ]
    return found


SUITE_TESTS = _suite_tests()
RUN = {cls for _module, cls in CLASSES}
# What runs: every test of the classes run, but those not applicable.
NAMES = [
    f"{cls}.{method}"
    for cls, methods in SUITE_TESTS.items()
    if cls in RUN
    for method in methods
    if f"{cls}.{method}" not in NOT_APPLICABLE
]

# The project and engine the running upstream test uses (WorkedBackend reads them).
_running: dict[str, Any] = {}


class WorkedBackend(JobdefBackend):
    """JobdefBackend whose ``enqueue`` runs a burst worker before it answers.

    The framework's ImmediateBackend has run the task when ``enqueue`` returns; this is
    the same promise kept by a real ``jobdef worker`` process, so the tests written for
    it read the outcome the worker stored.
    """

    def enqueue(self, task: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        result = super().enqueue(task, args, kwargs)
        run_worker(_running["project"], self)
        return self.get_result(result.id)


def run_worker(project: Project, backend: JobdefBackend, *flags: str) -> str:
    """A ``jobdef worker --burst`` for the suite's tasks in ``backend``'s store; its log."""
    command = [sys.executable, "-m", "jobdef", "worker", "--db", backend.database_url]
    process = subprocess.Popen(
        [*command, "--burst", "--poll", "50ms", "--log-level", "warning", *flags],
        env=project.worker_env(**_env(), JDPROJECT_DB=backend.database),
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    code, _out, err = finish(process, timeout=120)
    assert code == 0, err
    return err


def _env() -> dict[str, str]:
    """The worker's: the suite's ``tests`` package on its path, the sheets of its tasks
    (``--sheets`` defaults to the project backend's, which JDPROJECT_SHEETS sets)."""
    paths = [str(UPSTREAM), str(HERE), str(REPO / "src"), os.environ.get("PYTHONPATH", "")]
    return {"JDPROJECT_SHEETS": str(SHEETS), "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def _tasks_setting(kind: str, alias: str, project: Project) -> dict[str, Any]:
    options: dict[str, Any] = {"sheets": str(SHEETS), "database": alias}
    if alias == "pg":
        options["schema"] = project.schema
    jobdef = {"BACKEND": "jobdef.contrib.django.JobdefBackend", "OPTIONS": options}
    worked = {**jobdef, "BACKEND": f"{__name__}.WorkedBackend"}
    if kind == "immediate":
        return {"default": {**worked, "QUEUES": []}}
    return {
        "default": {**jobdef, "QUEUES": ["default", "queue_1"]},
        "immediate": {**worked, "QUEUES": []},
        "missing": {"BACKEND": "does.not.exist"},
    }


@pytest.fixture(scope="module")
def upstream() -> Iterator[dict[str, Any]]:
    """The upstream test modules, imported with the suite's ``tests`` package first on
    the path. While they run, the tasks of the process are theirs only (the test
    project's, made by other tests, have no sheet here: ``check()`` would name them);
    afterwards the test project's are back and the suite's forgotten."""
    if not NAMES:
        pytest.skip(f"the django-tasks test suite is not at {UPSTREAM}")
    import importlib

    from django.utils.module_loading import autodiscover_modules

    from jobdef.contrib.django import task as task_module

    autodiscover_modules("tasks")  # the test project's, made now if no test made them yet
    saved = dict(task_module.made)
    task_module.made.clear()
    sys.path.insert(0, str(UPSTREAM))
    try:
        modules = {
            module: importlib.import_module(f"tests.tests.{module}") for module, _ in CLASSES
        }
        assert Path(modules["test_tasks"].__file__ or "").is_relative_to(UPSTREAM)
        yield modules
    finally:
        sys.path.remove(str(UPSTREAM))
        task_module.made.clear()
        task_module.made.update(saved)


def _run(cls: type[unittest.TestCase], method: str) -> unittest.TestResult:
    result = unittest.TestResult()
    unittest.TestSuite([cls(method)]).run(result)
    return result


def _outcome(result: unittest.TestResult) -> str | None:
    """None when the test passed; else its first failure or error, traceback and all."""
    for _test, text in [*result.errors, *result.failures]:
        return text
    if result.skipped:
        return f"skipped: {result.skipped[0][1]}"
    return None


def _swapped(upstream: dict[str, Any], name: str, alias: str, project: Project) -> Any:
    """The upstream class of ``name`` with TASKS pointed at JobdefBackend on ``alias``."""
    from django.test import override_settings

    cls_name = name.partition(".")[0]
    [(module, kind)] = [((m, k)) for (m, c), k in CLASSES.items() if c == cls_name]
    base = getattr(upstream[module], cls_name)
    attrs: dict[str, Any] = {"databases": {alias}, "__module__": base.__module__}
    if "setUp" in vars(base):
        # DummyBackend.clear() before each test: a store of jobs keeps its rows.
        attrs["setUp"] = lambda self: None
    swapped = type(cls_name, (base,), attrs)
    settings = override_settings(
        TASKS=_tasks_setting(kind, alias, project), ROOT_URLCONF="tests.urls"
    )
    return settings(swapped)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES or ["suite-absent"])
def test_upstream(name: str, engine_alias: str, project: Project, upstream: dict[str, Any]) -> None:
    _running.update(project=project, alias=engine_alias)
    cls = _swapped(upstream, name, engine_alias, project)
    outcome = _outcome(_run(cls, name.partition(".")[2]))
    if name in DIFFERS:
        why, shown = DIFFERS[name]
        assert outcome is not None, f"{name} passes now: remove it from DIFFERS"
        assert shown in outcome, outcome
        pytest.xfail(f"differs: {why}")
    assert outcome is None, outcome


def test_every_listed_test_is_in_the_suite(upstream: dict[str, Any]) -> None:
    """NOT_APPLICABLE and DIFFERS name tests the suite has; every test of a class not
    run is listed as not applicable, with the class or by name."""
    for name in [*NOT_APPLICABLE, *DIFFERS]:
        cls, _, method = name.partition(".")
        assert cls in SUITE_TESTS, name
        assert not method or method in SUITE_TESTS[cls], name
    for cls in SUITE_TESTS.keys() - RUN:
        assert cls in NOT_APPLICABLE, f"{cls} is neither run nor listed as not applicable"


# -- the database backend's behavioural tests (17bd95f), ported ---------------------------
#
# That backend left the package, so its test module does not import; these state what
# it showed of a backend that stores tasks in a database and runs them with a worker,
# on JobdefBackend with a real worker. Not ported: its model, admin, id_function, query
# counts and index plans, the db_worker command's options and output, and metadata,
# which are that backend's own (docs/django.md).


@pytest.fixture
def suite(
    upstream: dict[str, Any], project: Project, engine_alias: str
) -> Iterator[tuple[Any, JobdefBackend]]:
    """The suite's tasks module, with TASKS's default a JobdefBackend on the engine."""
    from django.test import override_settings

    from jobdef.contrib.django.compat import task_backends

    with override_settings(TASKS=_tasks_setting("dummy", engine_alias, project)):
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
