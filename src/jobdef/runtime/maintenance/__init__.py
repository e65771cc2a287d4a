"""Maintenance services: small jobs the worker runs on timers besides running handlers.

Each service is a class built from a :class:`MaintenanceContext` with an
``interval`` (seconds between ticks) and one ``tick(now)`` method. The worker
keeps them in one list, :data:`jobdef.runtime.worker.MAINTENANCE`; adding a
service is adding its class there. Every worker runs every service: each tick is
safe to run concurrently because it goes through fenced or idempotent verbs.
A service that owns a thread or a connection may define ``close()``; the worker
calls it when it stops.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from jobdef.backends.protocol import Backend
from jobdef.policy.registry import Registry


@dataclass
class MaintenanceContext:
    """What a service may use: the store, the sheets, the clock, a seeded random source."""

    backend: Backend
    registry: Registry
    worker_id: str
    clock: Callable[[], float]
    rng: random.Random = field(default_factory=random.Random)
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("jobdef.worker"))


class Service(Protocol):
    """One maintenance service."""

    name: str
    interval: float

    def tick(self, now: float) -> object:
        """Do one round of work; errors are logged by the worker and retried next tick.

        The worker ignores what it returns (the scheduler's count of new slots is for tests).
        """
