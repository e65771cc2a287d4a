"""Every registered engine's driver, through jobdef.backends as its callers reach it: the
store a URL names, where it is, a read-only reader with the same named reads, a watcher
of changes where the engine tells of them, a scratch store, on each engine."""

from __future__ import annotations

import re
import sqlite3
import threading
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from jobdef.backends import (
    describe_store,
    listen_for_changes,
    open_backend,
    open_reader,
    scratch_store,
)
from jobdef.backends.engines import ENGINES, driver, driver_for_connection, titles
from jobdef.backends.protocol import Backend
from jobdef.backends.reads import reader_queries
from jobdef.backends.records import ClaimOptions, NewJob
from jobdef.backends.sql import load_queries
from jobdef.errors import BackendError, UsageError

# The only reads one engine's reader has and the other not, each with why.
READER_ONLY = {
    "postgres": {
        "jobs_by_args": "the args search reads the GIN index on args; SQLite's "
        "filters the window of jobs_window"
    },
    "sqlite": {},
}
# Parameters one engine's read takes and the other's not, and why.
READER_PARAMETERS_OF_ONE = {
    ("jobs_window", "sqlite"): (
        {"arg_path", "arg_text", "arg_number", "arg_literal", "arg_truth"},
        "SQLite filters the window by args; PostgreSQL searches by args in jobs_by_args",
    ),
}
PACKAGES = {"sqlite": "jobdef.backends.sqlite", "postgres": "jobdef.backends.postgres"}


def _reads(engine: str) -> dict[str, str]:
    return load_queries(PACKAGES[engine], "reader.sql")


def _parameters(engine: str, sql: str) -> set[str]:
    code = re.sub(r"--[^\n]*", "", sql)
    if engine == "sqlite":
        return set(re.findall(r"(?<![:\w]):([a-z_]+)", code))
    return set(re.findall(r"%\(([a-z_]+)\)s", code))


def test_both_readers_have_the_same_reads_but_the_declared_ones() -> None:
    sqlite, postgres = set(_reads("sqlite")), set(_reads("postgres"))
    assert sqlite - postgres == set(READER_ONLY["sqlite"])
    assert postgres - sqlite == set(READER_ONLY["postgres"])
    assert all(reason.strip() for only in READER_ONLY.values() for reason in only.values())


def test_a_read_takes_the_same_parameters_in_both_readers_but_the_declared_ones() -> None:
    shared = set(_reads("sqlite")) & set(_reads("postgres"))
    for name in sorted(shared):
        taken = {}
        for engine in PACKAGES:
            extra, _why = READER_PARAMETERS_OF_ONE.get((name, engine), (set(), ""))
            taken[engine] = _parameters(engine, _reads(engine)[name]) - extra
        assert taken["sqlite"] == taken["postgres"], f"{name} takes other parameters per engine"


def test_every_read_the_dashboard_runs_is_in_every_readers_queries() -> None:
    dashboard = resources.files("jobdef.dashboard")
    used = set()
    for entry in dashboard.iterdir():
        if entry.name.endswith(".py"):
            used |= set(re.findall(r"\.rows\(\s*\"([a-z_]+)\"", entry.read_text("utf-8")))
    assert {"jobs_window", "newest_ids", "queue_depths", "outbox_retryable"} <= used
    for engine, package in PACKAGES.items():
        missing = used - set(reader_queries(package)) - set(READER_ONLY["postgres"])
        assert missing == set(), f"the {engine} reader lacks {sorted(missing)}"


def test_a_store_is_opened_and_described_by_its_engines_driver(store: Any, engine: str) -> None:
    url = store.url
    backend: Backend = open_backend(url)
    try:
        assert backend.url == url
        assert isinstance(backend.clock(), float)
        assert backend.schema_version() == backend.latest_version()
    finally:
        backend.close()
    where = describe_store(url)
    assert where.endswith("jobs.db") if engine == "sqlite" else where.startswith("schema ")
    assert driver(url).name == engine


