"""Fixtures of the adapter tests: Redis and RabbitMQ on loopback, a webhook receiver,
sheets written per test, and runtime worker processes started and killed by the test.

Redis and RabbitMQ tests skip when the server does not answer, except under
``CI=true``, where they fail. Each test has a key prefix and a queue name of its own,
so tests sharing one Redis never see each other's runs.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
SRC = TESTS.parent / "src"
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


class Processes:
    """Worker processes, each the leader of its own process group, killed at the end."""

    def __init__(self, logs: Path, env: dict[str, str]) -> None:
        self.logs, self.env = logs, env
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        env = os.environ | self.env | {"PYTHONPATH": os.pathsep.join([str(HERE), str(SRC)])}
        with (self.logs / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                command,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.logs,
                start_new_session=True,
            )
        self.started.append(process)
        return process

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """SIGKILL the worker and every process it started, as a lost host would."""
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def close(self) -> None:
        for process in self.started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    started = Processes(tmp_path, {})
    try:
        yield started
    finally:
        started.close()
