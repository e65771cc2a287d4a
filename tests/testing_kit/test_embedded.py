"""The embedded worker: the normal worker loop in a thread of an application's process.

A plain-script application (``embedded_app.py``) and an ASGI app under
uvicorn (``embedded_asgi.py``) enqueue jobs and run them with
``embedded_worker``; every handler run is committed to a ledger
(``embedded_handlers``). SIGTERM to the application drains the worker: what
runs finishes, nothing is left running, the rest is given back and a normal
``jobdef worker`` runs it. SIGKILL of the application leaves its jobs leased;
a normal worker reclaims them once the leases expire. In both cases every job
ends done, and a job ran twice only when its first attempt was reclaimed (the
at-least-once rule of docs/guide.md).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import embedded_handlers
import pytest

from jobdef.backends.protocol import Backend
from jobdef.errors import HandlerError
from jobdef.runtime import embedded as embedded_module
from jobdef.runtime.embedded import EmbeddedWorkerError, embedded_worker
from jobdef.runtime.queue import connect
from jobdef.runtime.settings import WorkerSettings
from jobdef.sheets.pipeline import load_registry
from support import eventually
from support.stores import ENGINES, engine_db_url
from support.workers import process_alive

HERE = Path(__file__).resolve().parent
APP = HERE / "embedded_app.py"


@pytest.fixture
def sheets(tmp_path: Path) -> Path:
    folder = tmp_path / "sheets"
    folder.mkdir()
    (folder / "steady.yaml").write_text(embedded_handlers.SHEET, "utf-8")
    return folder


@pytest.fixture
def ledger(tmp_path: Path) -> str:
    path = str(tmp_path / "ledger.db")
    embedded_handlers.create(path)
    return path


class Processes:
    """The application and worker processes of one test, killed at teardown."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[tuple[subprocess.Popen[bytes], Path]] = []

    def start(
        self, command: list[str], name: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        log_path = self.tmp_path / f"{name}.log"
        path = os.pathsep.join([str(HERE), *sys.path])
        env = {**os.environ, **(env or {}), "PYTHONPATH": path}
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, cwd=self.tmp_path, env=env
            )
        self.started.append((process, log_path))
        return process

    def log(self, name: str) -> str:
        return (self.tmp_path / f"{name}.log").read_text("utf-8", "replace")

    def stop_all(self) -> None:
        for process, _ in self.started:
            if process.poll() is None:
                process.kill()
                process.wait(10)


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    started = Processes(tmp_path)
    yield started
    started.stop_all()


@dataclass
class Scene:
    """One test's store, sheets, ledger and processes."""

    processes: Processes
    db_url: str
    backend: Backend
    sheets: Path
    ledger: str
    tmp_path: Path

    def start_app(self, count: int, seconds: float) -> subprocess.Popen[bytes]:
        ready = self.tmp_path / "ready"
        args = [self.db_url, str(self.sheets), self.ledger, str(count), str(seconds), str(ready)]
        app = self.processes.start([sys.executable, str(APP), *args], "app")
        eventually(ready.exists, timeout=30, what="the app to enqueue its jobs")
        return app

    def start_worker(self) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "jobdef", "worker", "--db", self.db_url]
        command += ["--sheets", str(self.sheets), "--lease", "1s", "--poll", "50ms"]
        return self.processes.start([*command, "--concurrency", "2"], "worker")

    def runs(self) -> int:
        return len(embedded_handlers.entries(self.ledger))


@pytest.fixture
def scene(processes, db_url, backend, sheets, ledger) -> Scene:
    return Scene(processes, db_url, backend, sheets, ledger, processes.tmp_path)


