"""The conformance suite's fixtures: every test here runs once per engine in ENGINES.

To add an engine, add it to ENGINES in tests/support/stores.py (marked ``services``
when it needs a server) and a factory to FACTORIES here that returns the database
URL of a fresh, empty store and a DB-API connection factory for the caller's own
transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from support import ManualClock
from support.stores import ENGINES


class Store:
    """Where one engine keeps a fresh store: its URL and how a caller connects to it."""

    def __init__(self, url: str, connect: Callable[[], Any]) -> None:
        self.url = url
        self.connect = connect

    def raw(self, sql: str, *params: Any, connection: Any = None) -> list[tuple[Any, ...]]:
        """Rows read past the engine, from the store's own tables: ``sql`` names them
        ``{prefix}jobs``... and marks its parameters ``{p}``. With ``connection`` (of
        :attr:`connect`), on it, left for the caller to commit; else on a connection
        of its own, closed without a commit."""
        schema = parse_qs(urlsplit(self.url).query).get("schema")
        prefix = f'"{schema[0]}".jobdef_' if schema else "jobdef_"
        marker = "%s" if schema else "?"
        conn = self.connect() if connection is None else connection
        try:
            cursor = conn.execute(sql.format(prefix=prefix, p=marker), params)
            return list(cursor.fetchall()) if cursor.description else []
        finally:
            if connection is None:
                conn.close()


def _sqlite_store(tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    path = tmp_path / "jobs.db"
    return Store(f"sqlite:///{path}", lambda: sqlite3.connect(path, timeout=30))


def _postgres_store(tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    """A schema of its own on the test server (skips, or fails under CI=true, without one)."""
    import psycopg

    url = request.getfixturevalue("postgres_url")
    schema = request.getfixturevalue("postgres_schema")
    return Store(f"{url}?schema={schema}", lambda: psycopg.connect(url))


FACTORIES: dict[str, Callable[[Path, pytest.FixtureRequest], Store]] = {
    "sqlite": _sqlite_store,
    "postgres": _postgres_store,
}


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def store(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    return FACTORIES[engine](tmp_path, request)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_700_000_000.0)


@pytest.fixture
def backend(store: Store, clock: ManualClock) -> Iterator[Backend]:
    opened = open_backend(store.url, clock=clock)
    try:
        yield opened
    finally:
        opened.close()


class WorkerHandle:
    """Claims on behalf of one worker id, for tests that need a running job."""

    def __init__(self, backend: Backend, worker_id: str = "w1", lease: float = 30.0) -> None:
        self.backend = backend
        self.worker_id = worker_id
        self.lease = lease

    def claim(self, limit: int = 1, **options: Any) -> list[Any]:
        from jobdef.backends.records import ClaimOptions

        return self.backend.claim(
            ClaimOptions(worker_id=self.worker_id, lease_seconds=self.lease, limit=limit, **options)
        )

    def claim_one(self, **options: Any) -> Any:
        [record] = self.claim(1, **options)
        return record


@pytest.fixture
def worker(backend: Backend) -> WorkerHandle:
    return WorkerHandle(backend)


@pytest.fixture
def other_worker(backend: Backend) -> WorkerHandle:
    return WorkerHandle(backend, "w2")
