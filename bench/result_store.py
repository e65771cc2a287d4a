"""Stored results: where they live (the job's row or a table of their own), and whether
many of them slow claims, on SQLite and PostgreSQL.

``--mode layout`` (the decision): two stores per engine, each holding ``--done``
done jobs with a result of ``--size`` bytes (default 32 KiB of random hex), one
keeping results in the jobs row (as jobdef does), one in a table of their own
(``bench_results``, keyed by job id). Each run enqueues ``--queued`` jobs and
drains them in turns of ``--batch``: the engine's own claim (timed alone: the
claim cost), then one transaction that completes the batch and stores a fresh
value of the same size for each job, written the same way for both layouts
except where the value goes. Drain rate = jobs / (claim + completion time).

``--mode scale`` (the promise: a million stored results must not slow claims):
two stores per engine, one with no done job and one with ``--stored`` done
jobs that have a result (``--scale-size`` bytes each, bulk-inserted with SQL),
measured with jobdef's own verbs as shipped: claim (timed alone), then
``complete`` with a result per job. It also times one tick of result retention
that clears a batch of 1,000 of the stored results (through jobdef_jobs_results).

What it decided (2 cores, load 6 to 40 from other work, medians of 3): results stay
in the jobs row. Claims cost the same either way (5,000 / 20,000 done jobs with
32 KiB results: SQLite 1.29 / 1.81 ms row vs 1.28 / 1.65 ms table; PostgreSQL
8.7 / 7.1 ms vs 7.9 / 8.7 ms), since no queued or running row ever holds a result
and both engines keep a large value out of line (PostgreSQL's TOAST, SQLite's
overflow pages). Draining with 32 KiB results was as fast or faster in the row
(SQLite 1,390 / 787 vs 1,234 / 662 jobs/s; PostgreSQL 152 / 141 vs 149 / 142):
one row written per completion instead of two, and pruning or a requeue clears
the result with the row, with no second delete. A million stored results: claim
1.07x (SQLite) and 1.15x (PostgreSQL), drain 0.98x and 0.99x.

Runs are interleaved (store A, store B, A, B, ...) on stores built once; each
figure is the median of ``--runs`` runs. Run it niced, and note the load.

    nice python bench/result_store.py --mode layout
    nice python bench/result_store.py --mode scale                 # 0 vs 1,000,000
    nice python bench/result_store.py --mode scale --stored 20000 --runs 1   # smoke
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions, NewJob, ResultRetention

T0 = 1_700_000_000.0


@dataclass
class Store:
    """One bench store: its URL, its raw connection maker, its layout."""

    engine: str
    url: str
    layout: str  # "row" or "table"
    schema: str | None
    connect: Callable[[], Any]

    def table(self, name: str) -> str:
        return name if self.schema is None else f'"{self.schema}".{name}'


def _make(engine: str, folder: Path, server: str, layout: str) -> Store:
    if engine == "sqlite":
        path = folder / f"{uuid.uuid4().hex}.db"
        url = f"sqlite:///{path}?synchronous=normal"
        open_backend(url).close()

        def connect_sqlite() -> Any:
            conn = sqlite3.connect(path, isolation_level=None, timeout=30)
            conn.execute("PRAGMA synchronous=normal")
            return conn

        store = Store(engine, url, layout, None, connect_sqlite)
    else:
        import psycopg

        schema = f"bench_{uuid.uuid4().hex[:10]}"
        url = f"{server}?schema={schema}"
        open_backend(url).close()
        store = Store(engine, url, layout, schema, lambda: psycopg.connect(server))
    if layout == "table":
        kind = "TEXT" if engine == "sqlite" else "jsonb"
        key = "INTEGER" if engine == "sqlite" else "bigint"
        _run(store, f"CREATE TABLE {store.table('bench_results')} "
                    f"(job_id {key} PRIMARY KEY, result {kind} NOT NULL)")  # fmt: skip
    return store


def _run(store: Store, sql: str, params: Any = None) -> None:
    conn = store.connect()
    try:
        conn.execute(sql, params or ())
        conn.commit()
    finally:
        conn.close()


def _prefill(store: Store, count: int, size: int) -> float:
    """``count`` done jobs, each with a result of about ``size`` bytes of random hex (in
    the row or in bench_results, per the layout), inserted with SQL; seconds taken."""
    began = time.perf_counter()
    jobs, chunk = store.table("jobdef_jobs"), 50_000
    half = max(1, size // 2 - 12)  # hex doubles; {"blob":"..."} adds 11
    for first in range(0, count, chunk):
        n = min(chunk, count - first)
        if store.engine == "sqlite":
            value = f"json_object('blob', hex(randomblob({half})))"
            rows = (f"WITH RECURSIVE n(i) AS (SELECT {first} UNION ALL SELECT i + 1 FROM n "
                    f"WHERE i < {first + n - 1}) ")  # fmt: skip
            source = "n"
        else:
            md5s = max(1, size // 32)
            value = (f"jsonb_build_object('blob', (SELECT string_agg(md5(random()::text || k::text"
                     f" || i::text), '') FROM generate_series(1, {md5s}) AS k))")  # fmt: skip
            rows = ""
            source = f"generate_series({first}, {first + n - 1}) AS i"
        kept = value if store.layout == "row" else "NULL"
        _run(
            store,
            f"{rows}INSERT INTO {jobs} (job, queue, priority, args, state, attempt, "
            "max_attempts, run_after, created_at, updated_at, started_at, finished_at, result) "
            f"SELECT 'j', 'default', 0, '{{}}', 'done', 1, 3, {T0}, {T0}, {T0}, {T0}, "
            f"{T0} + i * 0.001, {kept} FROM {source}",
        )
        if store.layout == "table":
            _run(
                store,
                f"INSERT INTO {store.table('bench_results')} (job_id, result) "
                f"SELECT id, {value.replace('i::text', 'id::text')} FROM {jobs} "
                f"WHERE id > (SELECT coalesce(max(job_id), 0) FROM "
                f"{store.table('bench_results')})",
            )
    if store.engine == "postgres":
        conn = store.connect()
        conn.autocommit = True
        conn.execute(f"VACUUM ANALYZE {jobs}")
        conn.close()
    return time.perf_counter() - began


def _value(size: int) -> str:
    return json.dumps({"blob": os.urandom(max(1, size // 2 - 12)).hex()})


def _complete_sql(store: Store) -> list[str]:
    """The statements of one completion in ``store``'s layout: the job row marked done
    (with its result, in the row layout), and the result's own row (table layout)."""
    jobs = store.table("jobdef_jobs")
    mark = "?" if store.engine == "sqlite" else "%s"
    cast = "" if store.engine == "sqlite" else "::jsonb"
    fence = f"WHERE id = {mark} AND attempt = {mark} AND worker_id = {mark} AND state = 'running'"
    done = f"state = 'done', finished_at = {mark}, updated_at = {mark}, lease_until = NULL"
    if store.layout == "row":
        return [f"UPDATE {jobs} SET {done}, result = {mark}{cast} {fence}"]
    return [
        f"UPDATE {jobs} SET {done} {fence}",
        f"INSERT INTO {store.table('bench_results')} (job_id, result) VALUES "
        f"({mark}, {mark}{cast})",
    ]


