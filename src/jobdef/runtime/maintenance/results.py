"""Result retention: clear the stored results of done jobs once their sheet's
``result.retention`` has passed, while the rows stay until ``retention.done``.

A job whose results live as long as its row (no ``result.retention``, or one as
long as ``retention.done``) needs nothing here: pruning the row removes its
result. The others are cleared in bounded batches, each its own short
transaction, through an index that holds only the rows that have a result, so
a tick's cost follows the results it clears, not the jobs kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobdef.backends.records import ResultRetention
from jobdef.policy.registry import Registry

if TYPE_CHECKING:  # this package's __init__ imports this module
    from jobdef.runtime.maintenance import MaintenanceContext


def result_retentions(registry: Registry) -> list[ResultRetention]:
    """One rule per job whose stored results go before its done rows do."""
    rules = []
    for policy in registry:
        keep, done = policy.result.retention, policy.retention.done
        if policy.result.store and keep is not None and (done is None or keep < done):
            rules.append(ResultRetention(policy.name, keep))
    return rules


class ResultExpirer:
    """Every minute, clear the stored results past each sheet's ``result.retention``."""

    name = "results"

    def __init__(
        self, ctx: MaintenanceContext, interval: float = 60.0, batch_size: int = 1000
    ) -> None:
        self.ctx = ctx
        self.interval = interval
        self.batch_size = batch_size

    def tick(self, now: float) -> int:
        rules = result_retentions(self.ctx.registry)
        cleared = self.ctx.backend.expire_results(rules, self.batch_size) if rules else 0
        if cleared:
            self.ctx.log.info("cleared %d stored results past their result.retention", cleared)
        return cleared
