"""Fixtures of the adapter tests: a webhook receiver and runtime worker processes started
and killed by the test. Redis and RabbitMQ (``redis_url``, ``amqp_url``, ``prefix``) are
tests/conftest.py's."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.workers import Processes

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent

sys.path.insert(0, str(TESTS / "notify"))


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
