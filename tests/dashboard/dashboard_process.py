"""A real ``python -m jobdef dashboard`` process on a free loopback port, for the tests
that need the command as an operator runs it (its options, its server settings)."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dashboard_steps import SHEETS, Client

from support import eventually
from support.workers import start_process


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def dashboard_command(db_url: str) -> list[str]:
    """``python -m jobdef dashboard`` on ``db_url`` and the test sheets."""
    return [sys.executable, "-m", "jobdef", "dashboard", "--db", db_url, "--sheets", str(SHEETS)]


def dashboard_env() -> dict[str, str]:
    """This environment without any dashboard credentials, with src/ importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBDEF_DASHBOARD_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src")
    return env


@contextmanager
def dashboard_process(db_url: str, logs: Path, *options: str) -> Iterator[str]:
    """``jobdef dashboard --port <free> options...``, answering: its base URL. Stopped
    (SIGTERM, then SIGKILL) and reaped on exit."""
    port = free_port()
    command = [*dashboard_command(db_url), "--port", str(port), *options]
    started = start_process(command, logs / f"dashboard-{port}.log", env=dashboard_env())
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        assert started.process.poll() is None, f"jobdef dashboard exited:\n{started.log()}"
        try:
            return Client(url).request("/api/overview")[0] == 200
        except OSError:
            return False

    try:
        eventually(answers, 60, "jobdef dashboard to answer")
        yield url
    finally:
        started.stop(grace=10)
