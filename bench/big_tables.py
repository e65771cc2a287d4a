"""PostgreSQL at fleet scale: claim, enqueue, prune and the overview with 10M finished jobs.

Three stores, each a fresh schema made by the project's migrations:

- ``empty``: only the queued jobs its claims take (6,600 for three runs of 2,000);
- ``queued``: 1,000,000 queued jobs;
- ``big``: 10,000,000 finished jobs (29 days of history, 20 job names of
  Zipf-like weights on 5 queues; 98.5% done, 1% dead, 0.5% cancelled; one
  attempt row each, 5% two and 1% three; a fifth of them keyed) and the same
  1,000,000 queued jobs.

Rows are written by the server (``INSERT ... SELECT generate_series``) with the
jobs' secondary indexes and the attempts' foreign key dropped, then rebuilt from
their own definitions, so the schema measured is the migrations' own; then
VACUUM ANALYZE and a CHECKPOINT. Each measurement goes through the engine's API
(``PostgresBackend``, ``Queue``, the dashboard's ``overview``), ``--runs`` times;
the table shows the median of the runs:

- claim: a worker's loop of ``claim`` (limit 1) then ``complete``; p50/p99 of the
  claim alone, and of the complete;
- enqueue: ``Queue.enqueue`` of an unkeyed job, of a keyed job with a dedupe
  window (the duplicate lookup), p50/p99; ``Queue.enqueue_many`` of 1,000;
- prune: one day's worth of finished rows (a 30th of the history, written just
  before each run, older than the sheets' 29-day retention) through
  ``PostgresBackend.prune``, the path of ``jobdef prune`` and the workers'
  retention service: total time, batches, the longest batch (each batch is its
  own transaction, so that is the longest any row lock is held);
- overview: the dashboard overview's reads (``jobdef.dashboard.views.overview``).

Then, on the ``big`` store, EXPLAIN (ANALYZE, BUFFERS) of the claim, the duplicate
lookup, a prune batch and the overview's queries, with the engine's session
settings, flagging any sequential scan or sort of the jobs or attempts tables.
The schemas are dropped at the end.

    python bench/big_tables.py                  # 10M + 1M, three runs (generation: minutes)
    python bench/big_tables.py --scale 0.01 --runs 1     # smoke: 100,000 + 10,000
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from jobdef.backends import open_backend, upgrade
from jobdef.backends.postgres.engine import PostgresBackend
from jobdef.backends.reads import reader_queries
from jobdef.backends.records import ClaimOptions
from jobdef.dashboard.store import Store
from jobdef.dashboard.views import overview
from jobdef.policy.registry import Registry
from jobdef.runtime.maintenance.retention import retention_rules
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry
from pg_store import drop_schema

SERVER = "postgresql://postgres@127.0.0.1:5432/test"
DAY = 86400.0
HISTORY_DAYS = 29  # the fill's finished jobs; retention is 29 days, so none is due
QUEUES = ("default", "mail", "reports", "billing", "webhooks")
JOBS = tuple(f"job_{i:02d}" for i in range(20))
KEYED = JOBS[:4]  # a fifth of the jobs: job_00..job_03 have a key recipe
BULK = 1000


def noop(ctx: Any, n: int = 0) -> None:
    """The jobs' handler; nothing here runs it."""


def sheets(folder: Path) -> Registry:
    """Twenty jobs on five queues, kept 29 days after they end (dead ones too)."""
    for i, name in enumerate(JOBS):
        key = '\nidempotency: {key: "{n}", dedupe_window: 1d}' if name in KEYED else ""
        (folder / f"{name}.yaml").write_text(
            f"""\
apiVersion: jobdef/v1
kind: Job
name: {name}
handler: big_tables:noop
owner: bench
queue: {QUEUES[i % len(QUEUES)]}
max_attempts: 3
backoff: {{strategy: fixed, initial: 1s}}
timeout: 60s
errors: {{default: retry}}
on_reclaim: retry
retention: {{done: {HISTORY_DAYS}d, dead: {HISTORY_DAYS}d}}{key}
args:
  n: {{type: integer, required: true}}
"""
        )
    return load_registry([folder])


# -- filling ----------------------------------------------------------------------------------

