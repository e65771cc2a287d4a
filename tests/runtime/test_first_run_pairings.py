"""first_run() with every pairing of job store and handler connection: the SQL is the
handler's database's, whatever engine holds the jobs (a psycopg handler under the testing
kit's SQLite store, a sqlite3 handler under a PostgreSQL store)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jobdef.errors import UsageError
from jobdef.runtime import Context, first_run


def _ctx(store_url: str, key: str = "order-1:points") -> Context:
    return Context(
        job_id=1,
        job="award",
        attempt=1,
        max_attempts=3,
        idempotency_key=key,
        database_url=store_url,
    )


@pytest.fixture
def sqlite_store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'jobs.db'}"


@pytest.fixture
def postgres_store(postgres_url: str, postgres_schema: str) -> str:
    return f"{postgres_url}?schema={postgres_schema}"


@pytest.fixture
def sqlite_handler(tmp_path: Path) -> Iterator[Callable[[], Any]]:
    opened: list[sqlite3.Connection] = []

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(tmp_path / "app.db")
        opened.append(conn)
        return conn

    yield connect
    for conn in opened:
        conn.close()


@pytest.fixture
def psycopg_handler(postgres_url: str) -> Iterator[Callable[[], Any]]:
    """Connections to an application schema of the test's own, in the `test` database."""
    import uuid

    import psycopg

    schema = f"app_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    opened: list[Any] = []

    def connect() -> Any:
        conn = psycopg.connect(postgres_url, options=f"-c search_path={schema}")
        opened.append(conn)
        return conn

    yield connect
    for conn in opened:
        conn.close()
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        admin.execute("DROP TABLE IF EXISTS public.jobdef_processed_keys")


def _twice(store_url: str, connect: Callable[[], Any]) -> list[bool]:
    """first_run of one key on two connections, each in a transaction that commits."""
    seen = []
    for _ in range(2):
        conn = connect()
        with conn:
            seen.append(first_run(_ctx(store_url), conn))
    return seen


@pytest.mark.parametrize(
    ("store", "handler"),
    [
        ("sqlite_store", "sqlite_handler"),
        pytest.param("sqlite_store", "psycopg_handler", marks=pytest.mark.services),
        pytest.param("postgres_store", "sqlite_handler", marks=pytest.mark.services),
        pytest.param("postgres_store", "psycopg_handler", marks=pytest.mark.services),
    ],
)
def test_every_pairing_records_the_key_once(
    request: pytest.FixtureRequest, store: str, handler: str
) -> None:
    store_url = request.getfixturevalue(store)
    connect = request.getfixturevalue(handler)
    assert _twice(store_url, connect) == [True, False]


def test_a_psycopg_handler_under_a_sqlite_store_keeps_its_keys_in_public(
    sqlite_store: str, psycopg_handler: Callable[[], Any]
) -> None:
    with psycopg_handler() as conn:  # psycopg 3 commits and closes here
        assert first_run(_ctx(sqlite_store, key="k-public"), conn)
    row = (
        psycopg_handler()
        .execute("SELECT job_id FROM public.jobdef_processed_keys WHERE key = 'k-public'")
        .fetchone()
    )
    assert row == (1,)


def test_a_rolled_back_psycopg_transaction_leaves_the_key_free(
    sqlite_store: str, psycopg_handler: Callable[[], Any]
) -> None:
    conn = psycopg_handler()
    try:
        with conn.transaction():
            assert first_run(_ctx(sqlite_store), conn)
            raise RuntimeError("the work failed")
    except RuntimeError:
        pass
    with conn:
        assert first_run(_ctx(sqlite_store), conn)


def test_a_connection_of_another_library_is_one_line_saying_what_to_pass(
    sqlite_store: str,
) -> None:
    class Cursorless:
        pass

    with pytest.raises(UsageError, match=r"pass the connection the handler writes with"):
        first_run(_ctx(sqlite_store), Cursorless())


SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: award
handler: first_run_handlers:{handler}
args:
  order_id: {{type: integer}}
max_attempts: 3
backoff: {{strategy: fixed, initial: 1s, jitter: none}}
timeout: 30s
idempotency: {{key: "award-{{order_id}}"}}
errors: {{retry: [ConnectionError], default: fatal}}
"""


def _kit_run(tmp_path: Path, handler: str, db: str | None) -> list[str]:
    """One job of ``handler`` drained by the testing kit on ``db`` (default: its SQLite
    store): the outcomes of its attempts."""
    from jobdef.testing import open_queue

    sheets = tmp_path / "sheets"
    sheets.mkdir()
    (sheets / "award.yaml").write_text(SHEET.format(handler=handler), "utf-8")
    with open_queue(sheets, db=db, folder=tmp_path) as queue:
        job = queue.enqueue("award", {"order_id": 7})
        outcomes = [attempt.outcome for attempt in queue.drain()]
        queue.assert_state(job.id, "done")
    return outcomes


def test_the_kit_runs_a_psycopg_handler_under_its_sqlite_store(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kit's default store is SQLite; a handler that writes with psycopg records its
    key on PostgreSQL, and the retry after the commit changes nothing."""
    import uuid

    import psycopg
    from first_run_handlers import PG_SCHEMA, PG_URL

    schema = f"app_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
        admin.execute(f'CREATE TABLE "{schema}".awards (order_id integer)')
    monkeypatch.setenv(PG_URL, postgres_url)
    monkeypatch.setenv(PG_SCHEMA, schema)
    try:
        assert _kit_run(tmp_path, "award_on_postgres", None) == ["retry", "done"]
        with psycopg.connect(postgres_url) as conn:
            rows = conn.execute(f'SELECT order_id FROM "{schema}".awards').fetchall()
        assert rows == [(7,)]
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
            admin.execute("DROP TABLE IF EXISTS public.jobdef_processed_keys")


def test_the_kit_on_postgresql_runs_a_sqlite3_handler(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from first_run_handlers import SQLITE_FILE

    app = tmp_path / "app.db"
    with sqlite3.connect(app) as conn:
        conn.execute("CREATE TABLE awards (order_id INTEGER)")
    conn.close()
    monkeypatch.setenv(SQLITE_FILE, str(app))
    assert _kit_run(tmp_path, "award_on_sqlite", f"{postgres_url}?schema=public") == [
        "retry",
        "done",
    ]
    with sqlite3.connect(app) as conn:
        assert conn.execute("SELECT order_id FROM awards").fetchall() == [(7,)]
    conn.close()
