"""SQLite queue benchmark: jobdef's SQLite engine beside Huey's SqliteHuey, same machine, same run.

Measures, for no-op jobs:

- enqueue rate: one job per call (one transaction each) and bulk (1,000 per call);
- drain rate: a burst worker with --concurrency 1 and 2 (handlers in child
  processes, leases, attempts recorded, group-committed completion), and Huey's
  consumer (one worker thread) on the same number of jobs;
- claim cost with 1,000 vs 1,000,000 finished rows in the table, and the cost of
  a naive claim query without the partial index, for contrast.

Both systems run at the same durability setting, ``--synchronous`` (default
``full``, Huey's default: an fsync per commit in WAL mode). The drain window is
from the first job's start to the last job's end, read from each system's own
records, so process start-up is not counted for either.

Huey deletes a task when it dequeues it, so a consumer that dies mid-task loses
it; jobdef keeps the row leased until the attempt is recorded.

    pip install -e '.[bench]'
    python bench/queue_sqlite.py                       # full size, medians of 3 interleaved runs
    python bench/queue_sqlite.py --jobs 2000 --finished 1000,20000 --runs 1   # smoke
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions, NewJob
from jobdef.policy.model import BackoffPolicy, ErrorPolicy, JobPolicy
from jobdef.policy.registry import Registry
from jobdef.policy.values import freeze

if TYPE_CHECKING:
    from jobdef.telemetry.observer import WorkerTelemetry


def noop(ctx: object) -> None:
    """The jobdef handler: does nothing."""


def _registry() -> Registry:
    policy = JobPolicy(
        name="noop",
        handler=f"{Path(__file__).stem}:noop",
        max_attempts=3,
        timeout=60.0,
        backoff=BackoffPolicy(strategy="fixed", initial=1.0),
        errors=ErrorPolicy(default="retry"),
    )
    return Registry(jobs=freeze({"noop": policy}), channels=freeze({}))


def _new(n: int) -> list[NewJob]:
    return [NewJob("noop", {}, "default", max_attempts=3) for _ in range(n)]


def _url(folder: Path, name: str, synchronous: str) -> str:
    return f"sqlite:///{folder / name}?synchronous={synchronous}"


# -- jobdef -------------------------------------------------------------------


def jobdef_enqueue(folder: Path, n: int, bulk: bool, synchronous: str) -> float:
    backend = open_backend(_url(folder, f"enqueue-{bulk}.db", synchronous))
    jobs = _new(n)
    started = time.perf_counter()
    if bulk:
        for i in range(0, n, 1000):
            backend.enqueue(jobs[i : i + 1000])
    else:
        for job in jobs:
            backend.enqueue([job])
    elapsed = time.perf_counter() - started
    backend.close()
    return n / elapsed


def jobdef_drain(
    folder: Path,
    n: int,
    concurrency: int,
    synchronous: str,
    prefetch: int | None = None,
    *,
    metrics: bool = False,
) -> float:
    from jobdef.runtime.settings import WorkerSettings
    from jobdef.runtime.worker import Worker

    url = _url(folder, f"drain-{concurrency}.db", synchronous)
    backend = open_backend(url)
    for i in range(0, n, 1000):
        backend.enqueue(_new(min(1000, n - i)))
    settings = WorkerSettings(
        concurrency=concurrency, burst=True, **({} if prefetch is None else {"prefetch": prefetch})
    )
    telemetry = _counting() if metrics else None
    worker = Worker(backend, _registry(), settings, telemetry=telemetry, services=[])
    stats = worker.run()
    backend.close()
    if stats.done != n:
        raise RuntimeError(f"jobdef drained {stats.done} of {n} jobs")
    conn = sqlite3.connect(folder / f"drain-{concurrency}.db")
    first, last = conn.execute(
        "SELECT (SELECT min(started_at) FROM jobdef_attempts), "
        "(SELECT max(finished_at) FROM jobdef_jobs)"
    ).fetchone()
    conn.close()
    return n / (last - first)


def _counting() -> WorkerTelemetry:
    """What --metrics-port counts with (the HTTP server aside, which a scrape wakes)."""
    from jobdef.telemetry.metrics import Metrics
    from jobdef.telemetry.observer import WorkerTelemetry

    return WorkerTelemetry(metrics=Metrics())


def jobdef_claim_ms(folder: Path, finished: int, synchronous: str, samples: int = 200) -> float:
    """Median time of claiming one job with ``finished`` done rows in the table."""
    path = folder / f"claim-{finished}.db"
    backend = open_backend(_url(folder, path.name, synchronous))
    backend.close()
    _fill_finished(path, finished)
    backend = open_backend(_url(folder, path.name, synchronous))
    for i in range(0, samples, 1000):
        backend.enqueue(_new(min(1000, samples - i)))
    options = ClaimOptions(worker_id="bench", lease_seconds=60)
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        assert len(backend.claim(options)) == 1
        times.append(time.perf_counter() - started)
    backend.close()
    return statistics.median(times) * 1000


def naive_claim_ms(folder: Path, finished: int, samples: int = 20) -> float:
    """The same table, claimed by a query that cannot use the partial index."""
    conn = sqlite3.connect(folder / f"claim-{finished}.db")
    conn.execute("UPDATE jobdef_jobs SET state = 'queued' WHERE state = 'running'")
    conn.commit()
    query = (
        "SELECT id FROM jobdef_jobs NOT INDEXED WHERE state = 'queued' "
        "OR (state = 'running' AND lease_until < ?) ORDER BY priority DESC, run_after, id LIMIT 1"
    )
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        conn.execute(query, (time.time(),)).fetchall()
        times.append(time.perf_counter() - started)
    conn.close()
    return statistics.median(times) * 1000


def _fill_finished(path: Path, finished: int) -> None:
    conn = sqlite3.connect(path)
    now = time.time()
    conn.execute(
        """
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
        INSERT INTO jobdef_jobs (job, queue, priority, args, state, attempt, max_attempts,
                          run_after, created_at, updated_at, finished_at)
        SELECT 'noop', 'default', 0, '{}', CASE i % 10 WHEN 0 THEN 'dead' ELSE 'done' END,
               1, 3, ? - i, ? - i, ? - i, ? - i
        FROM n
        """,
        (finished, now, now, now, now),
    )
    conn.commit()
    # A queue in steady state has no giant write-ahead log waiting to be checkpointed;
    # without this the first claims would pay for checkpointing the fill.
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


# -- Huey ---------------------------------------------------------------------


def _huey(folder: Path, name: str, synchronous: str):  # type: ignore[no-untyped-def]
    """SqliteHuey at the given ``synchronous`` (its own fsync option knows only full/off)."""
    from huey import Huey
    from huey.storage import SqliteStorage

    class Storage(SqliteStorage):  # type: ignore[misc]
        def _create_connection(self):  # type: ignore[no-untyped-def]
            conn = super()._create_connection()
            conn.execute(f"pragma synchronous = {synchronous}")
            return conn

    return Huey("bench", storage_class=Storage, filename=str(folder / name))


def huey_enqueue(folder: Path, n: int, synchronous: str) -> float:
    huey = _huey(folder, "huey-enqueue.db", synchronous)

    @huey.task()
    def task() -> None:
        pass

    started = time.perf_counter()
    for _ in range(n):
        task()
    return n / (time.perf_counter() - started)


def huey_drain(folder: Path, n: int, synchronous: str) -> float:
    huey = _huey(folder, "huey-drain.db", synchronous)
    seen: list[float] = []
    done = threading.Event()

    @huey.task()
    def task() -> None:
        seen.append(time.perf_counter())
        if len(seen) == n:
            done.set()

    for _ in range(n):
        task()
    consumer = huey.create_consumer(workers=1, worker_type="thread", periodic=False)
    consumer.start()
    try:
        if not done.wait(600):
            raise RuntimeError(f"huey drained {len(seen)} of {n} tasks")
    finally:
        consumer.stop(graceful=True)
    return n / (seen[-1] - seen[0])


# -- the run ------------------------------------------------------------------


def _interleaved(runs: int, measures: dict[str, Callable[[Path], float]]) -> dict[str, float]:
    """The median of ``runs`` runs of each measure, taken in turn (reversed every other
    run): a machine whose speed drifts during the bench moves every system's figures
    alike, not those of the system that happened to run last."""
    values: dict[str, list[float]] = {name: [] for name in measures}
    for number in range(runs):
        names = list(measures) if number % 2 == 0 else list(reversed(measures))
        for name in names:
            with tempfile.TemporaryDirectory(prefix="jobdef-bench-") as tmp:
                values[name].append(measures[name](Path(tmp)))
    return {name: statistics.median(found) for name, found in values.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs per drain run")
    parser.add_argument("--single", type=int, default=2_000, help="jobs for single enqueue")
    parser.add_argument("--bulk", type=int, default=50_000, help="jobs for bulk enqueue")
    parser.add_argument("--finished", default="1000,1000000", help="finished rows, comma list")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--synchronous", default="full", choices=["full", "normal", "off"])
    parser.add_argument("--no-huey", action="store_true", help="skip Huey")
    parser.add_argument(
        "--prefetch", type=int, help="jobs each handler process is handed ahead (worker default)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--metrics",
        action="store_true",
        help="the drains count Prometheus metrics, as jobdef worker --metrics-port does "
        "(default: off)",
    )
    args = parser.parse_args(argv)
    sync = args.synchronous
    figures: dict[str, float] = {}

    def report(name: str, value: float, unit: str) -> None:
        figures[name] = value
        print(f"{name:<44} {value:>12,.1f} {unit}", flush=True)

    print(f"SQLite {sqlite3.sqlite_version}, synchronous={sync}, {os.cpu_count()} CPUs, ", end="")
    print(f"medians of {args.runs} run(s)", flush=True)
    enqueues: dict[str, Callable[[Path], float]] = {
        "jobdef enqueue, 1 per call": lambda d: jobdef_enqueue(d, args.single, False, sync),
        "jobdef enqueue, bulk 1000 per call": lambda d: jobdef_enqueue(d, args.bulk, True, sync),
    }
    drains: dict[str, Callable[[Path], float]] = {
        f"jobdef drain, --concurrency {concurrency}": lambda d, c=concurrency: jobdef_drain(
            d, args.jobs, c, sync, args.prefetch, metrics=args.metrics
        )
        for concurrency in (1, 2)
    }
    if not args.no_huey:
        enqueues["huey enqueue, 1 per call"] = lambda d: huey_enqueue(d, args.single, sync)
        drains["huey drain, 1 worker thread"] = lambda d: huey_drain(d, args.jobs, sync)
    for measures in (enqueues, drains):
        for name, value in _interleaved(args.runs, measures).items():
            report(name, value, "jobs/s")
    if not args.no_huey:
        ratio = figures["jobdef drain, --concurrency 1"] / figures["huey drain, 1 worker thread"]
        report("jobdef drain (concurrency 1) / huey drain", ratio, "x")
    sizes = [int(s) for s in args.finished.split(",")]
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="jobdef-bench-") as tmp:
            folder = Path(tmp)
            report(f"claim, {size:,} finished rows", jobdef_claim_ms(folder, size, sync), "ms")
            report(f"naive claim query, {size:,} finished rows", naive_claim_ms(folder, size), "ms")
    if len(sizes) >= 2:
        growth = (
            figures[f"claim, {sizes[-1]:,} finished rows"]
            / figures[f"claim, {sizes[0]:,} finished rows"]
        )
        report(f"claim cost growth {sizes[0]:,} -> {sizes[-1]:,}", growth, "x")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
