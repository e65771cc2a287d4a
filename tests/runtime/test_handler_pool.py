"""The handler processes started before the worker: ``jobdef worker`` boots them while it
opens the store, and a worker runs with them (or refuses them) and stops them."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest
from runtime_workers import SHEETS

from jobdef.cli import main, runtime_options
from jobdef.runtime.handler_pool import child_settings, start_pool
from jobdef.runtime.queue import Queue
from jobdef.runtime.settings import WorkerSettings
from jobdef.runtime.worker import Worker


def _handler_processes() -> list[multiprocessing.Process]:
    """This process's handler processes still alive (those that ended are reaped)."""
    return [p for p in multiprocessing.active_children() if p.name == "jobdef-child"]


@pytest.mark.slow
@pytest.mark.every_engine
def test_jobdef_worker_starts_its_handler_processes_before_it_opens_the_store(
    db_url, backend, registry, monkeypatch, capsys
):
    """They boot (a fresh interpreter each) while the worker imports the driver and
    connects: by the time the store is opened, they are running."""
    Queue(backend, registry).enqueue("noop", {"n": 1})
    at_open: list[int] = []
    opened = runtime_options.backend

    def backend_seen(*args, **kwargs):
        at_open.append(len(_handler_processes()))
        return opened(*args, **kwargs)

    monkeypatch.setattr(runtime_options, "backend", backend_seen)
    argv = ["worker", "--burst", "--concurrency", "2", "--log-level", "warning"]
    code = main([*argv, "--db", db_url, "--sheets", str(SHEETS)])
    assert (code, capsys.readouterr().err) == (0, "")
    assert at_open == [2]
    assert backend.get(1).state == "done"
    assert _handler_processes() == []


@pytest.mark.slow
def test_handler_processes_started_for_a_store_that_will_not_open_are_stopped(
    tmp_path: Path, capsys
):
    """A store refused at start (here: no jobdef tables, and --no-migrate) is one line,
    and the handler processes already booting are stopped with it, not left behind."""
    app = tmp_path / "app.db"
    sqlite3.connect(app).close()
    url = f"sqlite:///{app}"
    argv = ["worker", "--burst", "--no-migrate", "--concurrency", "3"]
    assert main([*argv, "--db", url, "--sheets", str(SHEETS)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"jobdef worker: error: no jobdef tables in {app}")
    assert _handler_processes() == []


@pytest.mark.slow
def test_a_worker_runs_with_handler_processes_started_beforehand(backend, registry):
    settings = WorkerSettings(burst=True, concurrency=2, id="host:1:early")
    children = child_settings(
        backend.url, registry, settings, worker_id=settings.id, log_format="text"
    )
    pool = start_pool(settings, children)
    job = Queue(backend, registry).enqueue("noop", {"n": 1}).id
    stats = Worker(backend, registry, settings, services=[]).run(pool)
    assert stats.done == 1
    assert backend.get(job).state == "done"
    assert all(not child.process.is_alive() for child in pool.children)


@pytest.mark.slow
def test_a_worker_refuses_handler_processes_started_for_another_worker(backend, registry):
    """Their leases and give-backs would name the other worker: refused, and stopped."""
    settings = WorkerSettings(burst=True, concurrency=1, id="host:1:mine")
    other = child_settings(
        backend.url, registry, settings, worker_id="host:2:theirs", log_format="text"
    )
    pool = start_pool(settings, other)
    job = Queue(backend, registry).enqueue("noop", {"n": 1}).id
    with pytest.raises(ValueError, match="started for another worker or store"):
        Worker(backend, registry, settings, services=[]).run(pool)
    assert all(not child.process.is_alive() for child in pool.children)
    assert backend.get(job).state == "queued"
