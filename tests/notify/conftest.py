from __future__ import annotations

from collections.abc import Iterator

import pytest
from notify_servers import SmtpServer, WebhookServer


@pytest.fixture
def webhook() -> Iterator[WebhookServer]:
    server = WebhookServer().start()
    yield server
    if server.gate is not None:
        server.gate.set()
    server.stop()


@pytest.fixture
def smtp_server() -> Iterator[SmtpServer]:
    server = SmtpServer(user="alerts", password="s3cret-pass").start()
    yield server
    server.stop()
