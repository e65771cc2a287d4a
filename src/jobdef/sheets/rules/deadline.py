"""Deadline (JD221, JD222): the worst-case retry schedule must fit what the requester can wait."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from jobdef.policy.backoff import retry_timeline
from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.rules.base import Rule, human
from jobdef.sheets.rules.context import Context

if TYPE_CHECKING:
    from jobdef.policy.model import JobPolicy

OVER_DEADLINE = Rule(
    "JD221",
    "worst-case-over-deadline",
    "error",
    "If every wait is at its jitter maximum and every attempt times out, the schedule "
    "must still end before the deadline.",
)
TIMEOUT_NOT_BELOW_DEADLINE = Rule(
    "JD222",
    "timeout-not-below-deadline",
    "error",
    "One attempt allowed to run past the deadline leaves no room for any retry.",
)
RULES = (OVER_DEADLINE, TIMEOUT_NOT_BELOW_DEADLINE)


def _with_cap(policy: JobPolicy, cap: float) -> JobPolicy:
    return dataclasses.replace(policy, backoff=dataclasses.replace(policy.backoff, max=cap))


def fitting_cap(policy: JobPolicy) -> float | None:
    """The largest backoff.max (whole seconds) that makes the worst case fit, or None."""
    deadline = policy.deadline
    assert deadline is not None
    if retry_timeline(_with_cap(policy, 0.0)).worst_case > deadline:
        return None  # the timeouts alone do not fit
    rows = retry_timeline(policy).rows
    low, high = 0.0, max((row.wait_max for row in rows), default=0.0)
    if math.isinf(high):
        high = deadline
    for _ in range(60):
        middle = (low + high) / 2
        if retry_timeline(_with_cap(policy, middle)).worst_case <= deadline:
            low = middle
        else:
            high = middle
    return float(math.floor(low)) if low >= 1 else round(low, 3)


def check(context: Context) -> Iterator[Diagnostic]:
    fmt = human
    for doc, policy in context.jobs:
        deadline = policy.deadline
        if deadline is None:
            continue
        if policy.timeout >= deadline:
            yield TIMEOUT_NOT_BELOW_DEADLINE.at_origin(
                context.where(doc, policy, "timeout"),
                f"timeout ({fmt(policy.timeout)}) is not below deadline ({fmt(deadline)}): "
                "one attempt may use the whole deadline and no retry fits; lower timeout "
                "or raise deadline",
            )
            continue
        timeline = retry_timeline(policy)
        if timeline.fits_deadline:
            continue
        fits = sum(1 for row in timeline.rows if row.latest_end <= deadline)
        fixes = [f"max_attempts: {fits}"]
        cap = fitting_cap(policy) if policy.max_attempts > 1 else None
        if cap is not None and cap >= policy.backoff.initial and cap > 0:
            fixes.append(f"backoff.max: {fmt(cap)}")
        over = timeline.worst_case - deadline
        yield OVER_DEADLINE.at_origin(
            context.where(doc, policy, "deadline"),
            f"the worst case takes {fmt(timeline.worst_case)} (every wait at its jitter "
            f"maximum, all {policy.max_attempts} attempts running to the {fmt(policy.timeout)} "
            f"timeout), {fmt(over)} over the deadline of {fmt(deadline)}; it fits with "
            + " or ".join(fixes)
            + " (or raise the deadline)",
        )