def check_ledger(backend: Backend, ledger: str, ids: list[int]) -> Counter[str]:
    """Every job is done; each handler run has exactly one attempt row that ran; a job ran
    more than once only after an attempt of it was reclaimed. The outcomes of the runs."""
    states = Counter(backend.get(job).state for job in ids)
    assert states == Counter({"done": len(ids)}), states
    runs = Counter((job, attempt) for job, attempt, _ in embedded_handlers.entries(ledger))
    assert not {k: n for k, n in runs.items() if n != 1}, "a run repeated under one attempt"
    rows = [row for job in ids for row in backend.attempts(job)]
    ran = Counter((r.job_id, r.attempt) for r in rows if r.outcome != "released")
    assert {key: ran[key] for key in runs if ran[key] != 1} == {}
    unrun = {(r.job_id, r.attempt): r.outcome for r in rows if (r.job_id, r.attempt) not in runs}
    assert set(unrun.values()) <= {"released", "reclaimed"}, unrun
    for job in ids:
        times = sum(1 for key in runs if key[0] == job)
        reclaimed = [r for r in backend.attempts(job) if r.outcome == "reclaimed"]
        assert times <= 1 + len(reclaimed), (job, backend.attempts(job))
    # A released row (a claim given back unstarted) shares its number with the run after.
    return Counter(
        r.outcome for r in rows if (r.job_id, r.attempt) in runs and r.outcome != "released"
    )


@pytest.mark.slow
def test_sigterm_drains_and_a_normal_worker_runs_what_was_given_back(scene):
    processes, backend, ledger = scene.processes, scene.backend, scene.ledger
    app = scene.start_app(10, 0.3)
    eventually(
        lambda: scene.runs() >= 3,
        timeout=30,
        what="the embedded worker to run jobs",
    )
    app.send_signal(signal.SIGTERM)
    assert app.wait(40) == 0, processes.log("app")
    assert "draining: no new claims" in processes.log("app")
    ids = sorted(job.id for job in backend.list_jobs(limit=100))
    assert len(ids) == 10
    # The drain let what was running finish: nothing is left running or half-recorded.
    states = Counter(backend.get(job).state for job in ids)
    assert states["running"] == 0, states
    assert states["done"] >= 3
    finished_by_app = states["done"]
    worker = scene.start_worker()
    eventually(
        lambda: all(backend.get(job).state == "done" for job in ids),
        timeout=30,
        what="the normal worker to run the jobs the app gave back",
    )
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0, processes.log("worker")
    outcomes = check_ledger(backend, ledger, ids)
    # Nothing was killed: every job ran exactly once, the app's share and the worker's.
    assert outcomes == Counter({"done": 10})
    assert len(embedded_handlers.entries(ledger)) == 10
    assert finished_by_app < 10


