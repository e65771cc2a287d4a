"""The Jobs page's args search (PostgreSQL's GIN index on args, SQLite's bounded scan) and
the Overview's rate use (starts in the current window against a queue's rate), on both
engines, asserted on what the pages show."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from dashboard_steps import Client

from jobdef.backends import open_backend
from jobdef.backends.postgres import engine as postgres_engine
from jobdef.backends.postgres.reader import ARGS_INDEX_VERSION, PostgresReader
from jobdef.backends.postgres.reader import arg_match as postgres_arg_match
from jobdef.backends.protocol import Backend
from jobdef.backends.reads import arg_number
from jobdef.backends.records import ClaimOptions, NewJob
from jobdef.backends.sql import migration_files
from jobdef.backends.sqlite.reader import arg_match as sqlite_arg_match
from jobdef.dashboard import create_app
from jobdef.dashboard.views import WINDOW
from support import ManualClock

# More jobs than one window of the old scan, so the oldest is beyond it.
BEYOND_WINDOW = WINDOW + 5_000

RATE_SHEETS = """\
apiVersion: jobdef/v1
kind: Defaults
name: rate-defaults
owner: ops
max_attempts: 3
backoff: {strategy: fixed, initial: 1s, jitter: none}
timeout: 5s
errors: {default: retry}
retention: {done: 1h, dead: until_resolved}
---
apiVersion: jobdef/v1
kind: Job
name: send_mail
handler: dash_handlers:ship_order
queue: mail
args:
  order_id: {type: integer}
