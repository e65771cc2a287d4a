"""Telemetry fixtures: the sheets, a job database, and real worker processes to watch."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from jobdef.backends.protocol import Backend
from jobdef.policy.registry import Registry
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry
from support import eventually
from support.proxy import CuttableProxy
from support.workers import Processes, WorkerProcess, worker_command

HERE = Path(__file__).resolve().parent
SHEETS = HERE / "sheets"


@pytest.fixture
def registry() -> Registry:
    return load_registry([SHEETS])


@pytest.fixture
def queue(backend: Backend, registry: Registry) -> Queue:
    return Queue(backend, registry)


class Worker(WorkerProcess):
    """One ``python -m jobdef worker`` process, its output in a file."""

    def port(self, option: str) -> int:
        """The port the worker said it listens on for ``option`` (it was given 0)."""
        pattern = re.compile(rf"{re.escape(option)}: listening on \S+ port (\d+)")
        found = eventually(lambda: pattern.search(self.log()), 30, f"{option} listening")
        return int(found.group(1))


class Workers:
    def __init__(self, db_url: str, tmp_path: Path) -> None:
        self.db_url = db_url
        self.processes = Processes(tmp_path, importable=(HERE,))

    def start(self, *extra: str, env: dict[str, str] | None = None, name: str = "w") -> Worker:
        command = worker_command(self.db_url, SHEETS, *extra)
        started = self.processes.start(name, command, env=env)
        return Worker(started.process, started.log_path, started.group)

    def stop_all(self) -> None:
        self.processes.close()


@pytest.fixture
def workers(db_url: str, tmp_path: Path) -> Iterator[Workers]:
    started = Workers(db_url, tmp_path)
    yield started
    started.stop_all()


@pytest.fixture
def workers_on(tmp_path: Path) -> Iterator[Callable[[str], Workers]]:
    """Workers on another database URL than ``db_url`` (a proxy's, a schema's)."""
    made: list[Workers] = []

    def make(url: str) -> Workers:
        made.append(Workers(url, tmp_path))
        return made[-1]

    yield make
    for started in made:
        started.stop_all()


@pytest.fixture
def proxy(postgres_url: str) -> Iterator[CuttableProxy]:
    """A proxy to the test's PostgreSQL server, to cut and restore."""
    parts = urlsplit(postgres_url)
    running = CuttableProxy((parts.hostname or "127.0.0.1", parts.port or 5432))
    yield running
    running.close()