@pytest.mark.slow
def test_an_asgi_app_under_uvicorn_drains_its_worker_at_shutdown(scene):
    """The lifespan recipe of docs/testing.md: SIGTERM to uvicorn runs the app's shutdown,
    which drains the embedded worker before the process exits."""
    port = _free_port()
    env = {"SHOP_DB": scene.db_url, "SHOP_SHEETS": str(scene.sheets), "SHOP_LEDGER": scene.ledger}
    command = [sys.executable, "-m", "uvicorn", "embedded_asgi:app", "--port", str(port)]
    server = scene.processes.start(command, "app", env=env)
    eventually(lambda: _listening(port), timeout=30, what="uvicorn to listen")
    request = urllib.request.Request(f"http://127.0.0.1:{port}/orders?count=8", method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        ids = json.load(response)["ids"]
    assert len(ids) == 8
    eventually(lambda: scene.runs() >= 2, timeout=30, what="the embedded worker to run jobs")
    server.send_signal(signal.SIGTERM)
    # uvicorn re-raises the signal it handled once the app has shut down.
    assert server.wait(40) in (0, -signal.SIGTERM), scene.processes.log("app")
    log = scene.processes.log("app")
    assert "draining: no new claims" in log
    assert "Application shutdown complete" in log
    states = Counter(scene.backend.get(job).state for job in ids)
    assert states["running"] == 0, states
    assert states["done"] >= 2
    worker = scene.start_worker()
    eventually(
        lambda: all(scene.backend.get(job).state == "done" for job in ids),
        timeout=30,
        what="the normal worker to run the jobs the app gave back",
    )
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0, scene.processes.log("worker")
    assert check_ledger(scene.backend, scene.ledger, ids) == Counter({"done": 8})


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
def test_a_killed_app_leaves_its_jobs_to_be_reclaimed_by_a_normal_worker(scene):
    processes, backend, ledger = scene.processes, scene.backend, scene.ledger
    app = scene.start_app(10, 0.3)
    eventually(
        lambda: scene.runs() >= 3,
        timeout=30,
        what="the embedded worker to run jobs",
    )
    app.send_signal(signal.SIGKILL)
    assert app.wait(10) == -signal.SIGKILL
    ids = sorted(job.id for job in backend.list_jobs(limit=100))
    held = [job for job in ids if backend.get(job).state == "running"]
    # The attempts the app's handlers had started on the jobs it still held when killed.
    cut_short = {
        (job, attempt) for job, attempt, _ in embedded_handlers.entries(ledger) if job in held
    }
    assert held, "the app held no job when it was killed"
    # The handler processes died with the app: no orphan keeps running a job.
    pids = {pid for _, _, pid in embedded_handlers.entries(ledger)}
    eventually(
        lambda: not any(process_alive(pid) for pid in pids), timeout=10, what="children to die"
    )
    worker = scene.start_worker()
    eventually(
        lambda: all(backend.get(job).state == "done" for job in ids),
        timeout=40,
        what="the normal worker to reclaim and run the killed app's jobs",
    )
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0, processes.log("worker")
    outcomes = check_ledger(backend, ledger, ids)
    assert outcomes["done"] == 10
    # Each run the kill cut short is recorded as reclaimed (then run again: at least once);
    # the held jobs the app had claimed but not started are given back or reclaimed.
    outcomes_of = {(r.job_id, r.attempt): r.outcome for job in held for r in backend.attempts(job)}
    assert cut_short
    assert {outcomes_of.get(key) for key in cut_short} == {"reclaimed"}


@pytest.fixture(params=ENGINES)
def any_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The job store on each engine (PostgreSQL: a schema of its own, where the stop request
    from the app's thread wakes the worker's LISTEN)."""
    return engine_db_url(request, tmp_path)


@pytest.mark.slow
def test_in_process_the_with_block_runs_jobs_and_stops_with_stats(any_db_url, sheets, ledger):
    queue = connect(any_db_url, load_registry([sheets]))
    try:
        ids = [
            queue.enqueue("steady", {"ledger": ledger, "index": i, "seconds": 0.0}).id
            for i in range(4)
        ]
        with embedded_worker(
            queue, settings=WorkerSettings(concurrency=2, poll_interval=0.05)
        ) as running:
            assert running.alive
            eventually(
                lambda: all(queue.get(job).state == "done" for job in ids),
                timeout=30,
                what="the embedded worker to run the jobs",
            )
        assert not running.alive
        assert running.stats is not None
        assert running.stats.done == 4
    finally:
        queue.close()


@pytest.mark.slow
def test_in_process_an_enqueue_returns_a_receipt_that_waits_for_the_embedded_worker(
    any_db_url, sheets, ledger
):
    """The application's thread enqueues and waits on the receipt while the worker's
    thread runs the job, in one process: the wait returns the job done."""
    queue = connect(any_db_url, load_registry([sheets]))
    try:
        with embedded_worker(queue, settings=WorkerSettings(concurrency=1, poll_interval=0.05)):
            receipt = queue.enqueue("steady", {"ledger": ledger, "index": 0, "seconds": 0.2})
            assert receipt.created
            status = queue.wait(receipt.token, 60)
        assert status is not None
        assert (status.state, status.job_id, status.attempts) == ("done", receipt.job_id, 1)
    finally:
        queue.close()


def test_a_handler_that_does_not_import_fails_the_start_in_the_caller(db_url, tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "broken.yaml").write_text(
        embedded_handlers.SHEET.replace("embedded_handlers:steady", "no_such_module:steady"),
        "utf-8",
    )
    worker = embedded_worker(db_url, load_registry([folder]))
    with pytest.raises(HandlerError, match="no_such_module"):
        worker.start()
    assert not worker.alive


def test_a_worker_thread_that_fails_is_raised_at_stop(db_url, sheets, monkeypatch, caplog):
    def fails(self):
        raise RuntimeError("the store went away")

    monkeypatch.setattr(embedded_module.Worker, "run", fails)
    running = embedded_worker(db_url, load_registry([sheets])).start()
    eventually(lambda: not running.alive, timeout=10, what="the thread to end")
    assert "the embedded worker stopped on an error" in caplog.text
    with pytest.raises(EmbeddedWorkerError, match="the store went away"):
        running.stop()


def test_it_takes_a_queue_or_a_url_with_the_sheets(db_url):
    from jobdef.errors import UsageError

    with pytest.raises(UsageError, match="needs the sheets"):
        embedded_worker(db_url)
    with pytest.raises(UsageError, match="takes a Queue"):
        embedded_worker(object())
