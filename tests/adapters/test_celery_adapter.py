"""The Celery adapter on real Celery workers (prefork pool): Redis as the broker for the
timeline matrix, RabbitMQ for the kill -9 of a worker mid-task."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis
from celery import Celery
from celery_runs import celery_worker, cells_app, cells_env
from conformance import Cell, dead_rows, hooks, ledger, run_matrix, write_sheets
from notify_servers import WebhookServer

from jobdef.errors import ArgsError
from support import eventually
from support.workers import Processes

CELLS = (
    Cell("c_fixed_dead", "strategy: fixed, initial: 200ms, jitter: none", ("retry",)),
    Cell(
        "c_exponential_fatal",
        "strategy: exponential, initial: 100ms, multiplier: 2, jitter: full",
        ("retry", "fatal"),
    ),
    Cell(
        "c_linear_success",
        "strategy: linear, initial: 100ms, jitter: equal",
        ("retry", "retry", "ok"),
    ),
    Cell(
        "c_list_timeout",
        "strategy: list, initial: 100ms, delays: [300ms, 100ms], max: 400ms, jitter: decorrelated",
        ("hang",),
        timeout="500ms",
    ),
    Cell(
        "c_fixed_hard_kill",
        "strategy: fixed, initial: 100ms, jitter: none",
        ("stubborn", "ok"),
        max_attempts=2,
        timeout="500ms",
    ),
)
# How late a Celery worker may start an attempt after its countdown: the retry's
# publish, the worker's ETA timer, a prefork child taking it, on a shared machine.
TOLERANCE = 1.0
# The hard time limit comes this long after the soft one (jobdef.adapters.celery).
HARD_GRACE = 1.0


def _unserved_app(sheets: Path, tmp_path: Path, redis_url: str, prefix: str) -> Celery:
    """The app on Redis with no worker and a webhook nobody listens on: for what
    ``delay`` itself does."""
    env = cells_env(
        sheets=sheets,
        db=tmp_path / "jobdef.db",
        broker=redis_url,
        redis_url=redis_url,
        prefix=prefix,
        hook="http://127.0.0.1:9/",
    )
    return cells_app(env)


@pytest.mark.slow
def test_every_cell_runs_on_celery_as_its_explain_json_predicts(
    *,
    tmp_path: Path,
    redis_url: str,
    prefix: str,
    processes: Processes,
    webhook: WebhookServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sheets = write_sheets(tmp_path / "jobdefs", CELLS, prefix)
    db = tmp_path / "jobdef.db"
    env = cells_env(
        sheets=sheets, db=db, broker=redis_url, redis_url=redis_url, prefix=prefix, hook=webhook.url
    )
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    app = cells_app(env)
    celery_worker(processes, "worker", env, prefix)
    run = run_matrix(
        CELLS,
        send=lambda job, cell, script: app.tasks[f"{prefix}.{job}"].delay(cell=cell, script=script),
        probe="c_linear_success",
        sheets=sheets,
        client=redis.Redis.from_url(redis_url),
        prefix=prefix,
        database=db,
        webhook=webhook,
        tolerance=TOLERANCE,
        settle=1.5,
        extra=lambda cell: HARD_GRACE if "stubborn" in cell.script else 0.0,
    )
    problems, dead = run.problems, run.dead
    assert not problems, "\n".join(problems) + "\n" + processes.log("worker")
    # The dead record is what `jobdef jobs --state dead` lists, named for its runtime.
    assert dead["c_fixed_dead"]["worker_id"].startswith("celery/")
    assert [outcome for _, outcome in dead["c_list_timeout"]["attempt_rows"]] == ["timeout"] * 3


@pytest.mark.slow
def test_a_worker_killed_mid_task_counts_the_redelivery_and_stops_at_max_attempts(
    *,
    tmp_path: Path,
    redis_url: str,
    amqp_url: str,
    prefix: str,
    processes: Processes,
    webhook: WebhookServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cell = Cell(
        "c_killed", "strategy: fixed, initial: 100ms, jitter: none", ("die",), timeout="30s"
    )
    sheets = write_sheets(tmp_path / "jobdefs", (cell,), prefix)
    db = tmp_path / "jobdef.db"
    env = cells_env(
        sheets=sheets, db=db, broker=amqp_url, redis_url=redis_url, prefix=prefix, hook=webhook.url
    )
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    app = cells_app(env)
    client = redis.Redis.from_url(redis_url)
    marker = str(tmp_path / "began")
    app.tasks[f"{prefix}.c_killed"].delay(cell=cell.name, script=["die"], marker=marker)

    for attempt in range(1, cell.max_attempts + 1):
        worker = celery_worker(processes, f"worker{attempt}", env, prefix)
        eventually(
            lambda n=attempt: Path(f"{marker}.{n}").exists(),
            timeout=30,
            what=f"attempt {attempt} to begin",
        )
        worker.kill()

    # The next worker receives the redelivery of the third attempt's message: it counts
    # that attempt as lost, finds the attempts used up and buries the job, unrun.
    last = celery_worker(processes, "worker-last", env, prefix)
    eventually(lambda: "c_killed" in dead_rows(db), timeout=30, what="the burial")
    eventually(lambda: hooks(webhook).get("c_killed") == 1, what="the dead notification")
    time.sleep(1.0)
    assert len(ledger(client, prefix, cell.name)) == cell.max_attempts
    assert not Path(f"{marker}.{cell.max_attempts + 1}").exists()
    row = dead_rows(db)["c_killed"]
    assert row["attempt"] == cell.max_attempts
    assert [outcome for _, outcome in row["attempt_rows"]] == ["reclaimed"] * 3
    assert "attempts used up (3 of 3)" in row["last_error"]
    assert hooks(webhook) == {"c_killed": 1}
    assert last.process.poll() is None


def test_delay_refuses_args_the_sheet_does_not_accept_and_sends_nothing(
    tmp_path: Path, redis_url: str, prefix: str
) -> None:
    sheets = write_sheets(tmp_path / "jobdefs", (CELLS[0],), prefix)
    app = _unserved_app(sheets, tmp_path, redis_url, prefix)
    client = redis.Redis.from_url(redis_url)
    with pytest.raises(ArgsError, match="script"):
        app.tasks[f"{prefix}.c_fixed_dead"].delay(cell="x", script="not a list")
    assert client.llen(prefix) == 0  # nothing reached the broker's queue


def test_a_second_delay_with_the_same_key_while_one_is_active_sends_nothing(
    tmp_path: Path, redis_url: str, prefix: str
) -> None:
    cell = Cell("c_keyed", "strategy: fixed, initial: 1s", ("ok",))
    sheets = write_sheets(tmp_path / "jobdefs", (cell,), prefix)
    sheet = sheets / "c_keyed.yaml"
    sheet.write_text(sheet.read_text() + "idempotency: {key: '{cell}'}\n", encoding="utf-8")
    app = _unserved_app(sheets, tmp_path, redis_url, prefix)
    client = redis.Redis.from_url(redis_url)
    task = app.tasks[f"{prefix}.c_keyed"]
    first = task.delay(cell="order-7", script=["ok"])
    second = task.delay(cell="order-7", script=["ok"])
    other = task.delay(cell="order-8", script=["ok"])
    assert first.id == second.id != other.id
    assert client.llen(prefix) == 2  # two messages: order-7 once, order-8
