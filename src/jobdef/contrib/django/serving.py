"""Which backend of ``TASKS`` keeps the jobs of a worker's store, for what a task reads.

A ``@task`` names one backend (``"default"`` unless it says), but the worker that runs
it may serve another (``task.using(backend="pg")``): what the running task reads of its
own job (``context.task_result``, the signals' result) must come from the store the job
is in, the worker's ``--db``. Backends are recognised by what they have (a
``database_url`` and an ``engine()``), so this module imports neither the backend nor
the task module, which both use it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

# backend_for's answers, by (database URL, alias): the alias of the backend to use.
_serving: dict[tuple[str, str], str | None] = {}


def backend_for(database_url: str, alias: str) -> Any:
    """The backend whose store is ``database_url``, ``alias`` first; None when no backend
    of ``TASKS`` stores its jobs there (a test's own store). An empty ``database_url``
    is ``alias``'s."""
    from jobdef.contrib.django.compat import task_backends

    key = (database_url, alias)
    if key not in _serving:
        found: str | None = alias
        if database_url:
            same = [b.alias for b in _jobdef_backends() if _stores(b, database_url)]
            found = alias if alias in same else (same[0] if same else None)
        _serving[key] = found
    found = _serving[key]
    return None if found is None else task_backends()[found]


def _jobdef_backends() -> list[Any]:
    from jobdef.contrib.django.compat import task_backends

    handler = task_backends()
    found = (handler[alias] for alias in handler.settings)
    return [b for b in found if hasattr(type(b), "database_url") and callable(b.engine)]


def _stores(backend: Any, database_url: str) -> bool:
    """Whether ``backend`` keeps its jobs at ``database_url`` (SQLite: the same file)."""
    try:
        own = str(backend.database_url)
    except ImproperlyConfigured:
        return False
    if own == database_url:
        return True
    prefix = "sqlite:///"
    if own.startswith(prefix) and database_url.startswith(prefix):
        files = [Path(url.removeprefix(prefix).partition("?")[0]) for url in (own, database_url)]
        return files[0].resolve() == files[1].resolve()
    return False


def _forget(*, setting: str, **kwargs: Any) -> None:
    if setting in ("TASKS", "DATABASES"):
        _serving.clear()


setting_changed.connect(_forget)
