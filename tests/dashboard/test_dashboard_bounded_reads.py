"""The dashboard's bounded reads return what the unbounded ones would, on both engines.

The overview finds the last hour's attempts by a binary search of the attempt ids,
a filtered job list searches the ids just below its cursor before it looks for
the window's floor, and the overview stops each dead count at OVERVIEW_DEAD_CAP.
Each is checked here against a plain query of the same rows.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from jobdef.dashboard import views
from jobdef.dashboard.store import Store
from jobdef.policy.registry import Registry

Run = Callable[[str, Sequence[Sequence[Any]]], list[tuple[Any, ...]]]


@contextmanager
def _sql(store_url: str) -> Iterator[Run]:
    """``run(sql, rows)`` on the store's own tables: ``?`` placeholders, one statement
    per row of ``rows`` (or once, with none), the rows it returns."""
    if store_url.startswith("sqlite"):
        conn = sqlite3.connect(store_url.removeprefix("sqlite:///"), isolation_level=None)

        def run_sqlite(sql: str, rows: Sequence[Sequence[Any]] = ()) -> list[tuple[Any, ...]]:
            if rows:
                conn.executemany(sql, rows)
                return []
            return conn.execute(sql).fetchall()

        try:
            yield run_sqlite
        finally:
            conn.close()
        return
    import psycopg

    base, _, schema = store_url.partition("?schema=")
    with psycopg.connect(base, autocommit=True) as pg:
        pg.execute(f'SET search_path TO "{schema}"')

        def run_postgres(sql: str, rows: Sequence[Sequence[Any]] = ()) -> list[tuple[Any, ...]]:
            text = sql.replace("?", "%s")
            with pg.cursor() as cursor:
                if rows:
                    cursor.executemany(text, rows)
                    return []
                cursor.execute(text)
                return cursor.fetchall() if cursor.description else []

        yield run_postgres


def _jobs(run: Run, states: Sequence[str], created: Sequence[float]) -> list[int]:
    """One ship_order job per state, created at the matching time: their ids."""
    run(
        "INSERT INTO jobdef_jobs (job, queue, args, state, attempt, max_attempts, run_after,"
        " created_at, updated_at, finished_at) VALUES ('ship_order', 'default', ?, ?, 1, 3,"
        " ?, ?, ?, ?)",
        [
            (json.dumps({"order_id": i}), s, c, c, c, c)
            for i, (s, c) in enumerate(zip(states, created, strict=True))
        ],
    )
    return [int(row[0]) for row in run("SELECT id FROM jobdef_jobs ORDER BY id", ())]


@pytest.mark.slow
def test_the_last_hours_attempts_are_found_by_a_binary_search_of_the_ids(
    store_url: str,
) -> None:
    # 3,000 attempts over six hours, ids in end order but for local shuffles of up to
    # 20 rows (commits landing a little out of order), and outcomes of both kinds.
    now = 1_900_000_000.0
    rng = random.Random(11)
    ends = [now - 6 * 3600 + i * 7.2 for i in range(3_000)]
    for start in range(0, len(ends), 20):
        chunk = ends[start : start + 20]
        rng.shuffle(chunk)
        ends[start : start + 20] = chunk
    with _sql(store_url) as run:
        ids = _jobs(run, ["done"] * len(ends), ends)
        run(
            "INSERT INTO jobdef_attempts (job_id, attempt, worker_id, started_at, finished_at,"
            " outcome) VALUES (?, 1, 'w', ?, ?, ?)",
            [
                (job_id, end - 1, end, "done" if i % 9 else "retry")
                for i, (job_id, end) in enumerate(zip(ids, ends, strict=True))
            ],
        )
        store = Store(store_url)
        try:
            for window in (1, 60, 600, 3600, 4 * 3600, 86_400):
                for cap in (20_000, 1_000, 100, 1):
                    since = now - window
                    got = store.rows("recent_attempts", since=since, cap=cap)
                    want = run(
                        "SELECT a.started_at, a.finished_at, a.outcome, j.queue"
                        " FROM jobdef_attempts AS a JOIN jobdef_jobs AS j ON j.id = a.job_id"
                        f" WHERE a.id > (SELECT max(id) FROM jobdef_attempts) - {cap}"
                        f" AND a.finished_at >= {since!r}",
                        (),
                    )
                    got_rows = sorted(
                        (r["started_at"], r["finished_at"], r["outcome"], r["queue"]) for r in got
                    )
                    assert got_rows == sorted(want), (window, cap)
            assert store.rows("recent_attempts", since=now - 3600, cap=20_000)  # not vacuous
        finally:
            store.close()


def test_an_empty_attempts_table_has_no_recent_attempts(store_url: str) -> None:
    store = Store(store_url)
    try:
        assert store.rows("recent_attempts", since=0.0, cap=20_000) == []
    finally:
        store.close()


def _reference(
    rows: list[tuple[int, str]], before: int, window: int, limit: int
) -> tuple[list[int], int]:
    """The dead ids among the ``window`` newest jobs below ``before``, newest first, at
    most ``limit``; and the window's lowest id (0 when it reaches the first job)."""
    below = [job_id for job_id, _ in sorted(rows, reverse=True) if job_id < before]
    searched = below[:window]
    floor = searched[-1] if len(below) > window else 0
    state = dict(rows)
    return [i for i in searched if state[i] == "dead"][:limit], floor


