"""Shared fixtures: paths to the example sheets and a PostgreSQL server, when reachable.

PostgreSQL tests skip with a one-line reason when no server answers, except
under ``CI=true``, where an unreachable server fails the run. Under ``CI=true``
any skip at all fails the run (:func:`pytest_sessionfinish`): a missing package
or service there is a broken CI image, never a test to leave out.

pytest's default (prepend) import mode puts this folder on ``sys.path`` when it
loads this file, so every test folder imports the shared helpers of
``tests/support`` as ``from support import eventually, ManualClock``.

Tiers: a test that takes a fixture of :data:`SERVICE_FIXTURES` (a server or a
browser), or runs on an engine that needs a server, is marked ``services`` here,
at collection; one that takes a fixture of :data:`PROCESS_FIXTURES` (real worker
processes, an external program) is marked ``slow``; other tests that start the CLI, a
worker or an application in a subprocess carry ``slow`` by hand.
``make test-fast`` runs ``-m "not slow and not services"``.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobdef.backends import open_backend
from jobdef.backends.protocol import Backend
from support.browser import chromium
from support.stores import ENGINES, engine_db_url

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_SHEETS = REPO / "jobdefs"
POSTGRES_URL = os.environ.get(
    "JOBDEF_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("JOBDEF_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
AMQP_URL = os.environ.get("JOBDEF_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672//")


# What a test needs a running service for: PostgreSQL, Redis, RabbitMQ, Chromium.
SERVICE_FIXTURES = frozenset({"postgres_url", "redis_url", "amqp_url", "browser"})
# The fixtures of real processes: workers and applications, stopped at teardown, and
# the command of the Node program asl-validator (installed by npm at first use).
PROCESS_FIXTURES = frozenset({"workers", "workers_on", "processes", "asl_validator"})


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked ``every_engine`` that takes ``db_url`` runs once per engine."""
    if "db_url" in metafunc.fixturenames and metafunc.definition.get_closest_marker("every_engine"):
        metafunc.parametrize("db_url", ENGINES, indirect=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks ``services`` every test whose fixtures (all it asks for, directly or through
    other fixtures) include one of :data:`SERVICE_FIXTURES`, and ``slow`` every test
    whose fixtures include one of :data:`PROCESS_FIXTURES`."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if SERVICE_FIXTURES.intersection(names):
            item.add_marker(pytest.mark.services)
        if PROCESS_FIXTURES.intersection(names):
            item.add_marker(pytest.mark.slow)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under ``CI=true``, a run that skipped anything fails, naming what it skipped."""
    if os.environ.get("CI") != "true":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped:
        for report in skipped:
            longrepr = report.longrepr
            where, _, reason = longrepr if isinstance(longrepr, tuple) else ("", 0, "")
            print(f"\nCI=true allows no skip: {report.nodeid or where}: {reason}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def example_sheets() -> Path:
    return EXAMPLE_SHEETS


def _postgres_unreachable_reason() -> str | None:
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install 'jobdef[postgres]')"
    try:
        with psycopg.connect(POSTGRES_URL, connect_timeout=3):
            return None
    except psycopg.Error as exc:
        return f"no PostgreSQL server at {POSTGRES_URL}: {str(exc).strip().splitlines()[0]}"


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """The URL of a reachable PostgreSQL server, or a skip (a failure under CI=true)."""
    reason = _postgres_unreachable_reason()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true requires PostgreSQL: {reason}")
        pytest.skip(reason)
    return POSTGRES_URL


@pytest.fixture
def postgres_schema(postgres_url: str) -> Iterator[str]:
    """A fresh schema of its own for one test, dropped afterwards."""
    import psycopg

    schema = f"jobdef_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield schema
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh job store: a SQLite file in ``tmp_path``, or in a test marked
    ``every_engine``, each engine of ``support.stores.ENGINES`` in turn."""
    return engine_db_url(request, tmp_path)


@pytest.fixture
def backend(db_url: str) -> Iterator[Backend]:
    """The store of ``db_url``, opened (its tables created), closed after the test."""
    opened = open_backend(db_url)
    try:
        yield opened
    finally:
        opened.close()


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


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium (Debian's, driven by Playwright) for the whole module."""
    with chromium() as launched:
        yield launched
