"""A whole RQ worker lost (SIGKILL of the worker and its work horse) during the last
attempt of a run leaves no key active: RQ's cleanup of abandoned jobs delivers the job
again, and that delivery counts the lost attempt, buries the run and frees its key."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import redis
from conformance import CHANNEL, dead_rows, ledger
from notify_servers import WebhookServer
from rq.job import Job, JobStatus
from rq.registry import StartedJobRegistry

from jobdef.adapters.rq import SheetQueue
from jobdef.backends import open_backend
from support import eventually
from support.workers import Processes

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: rl_lost
handler: adapter_acts:act
queue: {queue}
args:
  cell: {{type: string}}
  script: {{type: array, items: {{type: string}}}}
  marker: {{type: string, required: false}}
max_attempts: 1
timeout: 60s
idempotency: {{key: "{{cell}}"}}
on_reclaim: retry
errors: {{default: retry}}
notify: {{channel: ops, events: [dead]}}
"""


def test_a_worker_lost_in_the_last_attempt_buries_the_run_and_frees_its_key(
    *, tmp_path: Path, redis_url: str, prefix: str, processes: Processes
) -> None:
    """Before, the job had no RQ retry left on its last attempt: the cleanup moved it to
    RQ's failed registry, no dead row was written, and the run's key stayed active, so
    enqueueing the same key returned the failed job and nothing ran."""
    sheets = tmp_path / "jobdefs"
    sheets.mkdir()
    (sheets / "rl_lost.yaml").write_text(SHEET.format(queue=prefix), encoding="utf-8")
    (sheets / "channels.yaml").write_text(CHANNEL, encoding="utf-8")
    database = tmp_path / "jobdef.db"
    open_backend(f"sqlite:///{database}").close()
    hook = WebhookServer().start()
    client = redis.Redis.from_url(redis_url)
    try:
        processes.env = {
            "JOBDEF_DATABASE_URL": f"sqlite:///{database}",
            "JOBDEF_TEST_REDIS": redis_url,
            "JOBDEF_TEST_PREFIX": prefix,
            "JOBDEF_TEST_HOOK": hook.url,
        }

        def worker(name: str) -> None:
            command = [
                sys.executable, "-m", "rq.cli", "worker", "--url", redis_url,
                "-w", "jobdef.adapters.rq.SheetWorker", "--name", f"{prefix}-{name}", prefix,
            ]  # fmt: skip
            processes.start(name, command)

        worker("a")
        queue = SheetQueue(redis.Redis.from_url(redis_url), sheets=sheets, prefix=prefix)
        marker = tmp_path / "lost"
        job = queue.enqueue("rl_lost", cell="rl_lost", script=["die"], marker=str(marker))
        task = job.meta["jobdef"]["task_id"]
        eventually(lambda: Path(f"{marker}.1").exists(), 20, "the attempt to start")
        processes.started[0].kill()  # the worker, its work horse, all at once

        # RQ's own cleanup, as a worker's maintenance runs it once the lost execution's
        # heartbeat has expired (a minute or more later: the cutoff says "by then").
        StartedJobRegistry(prefix, connection=client).cleanup(timestamp=time.time() + 3600)
        assert Job.fetch(job.id, connection=client).get_status() != JobStatus.FAILED

        worker("b")
        eventually(lambda: "rl_lost" in dead_rows(database), 30, "the lost run to be buried")
        eventually(  # the row, then its attempts: two transactions
            lambda: dead_rows(database)["rl_lost"]["attempt_rows"] == [(1, "reclaimed")], 10
        )
        assert dead_rows(database)["rl_lost"]["worker_id"] == f"rq/{task}"
        assert len(ledger(client, prefix, "rl_lost")) == 1  # the lost attempt never re-ran
        eventually(lambda: not client.exists(f"{prefix}:run:{task}"), 10, "the key freed")

        again = queue.enqueue("rl_lost", cell="rl_lost", script=["die", "ok"])
        eventually(
            lambda: Job.fetch(again.id, connection=client).get_status() == JobStatus.FINISHED,
            30,
            "the same key to run again",
        )
        assert len(ledger(client, prefix, "rl_lost")) == 2
    finally:
        client.close()
        hook.stop()
