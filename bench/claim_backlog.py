"""Claim cost under queue limits, with a small and a deep backlog in a capped queue.

A worker that serves a queue with a ``concurrency`` (or ``rate``) takes the
limited claim on every turn. This measures one claim plus the completion of
what it took, on each engine, while a queue capped at 2 running jobs (and at
its cap for the whole run) holds ``--small`` and then ``--deep`` queued jobs,
and another queue holds plenty of runnable work. The claim should cost about
the same either way: it reads each queue on its own instead of walking past
the capped queue's backlog.

    python bench/claim_backlog.py                       # 1,000 vs 50,000, medians of 3
    python bench/claim_backlog.py --deep 5000 --runs 1  # smoke
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions, NewJob

TURNS = 200
LIMITS = {"queue_limits": {"exports": 2}}


def _fill(url: str, backlog: int) -> None:
    store = open_backend(url)
    try:
        for first in range(0, backlog, 1000):
            count = min(1000, backlog - first)
            store.enqueue([NewJob(job="j", args={}, queue="exports", max_attempts=3)] * count)
        store.enqueue([NewJob(job="j", args={}, queue="default", max_attempts=3)] * (TURNS * 2))
        # The capped queue reaches its cap and stays there for the whole measurement.
        store.claim(ClaimOptions("holder", 3600, limit=2, queues=["exports"], **LIMITS))
    finally:
        store.close()


def _claim_ms(url: str) -> float:
    """Milliseconds per claim (limit 2) plus completion, median over TURNS turns."""
    store = open_backend(url)
    try:
        times = []
        for _ in range(TURNS):
            started = time.perf_counter()
            taken = store.claim(ClaimOptions("w", 30, limit=2, **LIMITS))
            store.complete([record.lease for record in taken])
            times.append(time.perf_counter() - started)
        return statistics.median(times) * 1000
    finally:
        store.close()


def _sqlite_url(folder: Path, synchronous: str) -> str:
    return f"sqlite:///{folder / f'{uuid.uuid4().hex}.db'}?synchronous={synchronous}"


def _postgres_url(server: str) -> tuple[str, str]:
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    return f"{server}?schema={schema}", schema


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--deep", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--synchronous", default="normal", help="SQLite synchronous (normal)")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    import psycopg

    print(f"claim+complete under a concurrency cap, medians of {args.runs} run(s) x {TURNS} turns")
    with tempfile.TemporaryDirectory() as tmp:
        for engine in ("sqlite", "postgres"):
            figures = {}
            for backlog in (args.small, args.deep):
                runs = []
                for _ in range(args.runs):
                    schema = None
                    if engine == "sqlite":
                        url = _sqlite_url(Path(tmp), args.synchronous)
                    else:
                        url, schema = _postgres_url(args.postgres)
                    _fill(url, backlog)
                    runs.append(_claim_ms(url))
                    if schema is not None:
                        with psycopg.connect(args.postgres, autocommit=True) as conn:
                            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
                figures[backlog] = statistics.median(runs)
                print(f"{engine:9} {backlog:>7,} queued in the capped queue: "
                      f"{figures[backlog]:6.2f} ms")  # fmt: skip
            growth = figures[args.deep] / figures[args.small]
            print(f"{engine:9} growth {args.small:,} -> {args.deep:,}: {growth:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
