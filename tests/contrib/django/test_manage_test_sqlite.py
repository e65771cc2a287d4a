"""``manage.py test`` of a project whose jobs are on SQLite: its test database must be a
file jobdef's own connection can open, and Django's in-memory default is one line
saying so; with a file, a ``TestCase`` reads back what it enqueued.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from jd_support import HERE, REPO, Project

pytestmark = pytest.mark.slow

SETTINGS = """\
import os

from jdproject.settings import *  # noqa: F403

if os.environ.get("JDTEST_SQLITE_TEST_NAME"):
    DATABASES["default"]["TEST"] = {"NAME": os.environ["JDTEST_SQLITE_TEST_NAME"]}  # noqa: F405
"""

TESTS = """\
from django.test import TestCase

from jdproject import tasks


class EnqueueInTheTestsTransaction(TestCase):
    def test_a_job_enqueued_in_the_tests_transaction_is_read_back(self):
        result = tasks.report.enqueue(8, size=1)
        result.refresh()
        self.assertEqual(result.status, "READY")
        self.assertEqual(result.args, [8])
"""


def manage_test(project: Project, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "jdtest_settings.py").write_text(SETTINGS, "utf-8")
    (tmp_path / "jdtest_sqlite.py").write_text(TESTS, "utf-8")
    return subprocess.run(
        [sys.executable, str(HERE / "manage.py"), "test", "jdtest_sqlite", "--noinput"],
        env=project.worker_env(
            DJANGO_SETTINGS_MODULE="jdtest_settings",
            JDPROJECT_SQLITE=str(tmp_path / "db.sqlite3"),
            PYTHONPATH=os.pathsep.join((str(tmp_path), str(HERE), str(REPO / "src"))),
            **env,
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_djangos_in_memory_test_database_is_one_line_saying_what_to_set(
    project: Project, tmp_path: Path
) -> None:
    done = manage_test(project, tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        "CommandError: Django's test database for DATABASES['default'] is in memory "
        "(SQLite's default for tests), which jobdef's own connection and a worker cannot "
        "open; give it a file: DATABASES['default']['TEST'] = "
        "{'NAME': BASE_DIR / 'test_db.sqlite3'}"
    )


def test_with_a_file_a_testcase_reads_back_what_it_enqueued(
    project: Project, tmp_path: Path
) -> None:
    done = manage_test(project, tmp_path, JDTEST_SQLITE_TEST_NAME=str(tmp_path / "test.db"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Ran 1 test" in done.stderr
    assert not (tmp_path / "test.db").exists()  # the runner dropped it
