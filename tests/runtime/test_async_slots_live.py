"""Handler processes that run many ``async def`` handlers at once (``async_per_process``),
with real worker processes: jobs overlap far beyond the processes, a timeout cancels one
coroutine and spares the rest, a handler that blocks the loop gets its process killed and
every job in it recorded and retried per its sheet, queue limits stay exact, heartbeats and
return values are each job's, a lost lease cancels one coroutine only."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import TypeVar

import pytest
from runtime_workers import HERE, Workers, max_overlap, running_worker

from jobdef.backends.protocol import Backend
from jobdef.policy.model import BackoffPolicy, JobPolicy, QueuePolicy
from jobdef.policy.registry import Registry
from jobdef.policy.values import freeze
from jobdef.runtime import Queue
from jobdef.runtime.child import ChildSettings
from jobdef.runtime.loop_pool import LoopPool
from jobdef.runtime.pool import Finished, Killed
from jobdef.runtime.wire import Task
from support import eventually

pytestmark = [pytest.mark.slow, pytest.mark.every_engine]

HANDLERS = "async_handlers"  # tests/runtime/async_handlers.py; children import it by name


def job(
    name: str, handler: str, arg: str, *, queue: str = "default", timeout: float = 60
) -> JobPolicy:
    schema = {"type": "object", "properties": {arg: {}}, "required": [arg]}
    return JobPolicy(
        name=name,
        handler=f"{HANDLERS}:{handler}",
        queue=queue,
        timeout=timeout,
        max_attempts=3,
        backoff=BackoffPolicy(strategy="fixed", initial=0.0),
        args_schema=freeze(schema),
    )


def registry(*jobs: JobPolicy, queues: dict[str, QueuePolicy] | None = None) -> Registry:
    return Registry(jobs={j.name: j for j in jobs}, channels={}, queues=queues or {})


@pytest.fixture(autouse=True)
def _handlers_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    # The worker's children are spawned: they find the handlers through PYTHONPATH.
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.syspath_prepend(str(HERE))


def outcomes(backend: Backend, job_id: int) -> list[str | None]:
    return [attempt.outcome for attempt in backend.attempts(job_id)]


def all_done(backend: Backend, ids: list[int]) -> bool:
    return all(backend.get(job_id).state == "done" for job_id in ids)  # type: ignore[union-attr]


def test_two_processes_hold_two_hundred_waiting_jobs_at_once(db_url: str, backend: Backend) -> None:
    jobs = registry(job("wait", "wait", "seconds"))
    ids = [r.id for r in Queue(backend, jobs).enqueue_many("wait", [{"seconds": 0.5}] * 200)]
    with running_worker(db_url, jobs, concurrency=2, async_per_process=100):
        eventually(lambda: all_done(backend, ids), what="the 200 jobs are done", timeout=120)
    # Two processes one job at a time would hold two: these held far more at once.
    assert max_overlap(backend, ids) > 20
    for job_id in ids:
        assert outcomes(backend, job_id) == ["done"]
        assert backend.get(job_id).result == {"job": job_id, "waited": 0.5}  # type: ignore[union-attr]


def test_timeout_cancels_one_coroutine_and_its_neighbours_finish(
    db_url: str, backend: Backend
) -> None:
    jobs = registry(
        job("overrun", "wait_first", "seconds", timeout=1),
        job("wait", "wait", "seconds"),
    )
    queue = Queue(backend, jobs)
    overrun = queue.enqueue("overrun", {"seconds": 60}).id
    neighbours = [r.id for r in queue.enqueue_many("wait", [{"seconds": 2}] * 5)]
    with running_worker(db_url, jobs, concurrency=1, async_per_process=10):
        eventually(lambda: all_done(backend, [overrun, *neighbours]), what="every job done")
    attempts = backend.attempts(overrun)
    assert [a.outcome for a in attempts] == ["timeout", "done"]
    assert attempts[0].error is not None
    assert attempts[0].error.type == "jobdef.runtime.errors.AttemptTimedOut"
    assert "cancelled after running past its timeout of 1s" in attempts[0].error.message
    for job_id in neighbours:
        assert outcomes(backend, job_id) == ["done"]


def test_handler_blocking_the_loop_gets_its_process_killed_and_every_job_retried(
    db_url: str, backend: Backend
) -> None:
    jobs = registry(
        job("blocker", "block_first", "seconds", timeout=1),
        job("neighbour", "wait_first", "seconds"),
    )
    queue = Queue(backend, jobs)
    blocker = queue.enqueue("blocker", {"seconds": 60}).id
    neighbours = [r.id for r in queue.enqueue_many("neighbour", [{"seconds": 30}] * 4)]
    with running_worker(db_url, jobs, concurrency=1, async_per_process=10):
        eventually(lambda: all_done(backend, [blocker, *neighbours]), what="every job done")
    attempts = backend.attempts(blocker)
    assert [a.outcome for a in attempts] == ["timeout", "done"]
    assert attempts[0].error is not None
    assert attempts[0].error.type == "jobdef.runtime.errors.AttemptTimedOut"
    assert "did not end within 2s of its cancellation" in attempts[0].error.message
    for job_id in neighbours:
        # Killed with the process: a crashed attempt, retried per the sheet, none lost
        # and none run more often than that.
        attempts = backend.attempts(job_id)
        assert [a.outcome for a in attempts] == ["crashed", "done"]
        assert attempts[0].error is not None
        assert attempts[0].error.type == "jobdef.runtime.errors.HandlerCrashed"
        assert f"job {blocker} (blocker) held the event loop" in attempts[0].error.message


def test_queue_concurrency_limit_holds_with_async_slots(db_url: str, backend: Backend) -> None:
    jobs = registry(
        job("mail", "wait", "seconds", queue="mail"),
        queues={"mail": QueuePolicy("mail", concurrency=3)},
    )
    ids = [r.id for r in Queue(backend, jobs).enqueue_many("mail", [{"seconds": 0.3}] * 15)]
    with running_worker(db_url, jobs, concurrency=2, async_per_process=50):
        eventually(lambda: all_done(backend, ids), what="the mail jobs are done", timeout=60)
    # Slack: on PostgreSQL a claim's stamp can precede by milliseconds the completion
    # that freed its place (max_overlap says why).
    assert max_overlap(backend, ids, slack=0.005) == 3


def test_heartbeats_and_sync_handlers_beside_coroutines(db_url: str, backend: Backend) -> None:
    jobs = registry(job("beat", "beat", "steps"), job("nap", "nap", "seconds"))
    queue = Queue(backend, jobs)
    beats = [queue.enqueue("beat", {"steps": n}).id for n in (3, 5, 7)]
    naps = [r.id for r in queue.enqueue_many("nap", [{"seconds": 0.2}] * 3)]
    with running_worker(db_url, jobs, concurrency=2, async_per_process=10):
        eventually(lambda: all_done(backend, beats + naps), what="every job done")
    for job_id, steps in zip(beats, (3, 5, 7), strict=True):
        assert backend.get(job_id).progress == {"step": steps}  # type: ignore[union-attr]
    for job_id in beats + naps:
        assert outcomes(backend, job_id) == ["done"]


E = TypeVar("E")


def _first_events(pool: LoopPool, kind: type[E], what: str) -> list[E]:
    """Poll ``pool`` (and enforce its timeouts) until events of ``kind`` come: those."""
    found: list[E] = []

    def poll() -> bool:
        events = pool.poll(0.05) + pool.enforce()
        found.extend(e for e in events if isinstance(e, kind))
        return bool(found)

    eventually(poll, what=what, timeout=30)
    return found


def _task(seq: int, job_id: int, seconds: float) -> Task:
    return Task(seq, job_id, 1, "wait", f"{HANDLERS}:wait", {"seconds": seconds}, None, 1, 60.0)


def test_lost_lease_cancels_its_coroutine_only(tmp_path: Path) -> None:
    settings = ChildSettings(f"sqlite:///{tmp_path / 'unused.db'}", handlers=(f"{HANDLERS}:wait",))
    pool = LoopPool(1, settings, slots=5)
    try:
        pool.wait_ready(60, lambda: False)
        pid = pool.children[0].process.pid
        tasks = [_task(pool.next_seq(), job_id, 1.0) for job_id in range(1, 5)]
        assert pool.dispatch(tasks) == []
        eventually(lambda: len(pool._running(pool.children[0])) == 4, what="all four start")
        assert pool.abandon(tasks[0]) == ([], True)
        finished: list[Finished] = []
        deadline = time.monotonic() + 30
        while len(finished) < 3 and time.monotonic() < deadline:
            events = pool.poll(0.1) + pool.enforce()
            finished += [e for e in events if isinstance(e, Finished)]
        assert sorted(e.task.job_id for e in finished) == [2, 3, 4]
        assert all(e.error is None for e in finished)
        # The cancelled coroutine ended too, without its process being killed.
        eventually(lambda: not pool.children[0].cancelling, what="the cancelled one ends")
        assert pool.children[0].process.pid == pid
        assert pool.capacity() == 5
    finally:
        pool.close()


def test_cancel_of_a_running_job_cancels_its_coroutine_only(
    db_url: str, backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """``jobdef cancel``'s verb on a running async job: its worker learns it at the job's
    next heartbeat and cancels that coroutine, as for a lost lease; its neighbours on the
    same event loop finish, and nothing is retried."""
    jobs = registry(job("wait", "wait", "seconds"))
    queue = Queue(backend, jobs)
    long = queue.enqueue("wait", {"seconds": 60}).id
    others = [r.id for r in queue.enqueue_many("wait", [{"seconds": 4}] * 2)]
    caplog.set_level("INFO", logger="jobdef.worker")
    with running_worker(db_url, jobs, concurrency=1, async_per_process=5, lease_seconds=3):
        eventually(
            lambda: all(backend.get(i).state == "running" for i in [long, *others]),  # type: ignore[union-attr]
            what="the three jobs to run on one event loop",
        )
        assert backend.cancel(long, "not needed") == "running"
        eventually(
            lambda: f"job {long} wait attempt 1 was cancelled" in caplog.text,
            what="the worker to cancel the coroutine",
        )
        eventually(lambda: all_done(backend, others), what="the neighbours to finish")
    assert outcomes(backend, long) == ["cancelled"]
    assert backend.get(long).state == "cancelled"  # type: ignore[union-attr]
    for job_id in others:
        assert outcomes(backend, job_id) == ["done"]
    assert "0 crashed" in caplog.text


def test_drain_lets_running_coroutines_finish(
    db_url: str, backend: Backend, tmp_path: Path
) -> None:
    jobs = registry(job("wait", "wait", "seconds"))
    ids = [r.id for r in Queue(backend, jobs).enqueue_many("wait", [{"seconds": 1.5}] * 20)]
    workers = Workers(db_url, tmp_path, sheets=_sheet(tmp_path, "wait"))
    try:
        process = workers.start("--async-per-process", "20", lease="30s")
        eventually(
            lambda: sum(backend.get(i).state == "running" for i in ids) == 20,  # type: ignore[union-attr]
            what="the 20 jobs to run",
        )
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
    finally:
        workers.stop_all()
    for job_id in ids:
        assert outcomes(backend, job_id) == ["done"]


def test_drain_past_its_grace_kills_the_coroutines_and_retries_them(
    db_url: str, backend: Backend, tmp_path: Path
) -> None:
    jobs = registry(job("wait", "wait_first", "seconds"))
    ids = [r.id for r in Queue(backend, jobs).enqueue_many("wait", [{"seconds": 60}] * 10)]
    workers = Workers(db_url, tmp_path, sheets=_sheet(tmp_path, "wait_first"))
    try:
        process = workers.start("--async-per-process", "10", "--grace", "1s", lease="30s")
        eventually(
            lambda: sum(backend.get(i).state == "running" for i in ids) == 10,  # type: ignore[union-attr]
            what="the 10 jobs to run",
        )
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
    finally:
        workers.stop_all()
    for job_id in ids:
        # Killed at the end of the grace: a crashed attempt, queued again per the sheet.
        assert outcomes(backend, job_id) == ["crashed"]
        assert backend.get(job_id).state == "queued"  # type: ignore[union-attr]


def _sheet(tmp_path: Path, handler: str) -> Path:
    folder = tmp_path / "sheets"
    folder.mkdir()
    (folder / "jobs.yaml").write_text(
        "apiVersion: jobdef/v1\nkind: Job\nname: wait\nmax_attempts: 3\n"
        f"handler: {HANDLERS}:{handler}\nerrors: {{default: retry}}\n"
        "args:\n  seconds: {type: number}\n",
        encoding="utf-8",
    )
    return folder


def test_sync_task_waits_for_an_empty_process_which_takes_no_new_coroutines(
    tmp_path: Path,
) -> None:
    handlers = (f"{HANDLERS}:wait", f"{HANDLERS}:nap")
    settings = ChildSettings(f"sqlite:///{tmp_path / 'unused.db'}", handlers=handlers)
    pool = LoopPool(1, settings, slots=5)
    try:
        pool.wait_ready(60, lambda: False)
        assert pool.dispatch([_task(pool.next_seq(), 1, 0.5)]) == []
        nap = Task(pool.next_seq(), 2, 1, "nap", f"{HANDLERS}:nap", {"seconds": 0.1}, None, 1, 60.0)
        assert pool.dispatch([nap]) == [nap]
        # Set aside for the sync task: no new coroutine goes to it meanwhile.
        assert pool.capacity() == 0
        later = _task(pool.next_seq(), 3, 0.1)
        done: list[int] = []

        def poll() -> None:
            events = pool.poll(0.05) + pool.enforce()
            done.extend(e.task.job_id for e in events if isinstance(e, Finished))

        # Placed once the coroutine before it has ended: the worker dispatches only while
        # the pool says it has room, so the child set aside counts once it is empty.
        eventually(lambda: poll() or 1 in done, what="the coroutine before it ends")
        assert pool.capacity() == 1
        assert pool.dispatch([nap]) == []
        assert done == [1]
        assert pool.dispatch([later]) == [later]  # the sync task runs alone
        eventually(lambda: poll() or 2 in done, what="the sync task ends")
        assert pool.dispatch([later]) == []
        eventually(lambda: poll() or 3 in done, what="the coroutine after it ends")
        assert done == [1, 2, 3]
    finally:
        pool.close()


def test_a_sync_handler_runs_off_the_loop_so_it_may_run_a_loop_of_its_own(
    tmp_path: Path,
) -> None:
    """Sync code that calls asyncio.run() (or that refuses a running loop in its thread,
    as Django's ORM does) works in a process that runs coroutines too."""
    own = f"{HANDLERS}:run_own_loop"
    settings = ChildSettings(f"sqlite:///{tmp_path / 'unused.db'}", handlers=(own,))
    pool = LoopPool(1, settings, slots=5)
    try:
        pool.wait_ready(60, lambda: False)
        task = Task(pool.next_seq(), 1, 1, "own", own, {}, None, 1, 60.0)
        assert pool.dispatch([task]) == []
        ended = _first_events(pool, Finished, "the sync handler ends")
        assert ended[0].error is None, ended[0].error
        assert ended[0].result == '"ran"'
    finally:
        pool.close()


def test_a_handler_that_no_longer_imports_ends_its_task_at_once_and_frees_its_slots(
    tmp_path: Path,
) -> None:
    """The code changed under the worker: the task ends with HandlerUnavailable (the worker
    releases such a job), as in a one-at-a-time process, instead of leaving its slots taken
    until the process is killed at the timeout."""
    gone = f"{HANDLERS}:no_such_handler"
    settings = ChildSettings(f"sqlite:///{tmp_path / 'unused.db'}", handlers=(gone,))
    pool = LoopPool(1, settings, slots=5)
    try:
        pool.wait_ready(60, lambda: False)
        pid = pool.children[0].process.pid
        task = Task(pool.next_seq(), 1, 1, "gone", gone, {}, None, 1, 600.0)
        assert pool.dispatch([task]) == []
        ended = _first_events(pool, Finished, "the task ends")
        error = ended[0].error
        assert error is not None
        assert error.type == "jobdef.runtime.errors.HandlerUnavailable"
        assert f"handler {gone} does not import" in error.message
        assert pool.capacity() == 5
        assert pool.children[0].process.pid == pid
    finally:
        pool.close()


def test_a_cancelled_coroutine_that_does_not_end_takes_its_neighbours_down_named_as_such(
    tmp_path: Path,
) -> None:
    """A lost lease cancels a coroutine that ignores it: past the grace its process is
    killed, and the neighbours' attempts say it was that cancellation, not a timeout."""
    handlers = (f"{HANDLERS}:shrug", f"{HANDLERS}:wait")
    settings = ChildSettings(f"sqlite:///{tmp_path / 'unused.db'}", handlers=handlers)
    pool = LoopPool(1, settings, slots=5)
    try:
        pool.wait_ready(60, lambda: False)
        stubborn = Task(pool.next_seq(), 1, 1, "shrug", handlers[0], {"seconds": 60}, None, 1, 60.0)
        neighbour = _task(pool.next_seq(), 2, 60.0)
        assert pool.dispatch([stubborn, neighbour]) == []
        eventually(lambda: len(pool._running(pool.children[0])) == 2, what="both start")
        assert pool.abandon(stubborn) == ([], True)
        [event] = _first_events(pool, Killed, "the process to be killed")
        assert event.task.job_id == 2
        assert event.timed_out is False
        assert event.detail == (
            "killed with its handler process, in which job 1 (shrug) did not end within 2s "
            "of its cancellation (its lease was lost or it was cancelled)"
        )
    finally:
        pool.close()
