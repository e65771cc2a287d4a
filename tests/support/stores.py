"""The engines a test may run on, and a fresh job database on each.

``ENGINES`` is the one list of them: a fixture with ``params=ENGINES`` (or a test
marked ``every_engine`` that takes ``db_url``, see ``tests/conftest.py``) runs once
per engine. An engine that needs a server carries the ``services`` marker, so the
fast tier (``-m "not slow and not services"``) leaves it out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# A test of PostgreSQL alone parametrizes db_url with this, so it is marked as well.
POSTGRES = pytest.param("postgres", marks=pytest.mark.services)
ENGINES = ["sqlite", POSTGRES]


def engine_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a fresh job database on the engine ``request.param`` names.

    For the body of a fixture with ``params=ENGINES``: ``sqlite``, a file
    ``jobs.db`` in ``tmp_path``; ``postgres``, the test server with a schema of the
    test's own (the ``postgres_url`` and ``postgres_schema`` fixtures of
    ``tests/conftest.py``).
    """
    if getattr(request, "param", "sqlite") == "sqlite":
        return f"sqlite:///{tmp_path / 'jobs.db'}"
    server = request.getfixturevalue("postgres_url")
    return f"{server}?schema={request.getfixturevalue('postgres_schema')}"