# Job i of the fill is job_k with weight 1/(k+1): the thresholds of width_bucket over a
# pseudo-random fraction of i. A job's queue and whether it is keyed follow from k.
_WEIGHTS = [1 / (k + 1) for k in range(len(JOBS))]
_BOUNDS = [sum(_WEIGHTS[:k]) / sum(_WEIGHTS) for k in range(1, len(JOBS))]

_PICK = """
    SELECT i, k, (ARRAY[{jobs}])[k] AS job, (ARRAY[{queues}])[(k - 1) %% {nq} + 1] AS queue,
           k <= {keyed} AS keyed, ((i * 7919) %% 1000)::int AS r
    FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS i,
         LATERAL (SELECT width_bucket(((i * 2654435761) %% 1000003) / 1000003.0,
                                      ARRAY[{bounds}]::numeric[]) + 1 AS k) AS b
"""


def _pick() -> str:
    return _PICK.format(
        jobs=", ".join(f"'{j}'" for j in JOBS),
        queues=", ".join(f"'{q}'" for q in QUEUES),
        nq=len(QUEUES),
        keyed=len(KEYED),
        bounds=", ".join(f"{b:.6f}" for b in _BOUNDS),
    )


def _receipt(created: str) -> str:
    """A receipt like rows.receipt_token: 12 hex digits of the time in ms, 23 characters."""
    return f"lpad(to_hex(({created} * 1000)::bigint), 12, '0') || left(md5(i::text), 23)"


def insert_finished(
    conn: psycopg.Connection[Any], schema: str, count: int, *, start: float, span: float, first: int
) -> None:
    """``count`` finished jobs ending evenly from ``start`` over ``span`` seconds, and
    their attempts (ids in end order, as the engine writes them)."""
    conn.execute(
        f"""
        INSERT INTO "{schema}".jobdef_jobs (job, queue, priority, args, state, attempt,
            max_attempts, idempotency_key, run_after, created_at, updated_at, started_at,
            finished_at, worker_id, last_error, receipt)
        SELECT p.job, p.queue, 0, jsonb_build_object('n', p.i),
               CASE WHEN p.r < 10 THEN 'dead' WHEN p.r < 15 THEN 'cancelled' ELSE 'done' END,
               CASE WHEN p.r < 10 THEN 3 WHEN p.r >= 950 THEN 2 + (p.r >= 990)::int ELSE 1 END,
               3, CASE WHEN p.keyed THEN p.i::text END,
               t.f - 5, t.f - 5, t.f, t.f - 1, t.f, 'w-' || (p.i %% 8),
               CASE WHEN p.r < 10 THEN
                   '{{"type": "TimeoutError", "message": "upstream timed out"}}'::jsonb END,
               {_receipt("(t.f - 5)")}
        FROM ({_pick()}) AS p,
             LATERAL (SELECT %(start)s + (p.i - %(first)s) * %(step)s AS f) AS t
        ORDER BY p.i
        """,
        {"first": first, "last": first + count - 1, "start": start, "step": span / count},
    )
    conn.execute(
        f"""
        INSERT INTO "{schema}".jobdef_attempts (job_id, attempt, worker_id, started_at,
            finished_at, outcome, error)
        SELECT j.id, a, j.worker_id, j.started_at - 60 * (j.attempt - a),
               j.finished_at - 60 * (j.attempt - a),
               CASE WHEN a < j.attempt THEN 'failed' WHEN j.state = 'done' THEN 'done'
                    WHEN j.state = 'dead' THEN 'dead' ELSE 'cancelled' END,
               CASE WHEN a < j.attempt OR j.state = 'dead' THEN
                   '{{"type": "TimeoutError", "message": "upstream timed out"}}'::jsonb END
        FROM "{schema}".jobdef_jobs AS j, generate_series(1, j.attempt) AS a
        WHERE j.state <> 'queued' AND j.finished_at >= %(start)s
          AND j.finished_at < %(start)s + %(span)s
        ORDER BY j.finished_at - 60 * (j.attempt - a), j.id
        """,
        {"start": start, "span": span},
    )


