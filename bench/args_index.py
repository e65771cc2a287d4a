"""What PostgreSQL's args index (migration 0006, GIN jsonb_path_ops) costs: the time
its migration takes on a full jobs table, and enqueue with and without it.

- build: ``--rows`` jobs put straight into a fresh schema at version 5, then migration
  0006 itself, timed, in its transaction (while it runs, writes to the table wait);
- enqueue: ``--single`` jobs one per call (each its own transaction) and ``--bulk``
  jobs in batches of 1,000, through ``jobdef.runtime.connect``, on a fresh schema
  with the index and on one without it (dropped after the upgrade), the two
  interleaved in each of ``--runs`` runs (the order swapped every run); the table
  shows the medians.

    python bench/args_index.py                             # 1,000,000 rows, 3 runs
    python bench/args_index.py --rows 200000 --runs 5
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg

from jobdef.backends import open_backend
from jobdef.backends.postgres import engine
from jobdef.backends.sql import migration_files

POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
BULK_BATCH = 1000
SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: send_reservation_mail
handler: os.path:join
owner: bench
queue: mail
max_attempts: 3
backoff: {strategy: fixed, initial: 1s}
timeout: 60s
errors: {default: retry}
retention: {done: 30d, dead: until_resolved}
args:
  reservation_id: {type: integer}
  customer_id: {type: integer}
  locale: {type: string}
"""


def args_of(n: int) -> dict[str, object]:
    """Three args, as a typical job has: the index holds one entry per key and value."""
    return {"reservation_id": n, "customer_id": n % 5000, "locale": "ja" if n % 3 else "en"}


def fresh(schema: str) -> str:
    with psycopg.connect(POSTGRES, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return f"{POSTGRES}?schema={schema}"


def drop(schema: str) -> None:
    with psycopg.connect(POSTGRES, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def measure_build(rows: int) -> dict[str, float]:
    """Seconds of migration 0006 on ``rows`` jobs, and the sizes of table and index."""
    files = migration_files(engine.MIGRATIONS)
    [(_, _, sql)] = [f for f in files if f[1].startswith("0006_")]
    schema = f"bench_args_{uuid.uuid4().hex[:8]}"
    url = fresh(schema)
    try:
        original = engine.migration_files
        engine.migration_files = lambda package: [f for f in files if f[0] < 6]  # type: ignore[assignment]
        try:
            open_backend(url).close()
        finally:
            engine.migration_files = original
        with psycopg.connect(POSTGRES, autocommit=True) as conn:
            conn.execute(
                f"""
                INSERT INTO "{schema}".jobdef_jobs (job, queue, args, state, attempt,
                    max_attempts, run_after, created_at, updated_at, finished_at)
                SELECT 'send_reservation_mail', 'mail',
                       jsonb_build_object('reservation_id', i, 'customer_id', i %% 5000,
                                          'locale', CASE WHEN i %% 3 = 0 THEN 'en' ELSE 'ja' END),
                       'done', 1, 3, i, i, i, i
                FROM generate_series(1, %(n)s) AS i
                """,
                {"n": rows},
            )
            conn.execute(f'VACUUM ANALYZE "{schema}".jobdef_jobs')
            started = time.perf_counter()
            with conn.transaction():
                conn.execute(sql.replace("{schema}", f'"{schema}"'))
            seconds = time.perf_counter() - started
            [(table, index)] = conn.execute(
                "SELECT pg_total_relation_size(%s), pg_relation_size(%s)",
                (f'"{schema}".jobdef_jobs', f'"{schema}".jobdef_jobs_args'),
            ).fetchall()
        return {"seconds": seconds, "table_mb": table / 2**20, "index_mb": index / 2**20}
    finally:
        drop(schema)


def measure_enqueue(indexed: bool, count: int, bulk: bool, sheets: Path) -> float:
    """Jobs per second of ``count`` enqueues on a fresh schema, with or without the index."""
    from jobdef.runtime import connect
    from jobdef.sheets.pipeline import load_registry

    schema = f"bench_args_{uuid.uuid4().hex[:8]}"
    url = fresh(schema)
    try:
        open_backend(url).close()
        if not indexed:
            with psycopg.connect(POSTGRES, autocommit=True) as conn:
                conn.execute(f'DROP INDEX "{schema}".jobdef_jobs_args')
        with connect(url, load_registry([sheets])) as queue:
            started = time.perf_counter()
            if bulk:
                for first in range(0, count, BULK_BATCH):
                    last = min(count, first + BULK_BATCH)
                    queue.enqueue_many(
                        "send_reservation_mail", (args_of(n) for n in range(first, last))
                    )
            else:
                for n in range(count):
                    queue.enqueue("send_reservation_mail", args_of(n))
            return count / (time.perf_counter() - started)
    finally:
        drop(schema)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="jobs the index is built on")
    parser.add_argument("--single", type=int, default=2_000, help="jobs enqueued one by one")
    parser.add_argument("--bulk", type=int, default=20_000, help="jobs enqueued in batches")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-build", action="store_true")
    args = parser.parse_args()

    if not args.skip_build:
        built = measure_build(args.rows)
        print(
            f"migration 0006 on {args.rows:,} jobs: {built['seconds']:.1f}s "
            f"(table {built['table_mb']:.0f} MB, index {built['index_mb']:.0f} MB)",
            flush=True,
        )
    sheets = Path(tempfile.mkdtemp(prefix="jobdef-bench-"))
    atexit.register(shutil.rmtree, sheets, ignore_errors=True)
    (sheets / "mail.yaml").write_text(SHEET)
    results: dict[tuple[str, bool], list[float]] = {}
    for run in range(args.runs):
        order = (True, False) if run % 2 == 0 else (False, True)
        for what, count, bulk in (("single", args.single, False), ("bulk", args.bulk, True)):
            for indexed in order:
                rate = measure_enqueue(indexed, count, bulk, sheets)
                results.setdefault((what, indexed), []).append(rate)
                label = "with" if indexed else "without"
                print(
                    f"  run {run + 1} {what:6} {label:7} index: {rate:,.0f} jobs/s", file=sys.stderr
                )
    print(f"\nenqueue, jobs/s, median of {args.runs} interleaved runs")
    print(f"{'':10}{'with index':>14}{'without':>14}{'ratio':>8}")
    for what in ("single", "bulk"):
        with_index = statistics.median(results[(what, True)])
        without = statistics.median(results[(what, False)])
        print(f"{what:10}{with_index:>14,.0f}{without:>14,.0f}{with_index / without:>8.2f}")


if __name__ == "__main__":
    main()
