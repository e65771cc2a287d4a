"""What the Celery adapter keeps in Redis lives as long as the runtime may still
deliver the message it is about: a countdown of two hours, a broker that redelivers
an unacked message twelve hours later (a Redis ``visibility_timeout``, which
``jobdef check`` asks to be long).

Hours cannot pass in a test, so Redis's clock is moved instead, for the test's keys
only: every expiry is brought that much nearer (:func:`_age`), and a message left
unacked by a killed worker is made that much older, as Redis would see them then.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import redis
from celery_runs import celery_worker, cells_app, cells_env
from conformance import Cell, dead_rows, ledger, write_sheets
from notify_servers import WebhookServer

from jobdef.backends import open_backend
from support import eventually
from support.workers import Processes

BACKOFF = "strategy: fixed, initial: 100ms, jitter: none"
TWELVE_HOURS = 12 * 3600.0


def _age(client: redis.Redis, prefix: str, seconds: float) -> None:
    """Bring the expiry of every key under ``prefix`` ``seconds`` nearer (expiring
    those it passes), as if that much time went by."""
    for key in client.scan_iter(f"{prefix}:*"):
        left = int(client.pttl(key))
        if left < 0:
            continue  # no expiry: the test's ledger
        if left <= seconds * 1000:
            client.delete(key)
        else:
            client.pexpire(key, left - int(seconds * 1000))


def _age_unacked(client: redis.Redis, queue: str, seconds: float) -> int:
    """Make the unacked messages of ``queue`` (kombu's Redis transport keeps them in
    ``unacked``, delivered at the ``unacked_index`` score) ``seconds`` older; how many."""
    aged = 0
    for tag, raw in client.hgetall("unacked").items():
        if json.loads(raw)[2] != queue:
            continue
        score = client.zscore("unacked_index", tag)
        if score is not None:
            client.zadd("unacked_index", {tag: score - seconds})
            aged += 1
    return aged


def test_a_call_held_by_a_two_hour_countdown_refuses_its_duplicate_all_that_time(
    tmp_path: Path, redis_url: str, prefix: str
) -> None:
    cell = Cell("c_later", BACKOFF, ("ok",))
    sheets = write_sheets(tmp_path / "jobdefs", (cell,), prefix)
    sheet = sheets / "c_later.yaml"
    sheet.write_text(sheet.read_text() + "idempotency: {key: '{cell}'}\n", encoding="utf-8")
    env = cells_env(
        sheets=sheets,
        db=tmp_path / "jobdef.db",
        broker=redis_url,
        redis_url=redis_url,
        prefix=prefix,
        hook="http://127.0.0.1:9/",
    )
    task = cells_app(env).tasks[f"{prefix}.c_later"]
    client = redis.Redis.from_url(redis_url)
    call = {"cell": "order-7", "script": ["ok"]}
    first = task.apply_async(kwargs=call, countdown=7200)
    assert client.llen(prefix) == 1

    _age(client, prefix, 7000)  # nearly two hours on: the message still waits
    second = task.apply_async(kwargs=call)
    assert second.id == first.id
    assert client.llen(prefix) == 1  # the duplicate was not sent


@pytest.mark.slow
def test_a_dead_runs_message_redelivered_twelve_hours_after_a_lost_ack_runs_nothing(
    *,
    tmp_path: Path,
    redis_url: str,
    prefix: str,
    processes: Processes,
    webhook: WebhookServer,
) -> None:
    cell = Cell("c_buried", BACKOFF, ("fatal",), timeout="60s")
    sheets = write_sheets(tmp_path / "jobdefs", (cell,), prefix)
    db = tmp_path / "jobdef.db"
    env = cells_env(
        sheets=sheets,
        db=db,
        broker=redis_url,
        redis_url=redis_url,
        prefix=prefix,
        hook=webhook.url,
        visibility_timeout=TWELVE_HOURS,
    )
    app = cells_app(env)
    client = redis.Redis.from_url(redis_url)
    webhook.gate = threading.Event()  # the dead notification hangs: the task has not returned
    first = celery_worker(processes, "worker1", env, prefix)
    app.tasks[f"{prefix}.c_buried"].delay(cell=cell.name, script=["fatal"])
    eventually(lambda: webhook.received, timeout=30, what="the burial and its notification")
    first.kill()  # buried, notified, never acked
    webhook.gate.set()
    assert "c_buried" in dead_rows(db)

    # Twelve hours on, the broker hands the unacked message to the next worker.
    assert _age_unacked(client, prefix, TWELVE_HOURS + 60) == 1
    _age(client, prefix, TWELVE_HOURS + 60)
    celery_worker(processes, "worker2", env, prefix)
    eventually(
        lambda: (
            "redelivery is dropped" in processes.log("worker2")
            or len(ledger(client, prefix, cell.name)) > 1
        ),
        timeout=60,
        what="the redelivery",
    )
    assert len(ledger(client, prefix, cell.name)) == 1, processes.log("worker2")
    backend = open_backend(f"sqlite:///{db}", create=False)
    try:
        [row] = backend.list_jobs(state="dead")  # one burial, not a second run's
    finally:
        backend.close()
    assert row.attempt == 1
    assert len(webhook.received) == 1


@pytest.mark.slow
def test_a_message_that_expires_unrun_frees_its_key_at_once(
    tmp_path: Path, redis_url: str, prefix: str, processes: Processes
) -> None:
    cell = Cell("c_expires", BACKOFF, ("ok",))
    sheets = write_sheets(tmp_path / "jobdefs", (cell,), prefix)
    sheet = sheets / "c_expires.yaml"
    sheet.write_text(sheet.read_text() + "idempotency: {key: '{cell}'}\n", encoding="utf-8")
    env = cells_env(
        sheets=sheets,
        db=tmp_path / "jobdef.db",
        broker=redis_url,
        redis_url=redis_url,
        prefix=prefix,
        hook="http://127.0.0.1:9/",
    )
    task = cells_app(env).tasks[f"{prefix}.c_expires"]
    client = redis.Redis.from_url(redis_url)
    call = {"cell": "order-9", "script": ["ok"]}
    first = task.apply_async(kwargs=call, expires=0.5)
    time.sleep(1.0)  # expired before any worker takes it
    celery_worker(processes, "worker", env, prefix)
    eventually(
        lambda: not client.exists(f"{prefix}:run:{first.id}"),
        timeout=30,
        what="the expired run's key to be freed",
    )
    assert ledger(client, prefix, "order-9") == []

    second = task.apply_async(kwargs=call)  # sent, not refused as a duplicate
    assert second.id == first.id
    eventually(lambda: ledger(client, prefix, "order-9"), timeout=30, what="the new run")
