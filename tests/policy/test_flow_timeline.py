"""A workflow's worst case: the longest path, each step at its job's worst case with lost
attempts counted (each back only after the lease and a reclaim)."""

from __future__ import annotations

import pytest

from jobdef.policy.backoff import retry_timeline
from jobdef.policy.flow_timeline import flow_timeline
from jobdef.policy.model import BackoffPolicy, JobPolicy
from jobdef.policy.workflow import ArgSource, Step, WorkflowPolicy

ONCE = JobPolicy(name="once", handler="app:once", max_attempts=1, timeout=10.0)
TWICE = JobPolicy(
    name="twice",
    handler="app:twice",
    max_attempts=2,
    timeout=10.0,
    backoff=BackoffPolicy(strategy="fixed", initial=5.0),
)
JOBS = {job.name: job for job in (ONCE, TWICE)}


def diamond(deadline: float | None = None) -> WorkflowPolicy:
    """a -> b, a -> c, (b, c) -> d, and finally."""
    steps = {
        "a": Step("a", "once"),
        "b": Step("b", "twice", after={"a": "cancel"}),
        "c": Step("c", "once", after={"a": "run"}),
        "d": Step("d", "once", after={"b": "cancel", "c": "ignore"}),
        "finally": Step("finally", "once", is_finally=True),
    }
    return WorkflowPolicy(name="diamond", steps=steps, deadline=deadline)


def test_each_step_takes_its_jobs_worst_case_with_every_attempt_lost() -> None:
    # once: 10 s timeout + 30 s lease + 2 s reclaim. twice: 10 + 5 + 10, and 32 s per lost attempt.
    timeline = flow_timeline(diamond(), JOBS)
    by_step = {s.name: (s.latest_start, s.worst, s.latest_end) for s in timeline.steps}
    assert by_step == {
        "a": (0.0, 42.0, 42.0),
        "b": (42.0, 89.0, 131.0),
        "c": (42.0, 42.0, 84.0),
        "d": (131.0, 42.0, 173.0),
        "finally": (173.0, 42.0, 215.0),
    }
    assert timeline.critical_path == ("a", "b", "d", "finally")
    assert timeline.worst_case == 215.0
    assert [s.name for s in timeline.steps if s.on_critical_path] == ["a", "b", "d", "finally"]


def test_the_deadline_verdict_and_a_longer_lease() -> None:
    assert flow_timeline(diamond(deadline=215.0), JOBS).fits_deadline is True
    assert flow_timeline(diamond(deadline=214.0), JOBS).fits_deadline is False
    assert flow_timeline(diamond(), JOBS).fits_deadline is None
    longer = flow_timeline(diamond(), JOBS, lease=60.0)
    # Five attempts on the critical path (a, b twice, d, finally), each lost one 30 s later.
    lost_attempts = 1 + 2 + 1 + 1
    assert longer.worst_case - 215.0 == 30.0 * lost_attempts
    assert longer.lease == 60.0


@pytest.mark.parametrize("on_reclaim", ["retry", "fail"])
def test_the_lost_bound_holds_every_mix_of_lost_and_failed_attempts(on_reclaim: str) -> None:
    job = JobPolicy(
        name="mixed",
        handler="app:mixed",
        max_attempts=4,
        timeout=7.0,
        backoff=BackoffPolicy(strategy="exponential", initial=3.0, jitter="full"),
        on_reclaim=on_reclaim,  # type: ignore[arg-type]
    )
    timeline = retry_timeline(job)
    last = len(timeline.rows)
    # The latest end of attempt n with k earlier attempts lost, itself lost or not.
    ends = [
        timeline.latest_start_after(n, k) + job.timeout + (timeline.lost_slack if lost else 0)
        for n in range(1, last + 1)
        for k in range(n if on_reclaim == "retry" else 1)
        for lost in (False, True)
    ]
    assert max(ends) == timeline.worst_case_lost
    expected = timeline.worst_case + (last if on_reclaim == "retry" else 1) * timeline.lost_slack
    assert timeline.worst_case_lost == expected


def test_order_puts_parents_first_and_finally_last() -> None:
    flow = diamond()
    assert flow.order() == ("a", "b", "c", "d", "finally")
    assert flow.ancestors("d") == {"a", "b", "c"}
    assert flow.ancestors("finally") == {"a", "b", "c", "d"}
    assert flow.roots() == ("a",)
    assert flow.children("a") == ("b", "c")
    assert ArgSource(path=("steps", "a", "result", "id")).step == "a"
    assert ArgSource(path=("args", "id")).step is None
