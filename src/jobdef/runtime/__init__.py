"""Running jobs: the queue API, the worker and what handlers receive.

``connect(url, registry)`` returns a :class:`Queue` to enqueue with;
:class:`Worker` runs the jobs; handlers are called as ``handler(ctx, **args)``
with a :class:`Context`, and :func:`first_run` makes a re-run harmless.
"""

from __future__ import annotations

from jobdef.runtime.context import Context
from jobdef.runtime.idempotency import first_run
from jobdef.runtime.queue import Queue, connect
from jobdef.runtime.worker import Worker, WorkerStats

__all__ = ["Context", "Queue", "Worker", "WorkerStats", "connect", "first_run"]
