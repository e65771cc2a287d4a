"""Enqueue and the processed-keys helper inside the caller's own psycopg transaction."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from jobdef.backends.postgres.engine import ALIKE_CHUNK, PostgresBackend
from jobdef.backends.records import NewJob
from jobdef.errors import ArgsError, BackendError


def test_a_rolled_back_transaction_leaves_no_job(pg_backend: PostgresBackend) -> None:
    with psycopg.connect(pg_backend.conninfo) as conn:
        (result,) = pg_backend.enqueue([NewJob("a", {"n": 1}, "default")], connection=conn)
        assert result.created
        conn.rollback()
    assert pg_backend.get(result.id) is None
    assert pg_backend.list_jobs() == []


def test_a_committed_transaction_stores_the_job_and_others_see_it_only_then(
    pg_backend: PostgresBackend,
) -> None:
    with psycopg.connect(pg_backend.conninfo) as conn:
        conn.execute("CREATE TEMP TABLE orders (id int)")
        conn.execute("INSERT INTO orders VALUES (1)")
        results = pg_backend.enqueue(
            [NewJob("a", {"n": 1}, "default"), NewJob("a", {"n": 2}, "default")],
            connection=conn,
        )
        assert pg_backend.list_jobs() == []
        conn.commit()
    assert sorted(r.id for r in pg_backend.list_jobs()) == sorted(r.id for r in results)


def test_an_autocommit_connection_outside_a_transaction_stores_at_once(
    pg_backend: PostgresBackend,
) -> None:
    with psycopg.connect(pg_backend.conninfo, autocommit=True) as conn:
        (result,) = pg_backend.enqueue([NewJob("a", {}, "default")], connection=conn)
    assert pg_backend.get(result.id) is not None


def test_a_batch_alike_but_for_the_args_exists_only_if_the_caller_commits(
    pg_backend: PostgresBackend,
) -> None:
    job = NewJob("a", {}, "default")
    texts = [f'{{"n": {n}}}' for n in range(2 * ALIKE_CHUNK + 1)]  # several statements
    with psycopg.connect(pg_backend.conninfo) as conn:
        dropped = pg_backend.enqueue_alike(job, texts, connection=conn)
        conn.rollback()
        kept = pg_backend.enqueue_alike(job, texts, connection=conn)
        assert pg_backend.list_jobs() == []
        conn.commit()
    assert all(pg_backend.get(r.job_id) is None for r in dropped)
    stored = {r.id: r for r in pg_backend.list_jobs(limit=2 * len(texts))}
    assert sorted(stored) == sorted(r.job_id for r in kept)
    assert [stored[r.job_id].args for r in kept] == [{"n": n} for n in range(len(texts))]


def test_a_batch_alike_whose_args_fail_writes_nothing_in_the_callers_transaction(
    pg_backend: PostgresBackend,
) -> None:
    """Every args text is read before the first row is written: the caller's own
    transaction holds no job of the batch and is not aborted."""

    def texts() -> Iterator[str]:
        yield from ['{"n": 1}'] * (ALIKE_CHUNK + 1)
        raise ArgsError("job 'a': args.n is bad. Nothing was stored")

    with psycopg.connect(pg_backend.conninfo) as conn:
        conn.execute("CREATE TEMP TABLE orders (id int)")
        conn.execute("INSERT INTO orders VALUES (1)")
        with pytest.raises(ArgsError):
            pg_backend.enqueue_alike(NewJob("a", {}, "default"), texts(), connection=conn)
        assert conn.execute("SELECT count(*) FROM orders").fetchone() == (1,)
        assert pg_backend.get_on(conn, 1) == (None, [])
        conn.commit()
    assert pg_backend.list_jobs() == []


def test_a_connection_that_is_not_psycopg_is_refused(pg_backend: PostgresBackend) -> None:
    import sqlite3

    with pytest.raises(BackendError, match="needs a psycopg 3 connection"):
        pg_backend.enqueue([NewJob("a", {}, "default")], connection=sqlite3.connect(":memory:"))


def test_a_processed_key_counts_only_if_the_handler_transaction_commits(
    pg_backend: PostgresBackend,
) -> None:
    with psycopg.connect(pg_backend.conninfo) as conn:
        assert pg_backend.record_processed_key(conn, "order-1:mail", job_id=1)
        conn.rollback()
        assert pg_backend.record_processed_key(conn, "order-1:mail", job_id=1)
        conn.commit()
        assert not pg_backend.record_processed_key(conn, "order-1:mail", job_id=2)
        conn.rollback()


def test_first_run_guards_a_handler_transaction_on_postgresql(pg_backend: PostgresBackend) -> None:
    from jobdef.runtime import Context, first_run

    url = f"{pg_backend.conninfo}?schema={pg_backend.schema}"
    ctx = Context(
        job_id=7, job="award", attempt=1, max_attempts=3, idempotency_key="m1:p", database_url=url
    )
    with psycopg.connect(pg_backend.conninfo) as conn:
        assert first_run(ctx, conn)
    with psycopg.connect(pg_backend.conninfo) as conn:
        assert not first_run(ctx, conn)
