"""The flow sweeper: settles the flows that no step's end can settle any more.

A step's end settles its flow in the same transaction
(:mod:`jobdef.backends.flows`), so in the normal course nothing is left for this
service. It is the proof that nothing can wait for ever when rows go missing
under a flow: a parent deleted or pruned by hand, a flow row removed, a step
whose end was written without its flow. Each tick settles every running flow with
no step queued or running (its waiting steps are released or cancelled, and the
flow ends once every step has), cancels the flows past their deadline, and
cancels the waiting steps of flows that are gone. Every move is under the flow's
lock and idempotent, so two workers sweeping at once do no harm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # this package's __init__ imports this module
    from jobdef.runtime.maintenance import MaintenanceContext


class FlowSweeper:
    """Maintenance service ``flows``: every ``interval`` seconds, one sweep."""

    name = "flows"

    def __init__(self, ctx: MaintenanceContext, interval: float = 10.0, limit: int = 100) -> None:
        self.ctx = ctx
        self.interval = interval
        self.limit = limit

    def tick(self, now: float) -> tuple[int, int]:
        settled, orphans = self.ctx.backend.sweep_flows(self.limit)
        if settled or orphans:
            self.ctx.log.info(
                "flows: settled %d flow(s) no step's end could settle, cancelled %d "
                "waiting step(s) of flows that are gone",
                settled,
                orphans,
            )
        if settled:
            self.ctx.made_runnable()  # a settled flow may have released waiting steps
        return settled, orphans