def insert_queued(
    conn: psycopg.Connection[Any], schema: str, count: int, *, now: float, first: int
) -> None:
    """``count`` queued jobs enqueued over the last hour: 5% delayed an hour, 3% of
    priority 10, the keyed jobs' keys unique."""
    conn.execute(
        f"""
        INSERT INTO "{schema}".jobdef_jobs (job, queue, priority, args, state, attempt,
            max_attempts, idempotency_key, run_after, created_at, updated_at, receipt)
        SELECT p.job, p.queue, CASE WHEN p.r < 30 THEN 10 ELSE 0 END,
               jsonb_build_object('n', p.i), 'queued', 0, 3,
               CASE WHEN p.keyed THEN 'q' || p.i END,
               CASE WHEN p.r >= 950 THEN t.c + 3600 ELSE t.c END, t.c, t.c,
               {_receipt("t.c")}
        FROM ({_pick()}) AS p,
             LATERAL (SELECT %(now)s - 3600 + (p.i - %(first)s) * 3600.0 / %(n)s AS c) AS t
        ORDER BY p.i
        """,
        {"first": first, "last": first + count - 1, "now": now, "n": count},
    )


@contextmanager
def bulk_load(conn: psycopg.Connection[Any], schema: str) -> Iterator[None]:
    """Without the tables' secondary indexes and foreign key, rebuilt from their own
    definitions after: the schema measured is the migrations', filled in minutes."""
    rows = conn.execute(
        """
        SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
        FROM pg_index AS i JOIN pg_class AS t ON t.oid = i.indrelid
        WHERE t.relnamespace = %(schema)s::regnamespace AND NOT i.indisprimary
          AND t.relname IN ('jobdef_jobs', 'jobdef_attempts')
        """,
        {"schema": schema},
    ).fetchall()
    keys = conn.execute(
        """
        SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
        WHERE conrelid = %(table)s::regclass AND contype = 'f'
        """,
        {"table": f'"{schema}".jobdef_attempts'},
    ).fetchall()
    for name, _ in keys:
        conn.execute(f'ALTER TABLE "{schema}".jobdef_attempts DROP CONSTRAINT "{name}"')
    for name, _ in rows:
        conn.execute(f"DROP INDEX {name}")
    yield
    conn.execute("SET maintenance_work_mem = '1GB'")
    for _, definition in rows:
        conn.execute(definition)
    for name, definition in keys:
        conn.execute(f'ALTER TABLE "{schema}".jobdef_attempts ADD CONSTRAINT "{name}" {definition}')


