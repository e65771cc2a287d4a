"""jobdef as the backend of Django's tasks framework, on the application's own database.

Install ``jobdef[django]``, add ``"jobdef.contrib.django"`` to ``INSTALLED_APPS`` (and
``"django_tasks"`` on Django 5.2, where the ``django-tasks`` backport provides the
framework that Django 6.0 ships as ``django.tasks``), then::

    TASKS = {
        "default": {
            "BACKEND": "jobdef.contrib.django.JobdefBackend",
            "OPTIONS": {"sheets": BASE_DIR / "jobdefs"},
        }
    }

A ``@task`` runs under the sheet whose ``handler`` names it; ``manage.py check``
validates the sheets and finds tasks without one; ``manage.py jobdef_worker`` runs
them; the admin shows jobs, attempts and the outbox. docs/django.md tells the rest.

The names are imported on first use, so listing the app costs nothing until then.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobdef.contrib.django.backend import JobdefBackend
    from jobdef.contrib.django.calls import TaskArgsError
    from jobdef.contrib.django.task import JobContext, JobdefTask, current_context

_HOMES = {
    "JobdefBackend": "jobdef.contrib.django.backend",
    "JobdefTask": "jobdef.contrib.django.task",
    "JobContext": "jobdef.contrib.django.task",
    "TaskArgsError": "jobdef.contrib.django.calls",
    "current_context": "jobdef.contrib.django.task",
}

__all__ = ["JobContext", "JobdefBackend", "JobdefTask", "TaskArgsError", "current_context"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'jobdef.contrib.django' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
