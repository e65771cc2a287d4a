"""Shared fixtures: paths to the example sheets and a PostgreSQL server, when reachable.

PostgreSQL tests skip with a one-line reason when no server answers, except
under ``CI=true``, where an unreachable server fails the run.

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