---
apiVersion: jobdef/v1
kind: Queue
name: mail
rate: 50/m
---
apiVersion: jobdef/v1
kind: Queue
name: sms
rate: 3/s
---
apiVersion: jobdef/v1
kind: Queue
name: bulk
concurrency: 2
"""


def _ids(client: Client, query: str) -> list[int]:
    status, _, body = client.request("/api/jobs?" + query)
    assert status == 200, body
    return [job["id"] for job in json.loads(body)["jobs"]]


def _searched(body: str) -> str:
    found = re.search(r'<p class="note" id="searched">(.*?)</p>', body)
    assert found, "the page says nothing of what it searched"
    return found.group(1)


def _row_ids(body: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr data-id="(\d+)">', body)]


def _fill(store_url: str, count: int, target: dict[str, Any]) -> int:
    """``count`` done jobs straight into the table (the first holds ``target`` as its
    args, the others {"order_id": i} from 1000 up): the id of the first."""
    if store_url.startswith("sqlite"):
        conn = sqlite3.connect(store_url.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute("BEGIN")
        rows = [(json.dumps(target),)] + [
            (json.dumps({"order_id": 1000 + i}),) for i in range(count - 1)
        ]
        conn.executemany(
            "INSERT INTO jobdef_jobs (job, queue, args, state, attempt, max_attempts, run_after,"
            " created_at, updated_at) VALUES ('ship_order', 'default', ?, 'done', 1, 3, 1, 1, 1)",
            rows,
        )
        conn.execute("COMMIT")
        [(first,)] = conn.execute("SELECT min(id) FROM jobdef_jobs").fetchall()
        conn.close()
        return int(first)
    import psycopg

    base, _, schema = store_url.partition("?schema=")
    with psycopg.connect(base, autocommit=True) as conn:
        jobs = f'"{schema}".jobdef_jobs'
        insert = (
            f"INSERT INTO {jobs} (job, queue, args, state, attempt, max_attempts, run_after, "
            "created_at, updated_at) "
        )
        [(first,)] = conn.execute(
            insert + "VALUES ('ship_order', 'default', %s, 'done', 1, 3, 1, 1, 1) RETURNING id",
            (json.dumps(target),),
        ).fetchall()
        conn.execute(
            insert + "SELECT 'ship_order', 'default', jsonb_build_object('order_id', 1000 + i), "
            "'done', 1, 3, 1, 1, 1 FROM generate_series(1, %s) AS i",
            (count - 1,),
        )
        conn.execute(f"ANALYZE {jobs}")
    return int(first)


# -- args search ------------------------------------------------------------------------


def test_an_args_search_finds_the_number_and_the_string_it_spells_and_nothing_else(
    backend: Backend, dashboard: Any
) -> None:
    def put(args: dict[str, Any]) -> int:
        [made] = backend.enqueue([NewJob("ship_order", args, "default")])
        return made.id

    number, text, real = put({"order_id": 42}), put({"order_id": "42"}), put({"order_id": 42.0})
    put({"order_id": 420})
    put({"order_id": "x42"})
    put({"other": 42})
    nested = put({"order": {"id": 7, "lines": 2}})
    put({"order": {"id": 8}})
    true, true_text = put({"flag": True}), put({"flag": "true"})
    put({"flag": 1})
    null = put({"gone": None})
    word = put({"note": "Tokyo"})
    put({"note": "tokyo"})
    put({"tags": ["42"]})  # an array holds the string, but is not it

    client = Client(dashboard.url)
    assert sorted(_ids(client, "q=args.order_id:42")) == sorted([number, text, real])
    assert _ids(client, "q=args.order.id:7") == [nested]
    assert sorted(_ids(client, "q=args.flag:true")) == sorted([true, true_text])
    assert _ids(client, "q=args.gone:null") == [null]
    assert _ids(client, "q=args.note:Tokyo") == [word]
    assert _ids(client, "q=args.tags:42") == []
    assert _ids(client, "q=args.order_id:NaN") == []
    # With the other filters: state, job and an error word narrow the matches.
    assert _ids(client, "q=args.order_id:42&state=dead") == []
    assert sorted(_ids(client, "q=args.order_id:42&job=ship_order")) == sorted([number, text, real])
    _, _, body = client.request("/jobs?q=args.order_id%3A42")
    assert sorted(_row_ids(body)) == sorted([number, text, real])


def test_a_job_beyond_the_old_window_is_found_by_the_index_on_pg_and_a_click_on(
    store_url: str, dashboard: Any
) -> None:
    oldest = _fill(store_url, BEYOND_WINDOW, {"order_id": 7})
    client = Client(dashboard.url)
    _, _, body = client.request("/jobs?q=args.order_id%3A7")
    if store_url.startswith("postgresql"):
        assert _row_ids(body) == [oldest]
        assert _searched(body) == "Searched every job, through the args index: 1 shown."
        assert 'id="older"' not in body
        return
    # SQLite: a bounded scan, labelled; "Older" goes on below the window searched.
    assert _row_ids(body) == []
    searched = _searched(body)
    assert re.fullmatch(r"Searched jobs from the newest down to #\d+: 0 shown\.", searched)
    older = re.search(r'<a id="older" href="([^"]+)">', body)
    assert older, "the page does not continue below the window it searched"
    _, _, body = client.request(older.group(1).replace("&amp;", "&"))
    assert _row_ids(body) == [oldest]


def test_a_value_spells_a_number_only_as_json_writes_one_and_pg_gets_its_digits() -> None:
    values = ("42", "-1.5", "1e3", "042", "NaN", "Infinity", "1e999", "0x2a", "true", "")
    assert [arg_number(v) for v in values] == [42, -1.5, 1000.0, *[None] * 7]
    big = "123456789012345678901234567890"
    assert postgres_arg_match("a.b", big) == {
        "arg_text": '{"a": {"b": "123456789012345678901234567890"}}',
        "arg_typed": '{"a": {"b": 123456789012345678901234567890}}',
    }
    assert sqlite_arg_match("a.b", big)["arg_number"] == float(big)
    assert postgres_arg_match("note", 'say "hi"') == {
        "arg_text": '{"note": "say \\"hi\\""}',
        "arg_typed": '{"note": "say \\"hi\\""}',
    }


def test_the_postgresql_args_search_reads_the_gin_index(
    postgres_url: str, postgres_schema: str
) -> None:
    url = f"{postgres_url}?schema={postgres_schema}"
    open_backend(url).close()
    _fill(url, BEYOND_WINDOW, {"order_id": 7})
    reader = PostgresReader(url)
    try:
        filters = dict.fromkeys(("state", "job", "queue", "since", "until", "error"))
        for value in ("7", "seven", "true"):  # a number, a string, a literal
            params = {"before": 2**62, "limit": 50, **filters}
            params |= postgres_arg_match("order_id", value)
            plan = reader.explain("jobs_by_args", params)
            # The jobs not running through the GIN index, the running ones (migration
            # 0017) through theirs.
            assert "Bitmap Index Scan on jobdef_jobs_args_not_running" in plan, plan
            assert "Bitmap Index Scan on jobdef_jobs_running" in plan, plan
            assert "Seq Scan" not in plan, plan
            assert "jobdef_jobs_pkey" not in plan, plan
    finally:
        reader.close()


def test_migration_0006_keeps_an_index_built_beforehand_and_rebuilds_an_invalid_one(
    postgres_url: str, postgres_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    url = f"{postgres_url}?schema={postgres_schema}"
    files = migration_files(postgres_engine.MIGRATIONS)
    assert files[ARGS_INDEX_VERSION - 1][1] == "0006_args_index.sql"
    before = files[: ARGS_INDEX_VERSION - 1]
    index = f'"{postgres_schema}".jobdef_jobs_args'

    def state(conn: Any) -> tuple[int, bool] | None:
        found = conn.execute(
            "SELECT indexrelid::int, indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)",
            (index,),
        ).fetchall()
        return found[0] if found else None

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        with monkeypatch.context() as patched:
            patched.setattr(postgres_engine, "migration_files", lambda package: before)
            open_backend(url).close()
        assert state(conn) is None
        # The store goes no further than 0006 here: 0017 replaces this index.
        upto = files[:ARGS_INDEX_VERSION]
        monkeypatch.setattr(postgres_engine, "migration_files", lambda package: upto)
        # Built beforehand without blocking writes, as docs/upgrading.md says.
        conn.execute(
            f'CREATE INDEX CONCURRENTLY jobdef_jobs_args ON "{postgres_schema}".jobdef_jobs '
            "USING gin (args jsonb_path_ops)"
        )
        prebuilt = state(conn)
        assert prebuilt is not None
        # As a concurrent build that failed half way leaves it.
        conn.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s", (prebuilt[0],))
        open_backend(url).close()
        rebuilt = state(conn)
        assert rebuilt is not None
        assert rebuilt[1] is True
        assert rebuilt[0] != prebuilt[0]
        conn.execute(f"DROP INDEX {index}")
        conn.execute(
            f'CREATE INDEX CONCURRENTLY jobdef_jobs_args ON "{postgres_schema}".jobdef_jobs '
            "USING gin (args jsonb_path_ops)"
        )
        kept = state(conn)
        conn.execute(
            f'DELETE FROM "{postgres_schema}".jobdef_schema_version WHERE version = %s',
            (ARGS_INDEX_VERSION,),
        )
        open_backend(url).close()
        assert state(conn) == kept


# -- rate use ---------------------------------------------------------------------------


def _rate_dashboard(store_url: str, tmp_path: Path, serve: Any) -> Client:
    sheets = tmp_path / "rate_sheets"
    sheets.mkdir()
    (sheets / "jobs.yaml").write_text(RATE_SHEETS)
    served = serve(create_app(store_url, sheets, poll_seconds=0.2))
    return Client(served.url)


def _start(backend: Backend, clock: ManualClock, queue: str, count: int) -> list[Any]:
    """``count`` jobs of ``queue`` enqueued and claimed at the clock's time."""
    made = backend.enqueue([NewJob("send_mail", {"order_id": i}, queue) for i in range(count)])
    claimed = backend.claim(ClaimOptions("w-1", 600, limit=count, queues=[queue]))
    assert sorted(r.id for r in claimed) == sorted(m.id for m in made)
    return [r.lease for r in claimed]


