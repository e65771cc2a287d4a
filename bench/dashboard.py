"""Dashboard page times with a small and a large jobs table, on each engine.

Every page reads a bounded slice of the store (a window of ids, one partial
index, capped counts), so rendering the overview or a page of the job list
should cost about the same with 1,000 jobs as with 1,000,000 (the unfiltered
list reads its page alone; a filtered one searches a window of the 20,000 jobs
below its cursor, and walks it all only when the page does not fill).

This fills a store with each of ``--sizes`` jobs: the newest 200 queued, of the
others 95% done and 5% dead, one attempt row each, created at a steady 500 an
hour up to now, so that even the smallest table holds more than the last hour
and each size shows the overview the same hour's work (what grows between sizes
is the history alone). It serves the dashboard with uvicorn on loopback (the
test sheets, the default queue with a rate of 50/m, whose use the overview
shows) and times full HTTP requests of each page: the median of ``--requests``.
On PostgreSQL the args search reads the GIN index on args; on SQLite it scans a
window. The dead letter page grows with the dead rows up to its caps (a count to
10,000, the newest 1,000 grouped), then stays flat.

    python bench/dashboard.py                     # 1,000 / 100,000 / 1,000,000, both engines
    python bench/dashboard.py --sizes 1000,100000 --engines sqlite   # quicker
"""

from __future__ import annotations

import argparse
import atexit
import json
import random
import shutil
import socket
import sqlite3
import statistics
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

from jobdef.backends import upgrade

SHEETS = Path(__file__).resolve().parent.parent / "tests" / "dashboard" / "sheets"
# The test sheets, and a rate on the default queue: the overview shows its use.
RATE_QUEUE = "apiVersion: jobdef/v1\nkind: Queue\nname: default\nrate: 50/m\n"
POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
PAGES = {
    "overview": "/",
    "jobs": "/jobs",
    "jobs state=dead": "/jobs?state=dead",
    "jobs args search": "/jobs?q=args.order_id%3A42",
    "dead letter": "/dead",
}
RATE = 500 / 3600  # jobs per second: 500 an hour, so 1,000 jobs span two hours
# The newest jobs are queued, as many in either table: the queue depths the overview
# counts grow with the backlog, not with the history this measures.
BACKLOG = 200


def _rows(count: int, now: float) -> list[tuple[object, ...]]:
    """(job, queue, args, state, attempt, created, finished, error) for ``count`` jobs."""
    rng = random.Random(7)
    out = []
    for i in range(count):
        created = now - (count - i) / RATE
        pick = rng.random()
        state = "queued" if i >= count - BACKLOG else "done" if pick < 0.95 else "dead"
        job, queue = ("ship_order", "default") if i % 4 else ("build_report", "reports")
        args = {"order_id": i} if job == "ship_order" else {"report_id": i}
        error = (
            json.dumps({"type": "ConnectionError", "message": "timed out", "traceback": ""})
            if state == "dead"
            else None
        )
        finished = created + 1.0 if state != "queued" else None
        out.append(
            (
                job,
                queue,
                json.dumps(args),
                state,
                0 if state == "queued" else 1,
                created,
                finished,
                error,
            )
        )
    return out


def fill_sqlite(url: str, count: int) -> None:
    upgrade(url)
    path = url.removeprefix("sqlite:///")
    conn = sqlite3.connect(path, isolation_level=None)
    now = time.time()
    conn.execute("BEGIN")
    rows = _rows(count, now)
    conn.executemany(
        "INSERT INTO jobdef_jobs (job, queue, args, state, attempt, max_attempts, run_after,"
        " created_at, updated_at, started_at, finished_at, last_error)"
        " VALUES (?, ?, ?, ?, ?, 3, ?6, ?6, ?6, ?6, ?7, ?8)",
        rows,
    )
    conn.execute(
        "INSERT INTO jobdef_attempts (job_id, attempt, worker_id, started_at, finished_at, outcome,"
        " error) SELECT id, 1, 'w', created_at, finished_at, CASE state WHEN 'done' THEN 'done'"
        " ELSE 'dead' END, last_error FROM jobdef_jobs WHERE state != 'queued' ORDER BY finished_at"
    )
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.close()


