"""Shared fixtures: paths to the example sheets and a PostgreSQL server, when reachable.

PostgreSQL tests skip with a one-line reason when no server answers, except
under ``CI=true``, where an unreachable server fails the run. Under ``CI=true``
any skip at all fails the run (:func:`pytest_sessionfinish`): a missing package
or service there is a broken CI image, never a test to leave out.

pytest's default (prepend) import mode puts this folder on ``sys.path`` when it
loads this file, so every test folder imports the shared helpers of
``tests/support`` as ``from support import eventually, ManualClock``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_SHEETS = REPO / "jobdefs"
POSTGRES_URL = os.environ.get(
    "JOBDEF_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


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
