"""Fixtures of the adapter tests: Redis and RabbitMQ on loopback, a webhook receiver,
sheets written per test, and runtime worker processes started and killed by the test.

Redis and RabbitMQ tests skip when the server does not answer, except under
``CI=true``, where they fail. Each test has a key prefix and a queue name of its own,
so tests sharing one Redis never see each other's runs.
"""

from __future__ import annotations

import os
import socket
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.workers import Processes

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
REDIS_URL = os.environ.get("JOBDEF_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
AMQP_URL = os.environ.get("JOBDEF_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672//")

sys.path.insert(0, str(TESTS / "notify"))


def _unreachable(port: int, what: str) -> None:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError as exc:
        reason = f"no {what} at 127.0.0.1:{port}: {exc}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true requires {what}: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def redis_url() -> str:
    _unreachable(6379, "Redis")
    return REDIS_URL


@pytest.fixture(scope="session")
def amqp_url() -> str:
    _unreachable(5672, "RabbitMQ")
    return AMQP_URL


@pytest.fixture
def prefix(redis_url: str) -> Iterator[str]:
    """A key prefix (and queue name) of the test's own; its keys are deleted afterwards."""
    import redis

    name = f"jdtest-{uuid.uuid4().hex[:10]}"
    yield name
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(f"{name}*")) + list(client.scan_iter(f"*{name}*"))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    """Worker processes, each the leader of its own process group, killed at the end."""
    started = Processes(tmp_path, importable=(HERE,), group=True, append=True)
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def webhook() -> Iterator[object]:
    """A webhook receiver on loopback (``notify_servers.WebhookServer``), stopped after."""
    from notify_servers import WebhookServer

    server = WebhookServer().start()
    yield server
    server.stop()
