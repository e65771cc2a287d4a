"""The Celery adapter when its own bookkeeping fails, on real Celery workers: jobdef's
database (PostgreSQL) or the run store (Redis) is cut at a TCP proxy mid-run and
restored; the broker (Redis) stays up. Nothing is acked and dropped: the handler
runs once, the dead record is written once the store is back, and the run's key
is free again afterwards."""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis
from celery import Celery
from celery.signals import before_task_publish
from celery_runs import celery_worker, cells_app, cells_env
from conformance import Cell, hooks, ledger, write_sheets
from kombu.exceptions import OperationalError
from notify_servers import WebhookServer

from jobdef.backends import open_backend
from jobdef.backends.records import JobRecord
from support import eventually
from support.proxy import CuttableProxy
from support.workers import Processes, WorkerProcess

pytestmark = pytest.mark.slow

# The handler is held (``held-<act>``) until the test cut the store: the cut falls
# between the start of the attempt and its end.
BACKOFF = "strategy: fixed, initial: 100ms, jitter: none"
# How long a store stays cut: long enough for the message to come back a few times.
OUTAGE = 3.0


def _proxy(url: str, default_port: int) -> CuttableProxy:
    parts = urlsplit(url)
    return CuttableProxy((parts.hostname or "127.0.0.1", parts.port or default_port))


@pytest.fixture
def redis_proxy(redis_url: str) -> Iterator[CuttableProxy]:
    proxy = _proxy(redis_url, 6379)
    yield proxy
    proxy.close()


@pytest.fixture
def postgres_proxy(postgres_url: str) -> Iterator[CuttableProxy]:
    proxy = _proxy(postgres_url, 5432)
    yield proxy
    proxy.close()


def _dead(database: str) -> list[JobRecord]:
    backend = open_backend(database, create=False)
    try:
        return backend.list_jobs(state="dead")
    finally:
        backend.close()


def _keyed(sheets: Path, name: str) -> None:
    sheet = sheets / f"{name}.yaml"
    sheet.write_text(sheet.read_text() + "idempotency: {key: '{cell}'}\n", encoding="utf-8")


def _held_attempt(
    app: Celery, task: str, cell: Cell, *, marker: Path, proxy: CuttableProxy, script: str
) -> str:
    """Send ``cell`` with ``script``, cut ``proxy`` once its first attempt is running,
    then let the handler finish; the task id."""
    result = app.tasks[task].delay(cell=cell.name, script=[script], marker=str(marker))
    eventually(lambda: Path(f"{marker}.1").exists(), timeout=30, what="the attempt to begin")
    proxy.cut()
    Path(f"{marker}.go").touch()
    return str(result.id)


def test_a_death_while_jobdefs_database_is_down_is_stored_once_it_is_back(
    *,
    tmp_path: Path,
    redis_url: str,
    postgres_url: str,
    postgres_schema: str,
    postgres_proxy: CuttableProxy,
    prefix: str,
    processes: Processes,
    webhook: WebhookServer,
) -> None:
    cell = Cell("c_db_down", BACKOFF, ("fatal",), timeout="60s")
    sheets = write_sheets(tmp_path / "jobdefs", (cell,), prefix)
    database = f"{postgres_url}?schema={postgres_schema}"
    env = cells_env(
        sheets=sheets,
        db=postgres_proxy.url(database),
        broker=redis_url,
        redis_url=redis_url,
        prefix=prefix,
        hook=webhook.url,
    )
    app = cells_app(env)
    celery_worker(processes, "worker", env, prefix)
    marker = tmp_path / "began"
    task_id = _held_attempt(
        app, f"{prefix}.{cell.name}", cell, marker=marker, proxy=postgres_proxy, script="held-fatal"
    )

    time.sleep(OUTAGE)  # the death is decided while the database is unreachable
    assert _dead(database) == []
    postgres_proxy.restore()

    eventually(lambda: _dead(database), timeout=60, what="the dead record, with the database back")
    eventually(lambda: hooks(webhook).get(cell.name) == 1, what="the dead notification")
    time.sleep(1.5)  # room for a second record, notification or attempt to show
    client = redis.Redis.from_url(redis_url)
    assert len(ledger(client, prefix, cell.name)) == 1, processes.log("worker")
    [row] = _dead(database)
    assert row.worker_id == f"celery/{task_id}"
    assert row.attempt == 1
    assert hooks(webhook) == {cell.name: 1}
    assert not client.exists(f"{prefix}:run:{task_id}")  # the run is over, its key free
    assert "jobdef's database cannot take its record yet" in processes.log("worker")