def test_a_filtered_page_is_the_windows_page_with_gaps_in_the_ids(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(views, "WINDOW", 40)
    rng = random.Random(5)
    states = ["dead" if rng.random() < 0.15 else "done" for _ in range(600)]
    with _sql(store_url) as run:
        ids = _jobs(run, states, [1_000.0 + i for i in range(len(states))])
        # Gaps: a run of 150 ids deleted, and one id in three of another stretch.
        gone = set(ids[100:250]) | set(ids[300:450:3])
        run("DELETE FROM jobdef_jobs WHERE id = ?", [(i,) for i in sorted(gone)])
        rows = [
            (int(i), str(s)) for i, s in run("SELECT id, state FROM jobdef_jobs ORDER BY id", ())
        ]
    store = Store(store_url)
    try:
        flt = views.JobFilter(state="dead")
        for before in [views.NO_CURSOR, *range(ids[0], ids[-1] + 2, 7)]:
            for limit in (5, 50):
                records, floor = views.matching(store, flt, before, limit)
                want, want_floor = _reference(rows, before, 40, limit)
                assert [r.id for r in records] == want, (before, limit)
                if len(want) < limit:
                    assert floor == want_floor, (before, limit)
        # Following "Older" from the first page to the last finds every dead job once.
        seen: list[int] = []
        page: dict[str, str] = {"state": "dead"}
        for _ in range(200):
            data = views.jobs(store, views.parse_filter(page, store.clock()))
            seen += [job["id"] for job in data["jobs"]]
            if data["older"] is None:
                break
            page = data["older"]
        assert seen == [i for i, s in sorted(rows, reverse=True) if s == "dead"]
    finally:
        store.close()


def test_the_overview_stops_a_dead_count_at_its_cap_and_says_so(
    store_url: str, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(views, "OVERVIEW_DEAD_CAP", 3)
    with _sql(store_url) as run:
        _jobs(run, ["dead"] * 5 + ["done"] * 2, [1_000.0 + i for i in range(7)])
    store = Store(store_url)
    try:
        [dead] = views.overview(store, registry)["dead"]
        assert dead == {
            "job": "ship_order",
            "count": 3,
            "at_least": True,
            "text": "more than 3, not counted further",
        }
        # The dead letter page counts on, to COUNT_CAP.
        [group] = views.dead_letter(store, registry)["groups"]
        assert group["dead"]["count"] == 5
        assert group["dead"]["at_least"] is False
    finally:
        store.close()