def fill(url: str, schema: str, *, finished: int, queued: int, now: float) -> float:
    """Make the schema with the migrations and fill it; the seconds it took."""
    started = time.perf_counter()
    with psycopg.connect(SERVER, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    upgrade(url)
    if finished or queued:
        with psycopg.connect(SERVER, autocommit=True) as conn:
            with bulk_load(conn, schema):
                span = HISTORY_DAYS * DAY
                if finished:
                    insert_finished(conn, schema, finished, start=now - span, span=span, first=1)
                if queued:
                    insert_queued(conn, schema, queued, now=now, first=finished + 1)
            conn.execute(f'VACUUM ANALYZE "{schema}".jobdef_jobs')
            conn.execute(f'VACUUM ANALYZE "{schema}".jobdef_attempts')
            conn.execute("CHECKPOINT")
    return time.perf_counter() - started


def add_day(schema: str, count: int, now: float, first: int) -> None:
    """One day of finished jobs older than the retention: what a prune run deletes.
    ``first``: the number of its first job, which its receipt and key derive from."""
    with psycopg.connect(SERVER, autocommit=True) as conn:
        span = (HISTORY_DAYS + 1) * DAY
        insert_finished(conn, schema, count, start=now - span, span=DAY, first=first)
        conn.execute(f'ANALYZE "{schema}".jobdef_jobs')
        conn.execute(f'ANALYZE "{schema}".jobdef_attempts')


def vacuum(schema: str) -> None:
    with psycopg.connect(SERVER, autocommit=True) as conn:
        conn.execute(f'VACUUM ANALYZE "{schema}".jobdef_jobs')
        conn.execute(f'VACUUM ANALYZE "{schema}".jobdef_attempts')
        conn.execute("CHECKPOINT")  # its writes done now, not during the next timings


# -- measuring --------------------------------------------------------------------------------


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def measure_claims(backend: PostgresBackend, turns: int) -> dict[str, float]:
    claims, completes = [], []
    for _ in range(turns):
        started = time.perf_counter()
        taken = backend.claim(ClaimOptions("bench-worker", 60, limit=1))
        claimed = time.perf_counter()
        backend.complete([record.lease for record in taken])
        claims.append((claimed - started) * 1000)
        completes.append((time.perf_counter() - claimed) * 1000)
        assert taken, "the queue ran dry: fill more queued jobs"
    return {
        "claim p50": pct(claims, 50),
        "claim p99": pct(claims, 99),
        "complete p50": pct(completes, 50),
        "complete p99": pct(completes, 99),
    }


def measure_enqueues(queue: Queue, count: int, batches: int, seed: int) -> dict[str, float]:
    base = 10**9 * (seed + 1)
    plain = [timed(lambda i=i: queue.enqueue("job_07", {"n": base + i})) for i in range(count)]
    keyed = [timed(lambda i=i: queue.enqueue("job_00", {"n": base + i})) for i in range(count)]
    bulk = [
        timed(
            lambda b=b: queue.enqueue_many(
                "job_07", [{"n": base + b * BULK + i} for i in range(BULK)]
            )
        )
        for b in range(batches)
    ]
    return {
        "enqueue p50": pct(plain, 50),
        "enqueue p99": pct(plain, 99),
        "keyed enqueue p50": pct(keyed, 50),
        "keyed enqueue p99": pct(keyed, 99),
        f"enqueue_many {BULK} p50": pct(bulk, 50),
    }


def measure_prune(backend: PostgresBackend, registry: Registry) -> dict[str, float]:
    """One prune run, each of its statements timed on the engine's session: each is a
    batch, its own transaction, so the longest is the longest any row lock is held."""
    batches: list[float] = []
    run = backend._run

    def each(work: Callable[[Any], Any], **options: Any) -> Any:
        started = time.perf_counter()
        try:
            return run(work, **options)
        finally:
            batches.append((time.perf_counter() - started) * 1000)

    backend.clock()  # the server's time read now, not inside the first batch's timing
    backend._run = each  # type: ignore[method-assign]
    try:
        started = time.perf_counter()
        deleted = backend.prune(retention_rules(registry))
        total = time.perf_counter() - started
    finally:
        del backend._run
    return {
        "prune total s": total,
        "prune rows": deleted,
        "prune batches": len(batches),
        "prune batch p50": pct(batches, 50),
        "prune batch max": max(batches),
    }


def measure_overview(url: str, registry: Registry, requests: int) -> dict[str, float]:
    store = Store(url)
    try:
        overview(store, registry)  # warm
        times = [timed(lambda: overview(store, registry)) for _ in range(requests)]
    finally:
        store.close()
    return {"overview p50": pct(times, 50), "overview p99": pct(times, 99)}


# -- plans ------------------------------------------------------------------------------------


def explain(url: str, schema: str, now: float) -> None:
    """EXPLAIN (ANALYZE, BUFFERS) of the statements that run against the big tables,
    each in a transaction rolled back; flags sequential scans and sorts of them."""
    backend = open_backend(url, create=False)
    assert isinstance(backend, PostgresBackend)
    reads = reader_queries("jobdef.backends.postgres")
    quoted = f'"{schema}"'
    statements: list[tuple[str, str, dict[str, Any]]] = [
        (
            "claim_jobs",
            backend._q("claim_jobs"),
            {"now": now, "worker_id": "x", "lease_until": now + 60, "limit": 1, "queues": None},
        ),
        (
            "find_duplicate",
            backend._q("find_duplicate"),
            {"ords": [0], "jobs": ["job_00"], "keys": ["123"], "since": [now - DAY]},
        ),
        (
            "prune_batch",
            backend._q("prune_batch"),
            {
                "job": "job_00",
                "state": "done",
                "after": -math.inf,
                "before": now - HISTORY_DAYS * DAY,
                "batch_size": 1000,
            },
        ),
    ]
    overview_params = {
        "queue_depths": {"now": now, "cap": 10_000},
        "recent_attempts": {"since": now - 3600, "cap": 20_000},
        "newest_ids": {"cap": 10_000},
        "running_starts": {"since": now - 3600, "cap": 10_000},
        "dead_count": {"job": "job_00", "cap": 1000},
    }
    for name, params in overview_params.items():
        statements.append((name, reads[name].replace("{schema}", quoted), params))
    with psycopg.connect(SERVER) as conn:
        conn.execute(backend._q("session_settings"))
        conn.commit()
        for name, sql, params in statements:
            if name in overview_params:  # the reader's sessions have no parallel workers
                conn.execute("SET max_parallel_workers_per_gather = 0")
            cur = psycopg.ClientCursor(conn)
            lines = [
                row[0]
                for row in cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params).fetchall()
            ]
            conn.rollback()
            flagged = [
                line.strip()
                for line in lines
                if (
                    "Seq Scan on jobdef_" in line
                    and "jobdef_queues" not in line
                    and "jobdef_flows" not in line
                )
                or line.strip().startswith(("Sort ", "-> Sort", "->  Sort"))
            ]
            took = next((line for line in lines if line.startswith("Execution Time")), "")
            print(f"\n== {name}: {took}  {'FLAGGED: ' + '; '.join(flagged) if flagged else ''}")
            print("\n".join(lines))
    backend.close()


