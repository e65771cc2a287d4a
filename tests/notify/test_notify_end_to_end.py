"""Jobs die in a real worker; their notifications reach a real webhook server on loopback.

The worker runs its handlers in child processes and its outbox sender in a
thread of its own, exactly as ``jobdef worker`` does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from notify_servers import WebhookServer

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.notify.checks import build_channels
from jobdef.notify.digest import MAX_DIGEST_ITEMS
from jobdef.notify.sender import OutboxSender, SenderSettings
from jobdef.policy.model import BackoffPolicy
from jobdef.policy.registry import Registry
from jobdef.runtime import Worker, WorkerSettings, connect
from jobdef.runtime.maintenance import MaintenanceContext
from jobdef.runtime.maintenance.outbox import OutboxService
from jobdef.runtime.maintenance.reclaim import LeaseReclaimer
from jobdef.sheets.pipeline import load_registry
from support import ManualClock, eventually
from support.workers import start_process, worker_command, worker_env

HERE = Path(__file__).parent
FAST_RETRY = BackoffPolicy(strategy="fixed", initial=0.2, jitter="none")
HOOK_ENV = "NOTIFY_E2E_HOOK_URL"


def write_sheets(folder: Path, digest_after: int = 20, timeout: str = "5s") -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "jobs.yaml").write_text(
        textwrap.dedent(
            f"""\
            apiVersion: jobdef/v1
            kind: Channel
            name: ops
            type: webhook
            url_env: {HOOK_ENV}
            format: json
            timeout: {timeout}
            digest_after: {digest_after}
            ---
            apiVersion: jobdef/v1
            kind: Job
            name: fragile
            title: A job that is refused every time
            owner: test-team
            handler: notify_handlers:refuse
            queue: default
            args:
              n: {{type: integer}}
            max_attempts: 1
            timeout: 30s
            idempotency: {{key: "{{n}}"}}
            errors:
              fatal: [PermissionError]
              default: fatal
            notify: {{channel: ops, events: [dead]}}
            rerun: jobdef requeue --job fragile --state dead
            """
        ),
        encoding="utf-8",
    )
    return folder


@contextmanager
def running_worker(
    url: str,
    registry: Registry,
    env: dict[str, str],
    clock: Callable[[], float] = time.time,
) -> Iterator[Worker]:
    """A worker in a thread, with the outbox service built from ``env``."""
    backend = open_backend(url, clock=clock)
    settings = SenderSettings(poll_interval=0.05, backoff=FAST_RETRY)

    def outbox(ctx: MaintenanceContext) -> OutboxService:
        return OutboxService(ctx, environ=env, settings=settings)

    worker = Worker(
        backend,
        registry,
        WorkerSettings(concurrency=2, poll_interval=0.05),
        clock=clock,
        services=[LeaseReclaimer, outbox],
    )
    thread = threading.Thread(target=worker.run, name="test-worker", daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.request_stop()
        thread.join(60)
        backend.close()
        assert not thread.is_alive(), "the worker did not stop"


def enqueue(url: str, registry: Registry, count: int) -> None:
    with connect(url, registry) as queue:
        queue.enqueue_many("fragile", [{"n": n} for n in range(1, count + 1)])


def dead_ids(backend: Backend) -> set[int]:
    return {r.id for r in backend.list_jobs(state="dead", limit=100_000)}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[str, Backend]]:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    backend = open_backend(url)
    yield url, backend
    backend.close()


@pytest.mark.slow
def test_webhook_down_while_jobs_die_then_back_every_message_arrives(
    tmp_path: Path, store: tuple[str, Backend]
) -> None:
    url, backend = store
    registry = load_registry([write_sheets(tmp_path / "sheets")])
    server = WebhookServer()  # its port is reserved, but nothing listens: the channel is down
    enqueue(url, registry, 12)

    with running_worker(url, registry, {HOOK_ENV: server.url}):
        eventually(lambda: len(dead_ids(backend)) == 12, what="12 dead jobs")
        eventually(
            lambda: all(r.attempts >= 2 for r in backend.outbox_pending()),
            what="every message to fail twice",
        )
        assert len(backend.outbox_pending()) == 12
        server.start()
        try:
            eventually(lambda: not backend.outbox_pending(), what="the outbox to drain")
        finally:
            server.stop()

    received = server.message_ids()
    assert len(received) == len(set(received)) == 12
    assert {r.body["job_id"] for r in server.received} == dead_ids(backend)
    body = server.received[0].body
    assert body["event"] == "dead"
    assert body["error_type"] == "PermissionError"
    assert body["requeue_command"] == f"jobdef requeue {body['job_id']}"


def jobdef_worker(
    url: str, sheets: Path, env: dict[str, str], log: Path, *extra: str
) -> subprocess.Popen[bytes]:
    """``jobdef worker`` in a process of its own, output to ``log``; test handlers importable."""
    command = worker_command(url, sheets, *extra)
    return start_process(command, log, env=worker_env(HERE, env=env)).process


@pytest.mark.slow
def test_a_crash_after_sending_resends_the_message_with_the_same_id(
    tmp_path: Path, store: tuple[str, Backend], webhook: WebhookServer
) -> None:
    url, backend = store
    sheets = write_sheets(tmp_path / "sheets")
    registry = load_registry([sheets])
    webhook.gate = threading.Event()  # hold each request: the worker dies while it waits
    worker = jobdef_worker(url, sheets, {HOOK_ENV: webhook.url}, tmp_path / "worker.log")
    try:
        enqueue(url, registry, 1)
        eventually(lambda: webhook.received, what="the first delivery to reach the server")
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(30)
    webhook.gate.set()
    [pending] = backend.outbox_pending()  # sent, but its delivery was never recorded
    assert pending.delivered_at is None

    # After the dead worker's outbox lease runs out, another sender sends it again.
    later = ManualClock(time.time() + 3600)
    other = open_backend(url, clock=later)
    try:
        channels = build_channels(registry, {HOOK_ENV: webhook.url})
        OutboxSender(other, channels, clock=later).run_once()
    finally:
        other.close()

    first, copy = webhook.received
    assert copy.body["message_id"] == first.body["message_id"] == pending.notification.message_id
    assert copy.headers["X-Jobdef-Message-Id"] == first.headers["X-Jobdef-Message-Id"]
    assert backend.outbox_pending() == []


@pytest.mark.slow
def test_a_burst_of_1000_dead_jobs_in_a_minute_sends_bounded_messages_listing_every_job(
    tmp_path: Path, webhook: WebhookServer
) -> None:
    # One clock for the worker and its sender; it stands still, so the burst is
    # inside one minute however long the machine takes, until the test moves it.
    clock = ManualClock(time.time() + 1)
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    backend = open_backend(url, clock=clock)
    registry = load_registry([write_sheets(tmp_path / "sheets", digest_after=20)])
    enqueue(url, registry, 1000)

    with running_worker(url, registry, {HOOK_ENV: webhook.url}, clock=clock) as worker:
        [service] = [s for s in worker.services if isinstance(s, OutboxService)]
        eventually(lambda: len(dead_ids(backend)) == 1000, timeout=120, what="1000 dead jobs")
        eventually(lambda: service.held == 980, timeout=60, what="980 events held for a digest")
        assert len(webhook.received) == 20
        clock.advance(61)
        eventually(lambda: not backend.outbox_pending(), timeout=60, what="the digests")

    digests = [r.body for r in webhook.received if r.body["event"] == "digest"]
    assert len(webhook.received) == 20 + len(digests)
    assert len(digests) == -(-980 // MAX_DIGEST_ITEMS)
    listed = [e["job_id"] for d in digests for e in d["events"]]
    listed += [r.body["job_id"] for r in webhook.received if r.body["event"] == "dead"]
    assert sorted(listed) == sorted(dead_ids(backend))
    assert all(d["text"].count("jobdef requeue ") == d["count"] for d in digests)
    backend.close()


@pytest.mark.slow
def test_a_failing_channel_never_blocks_job_processing(
    tmp_path: Path, store: tuple[str, Backend], webhook: WebhookServer
) -> None:
    url, backend = store
    registry = load_registry([write_sheets(tmp_path / "sheets", digest_after=100, timeout="60s")])
    webhook.gate = threading.Event()  # the receiver hangs: the first delivery never answers
    queue = connect(url, registry)

    with running_worker(url, registry, {HOOK_ENV: webhook.url}):
        queue.enqueue("fragile", {"n": 0})
        eventually(lambda: webhook.received, what="the sender to be stuck in a delivery")
        queue.enqueue_many("fragile", [{"n": n} for n in range(1, 41)])
        eventually(lambda: len(dead_ids(backend)) == 41, what="41 dead jobs")
        # Every job went through while the sender was stuck in its first delivery.
        assert len(webhook.received) == 1
        assert len(backend.outbox_pending()) == 41
        webhook.gate.set()
        eventually(lambda: not backend.outbox_pending(), what="the outbox to drain")
    queue.close()
    assert len(set(webhook.message_ids())) == 41
    assert {r.body["job_id"] for r in webhook.received} == dead_ids(backend)


@pytest.mark.slow
def test_jobdef_worker_refuses_to_start_without_the_channel_variable(tmp_path: Path) -> None:
    sheets = write_sheets(tmp_path / "sheets")
    assert HOOK_ENV not in os.environ
    log = tmp_path / "worker.log"
    worker = jobdef_worker(f"sqlite:///{tmp_path / 'jobs.db'}", sheets, {}, log)
    assert worker.wait(60) == 2
    stderr = log.read_text()
    assert "Traceback" not in stderr
    assert f"environment variable {HOOK_ENV} is not set" in stderr
    assert "jobs.yaml" in stderr


@pytest.mark.slow
def test_a_burst_worker_delivers_what_it_wrote_before_it_exits(
    tmp_path: Path, store: tuple[str, Backend], webhook: WebhookServer
) -> None:
    url, backend = store
    sheets = write_sheets(tmp_path / "sheets")
    enqueue(url, load_registry([sheets]), 3)
    log = tmp_path / "worker.log"
    worker = jobdef_worker(url, sheets, {HOOK_ENV: webhook.url}, log, "--burst")
    assert worker.wait(60) == 0, log.read_text()

    assert "3 dead" in log.read_text()
    assert len(set(webhook.message_ids())) == 3
    assert backend.outbox_pending() == []
