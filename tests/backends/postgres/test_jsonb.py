"""The engine's jsonb reading (jsonb.py): the values the server stored, read back as
json.loads would read them, for less; a claim's rows in binary, read as the text ones."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from jobdef.backends.postgres.engine import PostgresBackend
from jobdef.backends.postgres.jsonb import QuickJsonbBinaryLoader, QuickJsonbLoader
from jobdef.backends.records import ClaimOptions, NewJob
from jobdef.errors import BackendError

from .helpers import query

ARGS = [
    {"n": 1},
    {"text": 'é☃ "quoted" \\ back\nslash', "empty": ""},
    {"nested": {"list": [1, 2.5, None, True, False, "x"]}, "big": 2**70},
    {"float": 1e-7, "negative": -3, "unicode_key_é": [[], {}]},
]


def test_a_claim_reads_each_jobs_args_as_they_were_enqueued(pg_backend: PostgresBackend) -> None:
    pg_backend.enqueue([NewJob("j", args, "default") for args in ARGS])
    claimed = pg_backend.claim(ClaimOptions("w", 30, limit=10))
    assert [job.args for job in claimed] == ARGS


def test_the_engines_sessions_read_jsonb_with_the_quick_loader(
    pg_backend: PostgresBackend,
) -> None:
    conn = pg_backend.sessions.connection()
    value = conn.execute("SELECT %s::jsonb", [json.dumps(ARGS)]).fetchone()
    assert value == (ARGS,)
    assert conn.adapters.get_loader(3802, 0) is QuickJsonbLoader  # jsonb, text form


def test_the_binary_form_reads_as_the_text_form(pg_backend: PostgresBackend) -> None:
    conn = pg_backend.sessions.connection()
    with conn.cursor(binary=True) as cur:
        value = cur.execute("SELECT %s::jsonb", [json.dumps(ARGS)]).fetchone()
    assert value == (ARGS,)
    assert conn.adapters.get_loader(3802, 1) is QuickJsonbBinaryLoader  # jsonb, binary form


def test_a_claims_binary_rows_read_as_the_text_rows_of_the_same_jobs(
    pg_backend: PostgresBackend,
) -> None:
    """Every column of a claimed job (floats, NULLs, text, jsonb) as a text read of its
    row gives it, on both turns: the claim alone, and the claim in the statement that
    completes the jobs held."""
    jobs = [NewJob("j", args, "default", priority=n, max_attempts=7) for n, args in enumerate(ARGS)]
    pg_backend.enqueue(jobs)
    first = pg_backend.claim(ClaimOptions("w", 30, limit=2))
    assert first == [pg_backend.get(job.id) for job in first]
    _, then = pg_backend.complete_and_claim(
        [job.lease for job in first], None, ClaimOptions("w", 30, limit=10)
    )
    assert len(then) == 2
    assert then == [pg_backend.get(job.id) for job in then]


def test_a_binary_jsonb_of_another_version_is_refused() -> None:
    with pytest.raises(psycopg.DataError, match="version byte of 1"):
        QuickJsonbBinaryLoader(3802).load(b'\x02{"a": 1}')


def test_text_the_server_never_writes_is_read_as_json_loads_reads_it() -> None:
    assert QuickJsonbLoader(3802).load(b' \n{"a": [1]}  ') == {"a": [1]}


@pytest.mark.parametrize("text", [b'{"a": 1} x', b'{"a": 1}{}', b"", b" {"])
def test_text_that_is_not_one_json_value_fails_as_json_loads_says(text: bytes) -> None:
    with pytest.raises(json.JSONDecodeError) as raised:
        QuickJsonbLoader(3802).load(text)
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    assert raised.value.msg == expected.value.msg


@pytest.fixture
def latin1_backend(postgres_url: str) -> Iterator[PostgresBackend]:
    """An engine on a database of its own whose encoding is LATIN1, not UTF8."""
    database = f"jobdef_latin1_{uuid.uuid4().hex[:8]}"
    query(
        postgres_url,
        f"CREATE DATABASE {database} TEMPLATE template0 ENCODING 'LATIN1' "
        "LC_COLLATE 'C' LC_CTYPE 'C'",
    )
    try:
        with PostgresBackend(postgres_url.rsplit("/", 1)[0] + "/" + database) as backend:
            backend.migrate()
            yield backend
    finally:
        query(postgres_url, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def test_a_latin1_database_gives_back_the_args_it_holds(latin1_backend: PostgresBackend) -> None:
    """The sessions ask the server for UTF-8, which the loaders read, in both forms."""
    args = {"name": "Zoë Ångström", "note": "café"}
    latin1_backend.enqueue([NewJob("j", args, "default")])
    (claimed,) = latin1_backend.claim(ClaimOptions("w", 30, limit=10))  # binary rows
    assert claimed.args == args
    stored = latin1_backend.get(claimed.id)  # text rows
    assert stored is not None
    assert stored.args == args


def test_args_a_latin1_database_cannot_hold_are_one_clear_error(
    latin1_backend: PostgresBackend,
) -> None:
    with pytest.raises(BackendError, match="UTF8 database") as error:
        latin1_backend.enqueue([NewJob("j", {"text": "snow ☃"}, "default")])
    assert "\n" not in str(error.value)
    assert latin1_backend.claim(ClaimOptions("w", 30, limit=10)) == []  # nothing stored
