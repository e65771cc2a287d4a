"""The RQ adapter on a real RQ worker (``--with-scheduler``, jobdef's worker class) on Redis."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import pytest
import redis
from conformance import Cell, explain, run_matrix, write_sheets
from notify_servers import WebhookServer
from rq import Queue
from rq.registry import ScheduledJobRegistry

from jobdef.adapters.rq import SheetQueue, retry_interval, sampled_waits
from jobdef.backends import open_backend
from jobdef.errors import ArgsError
from jobdef.sheets.pipeline import load_registry
from support import eventually
from support.workers import Processes

CELLS = (
    Cell("r_fixed_dead", "strategy: fixed, initial: 1s, jitter: none", ("retry",)),
    Cell(
        "r_exponential_fatal",
        "strategy: exponential, initial: 1s, multiplier: 2, jitter: full",
        ("retry", "fatal"),
    ),
    Cell("r_linear_success", "strategy: linear, initial: 1s, jitter: equal", ("retry", "ok")),
    Cell(
        "r_fixed_timeout",
        "strategy: fixed, initial: 1s, jitter: none",
        ("hang",),
        max_attempts=2,
        timeout="1s",
    ),
)
# Waits are drawn at enqueue and rounded up to whole seconds; RQ's scheduler moves a due
# job to its queue within about a second, then the worker forks a work horse for it.
TOLERANCE = 2.5
WORKERS = 3


def _queue(tmp_path: Path, redis_url: str, prefix: str, cells: tuple[Cell, ...]) -> SheetQueue:
    sheets = write_sheets(tmp_path / "jobdefs", cells, prefix)
    database = f"sqlite:///{tmp_path / 'jobdef.db'}"
    open_backend(database).close()
    return SheetQueue(redis.Redis.from_url(redis_url), sheets=str(sheets), prefix=prefix)


@pytest.mark.slow
def test_every_cell_runs_on_rq_as_its_explain_json_predicts(
    *,
    tmp_path: Path,
    redis_url: str,
    prefix: str,
    processes: Processes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = WebhookServer().start()
    try:
        monkeypatch.setenv("JOBDEF_TEST_REDIS", redis_url)
        monkeypatch.setenv("JOBDEF_TEST_PREFIX", prefix)
        monkeypatch.setenv("JOBDEF_TEST_HOOK", server.url)
        sheets = _queue(tmp_path, redis_url, prefix, CELLS)
        processes.env = {
            "JOBDEF_DATABASE_URL": f"sqlite:///{tmp_path / 'jobdef.db'}",
            "JOBDEF_TEST_REDIS": redis_url,
            "JOBDEF_TEST_PREFIX": prefix,
            "JOBDEF_TEST_HOOK": server.url,
        }
        # An RQ worker runs one job at a time: three, so that a hanging attempt does not
        # hold up the others' (one of them holds the scheduler's lock).
        for n in range(WORKERS):
            command = [
                sys.executable, "-m", "rq.cli", "worker", "--with-scheduler", "--url", redis_url,
                "-w", "jobdef.adapters.rq.SheetWorker", "--name", f"{prefix}-worker{n}", prefix,
            ]  # fmt: skip
            processes.start(f"worker{n}", command)
        run = run_matrix(
            CELLS,
            send=lambda job, cell, script: sheets.enqueue(job, cell=cell, script=script),
            probe="r_linear_success",
            sheets=Path(sheets.sheets),
            client=redis.Redis.from_url(redis_url),
            prefix=prefix,
            database=tmp_path / "jobdef.db",
            webhook=server,
            tolerance=TOLERANCE,
            settle=2.5,
        )
        problems, dead = run.problems, run.dead
        assert not problems, "\n".join(problems) + "\n" + processes.log("worker0")
        assert dead["r_fixed_dead"]["worker_id"].startswith("rq/")
        assert [o for _, o in dead["r_fixed_timeout"]["attempt_rows"]] == ["timeout"] * 2
    finally:
        server.stop()


def test_enqueue_checks_args_and_draws_every_wait_within_explains_range(
    tmp_path: Path, redis_url: str, prefix: str
) -> None:
    sheets = _queue(tmp_path, redis_url, prefix, CELLS)
    with pytest.raises(ArgsError, match="script"):
        sheets.enqueue("r_fixed_dead", cell="x", script=3)
    job = sheets.enqueue("r_exponential_fatal", cell="x", script=["ok"])
    policy = load_registry([sheets.sheets]).job("r_exponential_fatal")
    waits = job.meta["jobdef"]["waits"]
    assert len(waits) == policy.max_attempts - 1
    assert job.retries_left == policy.max_attempts - 1
    assert job.retry_intervals == waits
    assert job.timeout == 2
    rows = explain("r_exponential_fatal", Path(sheets.sheets))["timeline"]["rows"]
    for wait, row in zip(waits, rows[1:], strict=True):
        assert row["wait_min"] <= wait <= row["wait_max"] + 1  # rounded up to a second
    assert all(isinstance(w, int) for w in sampled_waits(policy))


def test_enqueue_frees_a_run_whose_rq_job_can_no_longer_run(
    tmp_path: Path, redis_url: str, prefix: str
) -> None:
    """A key stays active only while its RQ job can still run: before, a run whose RQ
    job was deleted or cancelled kept its key until the state expired, and every
    enqueue with that key returned the dead job (or raised NoSuchJobError)."""
    sheets = write_sheets(tmp_path / "jobdefs", (), prefix)
    sheet = CELLS[0].sheet(prefix).replace(CELLS[0].name, "r_keyed")
    (sheets / "r_keyed.yaml").write_text(sheet + 'idempotency: {key: "{cell}"}\n')
    queue = SheetQueue(redis.Redis.from_url(redis_url), sheets=sheets, prefix=prefix)
    client = redis.Redis.from_url(redis_url)

    first = queue.enqueue("r_keyed", cell="a", script=["ok"])
    assert queue.enqueue("r_keyed", cell="a", script=["ok"]).id == first.id  # active
    first.delete()
    second = queue.enqueue("r_keyed", cell="a", script=["ok"])
    assert second.id != first.id
    assert second.meta["jobdef"]["task_id"] == first.meta["jobdef"]["task_id"]
    assert client.lrange(f"rq:queue:{prefix}", 0, -1) == [second.id.encode()]

    second.cancel()
    third = queue.enqueue("r_keyed", cell="a", script=["ok"])
    assert third.id not in (first.id, second.id)
    assert third.get_status() == "queued"
    client.close()


def test_an_async_def_handler_is_awaited_on_rq_and_retried_by_the_sheet(
    *, tmp_path: Path, redis_url: str, prefix: str, processes: Processes
) -> None:
    """RQ would take the coroutine an ``async def`` handler returns as the job's result:
    finished at once, the work never done. Its first attempt raises here, so the job
    finishes only if the handler really ran, twice, and the sheet decided the retry."""
    cell = Cell(
        "r_async",
        "strategy: fixed, initial: 1s, jitter: none",
        ("retry", "ok"),
        handler="adapter_acts:act_async",
    )
    queue = _queue(tmp_path, redis_url, prefix, (cell,))
    processes.env = {
        "JOBDEF_DATABASE_URL": f"sqlite:///{tmp_path / 'jobdef.db'}",
        "JOBDEF_TEST_REDIS": redis_url,
        "JOBDEF_TEST_PREFIX": prefix,
    }
    command = [
        sys.executable, "-m", "rq.cli", "worker", "--with-scheduler", "--url", redis_url,
        "-w", "jobdef.adapters.rq.SheetWorker", "--name", f"{prefix}-async", prefix,
    ]  # fmt: skip
    processes.start("worker", command)
    job = queue.enqueue("r_async", cell="r_async", script=["retry", "ok"])
    eventually(lambda: job.get_status(refresh=True) == "finished", what="the job finished")
    client = redis.Redis.from_url(redis_url)
    assert client.llen(f"{prefix}:ledger:r_async") == 2
    client.close()


@pytest.mark.parametrize("wait", [0.2, 1.0, 1.5, 3.0])
@pytest.mark.parametrize("fraction", [0.0, 0.06, 0.5, 0.94, 0.999])
def test_a_retrys_interval_keeps_it_from_running_early_when_rq_cuts_its_time(
    wait: float, fraction: float
) -> None:
    """RQ stores a retry's time (its clock plus the interval) cut to the whole second:
    ``ceil(wait)`` from 0.94 past a second would deliver the retry 0.06 s later."""
    now = 1_800_000_000 + fraction
    interval = retry_interval(wait, now)
    for later in (0.0, 0.003, 0.5, 0.999, 1.7):  # when RQ reads its clock, after ours
        stored = math.floor(now + later + interval)
        assert now + wait <= stored < now + later + wait + 2


def test_rq_schedules_the_retry_no_sooner_than_the_sheets_wait(
    tmp_path: Path, redis_url: str, prefix: str
) -> None:
    """The same, through RQ itself, at the moment of a second where cutting hurts most."""
    sheets = _queue(tmp_path, redis_url, prefix, CELLS)
    job = sheets.enqueue("r_fixed_dead", cell="x", script=["retry"])
    while time.time() % 1.0 < 0.9:  # late in a second
        time.sleep(0.01)
    now = time.time()
    job.retry_intervals = [retry_interval(1.0, now)]
    job.retries_left = 1
    queue = Queue(prefix, connection=job.connection)
    with job.connection.pipeline() as pipe:
        job.retry(queue, pipe)
        pipe.execute()
    stored = job.connection.zscore(ScheduledJobRegistry(queue=queue).key, job.id)
    assert stored is not None
    assert now + 1.0 <= stored < now + 3.0
