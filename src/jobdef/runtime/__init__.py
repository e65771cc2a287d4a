"""Running jobs: the queue API, the worker and what handlers receive.

``connect(url, registry)`` returns a :class:`Queue` to enqueue with;
:class:`Worker` runs the jobs, as its :class:`WorkerSettings` say; handlers are
called as ``handler(ctx, **args)`` with a :class:`Context`, and :func:`first_run`
makes a re-run harmless.

The names are imported on first use: a worker's child processes import
``jobdef.runtime.child`` and the handlers, and should not pay for the worker,
the queue API and the notification channels they never use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobdef.runtime.context import Context
    from jobdef.runtime.idempotency import first_run
    from jobdef.runtime.queue import Queue, connect
    from jobdef.runtime.settings import WorkerSettings
    from jobdef.runtime.worker import Worker, WorkerStats

_HOMES = {
    "Context": "jobdef.runtime.context",
    "first_run": "jobdef.runtime.idempotency",
    "Queue": "jobdef.runtime.queue",
    "connect": "jobdef.runtime.queue",
    "Worker": "jobdef.runtime.worker",
    "WorkerSettings": "jobdef.runtime.settings",
    "WorkerStats": "jobdef.runtime.worker",
}

__all__ = [
    "Context",
    "Queue",
    "Worker",
    "WorkerSettings",
    "WorkerStats",
    "connect",
    "first_run",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'jobdef.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
