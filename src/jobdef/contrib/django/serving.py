"""Which backend of ``TASKS`` keeps the jobs of a worker's store, for what a task reads.

A ``@task`` names one backend (``"default"`` unless it says), but the worker that runs
it may serve another (``task.using(backend="pg")``): what the running task reads of its
own job (``context.task_result``, the signals' result) must come from the store the job
is in, the worker's ``--db``. Backends are recognised by what they have (a
``database_url`` and an ``engine()``), so this module imports neither the backend nor
the task module, which both use it.

A backend stores the worker's jobs when its URL is the worker's, or else when both
URLs lead to one store: one that holds the same id (migration 0008), however the
URLs spell its host (``localhost``, ``127.0.0.1``) or its path (relative, absolute,
through a symlink). Only backends of the same engine are asked, alias first.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from jobdef.errors import BackendError

# backend_for's answers, by (database URL, alias): the alias of the backend to use.
_serving: dict[tuple[str, str], str | None] = {}
# The id each store URL read holds (or why it could not be read), and why each backend of TASKS
# is not a worker store's, by that store's URL: what the signals' warning says.
_ids: dict[str, str | BackendError] = {}
_unmatched: dict[str, list[str]] = {}


def backend_for(database_url: str, alias: str) -> Any:
    """The backend whose store is ``database_url``, ``alias`` first; None when no backend
    of ``TASKS`` stores its jobs there (a test's own store, or a worker's ``--db`` that
    leads to none of them: :func:`why_unserved` says why). An empty ``database_url``
    is ``alias``'s."""
    from jobdef.contrib.django.compat import task_backends

    key = (database_url, alias)
    if key not in _serving:
        _serving[key] = _find(database_url, alias) if database_url else alias
    found = _serving[key]
    return None if found is None else task_backends()[found]


def why_unserved(database_url: str) -> list[str]:
    """Why each backend of ``TASKS`` is not the one of ``database_url`` (after a
    :func:`backend_for` that found none), one phrase each."""
    return list(_unmatched.get(database_url, []))


def _find(database_url: str, alias: str) -> str | None:
    backends = sorted(_jobdef_backends(), key=lambda b: b.alias != alias)
    reasons: list[str] = []
    for backend in backends:
        reason = _not_stored(backend, database_url)
        if reason is None:
            return str(backend.alias)
        reasons.append(f"TASKS[{backend.alias!r}] {reason}")
    _unmatched[database_url] = reasons
    return None


def _jobdef_backends() -> list[Any]:
    from jobdef.contrib.django.compat import task_backends

    handler = task_backends()
    found = (handler[alias] for alias in handler.settings)
    return [b for b in found if hasattr(type(b), "database_url") and callable(b.engine)]


def _not_stored(backend: Any, database_url: str) -> str | None:
    """None when ``backend`` keeps its jobs in the store at ``database_url``; else why not."""
    from jobdef.backends import describe_store

    try:
        own = str(backend.database_url)
    except ImproperlyConfigured as exc:
        return f"has no store ({exc})"
    if own == database_url:
        return None
    where = describe_store(own)
    if urlsplit(own).scheme != urlsplit(database_url).scheme:
        return f"stores its jobs in {where}, on another engine"
    theirs = _store_id(database_url)
    if isinstance(theirs, BackendError):
        return f"stores its jobs in {where}; the id of this store could not be read ({theirs})"
    try:
        mine = backend.engine().store_id()
    except BackendError as exc:
        return f"stores its jobs in {where}, whose store id could not be read ({exc})"
    if mine != theirs:
        return f"stores its jobs in {where}, another store (id {mine}, not {theirs})"
    return None


def _store_id(database_url: str) -> str | BackendError:
    """The id the store at ``database_url`` holds, read once (or why it cannot be)."""
    from jobdef.backends import open_backend

    if database_url not in _ids:
        try:
            engine = open_backend(database_url, create=False, migrate=False)
            try:
                _ids[database_url] = engine.store_id()
            finally:
                engine.close()
        except BackendError as exc:
            _ids[database_url] = exc
    return _ids[database_url]


def _forget(*, setting: str, **kwargs: Any) -> None:
    if setting in ("TASKS", "DATABASES"):
        _serving.clear()
        _ids.clear()
        _unmatched.clear()


setting_changed.connect(_forget)
