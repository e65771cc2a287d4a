"""jobdef's database going away under a real RQ worker loses no job: the database is
reached through a TCP proxy the test cuts while a job dies, then restores."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlsplit

import redis
from conformance import CHANNEL, hooks, ledger
from notify_servers import WebhookServer
from redis_servers import RedisServer
from rq.job import Job, JobStatus

from jobdef.adapters.rq import SheetQueue
from jobdef.backends import open_backend
from support import eventually
from support.proxy import CuttableProxy
from support.workers import Processes

PASSWORD = "pg-pw-5e0b13"
SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: rs_down
handler: adapter_acts:act
queue: {queue}
args:
  cell: {{type: string}}
  script: {{type: array, items: {{type: string}}}}
max_attempts: 2
backoff: {{strategy: fixed, initial: 1s, jitter: none}}
timeout: 5s
idempotency: {{key: "{{cell}}"}}
errors: {{retry: [ConnectionError], fatal: [ValueError], default: retry}}
notify: {{channel: ops, events: [dead]}}
"""


def test_a_job_that_dies_while_the_database_is_down_is_stored_once_it_is_back(
    *,
    tmp_path: Path,
    redis_url: str,
    prefix: str,
    processes: Processes,
    postgres_url: str,
    postgres_schema: str,
) -> None:
    """Before, the burial failed, RQ marked the job failed with no retry left, no dead
    row was ever written, and the run's key stayed active: enqueueing the same key
    again returned the failed job and the handler never ran again."""
    sheets = tmp_path / "jobdefs"
    sheets.mkdir()
    (sheets / "rs_down.yaml").write_text(SHEET.format(queue=prefix), encoding="utf-8")
    (sheets / "channels.yaml").write_text(CHANNEL, encoding="utf-8")
    direct = f"{postgres_url}?schema={postgres_schema}"
    open_backend(direct).close()
    server = urlsplit(postgres_url)
    proxy = CuttableProxy((server.hostname or "127.0.0.1", server.port or 5432))
    through = direct.replace(server.netloc.rpartition("@")[2], f"127.0.0.1:{proxy.port}", 1)
    through = through.replace("://postgres@", f"://postgres:{PASSWORD}@", 1)  # trust: unchecked
    hook = WebhookServer().start()
    client = redis.Redis.from_url(redis_url)
    backend = open_backend(direct)
    try:
        processes.env = {
            "JOBDEF_DATABASE_URL": through,
            "JOBDEF_TEST_REDIS": redis_url,
            "JOBDEF_TEST_PREFIX": prefix,
            "JOBDEF_TEST_HOOK": hook.url,
        }
        command = [
            sys.executable, "-m", "rq.cli", "worker", "--with-scheduler", "--url", redis_url,
            "-w", "jobdef.adapters.rq.SheetWorker", "--name", f"{prefix}-w", prefix,
        ]  # fmt: skip
        processes.start("worker", command)
        queue = SheetQueue(redis.Redis.from_url(redis_url), sheets=sheets, prefix=prefix)
        call = {"cell": "rs_down", "script": ["retry", "fatal"]}

        job = queue.enqueue("rs_down", **call)
        task = job.meta["jobdef"]["task_id"]
        eventually(lambda: len(ledger(client, prefix, "rs_down")) == 1, 20, "attempt 1")
        proxy.cut()  # mid-run: attempt 2 fails fatally while the database is away
        eventually(lambda: len(ledger(client, prefix, "rs_down")) == 2, 20, "attempt 2")
        eventually(
            lambda: processes.log("worker").count("RQ delivers it again") >= 2,
            30,
            "the burial to be tried again while the database is away",
        )
        fetched = Job.fetch(job.id, connection=client)
        assert fetched.get_status() != JobStatus.FAILED, "RQ gave up on the dead job"
        assert client.hget(f"{prefix}:run:{task}", "burial") is not None
        assert queue.enqueue("rs_down", **call).id == job.id  # the run still goes on
        assert len(ledger(client, prefix, "rs_down")) == 2  # and never runs again for it
        assert backend.list_jobs(state="dead") == []

        proxy.restore()
        eventually(
            lambda: len(backend.list_jobs(state="dead")) == 1,
            40,
            "the dead record to be stored once the database is back",
        )
        [dead] = backend.list_jobs(state="dead")
        assert dead.worker_id == f"rq/{task}"
        assert dead.attempt == 2
        eventually(  # the row, then its attempts: two transactions
            lambda: [a.outcome for a in backend.attempts(dead.id)] == ["retry", "dead"], 10
        )
        eventually(lambda: hooks(hook).get("rs_down") == 1, 20, "the one dead notification")
        eventually(
            lambda: Job.fetch(job.id, connection=client).get_status() == JobStatus.FAILED,
            20,
            "RQ to record the job failed once it is buried",
        )
        assert not client.exists(f"{prefix}:run:{task}")  # the key is free

        again = queue.enqueue("rs_down", **call)  # the same key: a new run, really run
        eventually(lambda: len(ledger(client, prefix, "rs_down")) == 3, 20, "the new run")
        eventually(lambda: len(backend.list_jobs(state="dead")) == 2, 30, "the new run dies")
        assert again.meta["jobdef"]["task_id"] == task
        assert again.id != job.id  # an RQ job of its own: RQ may still write the old one
        assert len(ledger(client, prefix, "rs_down")) == 3
        eventually(lambda: hooks(hook).get("rs_down") == 2, 20, "its own notification")
        log = processes.log("worker")
        assert "jobdef's database cannot take its record" in log, log
        assert PASSWORD not in log
        where = urlsplit(redis_url)
        held = RedisServer({"host": where.hostname, "port": where.port or 6379}, redis_url).dump()
        assert PASSWORD.encode() not in held  # not in the jobs, their errors, the run store
    finally:
        backend.close()
        client.close()
        hook.stop()
        proxy.close()
