"""The worker in this process (its handler pool still real child processes), burst mode."""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ClassVar

import pytest

from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions, NewJob
from jobdef.errors import BackendError, HandlerError
from jobdef.policy.registry import Registry
from jobdef.policy.values import freeze
from jobdef.runtime.child import ChildSettings
from jobdef.runtime.maintenance import MaintenanceContext
from jobdef.runtime.pool import Pool
from jobdef.runtime.queue import Queue
from jobdef.runtime.settings import WorkerSettings
from jobdef.runtime.worker import Worker
from support import ManualClock, eventually


def _run(backend, registry, **options):
    worker = Worker(backend, registry, WorkerSettings(burst=True, **options), services=[])
    return worker.run()


def test_burst_worker_runs_only_the_named_queues(backend, registry):
    queue = Queue(backend, registry)
    default = queue.enqueue("noop", {"n": 1}).id
    reports = queue.enqueue("progress", {"steps": 1}).id
    stats = _run(backend, registry, queues=["reports"])
    assert stats.done == 1
    assert backend.get(reports).state == "done"
    assert backend.get(default).state == "queued"


def test_heartbeat_progress_is_recorded_and_done_is_notified(backend, registry):
    job = Queue(backend, registry).enqueue("progress", {"steps": 3}).id
    _run(backend, registry)
    record = backend.get(job)
    assert record.state == "done"
    assert record.progress == {"step": 3, "of": 3}
    [message] = backend.outbox_pending()
    assert (message.notification.event, message.notification.payload["job_id"]) == ("done", job)


def test_a_job_no_sheet_defines_is_buried_with_a_clear_reason(backend, registry):
    [stray] = backend.enqueue([NewJob("renamed_job", {}, "default", max_attempts=3)])
    stats = _run(backend, registry)
    record = backend.get(stray.id)
    assert stats.dead == 1
    assert record.state == "dead"
    assert "no sheet of this worker defines job 'renamed_job'" in record.last_error.message


def test_queue_concurrency_from_the_sheets_is_the_workers_claim_limit(registry, backend):
    from jobdef.policy.model import QueuePolicy

    limited = Registry(
        jobs=registry.jobs,
        channels=registry.channels,
        queues=freeze({"reports": QueuePolicy("reports", concurrency=2)}),
    )
    worker = Worker(backend, limited, WorkerSettings(burst=True), services=[])
    assert worker.queue_limits == {"reports": 2}


