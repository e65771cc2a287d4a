"""The tasks framework's own test suite, run against JobdefBackend on SQLite and PostgreSQL.

The test classes of the ``django-tasks`` 0.12.0 backport (``TaskTestCase``,
``DummyBackendTestCase``, ``ImmediateBackendTestCase``) are imported from
``../shared/external/django-tasks`` as they are, never copied here; each runs with
``TASKS`` pointed at :class:`~jobdef.contrib.django.JobdefBackend` on one of the test
project's databases, and the tasks it enqueues run under the sheets of
``upstream_jobdefs/``. Where the class stands for a backend that runs a task when it
is enqueued (``ImmediateBackend``, the ``immediate`` backend of ``TaskTestCase``), the
backend is :class:`upstream_suite.WorkedBackend`: ``enqueue`` runs a real ``jobdef worker --burst``
before it answers. The suite is absent: every test skips (under ``CI=true`` a skip
fails the run, :mod:`tests.conftest`).

:data:`NOT_APPLICABLE` lists the tests that state no contract of a backend that
stores jobs and runs them in workers, each with its reason; :data:`DIFFERS` the ones
that fail because JobdefBackend does otherwise, each with why (docs/django.md's
contract table says the same). Every other test must pass.
"""

from __future__ import annotations

import ast
import unittest
from collections.abc import Iterator
from typing import Any

import pytest
from jd_support import Project
from upstream_suite import CLASSES, SUITE, UPSTREAM, imported, running, tasks_setting

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


@pytest.fixture(scope="module")
def upstream() -> Iterator[dict[str, Any]]:
    """The upstream test modules (:func:`upstream_suite.imported`)."""
    if not NAMES:
        pytest.skip(f"the django-tasks test suite is not at {UPSTREAM}")
    with imported() as modules:
        yield modules


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
        TASKS=tasks_setting(kind, alias, project), ROOT_URLCONF="tests.urls"
    )
    return settings(swapped)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES or ["suite-absent"])
def test_upstream(name: str, engine_alias: str, project: Project, upstream: dict[str, Any]) -> None:
    running.update(project=project, alias=engine_alias)
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
