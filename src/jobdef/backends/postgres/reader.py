"""The PostgreSQL engine's reader: the bounded reads of pages, on a session of their own."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from jobdef.backends.postgres.session import SessionManager, split_url, wake_mode
from jobdef.backends.reads import arg_literal, arg_number, reader_queries
from jobdef.backends.records import JobRecord
from jobdef.backends.rows import job_record

# The migration that adds PostgreSQL's index on args (jobdef_jobs_args, which 0017
# rebuilds without running rows), which the args search reads; SQLite's 0006 widens
# its running-rows index instead.
ARGS_INDEX_VERSION = 6
# A GIN index is read only through a bitmap scan, which the reader's session turns off
# for every other query: these get it back, for their own transaction only.
BITMAP_QUERIES = frozenset({"jobs_by_args"})


def arg_match(key: str | None, value: str) -> dict[str, Any]:
    """The parameters of the qualifier ``args.KEY:VALUE`` (see :mod:`jobdef.backends.reads`)
    for ``jobs_by_args``: two jsonb documents for ``args @>`` (containment, which the GIN
    index jsonb_path_ops answers), the value as a JSON string and as the number or
    literal it spells (the same document when it spells none)."""
    if key is None:
        return {}
    # The number keeps the digits as written (jsonb's numeric is exact).
    spelled = arg_number(value) is not None or arg_literal(value) is not None
    typed = value if spelled else json.dumps(value)
    as_text, as_typed = json.dumps(value), typed
    for part in reversed(key.split(".")):
        as_text = "{" + json.dumps(part) + ": " + as_text + "}"
        as_typed = "{" + json.dumps(part) + ": " + as_typed + "}"
    return {"arg_text": as_text, "arg_typed": as_typed}


class PostgresReader:
    """The queries of ``reader.sql`` on a read-only session of their own, in the store's
    schema."""

    engine = "postgres"
    # The args search reads the GIN index on args (jobs_by_args): every job, no window.
    args_index = True

    def __init__(self, url: str) -> None:
        conninfo, schema = split_url(url)
        quoted = '"' + schema + '"'
        queries = reader_queries("jobdef.backends.postgres")
        self._queries = {name: sql.replace("{schema}", quoted) for name, sql in queries.items()}
        # Read-only, and planned as the queries are written: index walks that stop
        # early, no bitmap scans, no parallel workers and no JIT (whose start-up costs
        # more than any of these small reads).
        settings = (
            "SET default_transaction_read_only = on; SET enable_bitmapscan = off; "
            "SET max_parallel_workers_per_gather = 0; SET jit = off"
        )
        self.sessions = SessionManager(
            conninfo,
            schema,
            settings=settings,
            reconnect_timeout=5,
            pooled=wake_mode(url) == "poll",
        )

    def rows(self, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        return self._run(self._queries[name], name, params)

    def explain(self, name: str, params: Mapping[str, Any]) -> str:
        """The plan PostgreSQL picks for one named query as :meth:`rows` runs it (same
        session settings): what a test or an operator checks the indexes against."""
        query = "EXPLAIN " + self._queries[name]
        rows = self._run(query, name, params)
        return "\n".join(str(row["QUERY PLAN"]) for row in rows)

    def _run(self, sql: str, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        from psycopg.rows import dict_row

        bitmap = name in BITMAP_QUERIES

        def work(conn: Any) -> list[dict[str, Any]]:
            with conn.cursor(row_factory=dict_row) as cur:
                if not bitmap:  # autocommit: one round trip
                    found: list[dict[str, Any]] = cur.execute(sql, dict(params)).fetchall()
                    return found
                with conn.transaction():
                    cur.execute("SET LOCAL enable_bitmapscan = on")
                    found = cur.execute(sql, dict(params)).fetchall()
                    return found

        result: list[dict[str, Any]] = self.sessions.run(work)
        return result

    def args_params(self, key: str | None, value: str) -> dict[str, Any]:
        return arg_match(key, value)

    def job(self, row: Mapping[str, Any]) -> JobRecord:
        return job_record(row)

    def close(self) -> None:
        self.sessions.close()