def test_a_failure_while_the_run_store_is_down_is_recorded_and_buried_once_it_is_back(
    *,
    tmp_path: Path,
    redis_url: str,
    redis_proxy: CuttableProxy,
    prefix: str,
    processes: Processes,
    webhook: WebhookServer,
) -> None:
    cell = Cell("c_store_down_dead", BACKOFF, ("fatal",), timeout="60s")
    sheets = write_sheets(tmp_path / "jobdefs", (cell,), prefix)
    db = tmp_path / "jobdef.db"
    env = cells_env(
        sheets=sheets,
        db=db,
        broker=redis_url,
        redis_url=redis_proxy.url(redis_url),
        ledger=redis_url,
        prefix=prefix,
        hook=webhook.url,
    )
    app = cells_app(env)
    celery_worker(processes, "worker", env, prefix)
    task_id = _held_attempt(
        app,
        f"{prefix}.{cell.name}",
        cell,
        marker=tmp_path / "began",
        proxy=redis_proxy,
        script="held-fatal",
    )

    time.sleep(OUTAGE)  # the attempt ends while the run store is unreachable
    database = f"sqlite:///{db}"
    assert _dead(database) == []
    redis_proxy.restore()

    eventually(lambda: _dead(database), timeout=60, what="the dead record, once Redis is back")
    eventually(lambda: hooks(webhook).get(cell.name) == 1, what="the dead notification")
    time.sleep(1.5)
    client = redis.Redis.from_url(redis_url)
    assert len(ledger(client, prefix, cell.name)) == 1, processes.log("worker")
    [row] = _dead(database)
    assert row.attempt == 1
    assert row.last_error is not None
    assert "the input is wrong" in row.last_error.message  # classified: fatal, not retried
    assert hooks(webhook) == {cell.name: 1}
    assert not client.exists(f"{prefix}:run:{task_id}")
    assert "the run store cannot be reached" in processes.log("worker")


def test_a_failure_outlasting_the_run_state_in_an_outage_is_still_recorded_and_buried(
    *,
    tmp_path: Path,
    redis_url: str,
    redis_proxy: CuttableProxy,
    prefix: str,
    processes: Processes,
    webhook: WebhookServer,
) -> None:
    """The run store is out of reach longer than the run's state lives (its keys expire
    meanwhile, here deleted as Redis would expire them): the attempt the message
    carries is recorded on a run opened again, counted, and the run goes on to its
    last attempt and is buried. Before, the delivery found no run state, raised, and
    Celery acked the message: no dead row, no further attempt."""
    cell = Cell("c_store_down_expired", BACKOFF, ("retry",), timeout="60s")
    sheets = write_sheets(tmp_path / "jobdefs", (cell,), prefix)
    db = tmp_path / "jobdef.db"
    env = cells_env(
        sheets=sheets,
        db=db,
        broker=redis_url,
        redis_url=redis_proxy.url(redis_url),
        ledger=redis_url,
        prefix=prefix,
        hook=webhook.url,
    )
    app = cells_app(env)
    celery_worker(processes, "worker", env, prefix)
    task_id = _held_attempt(
        app,
        f"{prefix}.{cell.name}",
        cell,
        marker=tmp_path / "began",
        proxy=redis_proxy,
        script="held-retry",
    )
    eventually(
        lambda: "the run store cannot be reached" in processes.log("worker"),
        timeout=30,
        what="the attempt's end to meet the outage",
    )
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(f"{prefix}:run:{task_id}*"))
    assert keys  # the run's state, as the outage began
    client.delete(*keys)  # its lifetime ran out during the outage
    redis_proxy.restore()

    database = f"sqlite:///{db}"
    eventually(lambda: _dead(database), timeout=60, what="the dead record, once Redis is back")
    eventually(lambda: hooks(webhook).get(cell.name) == 1, what="the dead notification")
    time.sleep(1.5)
    # Attempt 1 (in the outage), then 2 and 3: the sheet's three, none more.
    assert len(ledger(client, prefix, cell.name)) == 3, processes.log("worker")
    [row] = _dead(database)
    assert row.attempt == 3
    assert row.last_error is not None
    assert "attempt 3: the server is down" in row.last_error.message
    assert not client.exists(f"{prefix}:run:{task_id}")


