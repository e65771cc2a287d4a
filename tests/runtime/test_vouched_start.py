"""A handler process starts a task it holds only while its worker vouches for the lease.

The worker renews its leases at each heartbeat round and then vouches for them
(``Pool.vouch``); a worker frozen past that (SIGSTOP, a suspended host) or cut
from its store vouches no more, and its processes, which do not freeze with it,
must not start what they hold: another worker may have reclaimed it and be
running it. Real handler processes of both kinds, one task at a time and many
coroutines at once.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from runtime_workers import HERE

from jobdef.runtime.child import ChildSettings
from jobdef.runtime.loop_pool import LoopPool
from jobdef.runtime.pool import Finished, Pool, Returned
from jobdef.runtime.wire import Task
from support import eventually

pytestmark = pytest.mark.slow

WAIT = "async_handlers:wait"


@pytest.fixture(autouse=True)
def _handlers_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    # The children are spawned: they find the handlers through PYTHONPATH.
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    monkeypatch.setenv("PYTHONPATH", path)


@pytest.fixture(params=["one_at_a_time", "coroutines"])
def pool(request: pytest.FixtureRequest, tmp_path: Path):
    settings = ChildSettings(f"sqlite:///{tmp_path / 'unused.db'}", handlers=(WAIT,))
    started = (
        Pool(1, settings) if request.param == "one_at_a_time" else LoopPool(1, settings, slots=5)
    )
    try:
        started.wait_ready(60, lambda: False)
        yield started
    finally:
        started.close()


def _tasks(pool: Pool, count: int) -> list[Task]:
    return [
        Task(pool.next_seq(), job_id, 1, "wait", WAIT, {"seconds": 0.0}, None, 1, 60.0)
        for job_id in range(1, count + 1)
    ]


def _nothing_started_for(pool: Pool, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if pool.poll(0.05) or pool.children[0].started()[0] != 0:
            return False
    return True


def test_held_tasks_wait_until_the_worker_vouches_again(pool: Pool) -> None:
    pool.vouch(time.monotonic() - 1.0)  # the worker's last round is a lease ago
    tasks = _tasks(pool, 2)
    assert pool.dispatch(tasks) == []
    assert _nothing_started_for(pool, 0.5)
    pool.vouch(time.monotonic() + 60.0)  # back, and its leases were kept
    finished: list[int] = []

    def both_finished() -> bool:
        finished.extend(e.task.job_id for e in pool.poll(0.05) if isinstance(e, Finished))
        return sorted(finished) == [1, 2]

    eventually(both_finished, what="the held tasks to run once vouched for", timeout=20)


def test_a_held_task_whose_lease_was_lost_is_taken_back_and_never_starts(pool: Pool) -> None:
    pool.vouch(time.monotonic() - 1.0)
    lost, other = _tasks(pool, 2)
    assert pool.dispatch([lost, other]) == []
    assert _nothing_started_for(pool, 0.3)
    events, started = pool.abandon(lost)  # back, the worker finds its lease gone
    assert started is False
    assert events == [Returned(other)]  # the other comes back to be handed out again
    pool.vouch(time.monotonic() + 60.0)
    assert _nothing_started_for(pool, 0.5)


def test_coroutines_held_back_start_in_the_order_they_came(tmp_path: Path) -> None:
    """The worker's recall takes back every task numbered above the last one started, so
    a task read after one held back must not start before it."""
    settings = ChildSettings(f"sqlite:///{tmp_path / 'unused.db'}", handlers=(WAIT,))
    pool = LoopPool(1, settings, slots=5)
    try:
        pool.wait_ready(60, lambda: False)
        pool.vouch(time.monotonic() - 1.0)
        first = Task(pool.next_seq(), 1, 1, "wait", WAIT, {"seconds": 2.0}, None, 1, 60.0)
        assert pool.dispatch([first]) == []
        assert _nothing_started_for(pool, 0.2)
        pool.vouch(time.monotonic() + 60.0)
        second = Task(pool.next_seq(), 2, 1, "wait", WAIT, {"seconds": 2.0}, None, 1, 60.0)
        assert pool.dispatch([second]) == []  # read at once, while the first waits its look
        eventually(lambda: len(pool._running(pool.children[0])) == 2, what="both start")
        started = pool._running(pool.children[0])
        assert started[first.seq] <= started[second.seq], started
    finally:
        pool.close()
