"""Retention pruning: delete finished jobs once their sheet's ``retention`` has passed,
then the ended flows none of whose steps' rows remain (a flow outlives its last step),
and the rows of workers that stopped heart-beating a day ago (``jobdef workers``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobdef.backends.records import RetentionRule
from jobdef.backends.workers import tracks_workers
from jobdef.policy.registry import Registry

if TYPE_CHECKING:  # this package's __init__ imports this module
    from jobdef.runtime.maintenance import MaintenanceContext


def retention_rules(registry: Registry) -> list[RetentionRule]:
    """One rule per job of the sheets; ``dead: until_resolved`` keeps dead rows (None)."""
    return [RetentionRule(p.name, p.retention.done, p.retention.dead) for p in registry]


class RetentionPruner:
    """Every few minutes, prune in batches per each sheet's retention."""

    name = "retention"

    def __init__(
        self, ctx: MaintenanceContext, interval: float = 300.0, batch_size: int = 1000
    ) -> None:
        self.ctx = ctx
        self.interval = interval
        self.batch_size = batch_size

    def tick(self, now: float) -> None:
        deleted = self.ctx.backend.prune(retention_rules(self.ctx.registry), self.batch_size)
        if deleted:
            self.ctx.log.info("pruned %d finished jobs past their retention", deleted)
        flows = self.ctx.backend.prune_flows(self.batch_size)
        if flows:
            self.ctx.log.info("pruned %d ended flows none of whose steps remain", flows)
        if tracks_workers(self.ctx.backend):
            gone = self.ctx.backend.prune_workers()
            if gone:
                self.ctx.log.info("removed %d stale workers from the workers table", gone)
