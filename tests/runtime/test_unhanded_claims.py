"""The claims a worker holds that no handler process has, named in the block its processes
read should it die (runtime.orphan.Unhanded): never a job a process has, and every claim
whose answer is not read yet."""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

import pytest

from jobdef.backends.records import ClaimOptions, ErrorInfo, JobRecord
from jobdef.runtime.orphan import Unhanded, _release, unhanded_claims
from jobdef.runtime.pool import Pool
from jobdef.runtime.queue import Queue
from jobdef.runtime.settings import WorkerSettings
from jobdef.runtime.wire import Task
from jobdef.runtime.worker import Worker


def test_a_claim_is_named_by_its_start_until_its_answer_is_read_then_by_its_jobs() -> None:
    named = Unhanded(multiprocessing.get_context("spawn"))
    named.sent(10.000001)
    named.sent(10.000002)
    named.sent(10.000002)  # a turn that could not be sent, made and waited for
    assert unhanded_claims(named.block) == ([10.000001, 10.000002], [])
    named.taken(10.000001, [(7, 1), (8, 1), (9, 2)])
    assert unhanded_claims(named.block) == ([10.000002], [(7, 1), (8, 1), (9, 2)])
    named.holding([(9, 2)])  # 7 and 8 went to the handler processes
    assert unhanded_claims(named.block) == ([10.000002], [(9, 2)])
    named.taken(10.000002, [])
    assert unhanded_claims(named.block) == ([], [])


def test_the_block_names_the_latest_claims_and_the_first_jobs_it_can_hold() -> None:
    named = Unhanded(multiprocessing.get_context("spawn"))
    stamps = [float(n) for n in range(Unhanded.STAMPS + 2)]
    for stamp in stamps:
        named.sent(stamp)  # answers lost: the oldest are left to the reclaimer
    jobs = [(job_id, 1) for job_id in range(1, Unhanded.IDS + 10)]
    named.holding(jobs)
    assert unhanded_claims(named.block) == (stamps[2:], jobs[: Unhanded.IDS])
    # Ids past what a double holds exactly are named exactly: a neighbour's id would be
    # a job a process may have.
    named.holding([(2**53 + 1, 1), (2**63 - 1, 3)])
    assert unhanded_claims(named.block)[1] == [(2**53 + 1, 1), (2**63 - 1, 3)]


class _CheckedPool(Pool):
    """A pool that notes, at each hand-out, the tasks that go and what the worker's block
    names at that moment."""

    handed: list[tuple[list[int], list[int]]]

    def dispatch(self, tasks: list[Task]) -> list[Task]:
        _, named = unhanded_claims(self.unhanded.block)
        self.handed.append(([task.job_id for task in tasks], [job_id for job_id, _ in named]))
        return super().dispatch(tasks)


class _NotedClaims:
    """The engine, noting for each claim whether the block named its start as it went out
    (waited for, or sent: a PostgreSQL worker pipelines its turns)."""

    def __init__(self, backend: Any, pools: list[Any]) -> None:
        self._backend = backend
        self._pools = pools
        self.named: list[bool] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def _note(self, options: ClaimOptions) -> None:
        stamps, _ = unhanded_claims(self._pools[0].unhanded.block)
        self.named.append(options.started_at in stamps)

    def complete_and_claim(
        self, leases: Any, notes: Any, options: ClaimOptions, results: Any = None
    ) -> tuple[list[bool], list[JobRecord]]:
        self._note(options)
        answer: tuple[list[bool], list[JobRecord]] = self._backend.complete_and_claim(
            leases, notes, options, results
        )
        return answer

    def send_turn(self, leases: Any, notes: Any, options: ClaimOptions, results: Any = None) -> Any:
        sender = getattr(self._backend, "send_turn", None)
        if sender is None:
            return None  # SQLite: the turn is made and waited for
        self._note(options)
        return sender(leases, notes, options, results)


@pytest.mark.every_engine
def test_a_worker_names_each_claim_before_it_goes_and_no_job_a_process_has(
    backend: Any, registry: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [
        r.id for r in Queue(backend, registry).enqueue_many("noop", ({"n": n} for n in range(300)))
    ]
    pools: list[_CheckedPool] = []

    def checked_pool(self: Worker, children: Any) -> Pool:
        pool = _CheckedPool(self.settings.concurrency, children, depth=self.settings.prefetch)
        pool.handed = []
        pools.append(pool)
        return pool

    monkeypatch.setattr(Worker, "_pool", checked_pool)
    # What the block names as each round of hand-outs begins: the jobs read, held back.
    before: list[int] = []
    dispatch = Worker._dispatch

    def noted_dispatch(self: Worker, pool: Pool) -> None:
        before.extend(job_id for job_id, _ in unhanded_claims(pool.unhanded.block)[1])
        dispatch(self, pool)

    monkeypatch.setattr(Worker, "_dispatch", noted_dispatch)
    engine = _NotedClaims(backend, pools)
    settings = WorkerSettings(burst=True, concurrency=2, prefetch=4)
    stats = Worker(engine, registry, settings).run()  # type: ignore[arg-type]
    assert stats.done == len(ids)
    [pool] = pools
    # Every claim was named by its start as it went out.
    assert len(engine.named) > 10
    assert all(engine.named)
    # Each job was named by its id once its claim's answer was read, until it went to a
    # process; none went while the block named it.
    handed = [job for jobs, _ in pool.handed for job in jobs]
    assert sorted(handed) == sorted(ids)
    assert set(before) == set(ids)
    assert all(not set(jobs) & set(named) for jobs, named in pool.handed)


@pytest.mark.every_engine
def test_a_named_job_claimed_again_under_the_same_worker_id_is_not_given_back(
    backend: Any, registry: Any, db_url: str
) -> None:
    """A worker restarted at once under the same id (an operator's --worker-id) may have
    reclaimed a job its dead self held back, and claimed it again (a later attempt), by
    the time the dead worker's processes release what it named: the attempt in the name
    fences that release, and the job runs on under its new claim."""
    [job] = Queue(backend, registry).enqueue_many("noop", [{"n": 1}])
    options = ClaimOptions(worker_id="w", lease_seconds=30, limit=1)
    [held] = backend.claim(options)  # named by the dead worker: (id, attempt 1)
    backend.retry(held.lease, ErrorInfo("LeaseExpired", "reclaimed"), backend.clock(), 0.0)
    [again] = backend.claim(options)  # the restarted worker's claim: attempt 2
    assert (again.id, again.attempt) == (job.id, 2)
    _release([], ([], [(held.id, held.attempt)], time.monotonic() - 1.0), "w", db_url)
    record = backend.get(job.id)
    assert (record.state, record.attempt, record.worker_id) == ("running", 2, "w")
