"""A workflow's worst case: the longest path through its steps, each at its job's worst.

Each step is taken at :attr:`~jobdef.policy.backoff.Timeline.worst_case_lost` of its
job's retry timeline (the one timeline function the jobs' explain, docs and the
dashboard's plan use): every wait at its jitter maximum, every attempt running to
its timeout, and lost attempts back only after the lease + a reclaim. A step
starts when the last of its parents ended (they release it in the same
transaction as their own end); ``finally`` starts when every other step ended.
What the bound does not hold is the time a released step waits for a free
worker: a busy queue adds to it, as it does to a single job's timeline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from jobdef.policy.backoff import retry_timeline
from jobdef.policy.leases import DEFAULT_LEASE, RECLAIM_INTERVAL
from jobdef.policy.model import JobPolicy
from jobdef.policy.workflow import WorkflowPolicy


@dataclass(frozen=True, slots=True)
class StepBound:
    """One step on the flow's worst-case timeline, seconds from the flow's start."""

    name: str
    job: str
    latest_start: float
    worst: float  # the step's own worst case (its job's timeline, lost attempts counted)
    latest_end: float
    on_critical_path: bool


@dataclass(frozen=True, slots=True)
class FlowTimeline:
    """Every step's latest start and end, and the path that makes the worst case."""

    steps: tuple[StepBound, ...]  # in the flow's order
    critical_path: tuple[str, ...]
    deadline: float | None
    lease: float = DEFAULT_LEASE
    reclaim_interval: float = RECLAIM_INTERVAL

    @property
    def worst_case(self) -> float:
        return max((s.latest_end for s in self.steps), default=0.0)

    @property
    def fits_deadline(self) -> bool | None:
        return None if self.deadline is None else self.worst_case <= self.deadline

    def step(self, name: str) -> StepBound:
        return next(s for s in self.steps if s.name == name)


def flow_timeline(
    flow: WorkflowPolicy,
    jobs: Mapping[str, JobPolicy],
    *,
    lease: float = DEFAULT_LEASE,
    reclaim_interval: float = RECLAIM_INTERVAL,
) -> FlowTimeline:
    """The worst-case timeline of ``flow``; a step whose job ``jobs`` lacks counts as
    taking no time (validation refuses such a flow)."""
    worst: dict[str, float] = {}
    start: dict[str, float] = {}
    end: dict[str, float] = {}
    via: dict[str, str | None] = {}
    order = flow.order()
    for name in order:
        step = flow.steps[name]
        job = jobs.get(step.job)
        worst[name] = (
            0.0
            if job is None
            else retry_timeline(job, lease=lease, reclaim_interval=reclaim_interval).worst_case_lost
        )
        parents = [p for p in (order if step.is_finally else step.after) if p in end]
        latest = max(parents, key=lambda p: end[p], default=None)
        via[name] = latest
        start[name] = 0.0 if latest is None else end[latest]
        end[name] = start[name] + worst[name]
    path: list[str] = []
    last = max(order, key=lambda n: end[n], default=None)
    while last is not None:
        path.append(last)
        last = via[last]
    critical = tuple(reversed(path))
    return FlowTimeline(
        steps=tuple(
            StepBound(
                name=n,
                job=flow.steps[n].job,
                latest_start=start[n],
                worst=worst[n],
                latest_end=end[n],
                on_critical_path=n in critical,
            )
            for n in order
        ),
        critical_path=critical,
        deadline=flow.deadline,
        lease=lease,
        reclaim_interval=reclaim_interval,
    )
