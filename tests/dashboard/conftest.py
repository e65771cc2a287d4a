"""Dashboard fixtures: a store on each engine, the app served by uvicorn on a free
loopback port, worker processes, and one headless Chromium per test module.

The browser is Debian's ``chromium`` driven by Playwright's Python API with
``executable_path`` (Playwright's own browser download is never used). Browser
tests skip when either is missing, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dashboard_steps import HERE, SHEETS

from jobdef.backends import open_backend, upgrade
from jobdef.backends.protocol import Backend
from jobdef.policy.registry import Registry
from jobdef.runtime.queue import Queue, connect
from jobdef.sheets.pipeline import load_registry
from support.served import Served
from support.stores import ENGINES, engine_db_url
from support.workers import Processes, worker_command


@pytest.fixture(params=ENGINES)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A current, empty job store on each engine."""
    url = engine_db_url(request, tmp_path)
    upgrade(url)
    return url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    upgrade(url)
    return url


@pytest.fixture
def registry() -> Registry:
    return load_registry([SHEETS])


@pytest.fixture
def queue(store_url: str, registry: Registry) -> Iterator[Queue]:
    opened = connect(store_url, registry)
    yield opened
    opened.close()


@pytest.fixture
def backend(store_url: str) -> Iterator[Backend]:
    opened = open_backend(store_url)
    yield opened
    opened.close()


@pytest.fixture
def serve() -> Iterator[Any]:
    """``serve(app)`` starts a server; every one started is stopped at teardown."""
    started: list[Served] = []

    def start(app: Any) -> Served:
        served = Served(app)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()


@pytest.fixture
def dashboard(store_url: str, serve: Any) -> Served:
    """The dashboard of ``store_url`` on the test sheets, checking the store every 0.2 s."""
    from jobdef.dashboard import create_app

    served: Served = serve(create_app(store_url, SHEETS, poll_seconds=0.2))
    served.store_url = store_url
    return served


class Workers:
    """`python -m jobdef worker` processes on the test sheets, stopped at teardown
    (SIGTERM, then SIGKILL for any still running after 10 s)."""

    def __init__(self, tmp_path: Path) -> None:
        self.processes = Processes(tmp_path, importable=(HERE,), grace=10)

    def start(self, db_url: str, *extra: str) -> subprocess.Popen[bytes]:
        command = worker_command(db_url, SHEETS, "--lease", "5s", *extra)
        return self.processes.start(f"worker{len(self.processes.started)}", command).process

    def stop_all(self) -> None:
        self.processes.close()


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    started = Workers(tmp_path)
    yield started
    started.stop_all()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    yield opened
    context.close()