def test_the_reader_reads_pages_and_passes_a_list_as_its_dialect_does(
    store: Any, engine: str
) -> None:
    url = store.url
    backend = open_backend(url)
    # A running job is searched as the others are (PostgreSQL finds it through the
    # index of running jobs, migration 0017).
    [running, job] = backend.enqueue(
        [
            NewJob(job="mail", args={"to": "b", "n": 42}, queue="q"),
            NewJob(job="mail", args={"to": "a", "n": 42}, queue="q"),
        ]
    )
    [claimed] = backend.claim(ClaimOptions("w1", 60.0, limit=1))
    assert claimed.id == running.id
    backend.close()
    reader = open_reader(url)
    try:
        assert reader.engine == engine
        filters = dict.fromkeys(("state", "job", "queue", "since", "until", "error"))
        page = {"before": 2**62, "limit": 10, **filters}
        name = "jobs_by_args" if reader.args_index else "jobs_window"
        for key, value, hits in (
            ("n", "42", [job.id, running.id]),
            ("n", "43", []),
            ("to", "a", [job.id]),
            ("to", "b", [running.id]),
        ):
            rows = reader.rows(name, page | {"floor": 0} | reader.args_params(key, value))
            assert [reader.job(row).id for row in rows] == hits
            rows = reader.rows(
                name,
                page | {"floor": 0, "state": "running"} | reader.args_params(key, value),
            )
            assert [reader.job(row).id for row in rows] == [i for i in hits if i == running.id]
        everything = reader.rows("jobs_window", page | {"floor": 0} | reader.args_params(None, ""))
        assert reader.job(everything[0]).args == {"to": "a", "n": 42}
        assert reader.rows("outbox_retryable", {"ids": [1, 2], "now": 0.0}) == []
    finally:
        reader.close()


def test_a_watcher_of_changes_comes_from_an_engine_that_tells_of_them(
    store: Any, engine: str
) -> None:
    url = store.url
    backend = open_backend(url)
    heard = threading.Event()
    watcher = listen_for_changes(url, heard.set)
    if engine == "sqlite":
        backend.close()
        assert watcher is None  # polled: no notification goes between processes
        return
    assert watcher is not None
    watcher.start()
    try:
        assert heard.wait(10)  # it starts listening
        heard.clear()
        backend.enqueue([NewJob(job="mail", args={}, queue="q")])
        assert heard.wait(10)
        assert watcher.listening
    finally:
        watcher.stop()
        backend.close()


def test_a_scratch_store_is_new_and_its_cleanup_removes_it(store: Any, engine: str) -> None:
    # No folder: SQLite's file goes in a temporary folder of its own, which cleanup removes.
    url, cleanup = scratch_store(store.url)
    assert url != store.url
    assert driver(url).name == engine
    backend = open_backend(url)
    assert backend.list_jobs() == []
    backend.close()
    cleanup()
    with pytest.raises(BackendError):
        open_backend(url, create=False)


def test_a_scratch_store_without_a_url_is_the_default_engines_in_the_folder(
    tmp_path: Path,
) -> None:
    url, cleanup = scratch_store(None, tmp_path)
    assert driver(url) is driver(ENGINES[0].example)
    open_backend(url).close()
    cleanup()
    assert list(tmp_path.iterdir()), "a folder the caller gave is the caller's to remove"


def test_a_url_of_no_registered_engine_names_every_one_to_write() -> None:
    examples = " or ".join(engine.example for engine in ENGINES)
    # A scheme no engine will be registered for (not one a new engine might take).
    with pytest.raises(BackendError, match=f"unknown scheme 'nosuch'; write {re.escape(examples)}"):
        open_backend("nosuch://db/app")
    with pytest.raises(BackendError, match="not a URL"):
        describe_store("app.db")


def test_a_connection_finds_its_engine_by_its_db_api_module(tmp_path: Path) -> None:
    assert driver_for_connection("sqlite3.dbapi2") is driver(ENGINES[0].example)
    assert driver_for_connection("psycopg") is driver("postgresql://h/d")
    assert driver_for_connection("nosuch_dbapi") is None
    # Every registered engine by its title, in a sentence (SQLite or PostgreSQL).
    assert all(engine.title in titles() for engine in ENGINES)
    assert titles().startswith("SQLite")
    assert titles().endswith(f" or {ENGINES[-1].title}")
    from jobdef.backends import record_processed_key

    conn = sqlite3.connect(tmp_path / "app.db")
    try:
        args = {"now": 1.0, "store_url": "postgresql://h/d"}
        assert record_processed_key(conn, "k", 1, **args) is True
        assert record_processed_key(conn, "k", 1, **args) is False
    finally:
        conn.close()
    with pytest.raises(UsageError, match="of sqlite3, psycopg, psycopg2"):
        record_processed_key(object(), "k", 1, now=1.0, store_url="sqlite:///x.db")
