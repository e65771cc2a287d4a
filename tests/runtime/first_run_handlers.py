"""Handlers that guard their work with first_run on the application's own connection:
psycopg (PostgreSQL) or sqlite3, whatever store holds the jobs. The first attempt
commits its work and then fails, as if its worker died before recording it."""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from jobdef import first_run

# Where the application's data is: a PostgreSQL URL with its schema, a SQLite file.
PG_URL = "FIRST_RUN_APP_PG_URL"
PG_SCHEMA = "FIRST_RUN_APP_PG_SCHEMA"
SQLITE_FILE = "FIRST_RUN_APP_SQLITE"


def award_on_postgres(ctx: Any, order_id: int) -> None:
    import psycopg

    options = f"-c search_path={os.environ[PG_SCHEMA]}"
    with psycopg.connect(os.environ[PG_URL], options=options) as conn:
        if first_run(ctx, conn):
            conn.execute("INSERT INTO awards (order_id) VALUES (%s)", (order_id,))
    if ctx.attempt == 1:
        raise ConnectionError("the worker lost its connection after the commit")


def award_on_sqlite(ctx: Any, order_id: int) -> None:
    conn = sqlite3.connect(os.environ[SQLITE_FILE])
    try:
        with conn:
            if first_run(ctx, conn):
                conn.execute("INSERT INTO awards (order_id) VALUES (?)", (order_id,))
    finally:
        conn.close()
    if ctx.attempt == 1:
        raise ConnectionError("the worker lost its connection after the commit")
