"""The metrics gauges: queue depth, running, oldest queued age, dead jobs, outbox backlog.

A maintenance service, added by the worker only when it serves metrics: it reads
the whole store's state, so on an engine that elects a maintainer (PostgreSQL)
one worker at a time reads it, every ``interval`` seconds, however many workers
run; on SQLite (one host) each worker does. Three reads per tick
(:meth:`jobdef.telemetry.metrics.Metrics.read_gauges`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobdef.telemetry.gauges import read

if TYPE_CHECKING:  # this package's __init__ imports this module
    from jobdef.runtime.maintenance import MaintenanceContext


class GaugeReader:
    """Maintenance service ``metrics-gauges``."""

    name = "metrics-gauges"

    def __init__(self, ctx: MaintenanceContext) -> None:
        self.ctx = ctx
        telemetry = ctx.telemetry
        self.metrics = telemetry.metrics if telemetry is not None else None
        self.interval = telemetry.gauge_interval if telemetry is not None else 15.0

    def tick(self, now: float) -> None:
        if self.metrics is not None:
            # With the sheets: every job and queue they name has a series, 0 without rows.
            self.metrics.set_gauges(read(self.ctx.backend, self.ctx.registry), now)