def test_the_overview_shows_the_starts_of_the_current_window_against_the_rate(
    store_url: str, tmp_path: Path, serve: Any
) -> None:
    clock = ManualClock(time.time())
    timed = open_backend(store_url, clock=clock)
    try:
        now = clock()
        clock.set(now - 120)  # two minutes ago: outside the minute
        assert all(timed.complete(_start(timed, clock, "mail", 4)))
        clock.set(now - 20)
        leases = _start(timed, clock, "mail", 5)
        clock.set(now - 10)
        assert all(timed.complete(leases[:3]))  # 3 ended, 2 still running
        assert timed.bury(leases[3], _error())  # an attempt that failed is a start too
        clock.set(now - 5)
        _start(timed, clock, "sms", 2)  # 2 of 3 a second? No: 5 s ago, outside the second
        clock.set(now)
        _start(timed, clock, "sms", 1)
    finally:
        timed.close()
    client = _rate_dashboard(store_url, tmp_path, serve)

    status, _, body = client.request("/")
    assert status == 200
    cells = dict(
        re.findall(r'<tr data-queue="([^"]+)">.*?<td class="num rate">([^<]*)</td>', body, re.S)
    )
    assert cells["mail"] == "5 / 50 per min (10%)"
    # The second's window is what the page shows at the moment it reads the store.
    assert re.fullmatch(r"[01] / 3 per s \((0|33)%\)", cells["sms"]), cells["sms"]
    _, _, api = client.request("/api/overview")
    queues = {q["queue"]: q for q in json.loads(api)["queues"]}
    assert queues["mail"]["rate"] == "50/m"
    assert queues["mail"]["rate_use"] == {
        "used": 5,
        "limit": 50,
        "per": "min",
        "window_seconds": 60.0,
        "at_least": False,
        "used_fraction": 0.1,
        "text": "5 / 50 per min",
    }
    assert queues["bulk"]["rate_use"] is None  # no rate: "-"
    assert cells["bulk"] == "-"


