"""The RQ adapter keeps the Redis connection the application gives and stores no
credential: a password-protected Redis and one on a unix socket, each a server of the
test's own, with real RQ workers (``--with-scheduler``, jobdef's worker class)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import redis
from conformance import Cell, dead_rows, ledger, write_sheets
from notify_servers import WebhookServer
from redis_servers import RedisServer, redis_server

from jobdef.adapters.rq import SheetQueue
from jobdef.backends import open_backend
from support import eventually
from support.workers import Processes

DB_PASSWORD = "Db-pw-4c1e9b"
REDIS_PASSWORD = "Redis-pw-77d0aa"
CELLS = (
    Cell("rc_dies", "strategy: fixed, initial: 1s, jitter: none", ("retry",), max_attempts=2),
    Cell("rc_done", "strategy: fixed, initial: 1s, jitter: none", ("retry", "ok")),
)


def _worker(processes: Processes, server: RedisServer, prefix: str, database: str) -> None:
    command = [
        sys.executable, "-m", "rq.cli", "worker", "--with-scheduler", "--url", server.url,
        "-w", "jobdef.adapters.rq.SheetWorker", "--name", f"{prefix}-w", prefix,
    ]  # fmt: skip
    env = {
        "JOBDEF_DATABASE_URL": database,
        "JOBDEF_TEST_REDIS": server.url,
        "JOBDEF_TEST_PREFIX": prefix,
    }
    processes.start("worker", command, env=env)


def test_a_password_protected_redis_takes_the_run_state_and_no_credential_is_stored(
    *,
    tmp_path: Path,
    prefix: str,
    processes: Processes,
    postgres_url: str,
    postgres_schema: str,
) -> None:
    """Before, the run store was a URL rebuilt from host, port and db: every enqueue
    failed with NOAUTH; and each job's meta held the database URL, password included."""
    sheets = write_sheets(tmp_path / "jobdefs", CELLS, prefix)
    assert postgres_url.startswith("postgresql://postgres@"), postgres_url
    # The test server trusts loopback: the password is not checked, only carried.
    database = postgres_url.replace("postgres@", f"postgres:{DB_PASSWORD}@", 1)
    database += f"?schema={postgres_schema}"
    open_backend(database).close()
    hook = WebhookServer().start()
    try:
        with redis_server(tmp_path / "redis", password=REDIS_PASSWORD) as server:
            queue = SheetQueue(server.client(), sheets=sheets, prefix=prefix)
            processes.env = {"JOBDEF_TEST_HOOK": hook.url}
            _worker(processes, server, prefix, database)
            dies = queue.enqueue("rc_dies", cell="rc_dies", script=["retry"])
            done = queue.enqueue("rc_done", cell="rc_done", script=["retry", "ok"])
            client = server.client()
            task = dies.meta["jobdef"]["task_id"]
            assert client.exists(f"{prefix}:run:{task}")  # where the connection goes

            backend = open_backend(database)
            try:
                eventually(
                    lambda: [r.job for r in backend.list_jobs(state="dead")] == ["rc_dies"],
                    timeout=60,
                    what="rc_dies to die and be stored in jobdef's database",
                )
                eventually(lambda: len(ledger(client, prefix, "rc_done")) == 2, timeout=30)
                eventually(
                    lambda: not client.exists(f"{prefix}:run:{done.meta['jobdef']['task_id']}"),
                    timeout=30,
                )
                [row] = backend.list_jobs(state="dead")
                assert row.attempt == 2
            finally:
                backend.close()
            eventually(lambda: client.get(f"{prefix}:ended:{task}") == b"dead", timeout=10)
            log = processes.log("worker")
            assert "jobs that die under their sheets are stored in schema" in log, log
            held = server.dump()
            for secret in (DB_PASSWORD, REDIS_PASSWORD, database, postgres_url):
                assert secret.encode() not in held, f"Redis holds {secret!r}"
            assert DB_PASSWORD not in log
            assert REDIS_PASSWORD not in log
    finally:
        hook.stop()
    # Nothing went to the default server on 127.0.0.1:6379 either.
    default = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    assert not list(default.scan_iter(f"{prefix}:*"))


def test_a_unix_socket_connection_keeps_the_run_state_on_that_server(
    *, tmp_path: Path, prefix: str, processes: Processes
) -> None:
    """Before, a connection over a unix socket had its run state sent to
    127.0.0.1:6379, another server, which the workers never read."""
    sheets = write_sheets(tmp_path / "jobdefs", CELLS, prefix)
    database = f"sqlite:///{tmp_path / 'jobdef.db'}"
    open_backend(database).close()
    hook = WebhookServer().start()
    default = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    try:
        default.ping()
    except redis.ConnectionError:
        pytest.skip("no Redis at 127.0.0.1:6379 to show the run state does not go there")
    try:
        with redis_server(tmp_path / "redis", socket=True) as server:
            queue = SheetQueue(server.client(), sheets=sheets, prefix=prefix)
            processes.env = {"JOBDEF_TEST_HOOK": hook.url}
            _worker(processes, server, prefix, database)
            job = queue.enqueue("rc_dies", cell="rc_dies", script=["retry"])
            client = server.client()
            task = job.meta["jobdef"]["task_id"]
            assert client.exists(f"{prefix}:run:{task}")
            assert not list(default.scan_iter(f"{prefix}:*"))
            eventually(
                lambda: "rc_dies" in dead_rows(tmp_path / "jobdef.db"),
                timeout=60,
                what="rc_dies to die on the worker over the socket",
            )
            assert len(ledger(client, prefix, "rc_dies")) == 2
            eventually(lambda: client.get(f"{prefix}:ended:{task}") == b"dead", timeout=10)
            assert not list(default.scan_iter(f"{prefix}:*"))
    finally:
        hook.stop()
        default.close()


def test_a_worker_whose_database_url_is_wrong_stops_with_one_line(
    *, tmp_path: Path, redis_url: str, prefix: str, processes: Processes
) -> None:
    """The worker reads jobdef's database from its own configuration: a wrong URL is
    found at start, in one line without its password, not at the first death."""
    command = [
        sys.executable, "-m", "rq.cli", "worker", "--url", redis_url,
        "-w", "jobdef.adapters.rq.SheetWorker", "--name", f"{prefix}-w", prefix,
    ]  # fmt: skip
    env = {"JOBDEF_DATABASE_URL": f"mysql://app:{DB_PASSWORD}@db/shop"}
    worker = processes.start("worker", command, env=env)
    assert worker.process.wait(30) == 1
    log = processes.log("worker").strip()
    assert log.splitlines()[-1].startswith("jobdef: database URL 'mysql://app:***@db/shop'")
    assert "unknown scheme 'mysql'" in log
    assert DB_PASSWORD not in log
    assert "Traceback" not in log