def _layout_run(store: Store, queued: int, batch: int, size: int) -> tuple[float, float]:
    """(median claim ms, jobs per second) for one drain of ``queued`` jobs."""
    backend = open_backend(store.url)
    conn = store.connect()
    statements = _complete_sql(store)
    try:
        for first in range(0, queued, 1000):
            count = min(1000, queued - first)
            backend.enqueue([NewJob(job="j", args={}, queue="default", max_attempts=3)] * count)
        values = [_value(size) for _ in range(batch)]
        claims, total, drained = [], 0.0, 0
        while True:
            began = time.perf_counter()
            taken = backend.claim(ClaimOptions("w", 30, limit=batch))
            claimed = time.perf_counter()
            if not taken:
                break
            now = time.time()
            marks = [(now, now, r.id, r.attempt, r.lease.worker_id) for r in taken]
            if store.engine == "sqlite":
                conn.execute("BEGIN IMMEDIATE")
            if store.layout == "row":
                rows = [(*m[:2], values[i], *m[2:]) for i, m in enumerate(marks)]
                _executemany(conn, statements[0], rows)
            else:
                _executemany(conn, statements[0], marks)
                _executemany(conn, statements[1], [(r.id, values[i]) for i, r in enumerate(taken)])
            conn.commit() if store.engine == "postgres" else conn.execute("COMMIT")
            ended = time.perf_counter()
            claims.append(claimed - began)
            total += ended - began
            drained += len(taken)
        return statistics.median(claims) * 1000, drained / total
    finally:
        conn.close()
        backend.close()


def _executemany(conn: Any, sql: str, rows: list[tuple[Any, ...]]) -> None:
    if isinstance(conn, sqlite3.Connection):
        conn.executemany(sql, rows)
    else:
        with conn.cursor() as cursor:
            cursor.executemany(sql, rows)


def _scale_run(url: str, queued: int, batch: int, size: int) -> tuple[float, float]:
    """(median claim ms, jobs per second) draining ``queued`` jobs with jobdef's verbs."""
    backend = open_backend(url)
    try:
        for first in range(0, queued, 1000):
            count = min(1000, queued - first)
            backend.enqueue([NewJob(job="j", args={}, queue="default", max_attempts=3)] * count)
        values = [_value(size) for _ in range(batch)]
        claims, total, drained = [], 0.0, 0
        while True:
            began = time.perf_counter()
            taken = backend.claim(ClaimOptions("w", 30, limit=batch))
            claimed = time.perf_counter()
            if not taken:
                break
            results = {r.id: values[i] for i, r in enumerate(taken)}
            backend.complete([r.lease for r in taken], None, results)
            claims.append(claimed - began)
            total += time.perf_counter() - began
            drained += len(taken)
        return statistics.median(claims) * 1000, drained / total
    finally:
        backend.close()


