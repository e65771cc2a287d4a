"""The test project (jdproject), set up once per session in this process.

Django is set up here with ``jdproject.settings``; the environment that names the
databases is set only while the settings load and in the worker processes' own
environment (:mod:`jd_support`), so no other test's ``jobdef worker`` sees
``DJANGO_SETTINGS_MODULE``.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
# The loopback webhook receiver of the notification tests.
sys.path.append(str(REPO / "tests" / "notify"))
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

django = pytest.importorskip("django")

from jd_support import Project  # noqa: E402

from support.stores import ENGINES  # noqa: E402


@pytest.fixture(scope="session")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    from django.core.management import call_command

    root = tmp_path_factory.mktemp("jdproject")
    made = Project(
        root=root,
        sqlite=root / "db.sqlite3",
        schema=f"jdproject_{uuid.uuid4().hex[:10]}",
        pg_url=os.environ.get(
            "JOBDEF_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
        ),
        log=root / "ran.log",
    )
    made.env = {
        "DJANGO_SETTINGS_MODULE": "jdproject.settings",
        "JDPROJECT_SQLITE": str(made.sqlite),
        "JDPROJECT_PG_SCHEMA": made.schema,
        "JDPROJECT_PG_URL": made.pg_url,
        "JDPROJECT_LOG": str(made.log),
    }
    saved = {name: os.environ.get(name) for name in made.env}
    os.environ.update(made.env)
    try:
        django.setup()
        from django.conf import settings

        settings.DATABASES  # noqa: B018  # read them now, while the environment names them
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    call_command("migrate", database="default", verbosity=0)
    return made


@pytest.fixture(scope="session")
def pg_project(project: Project, postgres_url: str) -> Iterator[Project]:
    """The project with its PostgreSQL alias migrated into a schema of its own."""
    import psycopg
    from django.core.management import call_command
    from django.db import connections

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{project.schema}"')
    call_command("migrate", database="pg", verbosity=0)
    project.pg_ready = True
    try:
        yield project
    finally:
        connections["pg"].close()
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{project.schema}" CASCADE')


@pytest.fixture(params=ENGINES)
def engine_alias(request: pytest.FixtureRequest, project: Project) -> str:
    """Each test once on the SQLite alias and once on the PostgreSQL one."""
    if request.param == "postgres":
        request.getfixturevalue("pg_project")
        return "pg"
    return "default"
