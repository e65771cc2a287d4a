"""Queue controls with real workers on a real SQLite file: limits, pause, rate, light vs heavy."""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from runtime_workers import max_overlap, running_worker

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.cli import main
from jobdef.policy.model import JobPolicy, QueuePolicy
from jobdef.policy.registry import Registry
from jobdef.policy.values import freeze
from jobdef.runtime import Queue, Worker, WorkerSettings
from support import ManualClock, eventually

pytestmark = pytest.mark.every_engine

HERE = Path(__file__).resolve().parent
HANDLERS = "queue_handlers"  # tests/runtime/queue_handlers.py; the children import it by name


def make_registry(queues: dict[str, QueuePolicy]) -> Registry:
    def job(name: str, handler: str, queue: str, priority: int = 0) -> JobPolicy:
        # The one arg each handler takes, as a sheet would declare it: a worker checks
        # at start that every handler fits its job's args.
        arg = {"hold": "gate", "touch": "path", "nap": "seconds"}[handler]
        schema = {"type": "object", "properties": {arg: {}}, "required": [arg]}
        return JobPolicy(
            name=name,
            handler=f"{HANDLERS}:{handler}",
            queue=queue,
            priority=priority,
            timeout=120,
            args_schema=freeze(schema),
        )

    jobs = [
        job("heavy", "hold", "heavy", priority=10),
        job("light", "touch", "light"),
        job("canary", "touch", "default"),
        job("nap", "nap", "exports"),
        job("mail", "touch", "mail"),
    ]
    return Registry(jobs={j.name: j for j in jobs}, channels={}, queues=queues)


@pytest.fixture(autouse=True)
def _handlers_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    # The worker's children are spawned: they find the handlers through PYTHONPATH.
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.syspath_prepend(str(HERE))


def state(backend: Backend, job_id: int) -> str:
    record = backend.get(job_id)
    assert record is not None
    return record.state


@pytest.mark.slow
def test_heavy_queue_at_its_limit_does_not_delay_a_light_queue(
    db_url: str, backend: Backend, tmp_path: Path
) -> None:
    registry = make_registry({"heavy": QueuePolicy("heavy", concurrency=2)})
    queue = Queue(backend, registry)
    gate = tmp_path / "gate"
    heavy = [queue.enqueue("heavy", {"gate": str(gate)}).id for _ in range(6)]
    light = queue.enqueue("light", {"path": str(tmp_path / "light.txt")}).id
    with running_worker(db_url, registry, concurrency=3):
        # The heavy jobs never finish until the gate opens: the light job must not wait for them.
        eventually(lambda: state(backend, light) == "done", what="the light job is done")
        states = [state(backend, job_id) for job_id in heavy]
        assert states.count("running") == 2
        assert states.count("queued") == 4
        gate.touch()
        eventually(
            lambda: all(state(backend, j) == "done" for j in heavy), what="heavy jobs are done"
        )
    # Never more than the limit of heavy jobs ran at once.
    assert max_overlap(backend, heavy) == 2


def _worker_process(db_url: str, queues: dict[str, QueuePolicy]) -> None:
    import sys

    sys.path.insert(0, str(HERE))
    registry = make_registry(queues)
    backend = open_backend(db_url)
    try:
        Worker(backend, registry, WorkerSettings(concurrency=3, poll_interval=0.02)).run()
    finally:
        backend.close()


@pytest.mark.slow
def test_concurrency_limit_holds_across_several_worker_processes(
    db_url: str, backend: Backend
) -> None:
    registry = make_registry({"exports": QueuePolicy("exports", concurrency=2)})
    queue = Queue(backend, registry)
    jobs = [queue.enqueue("nap", {"seconds": 0.4}).id for _ in range(12)]
    with worker_processes(db_url, registry.queues, 3):
        eventually(lambda: all(state(backend, j) == "done" for j in jobs), what="every job is done")
    assert max_overlap(backend, jobs, slack=0.1) == 2


@contextmanager
def worker_processes(db_url: str, queues: dict[str, QueuePolicy], count: int) -> Iterator[None]:
    """``count`` worker processes on the store, stopped with SIGTERM; each must exit 0."""
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_worker_process, args=(db_url, queues)) for _ in range(count)]
    for process in workers:
        process.start()
    try:
        yield
    finally:
        for process in workers:
            if process.pid is not None:
                os.kill(process.pid, signal.SIGTERM)
        for process in workers:
            process.join(timeout=30)
    assert [process.exitcode for process in workers] == [0] * count


