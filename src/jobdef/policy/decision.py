"""The classic sync / async / batch decision flow, answered in a sheet's ``decision:`` block.

The flow, first answer that decides wins (an unanswered question is skipped):

1. ``time_triggered: true`` -> **batch**: the clock starts the work, so the
   scheduler enqueues it.
2. ``result_needed_at_once: true`` -> the caller waits for the result:
   ``done_within_seconds: true`` -> **sync** (do it in the request; it need
   not be a job); ``done_within_seconds: false`` -> **async** (too slow to wait
   for: accept now, report back later).
3. ``calls_external_systems: true`` and ``must_accept_when_external_down: true``
   -> **async**: the queue absorbs the outage, retries later.
4. ``done_within_seconds: false`` -> **async**: long work does not belong in a
   request.
5. ``done_within_seconds: true`` -> **sync**: quick work with nothing forcing a
   queue is simplest done in place.
6. ``result_needed_at_once: false`` -> **async**: nobody waits, so it can run
   later.
7. Nothing answered that decides -> ``("sync", None)``: without a reason, do
   not make it a job.

:func:`recommend` is pure; ``jobdef validate`` warns (JD311) when a sheet's
``mode`` disagrees with a decided recommendation, naming the deciding answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from jobdef.policy.model import DecisionAnswers

Recommendation = Literal["sync", "async", "batch"]


def recommend(answers: DecisionAnswers) -> tuple[Recommendation, str | None]:
    """The mode the answers lead to and the name of the answer that decided it.

    The deciding answer is ``None`` only when no answer decides (then ``"sync"``).
    """
    if answers.time_triggered:
        return "batch", "time_triggered"
    if answers.result_needed_at_once:
        if answers.done_within_seconds is True:
            return "sync", "done_within_seconds"
        if answers.done_within_seconds is False:
            return "async", "done_within_seconds"
    if answers.calls_external_systems and answers.must_accept_when_external_down:
        return "async", "must_accept_when_external_down"
    if answers.done_within_seconds is False:
        return "async", "done_within_seconds"
    if answers.done_within_seconds is True:
        return "sync", "done_within_seconds"
    if answers.result_needed_at_once is False:
        return "async", "result_needed_at_once"
    return "sync", None
