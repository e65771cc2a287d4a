"""The SQLite engine's reader: bounded reads for pages, on a read-only connection."""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Mapping
from typing import Any

from jobdef.backends.reads import dashboard_queries
from jobdef.backends.rows import json_text


class SQLiteReader:
    """The dashboard's queries on a read-only connection to the SQLite file."""

    engine = "sqlite"

    def __init__(self, url: str) -> None:
        from jobdef.backends.sqlite.engine import BUSY_TIMEOUT_MS, database_errors, sqlite_path

        path, _ = sqlite_path(url)
        # A driver error (corrupted, disk failing) is one BackendError, as in the engine.
        self._errors = functools.partial(database_errors, path)
        self._queries = dashboard_queries(self.engine)
        self._conn = sqlite3.connect(
            path.resolve().as_uri() + "?mode=ro", uri=True, check_same_thread=False
        )
        self._conn.row_factory = sqlite3.Row
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._lock = threading.Lock()

    def rows(self, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        with self._lock, self._errors():
            cursor = self._conn.execute(self._queries[name], dict(params))
            return [dict(row) for row in cursor.fetchall()]

    def decode(self, value: Any) -> Any:
        return json_text(value)

    def close(self) -> None:
        self._conn.close()
