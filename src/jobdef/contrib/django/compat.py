"""The one place that knows where the tasks framework lives.

Django 6.0 ships it as ``django.tasks``; on Django 5.2 the ``django-tasks``
backport provides the same API as ``django_tasks``. Everything else imports the
names from here. They are typed ``Any``: Django ships no type information.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

import django

PACKAGE = "django.tasks" if django.VERSION >= (6, 0) else "django_tasks"

_base = import_module(f"{PACKAGE}.base")
_backends = import_module(f"{PACKAGE}.backends.base")
_exceptions = import_module(f"{PACKAGE}.exceptions")

BaseTaskBackend: Any = _backends.BaseTaskBackend
Task: Any = _base.Task
TaskContext: Any = _base.TaskContext
TaskError: Any = _base.TaskError
TaskResult: Any = _base.TaskResult
TaskResultStatus: Any = _base.TaskResultStatus
DEFAULT_TASK_PRIORITY: int = _base.DEFAULT_TASK_PRIORITY
TASK_MIN_PRIORITY: int = _base.TASK_MIN_PRIORITY
TASK_MAX_PRIORITY: int = _base.TASK_MAX_PRIORITY
DEFAULT_TASK_QUEUE_NAME: str = getattr(_base, "DEFAULT_TASK_QUEUE_NAME", "default")
# The framework's check of a call's args, which its TaskResult runs (django.utils.json
# on Django 6.0, django_tasks.utils in the backport; base imports it from either).
normalize_json: Any = _base.normalize_json
# Django 6.0 names it InvalidTask; the backport InvalidTaskError.
InvalidTask: Any = getattr(_exceptions, "InvalidTask", None) or _exceptions.InvalidTaskError
TaskResultDoesNotExist: Any = _exceptions.TaskResultDoesNotExist
InvalidTaskBackend: Any = (
    getattr(_exceptions, "InvalidTaskBackend", None) or _exceptions.InvalidTaskBackendError
)
_signals = import_module(f"{PACKAGE}.signals")
task_enqueued: Any = _signals.task_enqueued
task_started: Any = _signals.task_started
task_finished: Any = _signals.task_finished


def task_backends() -> Any:
    """The configured backends by alias (``TASKS``), as the framework holds them."""
    return import_module(PACKAGE).task_backends
