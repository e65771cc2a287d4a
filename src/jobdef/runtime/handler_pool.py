"""A worker's handler processes, as its settings ask, started before the worker itself.

The handler processes are fresh interpreters (the spawn start method): each starts
Python, imports the handlers and says it is ready, which takes longer than anything
else a starting worker does. :class:`~jobdef.runtime.worker.Worker` starts them
itself when it runs; ``jobdef worker`` starts them here first, as soon as it has read
the sheets, so that they boot while it imports the worker and opens the store (the
driver's import and the connection) rather than after, and hands them to
:meth:`Worker.run <jobdef.runtime.worker.Worker.run>`. This module imports neither the
worker nor a store's driver.
"""

from __future__ import annotations

import logging

from jobdef.policy.registry import Registry
from jobdef.runtime.child import ChildSettings
from jobdef.runtime.loop_pool import LoopPool
from jobdef.runtime.pool import Pool
from jobdef.runtime.results import result_rules
from jobdef.runtime.settings import WorkerSettings


def child_settings(
    store_url: str,
    registry: Registry,
    settings: WorkerSettings,
    *,
    worker_id: str,
    log_format: str,
) -> ChildSettings:
    """What each handler process of the worker ``worker_id`` starts with: the handlers of
    ``registry`` to import, and the log settings this process has (its root logger's
    level and file)."""
    return ChildSettings(
        store_url,
        handlers=tuple(sorted({policy.handler for policy in registry})),
        setup=settings.child_setup,
        worker_id=worker_id,
        log_level=logging.getLogger().level,
        log_format=log_format,
        log_file=_log_file(),
        results=result_rules(registry),
    )


def start_pool(settings: WorkerSettings, children: ChildSettings) -> Pool:
    """The handler processes, started: one job at a time each, or with
    ``async_per_process`` above 1, that many coroutine handlers at once each
    (:mod:`jobdef.runtime.loop_pool`)."""
    if settings.async_per_process > 1:
        return LoopPool(settings.concurrency, children, slots=settings.async_per_process)
    return Pool(settings.concurrency, children, depth=settings.prefetch)


def _log_file() -> str | None:
    """The file the root logger writes to, if any, so handler processes log there too."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            return handler.baseFilename
    return None
