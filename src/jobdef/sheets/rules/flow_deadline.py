"""Workflow deadline (JD371): the longest path through the steps, each step at its job's
worst case with lost attempts counted, must end before the flow's deadline.

The bound is :func:`jobdef.policy.flow_timeline.flow_timeline` with the workers'
default lease (``jobdef explain FLOW --lease`` computes with another).
"""

from __future__ import annotations

from collections.abc import Iterator

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.rules.base import Rule, human
from jobdef.sheets.rules.context import Context
from jobdef.sheets.rules.workflows import at, on_cycles

FLOW_OVER_DEADLINE = Rule(
    "JD371",
    "workflow-worst-case-over-deadline",
    "error",
    "Along the longest path, with every step at its worst retry timeline (lost attempts "
    "back after the lease and a reclaim), the flow must still end before its deadline.",
)
RULES = (FLOW_OVER_DEADLINE,)


def check(context: Context) -> Iterator[Diagnostic]:
    if not context.workflows:
        return  # and the timeline's module is not loaded
    from jobdef.policy.flow_timeline import flow_timeline

    jobs = {policy.name: policy for _, policy in context.jobs}
    for doc, flow in context.workflows:
        if flow.deadline is None or on_cycles(flow):
            continue
        if any(step.job not in jobs for step in flow.steps.values()):
            continue  # an unknown job (JD351) has no timeline to add up
        timeline = flow_timeline(flow, jobs)
        if timeline.fits_deadline:
            continue
        heaviest = max(
            (timeline.step(name) for name in timeline.critical_path), key=lambda s: s.worst
        )
        path = " -> ".join(
            f"{name} ({human(timeline.step(name).worst)})" for name in timeline.critical_path
        )
        yield FLOW_OVER_DEADLINE.at_origin(
            at(doc, ("deadline",)),
            f"workflow {flow.name!r} takes up to {human(timeline.worst_case)} along "
            f"{path}, each step at its worst (every wait at its jitter maximum, every "
            f"attempt to its timeout, lost attempts back after the default lease "
            f"{human(timeline.lease)} + a reclaim every {human(timeline.reclaim_interval)}), "
            f"over the deadline of {human(flow.deadline)}; raise deadline to at least "
            f"{human(timeline.worst_case)}, or shorten the path's longest step "
            f"{heaviest.name!r} (job {heaviest.job!r}: fewer attempts, a lower timeout or "
            "backoff.max)",
        )