def fill_postgres(url: str, schema: str, count: int) -> None:
    import psycopg

    with psycopg.connect(POSTGRES, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    upgrade(url)
    now = time.time()
    with psycopg.connect(POSTGRES, autocommit=True) as conn:
        conn.execute(
            f"""
            INSERT INTO "{schema}".jobdef_jobs (job, queue, args, state, attempt, max_attempts,
                run_after, created_at, updated_at, started_at, finished_at, last_error)
            SELECT CASE WHEN i %% 4 = 0 THEN 'build_report' ELSE 'ship_order' END,
                   CASE WHEN i %% 4 = 0 THEN 'reports' ELSE 'default' END,
                   jsonb_build_object(CASE WHEN i %% 4 = 0 THEN 'report_id' ELSE 'order_id' END, i),
                   s.state, CASE WHEN s.state = 'queued' THEN 0 ELSE 1 END, 3,
                   c, c, c, c, CASE WHEN s.state = 'queued' THEN NULL ELSE c + 1 END,
                   CASE WHEN s.state = 'dead' THEN
                     '{{"type": "ConnectionError", "message": "timed out", "traceback": ""}}'::jsonb
                   END
            FROM generate_series(0, %(n)s - 1) AS i,
                 LATERAL (SELECT %(now)s - (%(n)s - i) / %(rate)s AS c,
                          CASE WHEN i >= %(n)s - %(backlog)s THEN 'queued'
                               WHEN (i * 37) %% 100 < 95 THEN 'done'
                               ELSE 'dead' END AS state) AS s
            """,
            {"n": count, "now": now, "rate": RATE, "backlog": BACKLOG},
        )
        conn.execute(
            f"""
            INSERT INTO "{schema}".jobdef_attempts (job_id, attempt, worker_id, started_at,
                finished_at, outcome, error)
            SELECT id, 1, 'w', created_at, finished_at,
                   CASE state WHEN 'done' THEN 'done' ELSE 'dead' END, last_error
            FROM "{schema}".jobdef_jobs WHERE state <> 'queued' ORDER BY finished_at
            """
        )
        conn.execute(f'VACUUM ANALYZE "{schema}".jobdef_jobs')
        conn.execute(f'VACUUM ANALYZE "{schema}".jobdef_attempts')
        # The fill's dirty pages written out now, not by the checkpointer during the timing.
        conn.execute("CHECKPOINT")


def drop_postgres(schema: str) -> None:
    import psycopg

    with psycopg.connect(POSTGRES, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def time_pages(url: str, requests: int) -> dict[str, float]:
    """Milliseconds per full HTTP request of each page, median over ``requests``."""
    import uvicorn

    from jobdef.dashboard import create_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    sheets = Path(tempfile.mkdtemp(prefix="jobdef-bench-"))
    atexit.register(shutil.rmtree, sheets, ignore_errors=True)
    (sheets / "jobs.yaml").write_text((SHEETS / "jobs.yaml").read_text())
    (sheets / "queues.yaml").write_text(RATE_QUEUE)
    server = uvicorn.Server(uvicorn.Config(create_app(url, sheets), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        out = {}
        for name, path in PAGES.items():
            urllib.request.urlopen(base + path).read()  # warm the caches
            times = []
            for _ in range(requests):
                started = time.perf_counter()
                with urllib.request.urlopen(base + path) as response:
                    response.read()
                    assert response.status == 200
                times.append((time.perf_counter() - started) * 1000)
            out[name] = statistics.median(times)
        return out
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="1000,100000,1000000", help="jobs in the table, one run each"
    )
    parser.add_argument("--requests", type=int, default=21)
    parser.add_argument("--engines", default="sqlite,postgres")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    results: dict[tuple[str, int], dict[str, float]] = {}
    for engine in args.engines.split(","):
        for count in sizes:
            started = time.perf_counter()
            if engine == "sqlite":
                with tempfile.TemporaryDirectory() as folder:
                    url = f"sqlite:///{Path(folder) / 'jobs.db'}"
                    fill_sqlite(url, count)
                    filled = time.perf_counter() - started
                    results[(engine, count)] = time_pages(url, args.requests)
            else:
                schema = f"bench_dash_{uuid.uuid4().hex[:8]}"
                try:
                    fill_postgres(f"{POSTGRES}?schema={schema}", schema, count)
                    filled = time.perf_counter() - started
                    results[(engine, count)] = time_pages(
                        f"{POSTGRES}?schema={schema}", args.requests
                    )
                finally:
                    drop_postgres(schema)
            print(f"{engine}: {count:,} jobs filled in {filled:.1f}s", flush=True)
            print(f"  {results[(engine, count)]}", flush=True)
    print(f"\nms per request (median of {args.requests}); ratio = largest / second largest")
    print(f"{'engine':<10}{'page':<20}" + "".join(f"{size:>12,}" for size in sizes) + "   ratio")
    for engine in args.engines.split(","):
        for name in PAGES:
            times = [results[(engine, size)][name] for size in sizes]
            ratio = times[-1] / times[-2] if len(times) > 1 else 1.0
            cells = "".join(f"{ms:>12.1f}" for ms in times)
            print(f"{engine:<10}{name:<20}{cells}{ratio:>8.2f}")


if __name__ == "__main__":
    main()
