"""The SQLite engine's reader: the bounded reads of pages, on a read-only connection."""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
from collections.abc import Mapping
from typing import Any

from jobdef.backends.reads import arg_literal, arg_number, reader_queries
from jobdef.backends.records import JobRecord
from jobdef.backends.rows import job_record, json_text
from jobdef.backends.sqlite.engine import BUSY_TIMEOUT_MS, database_errors, sqlite_path

INT64 = 2**63
# The parameters of no args qualifier: jobs_window matches every job.
NO_ARGS: dict[str, Any] = dict.fromkeys(
    ("arg_path", "arg_text", "arg_number", "arg_literal", "arg_truth")
)


def arg_match(key: str | None, value: str) -> dict[str, Any]:
    """The parameters of the qualifier ``args.KEY:VALUE`` (see :mod:`jobdef.backends.reads`)
    for ``jobs_window``: a JSON path, and the typed forms for json_type/json_extract."""
    if key is None:
        return dict(NO_ARGS)
    number = arg_number(value)
    if isinstance(number, int) and not -INT64 <= number < INT64:
        # Beyond SQLite's integers: compared as a REAL, or, past a float's range,
        # as no number at all (no stored arg can hold one).
        try:
            number = float(number)
        except OverflowError:
            number = None
    return {
        "arg_path": "$." + ".".join(f'"{part}"' for part in key.split(".")),
        "arg_text": value,
        "arg_number": number,
        "arg_literal": arg_literal(value),
        # What json_extract reads a JSON true or false as.
        "arg_truth": {"true": 1, "false": 0}.get(value),
    }


class SQLiteReader:
    """The queries of ``reader.sql`` on a read-only connection to the SQLite file."""

    engine = "sqlite"
    # The args search filters a window of jobs: SQLite has no index on args.
    args_index = False

    def __init__(self, url: str) -> None:
        path, _ = sqlite_path(url)
        # A driver error (corrupted, disk failing) is one BackendError, as in the engine.
        self._errors = functools.partial(database_errors, path)
        self._queries = reader_queries("jobdef.backends.sqlite")
        self._conn = sqlite3.connect(
            path.resolve().as_uri() + "?mode=ro", uri=True, check_same_thread=False
        )
        self._conn.row_factory = sqlite3.Row
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._lock = threading.Lock()

    def rows(self, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        # A list goes in as JSON text, which the queries read with json_each.
        given = {k: json.dumps(v) if isinstance(v, list) else v for k, v in params.items()}
        with self._lock, self._errors():
            cursor = self._conn.execute(self._queries[name], given)
            return [dict(row) for row in cursor.fetchall()]

    def args_params(self, key: str | None, value: str) -> dict[str, Any]:
        return arg_match(key, value)

    def job(self, row: Mapping[str, Any]) -> JobRecord:
        return job_record(row, json_text)

    def close(self) -> None:
        self._conn.close()
