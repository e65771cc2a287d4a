"""Maintenance services: small jobs the worker runs on timers besides running handlers.

The contract of a service:

- It is built from a :class:`MaintenanceContext` (``factory(ctx)``, one of the
  factories in :data:`MAINTENANCE`), once per worker, when the worker is built.
- It has a ``name`` (for the log) and an ``interval``: the worker ticks it on
  its first turn, then again once ``interval`` seconds of the worker's clock
  have passed since the previous tick (the worker keeps when each service is
  next due; a busy turn may tick it late, never twice in one turn).
- ``tick(now)`` does one round of work at ``now`` (the worker's clock, epoch
  seconds). An exception is logged by the worker and the service ticks again
  after its interval; what a tick returns is ignored.
- Every worker runs every service, each tick safe beside another worker's
  because it goes through fenced or idempotent verbs; on an engine that elects
  a maintainer (PostgreSQL) the worker ticks only while it holds the lock,
  except a service whose ``every_worker`` is true (the lease reclaimer): its
  fenced moves need no election, and a frozen maintainer must not hold back
  the jobs of a dead worker until the maintenance lease lapses.
- A service that owns a thread or a connection may define ``close()``; the
  worker calls it when it stops.

Adding a service is writing its module here and adding its factory to
``_FACTORIES`` (which :data:`MAINTENANCE` lists). A service module imports the
context only for its type hints, so this package imports its services without an
import cycle; it imports them on first use of :data:`MAINTENANCE` or of a service
class, so a command that needs one service (``jobdef prune``: retention) does
not load the others.
"""

from __future__ import annotations

import importlib
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from jobdef.backends.protocol import Backend
from jobdef.policy.registry import Registry
from jobdef.telemetry.observer import WorkerTelemetry


@dataclass
class MaintenanceContext:
    """What a service may use: the store, the sheets, the clock, a seeded random source."""

    backend: Backend
    registry: Registry
    worker_id: str
    clock: Callable[[], float]
    rng: random.Random = field(default_factory=random.Random)
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("jobdef.worker"))
    # Where the services report what they record (reclaims, outbox deliveries, gauges).
    telemetry: WorkerTelemetry | None = None
    # Called when a round made jobs runnable (the scheduler's new slots, a reclaimed
    # job): an idle worker claims then, not at its next poll.
    made_runnable: Callable[[], None] = field(default=lambda: None)


class Service(Protocol):
    """One maintenance service."""

    name: str
    interval: float

    def tick(self, now: float) -> object:
        """Do one round of work; errors are logged by the worker and retried next tick
        (a :class:`~jobdef.errors.BackendError` in one line, without a traceback).

        The worker ignores what it returns (the scheduler's count of new slots is for tests).
        """


# The services every worker runs, each built from the worker's MaintenanceContext:
# (module, name) of each factory, in the order the worker ticks them.
_FACTORIES: tuple[tuple[str, str], ...] = (
    ("jobdef.runtime.maintenance.reclaim", "LeaseReclaimer"),
    ("jobdef.runtime.maintenance.retention", "RetentionPruner"),
    ("jobdef.runtime.maintenance.results", "ResultExpirer"),
    ("jobdef.runtime.maintenance.outbox", "OutboxService"),
    ("jobdef.runtime.maintenance.scheduler", "Scheduler.service"),
    ("jobdef.runtime.maintenance.flows", "FlowSweeper"),
)
_HOMES = {
    "LeaseReclaimer": "jobdef.runtime.maintenance.reclaim",
    "RetentionPruner": "jobdef.runtime.maintenance.retention",
    "ResultExpirer": "jobdef.runtime.maintenance.results",
    "OutboxService": "jobdef.runtime.maintenance.outbox",
    "Scheduler": "jobdef.runtime.maintenance.scheduler",
    "FlowSweeper": "jobdef.runtime.maintenance.flows",
}

if TYPE_CHECKING:
    from jobdef.runtime.maintenance.flows import FlowSweeper as FlowSweeper
    from jobdef.runtime.maintenance.outbox import OutboxService as OutboxService
    from jobdef.runtime.maintenance.reclaim import LeaseReclaimer as LeaseReclaimer
    from jobdef.runtime.maintenance.results import ResultExpirer as ResultExpirer
    from jobdef.runtime.maintenance.retention import RetentionPruner as RetentionPruner
    from jobdef.runtime.maintenance.scheduler import Scheduler as Scheduler

    MAINTENANCE: list[Callable[[MaintenanceContext], Service]]


def _factories() -> list[Callable[[MaintenanceContext], Service]]:
    found = []
    for module_name, path in _FACTORIES:
        target: Any = importlib.import_module(module_name)
        for part in path.split("."):
            target = getattr(target, part)
        found.append(target)
    return found


def __getattr__(name: str) -> Any:
    """``MAINTENANCE`` and the service classes, imported on first use.

    ``jobdef prune`` needs only :mod:`~jobdef.runtime.maintenance.retention`; importing
    that module runs this package first, and should not import the scheduler, the
    outbox sender (with the notification channels) and the reclaimer it never uses.
    """
    if name == "MAINTENANCE":
        value: Any = _factories()
    elif name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