def most_starts_in_any_window(starts: list[float], rate: float) -> float:
    """The largest excess of starts over what a full bucket plus ``rate`` allows, in any
    window between two starts (0 or less: the rate held)."""
    starts = sorted(starts)
    capacity = max(1.0, rate)
    return max(
        (j - i + 1) - (capacity + rate * (starts[j] - starts[i]))
        for i in range(len(starts))
        for j in range(i, len(starts))
    )


@pytest.mark.slow
def test_rate_holds_across_several_worker_processes(
    db_url: str, backend: Backend, tmp_path: Path
) -> None:
    rate = 5.0  # 300/m: a full bucket of 5, then one start every 0.2 s
    registry = make_registry({"mail": QueuePolicy("mail", rate=rate)})
    queue = Queue(backend, registry)
    mails = [queue.enqueue("mail", {"path": str(tmp_path / f"m{i}")}).id for i in range(15)]
    with worker_processes(db_url, registry.queues, 3):
        eventually(
            lambda: all(state(backend, m) == "done" for m in mails), what="every mail is sent"
        )
    starts = [a.started_at for m in mails for a in backend.attempts(m)]
    assert len(starts) == 15
    # One bucket for the three workers: 15 starts take at least (15 - 5) / 5 = 2 s.
    # A bucket per worker would have let all 15 start at once (3 x 5).
    assert max(starts) - min(starts) >= 2.0 - 0.05
    assert most_starts_in_any_window(starts, rate) <= 0.05 * rate


def test_pause_and_resume_are_seen_by_a_running_worker(
    db_url: str, backend: Backend, tmp_path: Path
) -> None:
    registry = make_registry({})
    queue = Queue(backend, registry)
    sheets = tmp_path / "sheets"
    sheets.mkdir()
    (sheets / "queues.yaml").write_text(
        "apiVersion: jobdef/v1\nkind: Queue\nname: light\n", encoding="utf-8"
    )
    first = queue.enqueue("light", {"path": str(tmp_path / "first")}).id
    with running_worker(db_url, registry, concurrency=2):
        eventually(lambda: state(backend, first) == "done", what="the first light job is done")
        assert main(["queues", "pause", "light", "--db", db_url, "--sheets", str(sheets)]) == 0
        held = queue.enqueue("light", {"path": str(tmp_path / "held")}).id
        canary = queue.enqueue("canary", {"path": str(tmp_path / "canary")}).id
        # The canary was enqueued after the light job and runs: the worker claimed since.
        eventually(lambda: state(backend, canary) == "done", what="the canary is done")
        assert state(backend, held) == "queued"
        assert [q.paused for q in backend.queues() if q.queue == "light"] == [True]
        assert main(["queues", "resume", "light", "--db", db_url, "--sheets", str(sheets)]) == 0
        eventually(lambda: state(backend, held) == "done", what="the held light job is done")


def test_rate_limited_queue_starts_no_more_than_its_rate(
    db_url: str, backend: Backend, tmp_path: Path
) -> None:
    registry = make_registry({"mail": QueuePolicy("mail", rate=1 / 60)})  # 1/m
    clock = ManualClock()
    timed = open_backend(db_url, clock=clock)
    queue = Queue(timed, registry)
    mails = [queue.enqueue("mail", {"path": str(tmp_path / f"m{i}")}).id for i in range(3)]
    with running_worker(db_url, registry, clock, concurrency=2), closing(timed):
        eventually(
            lambda: [state(backend, m) for m in mails].count("done") == 1, what="one mail is sent"
        )
        canary = queue.enqueue("canary", {"path": str(tmp_path / "canary")}).id
        eventually(lambda: state(backend, canary) == "done", what="the canary is done")
        assert [state(backend, m) for m in mails].count("queued") == 2
        clock.advance(60)
        eventually(
            lambda: [state(backend, m) for m in mails].count("done") == 2, what="a second mail"
        )
        canary = queue.enqueue("canary", {"path": str(tmp_path / "canary2")}).id
        eventually(lambda: state(backend, canary) == "done", what="the second canary is done")
        assert [state(backend, m) for m in mails].count("queued") == 1


def test_a_burst_worker_waits_for_tokens_rather_than_leaving_rated_jobs(
    db_url: str, backend: Backend, tmp_path: Path
) -> None:
    registry = make_registry({"mail": QueuePolicy("mail", rate=10.0)})  # 600/m
    queue = Queue(backend, registry)
    mails = [queue.enqueue("mail", {"path": str(tmp_path / f"m{i}")}).id for i in range(15)]
    own = open_backend(db_url)  # the worker's, as a worker opens its own
    try:
        Worker(own, registry, WorkerSettings(poll_interval=0.02, burst=True)).run()
    finally:
        own.close()
    # The first claim empties the bucket (10); the burst worker stays for the other 5.
    assert [state(backend, m) for m in mails] == ["done"] * 15
