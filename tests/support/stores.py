"""The job database of a test parametrized over the engines."""

from __future__ import annotations

from pathlib import Path

import pytest


def engine_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a fresh job database on the engine ``request.param`` names.

    For the body of a fixture with ``params=["sqlite", "postgres"]`` (or the
    ``postgres`` one marked): ``sqlite``, a file ``jobs.db`` in ``tmp_path``;
    ``postgres``, the test server with a schema of the test's own (the
    ``postgres_url`` and ``postgres_schema`` fixtures of ``tests/conftest.py``).
    """
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'jobs.db'}"
    server = request.getfixturevalue("postgres_url")
    return f"{server}?schema={request.getfixturevalue('postgres_schema')}"
