"""Runtime fixtures: the test sheets, a job database, and worker processes to start and kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from jobdef.policy.registry import Registry
from jobdef.sheets.pipeline import load_registry

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


class Workers:
    """Worker processes started with `python -m jobdef worker`, stopped at teardown."""

    def __init__(self, db_url: str, tmp_path: Path) -> None:
        self.db_url = db_url
        self.tmp_path = tmp_path
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, *extra: str, name: str = "w", lease: str = "1s") -> subprocess.Popen[bytes]:
        env = os.environ | {"PYTHONPATH": os.pathsep.join([str(HERE), str(SRC)])}
        with (self.tmp_path / f"{name}.log").open("wb") as log:
            process = self._popen(log, env, extra, lease)
        self.started.append(process)
        return process

    def _popen(
        self, log: Any, env: dict[str, str], extra: tuple[str, ...], lease: str
    ) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jobdef",
                "worker",
                "--db",
                self.db_url,
                "--sheets",
                str(SHEETS),
                "--lease",
                lease,
                "--poll",
                "50ms",
                *extra,
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.tmp_path,
        )

    def log(self, name: str = "w") -> str:
        return (self.tmp_path / f"{name}.log").read_text(errors="replace")

    def stop_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
            process.wait(30)


@pytest.fixture
def workers(db_url: str, tmp_path: Path) -> Iterator[Workers]:
    started = Workers(db_url, tmp_path)
    yield started
    started.stop_all()
