"""``manage.py test`` of a project whose tests enqueue on PostgreSQL drops its test database.

The test project's own ``manage.py`` runs Django's test runner in a subprocess, with
the project's PostgreSQL alias given a test database of its own name: the tests in it
enqueue a job and read it back through jobdef (which opens its own connection to the
test database), and the runner must be able to drop that database at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from jd_support import HERE, REPO, Project

pytestmark = pytest.mark.slow

SETTINGS = """\
import os

from jdproject.settings import *  # noqa: F403

DATABASES["pg"]["TEST"] = {"NAME": os.environ["JDTEST_PG_NAME"], "DEPENDENCIES": []}  # noqa: F405
"""

TESTS = """\
from django.test import TestCase, TransactionTestCase

from jdproject import tasks


class EnqueueOnPostgres(TransactionTestCase):
    databases = {"pg"}

    def test_a_job_is_stored_and_read_back_through_jobdef(self):
        result = tasks.report.using(backend="pg").enqueue(item=7, size=1)
        result.refresh()
        self.assertEqual(result.status, "READY")
        self.assertEqual(result.kwargs["item"], 7)


class EnqueueInTheTestsTransaction(TestCase):
    databases = {"pg"}

    def test_a_job_enqueued_in_the_tests_transaction_is_read_back(self):
        result = tasks.report.using(backend="pg").enqueue(8, size=1)
        result.refresh()
        self.assertEqual(result.status, "READY")
        self.assertEqual(result.args, [8])
"""


def _exists(postgres_url: str, name: str) -> bool:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
    return found is not None


def test_manage_py_test_on_postgresql_exits_0_and_drops_its_test_database(
    project: Project, postgres_url: str, tmp_path: Path
) -> None:
    import psycopg

    (tmp_path / "jdtest_settings.py").write_text(SETTINGS, "utf-8")
    (tmp_path / "jdtest_pg.py").write_text(textwrap.dedent(TESTS), "utf-8")
    name = f"jdtest_{uuid.uuid4().hex[:10]}"
    env = project.worker_env(
        DJANGO_SETTINGS_MODULE="jdtest_settings",
        JDTEST_PG_NAME=name,
        JDPROJECT_PG_SCHEMA="public",  # the test database is new: its tables go in public
        JDPROJECT_SQLITE=str(tmp_path / "db.sqlite3"),
        PYTHONPATH=os.pathsep.join((str(tmp_path), str(HERE), str(REPO / "src"))),
    )
    try:
        done = subprocess.run(
            [sys.executable, str(HERE / "manage.py"), "test", "jdtest_pg", "--noinput", "-v", "2"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, output
        assert "Ran 2 tests" in output, output
        assert "\nOK" in output, output
        assert f"Destroying test database for alias 'pg' ('{name}')" in output, output
        assert not _exists(postgres_url, name), output
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
