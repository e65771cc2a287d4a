"""The job store's URL, read from ``DATABASES``: the same database Django writes to."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from jd_support import HERE, Project

from jobdef.backends.postgres.session import split_url
from jobdef.contrib.django.store import store_url

PG = "django.db.backends.postgresql"


def test_a_sqlite_file_is_its_absolute_path(tmp_path: Path) -> None:
    url = store_url("default", {"ENGINE": "django.db.backends.sqlite3", "NAME": tmp_path / "a.db"})
    assert url == f"sqlite:///{tmp_path / 'a.db'}"


@pytest.mark.parametrize("name", ["", ":memory:", "file:memdb1?mode=memory&cache=shared"])
def test_a_sqlite_database_no_worker_can_open_is_refused(name: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=r"DATABASES\['default'\]"):
        store_url("default", {"ENGINE": "django.db.backends.sqlite3", "NAME": name})


def test_djangos_in_memory_test_database_is_refused_saying_how_to_name_a_file() -> None:
    name = "file:memorydb_default?mode=memory&cache=shared"  # Django's, without TEST NAME
    with pytest.raises(ImproperlyConfigured) as refused:
        store_url("default", {"ENGINE": "django.db.backends.sqlite3", "NAME": name})
    assert str(refused.value) == (
        "Django's test database for DATABASES['default'] is in memory (SQLite's default "
        "for tests), which jobdef's own connection and a worker cannot open; give it a "
        "file: DATABASES['default']['TEST'] = {'NAME': BASE_DIR / 'test_db.sqlite3'}"
    )


def test_postgresql_settings_become_one_url_with_the_schema() -> None:
    settings = {
        "ENGINE": PG,
        "NAME": "shop",
        "USER": "app",
        "PASSWORD": "p@ss:w/rd#1",
        "HOST": "db.internal",
        "PORT": 6432,
    }
    url = store_url("default", settings, "jobs")
    conninfo, schema = split_url(url)
    assert schema == "jobs"
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(conninfo)
    assert parts == {
        "user": "app",
        "password": "p@ss:w/rd#1",
        "host": "db.internal",
        "port": "6432",
        "dbname": "shop",
    }


def test_a_unix_socket_and_an_ipv6_host() -> None:
    from psycopg.conninfo import conninfo_to_dict

    socket = store_url("x", {"ENGINE": PG, "NAME": "app", "HOST": "/run/postgresql", "PORT": 5433})
    assert conninfo_to_dict(split_url(socket)[0]) == {
        "host": "/run/postgresql",
        "port": "5433",
        "dbname": "app",
    }
    # No host at all: libpq's default socket, the URL keeps its empty authority.
    assert split_url(store_url("x", {"ENGINE": PG, "NAME": "app"}))[0] == "postgresql:///app"
    ipv6 = store_url("x", {"ENGINE": PG, "NAME": "app", "HOST": "::1"})
    assert conninfo_to_dict(split_url(ipv6)[0])["host"] == "::1"


def test_another_engine_is_refused_naming_the_two_it_takes() -> None:
    with pytest.raises(
        ImproperlyConfigured, match=r"uses django.db.backends.mysql; .*SQLite.*PostgreSQL"
    ):
        store_url("default", {"ENGINE": "django.db.backends.mysql", "NAME": "x"})


@pytest.mark.slow
def test_a_worker_with_settings_that_do_not_import_is_one_line(project: Project) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jobdef", "worker", "--burst"],
        env=project.worker_env(DJANGO_SETTINGS_MODULE="jdproject.no_such_settings"),
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "DJANGO_SETTINGS_MODULE=jdproject.no_such_settings" in line


def test_a_backend_that_wraps_a_shareable_one_is_read_by_its_db_api_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database backend of the application's own (as django-prometheus wraps Django's):
    the engine is the one of the DB-API module it connects through."""
    package = tmp_path / "wrapped_sqlite"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(
        "from django.db.backends.sqlite3 import base\n\n\n"
        "class DatabaseWrapper(base.DatabaseWrapper):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    url = store_url("default", {"ENGINE": "wrapped_sqlite", "NAME": tmp_path / "a.db"})
    assert url == f"sqlite:///{tmp_path / 'a.db'}"


def test_a_backend_django_cannot_load_is_refused_with_its_reason() -> None:
    with pytest.raises(
        ImproperlyConfigured, match=r"uses no_such\.backend; .*Django cannot load it: 'no_such"
    ):
        store_url("default", {"ENGINE": "no_such.backend", "NAME": "x"})