def test_a_worker_refused_at_start_leaves_no_handler_process_nor_lock_folder(
    registry, backend, tmp_path, monkeypatch
):
    """Its handler processes start while it checks the handlers; refused, it stops them."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    noop = registry.jobs["noop"]
    broken = Registry(
        jobs=freeze({"noop": dataclasses.replace(noop, handler="no_such_module:run")}),
        channels=registry.channels,
        queues=registry.queues,
    )
    job = Queue(backend, registry).enqueue("noop", {"n": 1}).id
    worker = Worker(backend, broken, WorkerSettings(burst=True), services=[])
    with pytest.raises(HandlerError, match="no_such_module"):
        worker.run()
    assert multiprocessing.active_children() == []
    assert list(tmp_path.glob("jobdef-pool-*")) == []
    assert backend.get(job).state == "queued"


def test_a_killed_workers_lock_folder_is_removed_by_the_next_pool(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    stale = tmp_path / f"jobdef-pool-{int(finished.stdout)}-abc"
    stale.mkdir()
    pool = Pool(1, ChildSettings("sqlite:///unused.db"))
    try:
        assert not stale.exists()
        mine = [p.name.split("-")[2] for p in tmp_path.glob("jobdef-pool-*")]
        assert mine == [str(os.getpid())]
    finally:
        pool.close()
    assert list(tmp_path.glob("jobdef-pool-*")) == []


class _StoreGoneOnce:
    """A maintenance service whose first round meets the store gone, as the first call
    after a server stops may be a maintenance one."""

    name = "store-gone-once"
    interval = 0.0
    every_worker = True

    def __init__(self, ctx: object) -> None:
        self.rounds = 0

    def tick(self, now: float) -> None:
        self.rounds += 1
        if self.rounds == 1:
            raise BackendError("lost the connection to the store: gone for a moment")


def test_a_maintenance_round_that_meets_the_store_gone_is_one_line_not_a_traceback(
    backend, registry, caplog
):
    Queue(backend, registry).enqueue("noop", {"n": 1})
    worker = Worker(backend, registry, WorkerSettings(burst=True), services=[_StoreGoneOnce])
    with caplog.at_level(logging.INFO, logger="jobdef.worker"):
        stats = worker.run()
    assert stats.done == 1
    lines = [r.getMessage() for r in caplog.records if r.name == "jobdef.worker"]
    assert [line for line in lines if "store-gone-once" in line] == [
        "maintenance service store-gone-once failed: lost the connection to the store: "
        "gone for a moment; retrying later"
    ]
    assert not any(r.exc_info for r in caplog.records)


class _Refused:
    """A maintenance service the store refuses at every round (a role without the right
    to delete, say), while the verbs the worker runs jobs with work."""

    name = "refused"
    interval = 0.0
    every_worker = True

    def __init__(self, ctx: object) -> None:
        pass

    def tick(self, now: float) -> None:
        raise BackendError("permission denied for table jobdef_jobs")


def test_a_maintenance_service_the_store_keeps_refusing_does_not_hold_up_the_jobs(
    backend, registry, caplog
):
    """Not an outage of the store: the worker does not pause its claims (nor log the
    store out and back) at each round, and every job runs."""
    Queue(backend, registry).enqueue_many("noop", [{"n": n} for n in range(30)])
    worker = Worker(backend, registry, WorkerSettings(burst=True, prefetch=1), services=[_Refused])
    with caplog.at_level(logging.INFO, logger="jobdef.worker"):
        stats = worker.run()
    assert stats.done == 30
    lines = [r.getMessage() for r in caplog.records if r.name == "jobdef.worker"]
    assert not any("the job store cannot be used" in line for line in lines)
    assert any("maintenance service refused failed" in line for line in lines)


def test_a_flood_of_far_off_due_times_keeps_the_soonest_in_bounded_memory(backend, registry):
    """Each notification of delayed jobs that is a worker's turn leaves it a due time to
    wake at; a million of them (or a hostile NOTIFY loop) must not grow the worker
    without bound. It keeps the soonest, which are the ones it wakes for next."""
    from jobdef.runtime.worker import MAX_DUES

    worker = Worker(backend, registry, WorkerSettings(burst=True), services=[])
    soonest = worker._due(60.0)
    for n in range(50_000):
        worker._due(3600.0 + n)
    assert len(worker._dues) <= MAX_DUES
    assert worker._next_due(time.monotonic()) == soonest
    sooner = worker._due(30.0)  # a sooner one still comes first after the trims
    assert worker._next_due(time.monotonic()) == sooner


def _most_running_while(run: Callable[[], object], backend) -> int:
    """The most jobs the store had running at once, read every few milliseconds while
    ``run()`` runs (another session, so it sees the worker's turns as they commit)."""
    seen = [0]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            counts = backend.stats()
            seen[0] = max(seen[0], sum(c.count for c in counts if c.state == "running"))
            time.sleep(0.002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        run()
    finally:
        done.set()
        watcher.join()
    return seen[0]


@pytest.mark.every_engine
def test_a_worker_holds_no_more_jobs_than_their_args_fit_in_prefetch_mib(registry, backend, db_url):
    """Jobs of 200 KiB of args and a budget of 1 MiB: the worker holds 5 at most (never
    fewer than two per process); with the default budget its window grows past that."""
    payload = "x" * (200 * 1024)
    for prefetch_mib, held in ((1, range(1, 6)), (64, range(6, 41))):
        Queue(backend, registry).enqueue_many(
            "wide_args", [{"payload": payload, "seconds": 0.01} for _ in range(40)]
        )
        watcher = open_backend(db_url)
        try:
            settings = WorkerSettings(burst=True, prefetch_mib=prefetch_mib)
            worker = Worker(backend, registry, settings, services=[])
            most = _most_running_while(worker.run, watcher)
        finally:
            watcher.close()
        assert worker.stats.done == 40
        assert most in held, (prefetch_mib, most)


@contextmanager
def _on_a_thread(worker: Worker) -> Iterator[None]:
    """``worker`` runs on a thread for the block; then one stop request, which must end
    it (within 30 s: far less than the minute's poll of these tests)."""
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        worker.request_stop()
        thread.join(timeout=30)
    assert not thread.is_alive()


class _Ticks:
    """A maintenance service due every 0.2 s, that counts its rounds."""

    name = "ticks"
    interval = 0.2
    every_worker = True
    rounds = 0

    def __init__(self, ctx: object) -> None:
        type(self).rounds = 0

    def tick(self, now: float) -> None:
        type(self).rounds += 1


@pytest.mark.every_engine
def test_an_idle_worker_with_a_long_poll_runs_maintenance_on_time_and_claims_at_its_poll(
    registry, backend, monkeypatch
):
    """An idle worker polls every 60 s here: its services (cron, the lease reclaimer)
    still run when they are due, and it claims no more often for them."""
    claims = []
    claim = backend.claim
    monkeypatch.setattr(backend, "claim", lambda options: claims.append(1) or claim(options))
    worker = Worker(backend, registry, WorkerSettings(poll_interval=60.0), services=[_Ticks])
    with _on_a_thread(worker):
        # Rounds 0.2 s apart; the poll would allow one a minute.
        eventually(lambda: _Ticks.rounds >= 6, timeout=30, what="six maintenance rounds")
        assert len(claims) == 1  # the first turn's; the next one is a minute away


@pytest.mark.every_engine
def test_a_stop_request_ends_an_idle_workers_wait_for_its_poll_at_once(registry, backend):
    """No maintenance service wakes this worker: only the stop request can end its wait
    of a minute (from another thread here; a signal handler writes the same pipe)."""
    worker = Worker(backend, registry, WorkerSettings(poll_interval=60.0), services=[])
    with _on_a_thread(worker):  # the poll would hold it up to a minute
        eventually(lambda: worker._idle, timeout=30, what="an idle worker")
        time.sleep(0.3)  # its first claim found nothing: it waits


class _EnqueuesOnce:
    """A maintenance service whose second round enqueues a job and says so, as the cron
    scheduler does with a slot that came due."""

    name = "enqueues-once"
    interval = 0.2
    every_worker = True

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.rounds = 0
        self.job: int | None = None

    def tick(self, now: float) -> None:
        self.rounds += 1
        if self.rounds == 2:
            [receipt] = Queue(self.ctx.backend, self.ctx.registry).enqueue_many("noop", [{"n": 1}])
            self.job = receipt.id
            self.ctx.made_runnable()


@pytest.mark.every_engine
def test_an_idle_worker_claims_at_once_what_its_maintenance_made_runnable(registry, backend):
    """Not at its poll, a minute away: a cron slot starts on time."""
    worker = Worker(backend, registry, WorkerSettings(poll_interval=60.0), services=[_EnqueuesOnce])
    [service] = worker.services
    with _on_a_thread(worker):
        eventually(lambda: worker.stats.done, timeout=30, what="the job to run")
        assert service.job is not None
        assert backend.get(service.job).state == "done"


def test_a_reclaimed_job_makes_an_idle_worker_claim(db_url, registry):
    from jobdef.runtime.maintenance.reclaim import LeaseReclaimer

    told = []
    clock = ManualClock(1_700_000_000.0)
    backend = open_backend(db_url, clock=clock)
    try:
        ctx = MaintenanceContext(
            backend, registry, "w", clock, made_runnable=lambda: told.append(1)
        )
        backend.enqueue([NewJob("noop", {"n": 1}, "default", max_attempts=2)])
        backend.claim(ClaimOptions(worker_id="gone", lease_seconds=10))
        reclaimer = LeaseReclaimer(ctx)
        reclaimer.tick(clock())
        assert told == []  # nothing expired yet
        clock.advance(11)
        reclaimer.tick(clock())
        assert told == [1]
    finally:
        backend.close()


class _LeaderOnly:
    name = "leader-only"
    interval = 1.0

    def __init__(self, ctx) -> None:
        pass

    def tick(self, now: float) -> None:
        pass


def test_a_worker_that_does_not_maintain_wakes_only_for_what_every_worker_runs(registry, backend):
    """The elected services (cron, retention) run on the lease holder: another worker asks
    for the lease at its rounds and claims, it does not wake for them."""
    worker = Worker(backend, registry, WorkerSettings(), services=[_Ticks, _LeaderOnly])
    worker._next_tick = [100.0, 50.0]
    assert worker._next_service_at() == 50.0
    worker._elected = False
    assert worker._next_service_at() == 100.0


class _AlwaysDue(_Ticks):
    interval = 0.0


@pytest.mark.every_engine
def test_a_service_that_is_always_due_does_not_make_an_idle_worker_spin(registry, backend):
    """Woken for it at most every 50 ms: in a second, tens of rounds, not thousands."""
    worker = Worker(backend, registry, WorkerSettings(poll_interval=60.0), services=[_AlwaysDue])
    with _on_a_thread(worker):
        eventually(lambda: _AlwaysDue.rounds >= 3, timeout=30, what="three rounds")
        first = _AlwaysDue.rounds
        time.sleep(1.0)
        assert 5 <= _AlwaysDue.rounds - first <= 60


class _Logged:
    """A maintenance service of every worker, due at the end of every turn (interval 0),
    that writes its rounds into :attr:`events` beside what the test logs."""

    name = "logged"
    interval = 0.0
    every_worker = True
    events: ClassVar[list[str]] = []

    def __init__(self, ctx: object) -> None:
        type(self).events = []

    def tick(self, now: float) -> None:
        self.events.append("tick")


def _logging_calls(backend, monkeypatch, woken: Callable[[float], list] | None = None) -> None:
    """Log the worker's claims and its wake-ups into :attr:`_Logged.events`."""
    claim, wait = backend.claim, woken or backend.wait_for_jobs

    def logged_wait(timeout: float) -> list:
        heard = wait(timeout)
        if heard:
            _Logged.events.append("woken")
        return heard

    monkeypatch.setattr(
        backend, "claim", lambda options: _Logged.events.append("claim") or claim(options)
    )
    monkeypatch.setattr(backend, "wait_for_jobs", logged_wait)


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_a_worker_woken_for_a_job_claims_it_before_its_maintenance_round(
    registry, backend, db_url, monkeypatch
):
    """Maintenance may take a round trip to the store (or many): the job does not wait
    for it. Here a round is due at every turn's end, and the claim still comes first."""
    worker = Worker(backend, registry, WorkerSettings(poll_interval=60.0), services=[_Logged])
    _logging_calls(backend, monkeypatch)
    with _on_a_thread(worker):
        eventually(lambda: worker._idle and "tick" in _Logged.events, timeout=30, what="idle")
        enqueuer = open_backend(db_url)
        try:
            enqueuer.enqueue([NewJob("noop", {"n": 1}, "default")])
        finally:
            enqueuer.close()
        eventually(lambda: worker.stats.done, timeout=30, what="the job to run")
    events = _Logged.events
    woken = events.index("woken")
    assert events[woken + 1] == "claim", events[woken - 2 : woken + 4]


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_a_stream_of_wake_ups_does_not_hold_off_a_workers_maintenance(
    registry, backend, monkeypatch
):
    """Every wait woken at once, each claim finding nothing (other workers take the
    jobs): the maintenance rounds still run, every other turn at least."""
    from jobdef.backends.records import Wakeup

    worker = Worker(backend, registry, WorkerSettings(poll_interval=60.0), services=[_Logged])
    _logging_calls(backend, monkeypatch, woken=lambda timeout: [Wakeup()])
    with _on_a_thread(worker):
        eventually(lambda: _Logged.events.count("woken") >= 40, timeout=30, what="wake-ups")
    events = list(_Logged.events)
    claims = events.count("claim")
    assert claims >= 40
    assert events.count("tick") >= claims // 2 - 1
