"""PostgreSQL's share of a drain alone: processes that claim and complete, and run nothing.

Each of ``--procs`` processes loops over the engine's one-statement turn
(``complete_and_claim``: complete what it holds, claim up to ``--limit`` more)
until a claim comes back empty, on a backlog of ``--jobs`` queued no-op jobs in a
fresh database. No worker loop, no handler process: what is left is the engine's
statement, the server's work for it, and psycopg. It prints the rate, the CPU
per job of the server's processes for that database (read from ``/proc``: the
server must run on this machine), and two counts that do not swing with the
machine's load as CPU does: the WAL bytes and the buffer pages (read or hit) per
job, which is what a change to the tables or their indexes moves. Medians of
``--runs``; run it from two checkouts in turn (``PYTHONPATH=<checkout>/src``),
interleaved, to compare them.

    python bench/claim_loop.py                          # 1 and 8 processes, 40,000 jobs
    python bench/claim_loop.py --procs 8,32 --limit 64  # does the server's cost per job grow?

The database ``<db>_bench_claim_loop`` is created in ``--url`` and dropped after.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import psycopg

from drain_cpu import backends_cpu
from pg_store import database_url, drop_database, fresh_database

FORK = multiprocessing.get_context("fork")


def claim_and_complete(url: str, limit: int, start: Any, counts: Any, stop: Any) -> None:
    """One process: turns until a claim finds nothing; puts how many jobs it completed.
    It keeps its session until ``stop``, so that its server process is still there when
    the CPU is read."""
    from jobdef.backends import open_backend
    from jobdef.backends.records import ClaimOptions

    backend = open_backend(url)
    options = ClaimOptions(worker_id=f"loop-{os.getpid()}", lease_seconds=300, limit=limit)
    start.wait()
    held: list[Any] = []
    completed = 0
    while True:
        _, held_next = backend.complete_and_claim([r.lease for r in held], None, options)
        completed += len(held)
        held = held_next
        if not held:
            break
    counts.put(completed)
    stop.wait()
    backend.close()


# The server's counts: its WAL position in bytes, and the buffer pages this database's
# sessions found in shared buffers or read (pg_stat_database, flushed at each
# statement's end).
COUNTS = (
    "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0'), blks_hit + blks_read "
    "FROM pg_stat_database WHERE datname = current_database()"
)


def server_counts(monitor: psycopg.Connection[Any]) -> tuple[int, int]:
    row = monitor.execute(COUNTS).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def one_run(server_url: str, procs: int, limit: int, jobs: int) -> dict[str, float]:
    """Jobs/s, and per job: the server's CPU (microseconds), WAL bytes and buffer pages,
    of one run on a fresh database."""
    from jobdef.backends import open_backend
    from jobdef.backends.records import NewJob

    url = database_url(server_url, "claim_loop")
    fresh_database(server_url, url)
    try:
        backend = open_backend(url)
        for first in range(0, jobs, 1000):
            backend.enqueue(
                [
                    NewJob(job="noop", queue="default", args={"n": n}, max_attempts=3)
                    for n in range(first, min(jobs, first + 1000))
                ]
            )
        backend.close()
        start, stop, counts = FORK.Event(), FORK.Event(), FORK.Queue()
        workers = [
            FORK.Process(target=claim_and_complete, args=(url, limit, start, counts, stop))
            for _ in range(procs)
        ]
        for worker in workers:
            worker.start()
        time.sleep(1.0)  # every process connected and waiting
        database = urlsplit(url).path.lstrip("/")
        monitor = psycopg.connect(url, autocommit=True)
        wal_before, pages_before = server_counts(monitor)
        cpu_before = backends_cpu(database)
        began = time.perf_counter()
        start.set()
        completed = sum(counts.get(timeout=600) for _ in workers)
        elapsed = time.perf_counter() - began
        cpu = backends_cpu(database) - cpu_before
        stop.set()
        for worker in workers:
            worker.join(60)
        if completed != jobs:
            raise SystemExit(f"completed {completed} of {jobs} jobs")
        time.sleep(0.7)  # the sessions' last statistics reach pg_stat_database
        wal_after, pages_after = server_counts(monitor)
        monitor.close()
        return {
            "rate": jobs / elapsed,
            "cpu": cpu / jobs * 1e6,
            "wal": (wal_after - wal_before) / jobs,
            "pages": (pages_after - pages_before) / jobs,
        }
    finally:
        drop_database(server_url, url)


def line(figures: dict[str, float]) -> str:
    return (
        f"{figures['rate']:,.0f} jobs/s; per job: PostgreSQL CPU {figures['cpu']:.1f} us, "
        f"WAL {figures['wal']:,.0f} bytes, {figures['pages']:.1f} buffer pages"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--procs", default="1,8", help="comma list of process counts")
    parser.add_argument("--limit", type=int, default=128, help="jobs per claim")
    parser.add_argument("--jobs", type=int, default=40_000)
    parser.add_argument("--runs", type=int, default=3, help="runs per count; medians shown")
    args = parser.parse_args(argv)
    for procs in (int(n) for n in args.procs.split(",")):
        runs = []
        for run in range(args.runs):
            runs.append(one_run(args.url, procs, args.limit, args.jobs))
            print(f"  {procs} processes, run {run + 1}: {line(runs[-1])}", flush=True)
        medians = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        print(
            f"{procs} processes, claims of {args.limit}, {args.jobs:,} jobs, medians of "
            f"{args.runs}: {line(medians)}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
