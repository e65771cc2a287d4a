"""What a child holds when its worker dies: every task it read and neither started nor had
recalled is given back, including the one its main thread reaches after the death."""

from __future__ import annotations

from jobdef.runtime.orphan import Holdings
from jobdef.runtime.wire import Batch, Task


def _task(seq: int) -> Task:
    return Task(seq, 100 + seq, 1, "noop", "rt_handlers:noop", {}, None, 3, 30.0)


def test_a_task_reached_after_the_worker_died_still_waits_to_be_given_back() -> None:
    holdings = Holdings()
    holdings.read(Batch([_task(1), _task(2), _task(3)]))
    with holdings.guard:
        assert holdings.may_start(1, recalled=0)
    # The watcher's first step when the worker dies (give_back), before it reads what waits.
    with holdings.guard:
        holdings.orphaned = True
    with holdings.guard:
        assert not holdings.may_start(2, recalled=0)
    assert sorted(holdings.waiting) == [2, 3]


def test_a_task_recalled_or_started_no_longer_waits() -> None:
    holdings = Holdings()
    holdings.read(Batch([_task(1), _task(2)]))
    with holdings.guard:
        assert not holdings.may_start(1, recalled=1)
        assert holdings.may_start(2, recalled=1)
    assert holdings.waiting == {}