def test_a_success_while_the_run_store_is_down_frees_the_key_once_it_is_back(
    *,
    tmp_path: Path,
    redis_url: str,
    redis_proxy: CuttableProxy,
    prefix: str,
    processes: Processes,
) -> None:
    cell = Cell("c_store_down_done", BACKOFF, ("ok",), timeout="60s")
    sheets = write_sheets(tmp_path / "jobdefs", (cell,), prefix)
    _keyed(sheets, cell.name)
    env = cells_env(
        sheets=sheets,
        db=tmp_path / "jobdef.db",
        broker=redis_url,
        redis_url=redis_proxy.url(redis_url),
        ledger=redis_url,
        prefix=prefix,
        hook="http://127.0.0.1:9/",
    )
    app = cells_app(env)
    celery_worker(processes, "worker", env, prefix)
    task = f"{prefix}.{cell.name}"
    task_id = _held_attempt(
        app, task, cell, marker=tmp_path / "began", proxy=redis_proxy, script="held-ok"
    )

    time.sleep(OUTAGE)  # the attempt ends while the run store is unreachable
    redis_proxy.restore()
    client = redis.Redis.from_url(redis_url)
    eventually(
        lambda: not client.exists(f"{prefix}:run:{task_id}"),
        timeout=60,
        what="the run to be closed once Redis is back",
    )
    assert len(ledger(client, prefix, cell.name)) == 1  # the success is not run again

    # The key is free: the same call is sent again, and runs.
    again = app.tasks[task].delay(cell=cell.name, script=["ok"])
    assert str(again.id) == task_id
    eventually(
        lambda: len(ledger(client, prefix, cell.name)) == 2,
        timeout=30,
        what="the second run of the key",
    )
    log = processes.log("worker")
    assert "the run store cannot be reached" in log
    assert "Traceback" not in log


def test_a_delivery_that_finds_the_run_store_down_runs_once_it_is_back(
    *,
    tmp_path: Path,
    redis_url: str,
    redis_proxy: CuttableProxy,
    prefix: str,
    processes: Processes,
) -> None:
    cell = Cell("c_store_down_first", BACKOFF, ("ok",), timeout="60s")
    sheets = write_sheets(tmp_path / "jobdefs", (cell,), prefix)
    common = {"sheets": sheets, "db": tmp_path / "jobdef.db", "broker": redis_url}
    worker_env = cells_env(
        **common,
        redis_url=redis_proxy.url(redis_url),
        ledger=redis_url,
        prefix=prefix,
        hook="http://127.0.0.1:9/",
    )
    celery_worker(processes, "worker", worker_env, prefix)
    # The producer reaches the run store directly; the worker's way to it is cut.
    producer = cells_app(worker_env | {"JOBDEF_TEST_REDIS": redis_url})
    redis_proxy.cut()
    result = producer.tasks[f"{prefix}.{cell.name}"].delay(cell=cell.name, script=["ok"])
    eventually(
        lambda: f"{result.id}] received" in processes.log("worker"),
        timeout=30,
        what="the worker to receive the task with the run store down",
    )
    time.sleep(OUTAGE)
    client = redis.Redis.from_url(redis_url)
    assert ledger(client, prefix, cell.name) == []  # nothing ran without its count
    redis_proxy.restore()

    eventually(
        lambda: len(ledger(client, prefix, cell.name)) == 1,
        timeout=60,
        what="the attempt, once Redis is back",
    )
    eventually(
        lambda: not client.exists(f"{prefix}:run:{result.id}"),
        timeout=30,
        what="the run to be closed",
    )
    time.sleep(1.0)
    assert len(ledger(client, prefix, cell.name)) == 1
    assert "the run store cannot be reached" in processes.log("worker")


