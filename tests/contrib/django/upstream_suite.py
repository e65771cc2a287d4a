"""The ``django-tasks`` test suite beside the checkout, for the tests that run it against
JobdefBackend (test_upstream_contract, test_upstream_database_backend).

The suite is read in place from ``../shared/external/django-tasks`` (see its
SOURCE.txt), never copied here; the tasks it enqueues run under the sheets of
``upstream_jobdefs/``, in real ``jobdef worker`` processes (:func:`run_worker`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

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

# The project and engine the running upstream test uses (WorkedBackend reads them).
running: dict[str, Any] = {}


class WorkedBackend(JobdefBackend):
    """JobdefBackend whose ``enqueue`` runs a burst worker before it answers.

    The framework's ImmediateBackend has run the task when ``enqueue`` returns; this is
    the same promise kept by a real ``jobdef worker`` process, so the tests written for
    it read the outcome the worker stored.
    """

    def enqueue(self, task: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        result = super().enqueue(task, args, kwargs)
        run_worker(running["project"], self)
        return self.get_result(result.id)


def start_worker(
    project: Project, backend: JobdefBackend, *flags: str, log: IO[str] | None = None
) -> subprocess.Popen[str]:
    """A ``jobdef worker`` process for the suite's tasks in ``backend``'s store; its log
    to ``log`` when given, else to a pipe."""
    command = [sys.executable, "-m", "jobdef", "worker", "--db", backend.database_url]
    return subprocess.Popen(
        [*command, "--poll", "50ms", "--log-level", "warning", *flags],
        env=project.worker_env(**_env(), JDPROJECT_DB=backend.database),
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if log is None else log,
        text=True,
        start_new_session=True,
    )


def run_worker(project: Project, backend: JobdefBackend, *flags: str) -> str:
    """A ``jobdef worker --burst`` for the suite's tasks in ``backend``'s store; its log."""
    code, _out, err = finish(start_worker(project, backend, "--burst", *flags), timeout=120)
    assert code == 0, err
    return err


def _env() -> dict[str, str]:
    """The worker's: the suite's ``tests`` package on its path, the sheets of its tasks
    (``--sheets`` defaults to the project backend's, which JDPROJECT_SHEETS sets)."""
    paths = [str(UPSTREAM), str(HERE), str(REPO / "src"), os.environ.get("PYTHONPATH", "")]
    return {"JDPROJECT_SHEETS": str(SHEETS), "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def tasks_setting(kind: str, alias: str, project: Project) -> dict[str, Any]:
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


@contextmanager
def imported() -> Iterator[dict[str, Any]]:
    """The upstream test modules, imported with the suite's ``tests`` package first on
    the path. While they run, the tasks of the process are theirs only (the test
    project's, made by other tests, have no sheet here: ``check()`` would name them);
    afterwards the test project's are back and the suite's forgotten."""
    if not SUITE.is_dir():
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