def _error() -> Any:
    from jobdef.backends.records import ErrorInfo

    return ErrorInfo("ConnectionError", "down", "")


def test_the_rate_use_costs_one_small_query_of_the_running_rows_index(
    store_url: str, tmp_path: Path, serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jobdef.backends.sqlite.reader import SQLiteReader

    _fill(store_url, 2_000, {"order_id": 1})
    client = _rate_dashboard(store_url, tmp_path, serve)
    names: list[str] = []
    for reader in (SQLiteReader, PostgresReader):

        def counting(self: Any, name: str, params: Any, original: Any = reader.rows) -> Any:
            names.append(name)
            return original(self, name, params)

        monkeypatch.setattr(reader, "rows", counting)
    assert client.request("/api/overview")[0] == 200
    # One job in the sheets: one dead count; the rate use adds running_starts alone.
    assert sorted(names) == sorted(
        ["queue_depths", "recent_attempts", "newest_ids", "running_starts", "dead_count"]
    )
    since = time.time() - 60
    if store_url.startswith("sqlite"):
        conn = sqlite3.connect(store_url.removeprefix("sqlite:///"))
        from jobdef.backends.sql import load_queries

        sql = load_queries("jobdef.backends.sqlite", "reader.sql")["running_starts"]
        plan = " ".join(
            row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, {"since": since, "cap": 1})
        )
        conn.close()
        assert plan == "SCAN jobdef_jobs USING COVERING INDEX jobdef_jobs_running", plan
        return
    reader = PostgresReader(store_url)
    try:
        plan = reader.explain("running_starts", {"since": since, "cap": 10_000})
    finally:
        reader.close()
    assert "Index" in plan, plan
    assert "Seq Scan" not in plan, plan


@pytest.mark.slow
def test_the_overview_in_a_browser_follows_a_queues_rate_use_without_a_reload(
    page: Any, store_url: str, tmp_path: Path, serve: Any
) -> None:
    from playwright.sync_api import expect

    sheets = tmp_path / "rate_sheets"
    sheets.mkdir()
    (sheets / "jobs.yaml").write_text(RATE_SHEETS)
    served = serve(create_app(store_url, sheets, poll_seconds=0.2))
    clock = ManualClock(time.time())
    timed = open_backend(store_url, clock=clock)
    try:
        assert all(timed.complete(_start(timed, clock, "mail", 2)))
        page.goto(served.url + "/")
        rate = page.locator('#queues tr[data-queue="mail"] td.rate')
        expect(rate).to_have_text("2 / 50 per min (4%)")
        expect(page.locator('#queues tr[data-queue="bulk"] td.rate')).to_have_text("-")
        expect(page.locator("#live")).to_have_text("live")
        clock.set(time.time())
        _start(timed, clock, "mail", 3)  # running: started, no attempt row yet
        expect(rate).to_have_text("5 / 50 per min (10%)")
    finally:
        timed.close()
