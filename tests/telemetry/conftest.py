"""Telemetry fixtures: the sheets, a job database, and real worker processes to watch."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.policy.registry import Registry
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry
from support import eventually

HERE = Path(__file__).resolve().parent
SHEETS = HERE / "sheets"
SRC = HERE.parent.parent / "src"


@pytest.fixture
def registry() -> Registry:
    return load_registry([SHEETS])


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'jobs.db'}"


@pytest.fixture
def backend(db_url: str) -> Iterator[Backend]:
    opened = open_backend(db_url)
    yield opened
    opened.close()


@pytest.fixture
def queue(backend: Backend, registry: Registry) -> Queue:
    return Queue(backend, registry)


class Worker:
    """One ``python -m jobdef worker`` process, its output in a file."""

    def __init__(self, process: subprocess.Popen[bytes], log: Path) -> None:
        self.process = process
        self.log_path = log

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def port(self, option: str) -> int:
        """The port the worker said it listens on for ``option`` (it was given 0)."""
        pattern = re.compile(rf"{re.escape(option)}: listening on port (\d+)")
        found = eventually(lambda: pattern.search(self.log()), 30, f"{option} listening")
        return int(found.group(1))

    def stop(self, timeout: float = 30) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)


class Workers:
    def __init__(self, db_url: str, tmp_path: Path) -> None:
        self.db_url = db_url
        self.tmp_path = tmp_path
        self.started: list[Worker] = []

    def start(self, *extra: str, env: dict[str, str] | None = None, name: str = "w") -> Worker:
        environ = os.environ | {"PYTHONPATH": os.pathsep.join([str(HERE), str(SRC)])}
        environ |= env or {}
        log = self.tmp_path / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "jobdef",
                    "worker",
                    "--db",
                    self.db_url,
                    "--sheets",
                    str(SHEETS),
                    "--poll",
                    "50ms",
                    *extra,
                ],
                env=environ,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.tmp_path,
            )
        worker = Worker(process, log)
        self.started.append(worker)
        return worker

    def stop_all(self) -> None:
        for worker in self.started:
            if worker.process.poll() is None:
                worker.process.send_signal(signal.SIGCONT)
                worker.process.kill()
            worker.process.wait(30)


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