def _expiry_ms(url: str) -> tuple[float, int]:
    """One result-retention tick that clears the 1,000 oldest prefilled results."""
    backend = open_backend(url)
    try:
        keep = backend.clock() - (T0 + 1.0)  # rows finished before T0 + 1.0s: 1,000 of them
        began = time.perf_counter()
        cleared = backend.expire_results([ResultRetention("j", keep)], batch_size=1000)
        return (time.perf_counter() - began) * 1000, cleared
    finally:
        backend.close()


def _drop(stores: list[Store], server: str) -> None:
    import psycopg

    with psycopg.connect(server, autocommit=True) as conn:
        for store in stores:
            if store.schema is not None:
                conn.execute(f'DROP SCHEMA "{store.schema}" CASCADE')


def _size_of(store: Store) -> str:
    if store.engine == "sqlite":
        path = store.url.removeprefix("sqlite:///").partition("?")[0]
        total = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    else:
        conn = store.connect()
        total = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (store.schema,),
        ).fetchone()[0]
        conn.close()
    return f"{int(total) / 2**20:,.0f} MiB"


def layout(args: argparse.Namespace, folder: Path) -> None:
    print(f"layout: {args.done:,} done jobs with {args.size:,}-byte results; drain {args.queued:,} "
          f"in batches of {args.batch}, each with a {args.size:,}-byte result; medians of "
          f"{args.runs} interleaved runs")  # fmt: skip
    for engine in args.engines:
        stores = [_make(engine, folder, args.postgres, layout) for layout in ("row", "table")]
        try:
            for store in stores:
                took = _prefill(store, args.done, args.size)
                print(f"{engine:9} {store.layout:5} prefilled in {took:5.1f}s, {_size_of(store)}")
            figures: dict[str, list[tuple[float, float]]] = {s.layout: [] for s in stores}
            for _ in range(args.runs):
                for store in stores:
                    figures[store.layout].append(
                        _layout_run(store, args.queued, args.batch, args.size)
                    )
            for name, runs in figures.items():
                claim = statistics.median(r[0] for r in runs)
                rate = statistics.median(r[1] for r in runs)
                print(f"{engine:9} {name:5} claim {claim:6.2f} ms   drain {rate:8,.0f} jobs/s")
        finally:
            if engine == "postgres":
                _drop(stores, args.postgres)


def scale(args: argparse.Namespace, folder: Path) -> None:
    print(f"scale: 0 vs {args.stored:,} stored results ({args.scale_size}-byte); drain "
          f"{args.queued:,} in batches of {args.batch}, each with a {args.size:,}-byte result; "
          f"medians of {args.runs} interleaved runs")  # fmt: skip
    for engine in args.engines:
        stores = [_make(engine, folder, args.postgres, "row") for _ in range(2)]
        try:
            took = _prefill(stores[1], args.stored, args.scale_size)
            print(f"{engine:9} prefilled {args.stored:,} in {took:5.1f}s, {_size_of(stores[1])}")
            runs: list[list[tuple[float, float]]] = [[], []]
            for _ in range(args.runs):
                for index, store in enumerate(stores):
                    runs[index].append(_scale_run(store.url, args.queued, args.batch, args.size))
            claims = [statistics.median(r[0] for r in each) for each in runs]
            rates = [statistics.median(r[1] for r in each) for each in runs]
            for count, claim, rate in zip((0, args.stored), claims, rates, strict=True):
                print(f"{engine:9} {count:>9,} stored: claim {claim:6.2f} ms   "
                      f"drain {rate:8,.0f} jobs/s")  # fmt: skip
            print(f"{engine:9} ratio {args.stored:,}/0: claim {claims[1] / claims[0]:.2f}x, "
                  f"drain {rates[1] / rates[0]:.2f}x")  # fmt: skip
            expiry, cleared = _expiry_ms(stores[1].url)
            print(f"{engine:9} one retention tick cleared {cleared:,} results in {expiry:.1f} ms")
        finally:
            if engine == "postgres":
                _drop(stores, args.postgres)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mode", choices=("layout", "scale"), default="layout")
    parser.add_argument("--done", type=int, default=5000, help="layout: done jobs stored first")
    parser.add_argument("--size", type=int, default=32 * 1024, help="bytes of each new result")
    parser.add_argument("--stored", type=int, default=1_000_000, help="scale: stored results")
    parser.add_argument("--scale-size", type=int, default=256, help="scale: bytes of each")
    parser.add_argument("--queued", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engines", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        (layout if args.mode == "layout" else scale)(args, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
