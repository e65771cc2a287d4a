"""The worker's outbox service: keeps the sender thread running beside the job loop.

The worker ticks its maintenance services from its own loop, so the tick here
only starts the :class:`~jobdef.notify.sender.SenderThread` and restarts it if
it ever died; deliveries happen in that thread and never hold up a job.
Building the service checks every channel the sheets use, so a missing
environment variable stops the worker at start with one clear error.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend, fail_fast
from jobdef.notify.checks import build_channels
from jobdef.notify.sender import LOGGER, SenderSettings, SenderThread

if TYPE_CHECKING:
    from jobdef.runtime.maintenance import MaintenanceContext


class OutboxService:
    """Maintenance service ``outbox-sender``: delivery of the outbox in a thread of its own."""

    name = "outbox-sender"
    interval = 5.0

    def __init__(
        self,
        ctx: MaintenanceContext,
        environ: Mapping[str, str] | None = None,
        settings: SenderSettings | None = None,
    ) -> None:
        self.channels = build_channels(ctx.registry, os.environ if environ is None else environ)
        self.ctx = ctx
        self.settings = settings
        self._thread: SenderThread | None = None

    def _opener(self) -> Callable[[], Backend]:
        # A connection of its own, to the store the worker's is open at.
        url = self.ctx.backend.url
        return lambda: _own_backend(url, self.ctx.clock)

    @property
    def held(self) -> int:
        """Messages the sender holds for a digest (claimed, not yet sent)."""
        sender = self._thread.sender if self._thread is not None else None
        return 0 if sender is None else sender.held

    def tick(self, now: float) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        if self._thread is not None:
            LOGGER.error("the outbox sender thread stopped; starting it again")
        opener = self._opener()
        rng = random.Random(self.ctx.rng.random())  # the thread draws from its own source
        telemetry = self.ctx.telemetry
        self._thread = SenderThread(
            opener,
            self.channels,
            self.settings,
            clock=self.ctx.clock,
            rng=rng,
            observe=None if telemetry is None else telemetry.outbox_outcome,
        )
        self._thread.start()

    def close(self, timeout: float = 30.0) -> None:
        """Stop the sender after a last round; what it could not send waits in the outbox."""
        if self._thread is not None:
            self._thread.stop(timeout)


def _own_backend(url: str, clock: Callable[[], float]) -> Backend:
    """The sender's store, which reports a lost server at once, as the worker's does: a
    round waiting for the server would hold up the worker's stop, which joins the thread."""
    backend = open_backend(url, clock=clock, migrate=False)
    fail_fast(backend)
    return backend