# -- the run ----------------------------------------------------------------------------------


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


@dataclass
class Measured:
    """One filled store and what its runs measured."""

    name: str
    schema: str
    url: str
    backend: PostgresBackend
    queue: Queue
    runs: list[dict[str, float]] = field(default_factory=list)


def open_store(name: str, schema: str, registry: Registry) -> Measured:
    url = f"{SERVER}?schema={schema}"
    backend = open_backend(url, create=False)
    assert isinstance(backend, PostgresBackend)
    return Measured(name, schema, url, backend, Queue(backend, registry))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="1.0: 10,000,000 finished and 1,000,000 queued jobs",
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--turns", type=int, default=2000, help="claims per run")
    parser.add_argument("--enqueues", type=int, default=1000, help="single enqueues per run")
    parser.add_argument("--stores", default="empty,queued,big")
    parser.add_argument("--no-explain", action="store_true")
    args = parser.parse_args()
    finished = int(10_000_000 * args.scale)
    queued = int(1_000_000 * args.scale)
    day = finished // 30
    # The empty store holds only the jobs its claims take (5% of them delayed), of the
    # same mix of jobs, keys and priorities as the others' backlog.
    takes = args.turns * args.runs * 11 // 10 + BULK
    sizes = {"empty": (0, takes), "queued": (0, queued), "big": (finished, queued)}
    folder = Path(tempfile.mkdtemp(prefix="jobdef-bench-"))
    registry = sheets(folder)
    stores: list[Measured] = []
    try:
        for name in args.stores.split(","):
            done, waiting = sizes[name]
            schema = f"bench_big_{uuid.uuid4().hex[:8]}"
            took = fill(
                f"{SERVER}?schema={schema}", schema, finished=done, queued=waiting, now=time.time()
            )
            print(
                f"{name}: {done:,} finished + {waiting:,} queued filled in {took:.0f}s", flush=True
            )
            stores.append(open_store(name, schema, registry))
        # Run by run, each store in turn: what else loads the machine weighs on all alike.
        for run in range(args.runs):
            for store in stores:
                measured = measure_claims(store.backend, args.turns)
                measured |= measure_enqueues(store.queue, args.enqueues, 10, run)
                measured |= measure_overview(store.url, registry, 21)
                add_day(store.schema, day, store.backend.clock(), 100_000_000 * (run + 1))
                measured |= measure_prune(store.backend, registry)
                vacuum(store.schema)  # the next measurement not beside autovacuum
                print(
                    f"  run {run + 1} {store.name}: "
                    + ", ".join(f"{k} {v:.2f}" for k, v in measured.items()),
                    flush=True,
                )
                store.runs.append(measured)
        big = next((store for store in stores if store.name == "big"), None)
        if big is not None and not args.no_explain:
            add_day(big.schema, day, time.time(), 100_000_000 * (args.runs + 1))
            explain(big.url, big.schema, time.time())
    finally:
        for store in stores:
            store.backend.close()
            drop_schema(SERVER, store.schema)
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()
    results = {store.name: median_of(store.runs) for store in stores}
    names = list(results)
    print(f"\nmedian of {args.runs} runs (ms unless named); ratio = last store / first")
    print(f"{'':<26}" + "".join(f"{n:>12}" for n in names) + "   ratio")
    for key in results[names[0]]:
        cells = [results[n][key] for n in names]
        ratio = cells[-1] / cells[0] if cells[0] else float("nan")
        print(f"{key:<26}" + "".join(f"{c:>12.2f}" for c in cells) + f"{ratio:>8.2f}")


if __name__ == "__main__":
    main()
