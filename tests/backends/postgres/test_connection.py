"""A wrong URL, a missing database or a missing permission: one sentence saying what to fix."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from jobdef.backends.postgres.engine import PostgresBackend
from jobdef.backends.records import ClaimOptions, NewJob
from jobdef.errors import BackendError

from .helpers import query, terminate


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("mysql://db/jobs", "is not a PostgreSQL URL; write it as postgresql://"),
        (
            "postgresql://postgres@127.0.0.1:5432/test?schema=my-app",
            "schema name 'my-app' is not usable",
        ),
    ],
)
def test_a_malformed_url_is_refused_with_the_form_to_write(url: str, expected: str) -> None:
    with pytest.raises(BackendError, match=expected):
        PostgresBackend(url)


def test_a_missing_database_says_to_create_it(postgres_url: str) -> None:
    url = postgres_url.rsplit("/", 1)[0] + "/jobdef_no_such_db"
    with PostgresBackend(url) as backend, pytest.raises(BackendError) as error:
        backend.migrate()
    assert "database 'jobdef_no_such_db' does not exist; create it" in str(error.value)


def test_an_unreachable_port_says_to_check_host_and_port(postgres_url: str) -> None:
    url = postgres_url.replace(":5432/", ":1/")
    with PostgresBackend(url) as backend, pytest.raises(BackendError) as error:
        backend.stats()
    assert "check the host and port" in str(error.value)
    assert "\n" not in str(error.value)


def test_an_unknown_option_in_the_url_is_named(postgres_url: str) -> None:
    with (
        PostgresBackend(postgres_url + "?sslmode=sometimes") as backend,
        pytest.raises(BackendError, match=r"invalid PostgreSQL URL .*sslmode"),
    ):
        backend.stats()


def test_a_password_never_appears_in_a_message(postgres_url: str) -> None:
    url = postgres_url.replace("postgres@", "postgres:hunter2@").replace(":5432/", ":1/")
    with PostgresBackend(url) as backend, pytest.raises(BackendError) as error:
        backend.stats()
    assert "hunter2" not in str(error.value)


@pytest.fixture
def unprivileged_url(postgres_url: str) -> Iterator[str]:
    role = f"jobdef_noperm_{uuid.uuid4().hex[:8]}"
    query(postgres_url, f"CREATE ROLE {role} LOGIN")
    query(postgres_url, f"REVOKE CREATE ON DATABASE test FROM {role}")
    yield postgres_url.replace("postgres@", f"{role}@")
    query(postgres_url, f"DROP OWNED BY {role}")
    query(postgres_url, f"DROP ROLE {role}")


def test_a_role_without_create_permission_is_told_what_to_grant(
    unprivileged_url: str, postgres_schema: str
) -> None:
    schema = postgres_schema + "_denied"
    with (
        PostgresBackend(unprivileged_url, schema=schema) as backend,
        pytest.raises(BackendError) as error,
    ):
        backend.migrate()
    message = str(error.value)
    assert "lacks a permission" in message
    assert "GRANT" in message
    assert "\n" not in message


def test_the_engine_reconnects_after_its_session_is_terminated(pg_backend: PostgresBackend) -> None:
    pg_backend.enqueue([NewJob("a", {}, "default")])
    first = pg_backend.sessions.connection().info.backend_pid
    terminate(pg_backend.conninfo, first)
    claimed = pg_backend.claim(ClaimOptions("w1", lease_seconds=30))
    assert [job.job for job in claimed] == ["a"]
    assert pg_backend.sessions.connection().info.backend_pid != first
    assert pg_backend.complete([claimed[0].lease]) == [True]


def test_a_short_outage_is_ridden_out_by_reconnecting(postgres_url: str) -> None:
    """Sessions killed and new ones refused for a moment, as in a server restart."""
    database = f"jobdef_outage_{uuid.uuid4().hex[:8]}"
    query(postgres_url, f"CREATE DATABASE {database}")
    url = postgres_url.rsplit("/", 1)[0] + "/" + database
    try:
        with PostgresBackend(url, reconnect_timeout=60) as backend:
            backend.migrate()
            backend.enqueue([NewJob("a", {}, "default")])
            query(postgres_url, f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
            terminate(postgres_url, backend.sessions.connection().info.backend_pid)
            reopen = threading.Timer(
                1.0, query, (postgres_url, f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")
            )
            reopen.start()
            try:
                claimed = backend.claim(ClaimOptions("w1", lease_seconds=30))
            finally:
                reopen.join()
            assert [job.job for job in claimed] == ["a"]
    finally:
        query(postgres_url, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def test_an_outage_longer_than_the_reconnect_timeout_is_one_clear_error(
    postgres_url: str,
) -> None:
    database = f"jobdef_outage_{uuid.uuid4().hex[:8]}"
    query(postgres_url, f"CREATE DATABASE {database}")
    url = postgres_url.rsplit("/", 1)[0] + "/" + database
    try:
        with PostgresBackend(url, reconnect_timeout=0.5) as backend:
            backend.migrate()
            query(postgres_url, f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
            terminate(postgres_url, backend.sessions.connection().info.backend_pid)
            with pytest.raises(BackendError) as error:
                backend.stats()
        assert "\n" not in str(error.value)
    finally:
        query(postgres_url, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def test_libpq_options_in_the_url_reach_the_session(
    postgres_url: str, postgres_schema: str
) -> None:
    url = f"{postgres_url}?schema={postgres_schema}&options=-c%20statement_timeout%3D4321"
    with PostgresBackend(url) as backend:
        setting = backend.sessions.connection().execute("SHOW statement_timeout").fetchone()[0]
    assert setting == "4321ms"


def test_the_engine_and_the_dashboard_plan_without_jit_or_bitmap_scans(
    pg_backend: PostgresBackend, postgres_url: str, postgres_schema: str
) -> None:
    """Their statements are short index walks: a JIT compile (tens of milliseconds, when
    stale statistics make one look costly) or a bitmap scan would only slow them."""
    from jobdef.backends.postgres.reader import PostgresReader

    def settings(conn: Any) -> tuple[str, str]:
        jit = conn.execute("SHOW jit").fetchone()[0]
        bitmap = conn.execute("SHOW enable_bitmapscan").fetchone()[0]
        return jit, bitmap

    assert settings(pg_backend.sessions.connection()) == ("off", "off")
    reader = PostgresReader(f"{postgres_url}?schema={postgres_schema}")
    try:
        assert reader.sessions.run(settings) == ("off", "off")
    finally:
        reader.close()
    # Other sessions keep the server's settings.
    assert query(postgres_url, "SHOW jit") == [("on",)]


def test_the_engine_has_the_server_abort_a_statement_whose_client_is_gone(
    pg_backend: PostgresBackend,
) -> None:
    """A killed worker's statement that waits on a lock is aborted, not run on once the
    lock goes (tests/runtime/test_ledger_fidelity.py kills a worker there)."""
    conn = pg_backend.sessions.connection()
    setting = conn.execute("SHOW client_connection_check_interval").fetchone()[0]
    assert setting == "250ms"
