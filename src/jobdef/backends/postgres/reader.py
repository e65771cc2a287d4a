"""The PostgreSQL engine's reader: bounded reads for pages, on a session of their own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobdef.backends.reads import dashboard_queries
from jobdef.backends.rows import decoded

# The migration that adds PostgreSQL's index on args (jobdef_jobs_args), which the
# args search reads; SQLite's 0006 widens its running-rows index instead.
ARGS_INDEX_VERSION = 6
# A GIN index is read only through a bitmap scan, which the reader's session turns off
# for every other query: these get it back, for their own transaction only.
BITMAP_QUERIES = frozenset({"jobs_by_args"})


class PostgresReader:
    """The dashboard's queries on a session of their own, in the store's schema."""

    engine = "postgres"

    def __init__(self, url: str) -> None:
        from jobdef.backends.postgres.session import SessionManager, split_url

        conninfo, schema = split_url(url)
        quoted = '"' + schema + '"'
        queries = dashboard_queries(self.engine)
        self._queries = {name: sql.replace("{schema}", quoted) for name, sql in queries.items()}
        # Read-only, and planned as the queries are written: index walks that stop
        # early, no bitmap scans, no parallel workers and no JIT (whose start-up costs
        # more than any of these small reads).
        settings = (
            "SET default_transaction_read_only = on; SET enable_bitmapscan = off; "
            "SET max_parallel_workers_per_gather = 0; SET jit = off"
        )
        self.sessions = SessionManager(conninfo, schema, settings=settings, reconnect_timeout=5)

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

    def decode(self, value: Any) -> Any:
        return decoded(value)

    def close(self) -> None:
        self.sessions.close()