def test_a_call_whose_send_fails_with_the_run_store_leaves_its_key_free(
    *, tmp_path: Path, redis_url: str, redis_proxy: CuttableProxy, prefix: str
) -> None:
    """Redis, broker and run store at once, goes away after the run is opened and before
    its message is published: the send fails and so does freeing the key. Before, the
    key stayed active for the run's whole lifetime (hours), and the caller's retry once
    Redis was back was answered "active; not sent" and never ran."""
    cell = Cell("c_send_cut", BACKOFF, ("ok",))
    sheets = write_sheets(tmp_path / "jobdefs", (cell,), prefix)
    _keyed(sheets, cell.name)
    through = redis_proxy.url(redis_url)
    env = cells_env(
        sheets=sheets,
        db=tmp_path / "jobdef.db",
        broker=through,
        redis_url=through,
        prefix=prefix,
        hook="http://127.0.0.1:9/",
    )
    task = cells_app(env).tasks[f"{prefix}.{cell.name}"]

    def cut(**_: object) -> None:
        redis_proxy.cut()

    before_task_publish.connect(cut, weak=False)
    try:
        with pytest.raises(OperationalError):
            task.apply_async(kwargs={"cell": "order-1", "script": ["ok"]}, retry=False)
    finally:
        before_task_publish.disconnect(cut)
    redis_proxy.restore()
    client = redis.Redis.from_url(redis_url)
    assert client.llen(prefix) == 0  # nothing was sent

    again = task.apply_async(kwargs={"cell": "order-1", "script": ["ok"]})
    assert client.llen(prefix) == 1, "the retried call was refused as a duplicate"
    assert again.id


# A producer process of ``celery_cells:app`` that sends the task named by argv[1] for
# key order-2, with a send grace of argv[2] seconds; argv[3]: "kill" kills it with
# SIGKILL as it is about to publish, "hold" has it publish 2 s late (within the grace).
PRODUCER = """
import os, signal, sys, time
from celery.signals import before_task_publish
import jobdef.adapters.celery as adapter
from celery_cells import app

adapter.SEND_GRACE = float(sys.argv[2])
def publishing(**_):
    open(os.environ["PUBLISHING"], "w").close()
    if sys.argv[3] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(2)
before_task_publish.connect(publishing, weak=False)
app.tasks[sys.argv[1]].delay(cell="order-2", script=["ok"])
"""


def _producer(
    processes: Processes, env: dict[str, str], task: str, mode: str, marker: Path
) -> WorkerProcess:
    processes.env = env | {"PUBLISHING": str(marker)}
    grace = "2" if mode == "kill" else "20"
    command = [sys.executable, "-c", PRODUCER, task, grace, mode]
    started = processes.start(f"producer-{mode}", command)
    eventually(marker.exists, timeout=30, what="the producer to be about to publish")
    return started


def test_a_producer_killed_as_it_sends_holds_its_key_only_for_the_send_grace(
    *, tmp_path: Path, redis_url: str, prefix: str, processes: Processes
) -> None:
    """Before, its run stayed active for its whole lifetime, and every call with the key
    was answered "active; not sent" though no message existed."""
    cell = Cell("c_send_killed", BACKOFF, ("ok",))
    sheets = write_sheets(tmp_path / "jobdefs", (cell,), prefix)
    _keyed(sheets, cell.name)
    env = cells_env(
        sheets=sheets,
        db=tmp_path / "jobdef.db",
        broker=redis_url,
        redis_url=redis_url,
        prefix=prefix,
        hook="http://127.0.0.1:9/",
    )
    task = cells_app(env).tasks[f"{prefix}.{cell.name}"]
    producer = _producer(processes, env, task.name, "kill", tmp_path / "publishing")
    assert producer.process.wait(30) == -signal.SIGKILL
    client = redis.Redis.from_url(redis_url)
    assert client.llen(prefix) == 0

    again = task.delay(cell="order-2", script=["ok"])  # waits out the 2 s grace, then sends
    assert client.llen(prefix) == 1, "the call was refused for a message that was never sent"
    assert again.id


def test_a_call_while_another_producer_sends_its_key_waits_and_sends_nothing(
    *, tmp_path: Path, redis_url: str, prefix: str, processes: Processes
) -> None:
    cell = Cell("c_send_held", BACKOFF, ("ok",))
    sheets = write_sheets(tmp_path / "jobdefs", (cell,), prefix)
    _keyed(sheets, cell.name)
    env = cells_env(
        sheets=sheets,
        db=tmp_path / "jobdef.db",
        broker=redis_url,
        redis_url=redis_url,
        prefix=prefix,
        hook="http://127.0.0.1:9/",
    )
    task = cells_app(env).tasks[f"{prefix}.{cell.name}"]
    client = redis.Redis.from_url(redis_url)
    producer = _producer(processes, env, task.name, "hold", tmp_path / "publishing")
    assert client.llen(prefix) == 0  # the producer has not published yet

    again = task.delay(cell="order-2", script=["ok"])
    assert client.llen(prefix) == 1  # the producer's message, not a second one
    assert producer.process.wait(30) == 0, processes.log("producer-hold")
    assert client.llen(prefix) == 1
    assert again.id
