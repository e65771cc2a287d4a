"""Async handlers: one job per process against many coroutines per process, same jobs.

Each job is an ``async def`` handler that waits 50 ms on its event loop (an HTTP
call's shape). A burst worker with ``--concurrency`` processes drains them twice on
a fresh SQLite file each time: one job at a time per process (the default), then
with ``--async-per-process``. The rate is jobs over the window from the first
attempt's start to the last job's end, read from the store, so process start-up is
not counted; the median of ``--runs`` runs is printed for each mode.

    python bench/async_handlers.py                         # 600 jobs, medians of 3
    python bench/async_handlers.py --jobs 100 --runs 1     # smoke
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import tempfile
from pathlib import Path

from jobdef.backends import open_backend
from jobdef.backends.records import NewJob
from jobdef.policy.model import BackoffPolicy, ErrorPolicy, JobPolicy
from jobdef.policy.registry import Registry
from jobdef.policy.values import freeze
from jobdef.runtime.settings import WorkerSettings
from jobdef.runtime.worker import Worker

WAIT = 0.05


async def wait(ctx: object) -> None:
    """The handler: wait on the loop, as an I/O call would."""
    await asyncio.sleep(WAIT)


def _registry() -> Registry:
    policy = JobPolicy(
        name="wait",
        handler=f"{Path(__file__).stem}:wait",
        max_attempts=3,
        timeout=60.0,
        backoff=BackoffPolicy(strategy="fixed", initial=1.0),
        errors=ErrorPolicy(default="retry"),
    )
    return Registry(jobs=freeze({"wait": policy}), channels=freeze({}))


def drain(folder: Path, jobs: int, settings: WorkerSettings) -> float:
    """Jobs per second for a burst worker with ``settings`` over ``jobs`` fresh jobs."""
    path = folder / f"drain-{settings.async_per_process}.db"
    path.unlink(missing_ok=True)
    backend = open_backend(f"sqlite:///{path}")
    backend.enqueue([NewJob("wait", {}, "default", max_attempts=3) for _ in range(jobs)])
    stats = Worker(backend, _registry(), settings, services=[]).run()
    backend.close()
    if stats.done != jobs:
        raise RuntimeError(f"drained {stats.done} of {jobs} jobs")
    conn = sqlite3.connect(path)
    first, last = conn.execute(
        "SELECT (SELECT min(started_at) FROM jobdef_attempts), "
        "(SELECT max(finished_at) FROM jobdef_jobs)"
    ).fetchone()
    conn.close()
    return jobs / (last - first)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=600)
    parser.add_argument("--concurrency", type=int, default=2, help="handler processes")
    parser.add_argument("--async-per-process", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    modes = {
        "one job per process": WorkerSettings(concurrency=args.concurrency, burst=True),
        f"{args.async_per_process} async jobs per process": WorkerSettings(
            concurrency=args.concurrency, burst=True, async_per_process=args.async_per_process
        ),
    }
    print(f"{args.jobs} jobs of {WAIT * 1000:g} ms, {args.concurrency} processes")
    with tempfile.TemporaryDirectory(prefix="jobdef-bench-async-") as folder:
        for name, settings in modes.items():
            rates = [drain(Path(folder), args.jobs, settings) for _ in range(args.runs)]
            runs = ", ".join(f"{rate:,.0f}" for rate in rates)
            print(f"{name:>28}: {statistics.median(rates):,.0f} jobs/s (median; runs: {runs})")


if __name__ == "__main__":
    main()
