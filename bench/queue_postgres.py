"""PostgreSQL queue benchmark: jobdef beside procrastinate and pgqueuer, same server, same jobs.

Measures, for each system, on a fresh database of its own:

- enqueue, one job per call (each its own transaction), and in bulk (batches);
- drain of N no-op jobs by 1, 2 and 4 worker processes, started first and idle
  when the jobs come (bulk, as above): jobs per second from the first handler start
  to the last finish, as each system records them in its own tables; and the
  seconds the workers took to be up, on the empty queue;
- enqueue-to-start latency with one idle worker (median and 99th percentile), from the same tables.

Each worker takes ``--batch`` jobs per claim (10: pgqueuer's default batch_size).
What a worker may hold meanwhile differs by system unless ``--held`` sets it for
both (run_worker says how): by default jobdef's worker holds no more than one batch,
and pgqueuer's dequeues the next batch while the last runs.

Install the peers with ``pip install -e '.[bench]'``. Run small to smoke-test:

    python bench/queue_postgres.py --jobs 2000 --single 300 --latency 10
    python bench/queue_postgres.py --steps drain --held 20   # both hold two batches

The server is the one in ``--url``; the benchmark creates (and drops)
databases named ``<db>_bench_<system>`` there.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import logging
import multiprocessing
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg

from drain_cpu import machine_cpu
from jobdef.redact import redact
from percentiles import p99
from pg_store import database_url, drop_database, fresh_database, noop_sheet

SPAWN = multiprocessing.get_context("spawn")
SYSTEMS = ("jobdef", "procrastinate", "pgqueuer")
BULK_BATCH = 1000
BATCH = 10  # jobs a worker takes per claim: pgqueuer's default batch size
# The share of one core below which the machine counts as quiet (wait_quiet).
QUIET = 0.1


# -- databases ------------------------------------------------------------------------------


def scalar(url: str, statement: str) -> Any:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(statement).fetchone()[0]


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"benchmark stuck: {what} did not happen within {timeout:.0f}s")
        time.sleep(0.002)


# -- the no-op job, as each system writes it --------------------------------------------------


def noop(ctx: Any, n: int = 0) -> None:
    """jobdef's no-op handler (run in the worker's child processes)."""


SHEET = noop_sheet("queue_postgres:noop")


def jobdef_sheets(queue_limits: str = "") -> str:
    """A folder with the no-op sheet; ``queue_limits`` (e.g. ``rate: 1000000/s``) adds a
    Queue document for its queue, so the claim takes the limited path (row lock, bucket)."""
    folder = Path(tempfile.mkdtemp(prefix="jobdef-bench-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    (folder / "noop.yaml").write_text(SHEET)
    if queue_limits:
        queue = f"apiVersion: jobdef/v1\nkind: Queue\nname: default\n{queue_limits}\n"
        (folder / "queues.yaml").write_text(queue)
    return str(folder)


def procrastinate_app(url: str) -> Any:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.SyncPsycopgConnector(conninfo=url))
    app.task(name="noop", queue="default")(_procrastinate_noop)
    return app


def procrastinate_async_app(url: str) -> Any:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))
    app.task(name="noop", queue="default")(_procrastinate_noop)
    return app


def _procrastinate_noop(n: int = 0) -> None:
    """procrastinate's no-op task."""


async def _pgqueuer_noop(job: Any) -> None:
    """pgqueuer's no-op entrypoint."""


# -- one adapter per system ---------------------------------------------------------------------


@dataclass
class System:
    """How one queue library installs, enqueues, runs workers and records timings."""

    name: str
    url: str
    batch: int = BATCH
    # The most jobs a worker process holds at once (None: see run_worker).
    held: int | None = None
    synchronous_commit: str = "on"
    sheets: str = ""
    queue_limits: str = ""

    # install ----------------------------------------------------------------------------
    def install(self) -> None:
        if self.name == "jobdef":
            from jobdef.backends import open_backend

            open_backend(self.url).close()
            self.sheets = jobdef_sheets(self.queue_limits)
        elif self.name == "procrastinate":
            app = procrastinate_app(self.url)
            with app.open():
                app.schema_manager.apply_schema()
        else:
            asyncio.run(self._pgqueuer(lambda queries: queries.install()))

    async def _pgqueuer(self, work: Callable[[Any], Any]) -> Any:
        import asyncpg
        from pgqueuer.db import AsyncpgDriver
        from pgqueuer.queries import Queries

        conn = await asyncpg.connect(self.url)
        try:
            return await work(Queries(AsyncpgDriver(conn)))
        finally:
            await conn.close()

    # enqueue ----------------------------------------------------------------------------
    def enqueue(self, count: int, bulk: bool) -> float:
        """Seconds to enqueue ``count`` no-op jobs, one per call or in batches."""
        if self.name == "pgqueuer":
            return asyncio.run(self._pgqueuer_enqueue(count, bulk))
        if self.name == "jobdef":
            from jobdef.runtime import connect
            from jobdef.sheets.pipeline import load_registry

            with connect(self.url, load_registry([self.sheets])) as queue:
                start = time.perf_counter()
                if bulk:
                    for first in range(0, count, BULK_BATCH):
                        last = min(count, first + BULK_BATCH)
                        queue.enqueue_many("noop", ({"n": n} for n in range(first, last)))
                else:
                    for n in range(count):
                        queue.enqueue("noop", {"n": n})
                return time.perf_counter() - start
        app = procrastinate_app(self.url)
        with app.open():
            task = app.tasks["noop"]
            start = time.perf_counter()
            if bulk:
                for first in range(0, count, BULK_BATCH):
                    last = min(count, first + BULK_BATCH)
                    task.batch_defer(*({"n": n} for n in range(first, last)))
            else:
                for n in range(count):
                    task.defer(n=n)
            return time.perf_counter() - start

    @contextlib.contextmanager
    def enqueuer(self) -> Iterator[Callable[[], None]]:
        """A call that enqueues one no-op job on a session kept open, as an application
        does: the latency step times the enqueue, not a connection's start (a new server
        process, cold caches) and, for jobdef, the sheets' loading."""
        if self.name == "jobdef":
            from jobdef.runtime import connect
            from jobdef.sheets.pipeline import load_registry

            with connect(self.url, load_registry([self.sheets])) as queue:

                def one() -> None:
                    queue.enqueue("noop", {"n": 0})

                yield one
        elif self.name == "procrastinate":
            app = procrastinate_app(self.url)
            with app.open():
                task = app.tasks["noop"]

                def defer() -> None:
                    task.defer(n=0)

                yield defer
        else:
            import asyncpg
            from pgqueuer.db import AsyncpgDriver
            from pgqueuer.queries import Queries

            with asyncio.Runner() as runner:
                conn = runner.run(asyncpg.connect(self.url))
                queries = Queries(AsyncpgDriver(conn))

                def add() -> None:
                    runner.run(queries.enqueue("noop", None))

                try:
                    yield add
                finally:
                    runner.run(conn.close())

    async def _pgqueuer_enqueue(self, count: int, bulk: bool) -> float:
        async def work(queries: Any) -> float:
            start = time.perf_counter()
            if bulk:
                for first in range(0, count, BULK_BATCH):
                    size = min(count, first + BULK_BATCH) - first
                    await queries.enqueue(["noop"] * size, [None] * size, [0] * size)
            else:
                for _ in range(count):
                    await queries.enqueue("noop", None)
            return time.perf_counter() - start

        return await self._pgqueuer(work)

    # what the system recorded -----------------------------------------------------------
    def up(self, monitor: psycopg.Connection[Any]) -> int:
        """How many worker processes are up: jobdef's registered workers (a worker
        registers once its handler processes are ready); for the others, the sessions
        open on the database besides ``monitor`` (one or more a worker)."""
        statement = (
            "SELECT count(*) FROM jobdef_workers"
            if self.name == "jobdef"
            else "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        row = monitor.execute(statement).fetchone()
        return int(row[0]) if row else 0

    def busy(self, monitor: psycopg.Connection[Any]) -> bool:
        """Whether a job is still to run or running, asked on ``monitor``, a session the
        measurement keeps open, through the partial indexes of the states asked (one
        probe each). Not a new connection per poll (a server process started at every
        poll) nor a count of the unfinished jobs (on jobdef's table, which keeps its
        finished rows, a scan of all of them). Nor one test of both states at once: the
        planner reads that with a sequential scan, which on jobdef's table walks the rows
        finished so far before it finds one that is not, so each poll cost more than the
        last; at 20,000 jobs, a poll every 2 ms took ~25 us of the server's CPU per job
        from the drain it measured (pg_stat_statements), a fifth of the server's work.
        pgqueuer's, which moves its finished jobs to a log table, read the dead rows they
        left the same way."""
        statement = {
            "jobdef": "SELECT EXISTS (SELECT 1 FROM jobdef_jobs WHERE state = 'queued')"
            " OR EXISTS (SELECT 1 FROM jobdef_jobs WHERE state = 'running')",
            "procrastinate": "SELECT EXISTS (SELECT 1 FROM procrastinate_jobs"
            " WHERE status IN ('todo', 'doing'))",
            "pgqueuer": "SELECT EXISTS (SELECT 1 FROM pgqueuer WHERE status = 'queued')"
            " OR EXISTS (SELECT 1 FROM pgqueuer WHERE status = 'picked')",
        }[self.name]
        row = monitor.execute(statement).fetchone()
        return bool(row and row[0])

    def run_window(self) -> tuple[float, float]:
        """Epoch seconds of the first handler start and the last finish."""
        statement = {
            "jobdef": "SELECT min(started_at), max(finished_at) FROM jobdef_attempts",
            "procrastinate": "SELECT extract(epoch FROM min(at) FILTER (WHERE type = 'started')),"
            " extract(epoch FROM max(at) FILTER (WHERE type = 'succeeded'))"
            " FROM procrastinate_events",
            "pgqueuer": "SELECT extract(epoch FROM min(created) FILTER (WHERE status = 'picked')),"
            " extract(epoch FROM max(created) FILTER (WHERE status = 'successful'))"
            " FROM pgqueuer_log",
        }[self.name]
        with psycopg.connect(self.url, autocommit=True) as conn:
            first, last = conn.execute(statement).fetchone()
        return float(first), float(last)

    def latencies(self) -> list[float]:
        """Enqueue-to-start seconds of every job run so far."""
        statement = {
            "jobdef": "SELECT a.started_at - j.created_at FROM jobdef_attempts a "
            "JOIN jobdef_jobs j ON j.id = a.job_id",
            "procrastinate": "SELECT extract(epoch FROM s.at - d.at) FROM procrastinate_events s"
            " JOIN procrastinate_events d ON d.job_id = s.job_id AND d.type = 'deferred'"
            " WHERE s.type = 'started'",
            "pgqueuer": "SELECT extract(epoch FROM p.created - q.created) FROM pgqueuer_log p"
            " JOIN pgqueuer_log q ON q.job_id = p.job_id AND q.status = 'queued'"
            " WHERE p.status = 'picked'",
        }[self.name]
        with psycopg.connect(self.url, autocommit=True) as conn:
            return [float(row[0]) for row in conn.execute(statement)]

    # workers ----------------------------------------------------------------------------
    def start_worker(self) -> Any:
        process = SPAWN.Process(target=run_worker, args=(self,))
        process.start()
        return process


def run_worker(spec: System) -> None:
    """One worker process of ``system``, at work until it is sent SIGTERM.

    ``batch``: jobs taken per claim: pgqueuer's ``batch_size``; jobdef's worker (one
    handler child here) holds at most ``batch`` jobs (``prefetch``) unless ``held``
    says otherwise; procrastinate takes one job per fetch and has no such knob.
    ``held``: the most jobs the worker holds at once (claimed, not yet finished):
    jobdef's ``prefetch``, pgqueuer's ``max_concurrent_tasks``. The two settings are
    not alike without it: pgqueuer's ``batch_size`` sizes each dequeue and, with no
    ``max_concurrent_tasks`` (its default), it dequeues the next batch as soon as it has
    handed out the last, while the last runs; jobdef's ``prefetch`` caps what it holds,
    so at ``prefetch`` = ``batch_size`` it claims again only once the batch has run.
    ``synchronous_commit`` is set on the worker's sessions (enqueue stays as is).
    """
    system, url, batch, held, synchronous_commit = (
        spec.name,
        spec.url,
        spec.batch,
        spec.held,
        spec.synchronous_commit,
    )
    logging.getLogger("procrastinate").setLevel(logging.ERROR)
    if system != "pgqueuer" and synchronous_commit != "on":
        # libpq's own URL option; jobdef passes it through to its sessions.
        url += "?options=" + quote(f"-c synchronous_commit={synchronous_commit}")
    if system == "jobdef":
        from jobdef.backends import open_backend
        from jobdef.runtime import Worker, WorkerSettings
        from jobdef.sheets.pipeline import load_registry

        backend = open_backend(url)
        try:
            registry = load_registry([spec.sheets])
            prefetch = batch if held is None else held
            Worker(backend, registry, WorkerSettings(prefetch=prefetch)).run()
        finally:
            backend.close()
    elif system == "procrastinate":
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        app = procrastinate_async_app(url)

        async def work() -> None:
            async with app.open_async():
                await app.run_worker_async(queues=["default"], wait=True, concurrency=1)

        asyncio.run(work())
    else:
        asyncio.run(_pgqueuer_worker(url, batch, held, synchronous_commit))


async def _pgqueuer_worker(url: str, batch: int, held: int | None, synchronous_commit: str) -> None:
    from datetime import timedelta

    import asyncpg
    from pgqueuer import types
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.qm import QueueManager
    from pgqueuer.queries import Queries

    conn = await asyncpg.connect(url, server_settings={"synchronous_commit": synchronous_commit})
    manager = QueueManager(Queries(AsyncpgDriver(conn)))
    manager.entrypoint("noop")(_pgqueuer_noop)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, manager.shutdown.set)
    try:
        await manager.run(
            mode=types.QueueExecutionMode.continuous,
            batch_size=batch,
            max_concurrent_tasks=held,
            dequeue_timeout=timedelta(seconds=1),
        )
    finally:
        await conn.close()


# -- the measurements ----------------------------------------------------------------------------


def measure_enqueue(system: System, count: int, bulk: bool) -> float:
    """Jobs per second."""
    return count / system.enqueue(count, bulk)


def measure_drain(system: System, jobs: int, processes: int) -> tuple[float, float]:
    """(jobs/s from first start to last finish, seconds until the workers were up).

    The workers start first, on the empty queue, and the jobs come once every one of
    them is up and the machine is quiet (:func:`wait_quiet`): the drain measures
    ``processes`` workers at work. Started on a full queue, the first worker up drained
    while the others were still starting (on 2 cores, four Python processes and their
    handler processes take about a second of both), and the figure of 4 processes
    measured their start-up as much as their work."""
    with psycopg.connect(system.url, autocommit=True) as monitor:
        start = time.perf_counter()
        workers = [system.start_worker() for _ in range(processes)]
        try:
            wait_until(lambda: system.up(monitor) >= processes, 120, f"{system.name} start")
            wait_quiet(120, f"{system.name} workers idle")
            ready = time.perf_counter() - start
            system.enqueue(jobs, bulk=True)
            wait_until(lambda: not system.busy(monitor), 600, f"{system.name} drain")
        finally:
            for worker in workers:
                stop_worker(worker)
    first, last = system.run_window()
    return jobs / max(last - first, 1e-9), ready


def wait_quiet(timeout: float, what: str) -> None:
    """Wait until the machine's processes together use less than :data:`QUIET` of one
    core over half a second: the workers started are up and idle (and nothing else
    is busy)."""
    deadline = time.monotonic() + timeout
    while True:
        before = machine_cpu()
        time.sleep(0.5)
        if machine_cpu() - before < QUIET * 0.5:
            return
        if time.monotonic() > deadline:
            raise SystemExit(
                f"benchmark stuck: {what} did not happen within {timeout:.0f}s: the machine "
                f"never stayed under {QUIET:.0%} of a core for half a second (is something "
                "else busy on it?)"
            )


def stop_worker(worker: Any) -> None:
    """Stop a worker process as its operator would (SIGTERM), killed if it lingers."""
    if worker.is_alive():
        os.kill(worker.pid, signal.SIGTERM)
    worker.join(30)
    if worker.is_alive():
        worker.kill()
        worker.join()


def measure_latency(system: System, count: int) -> tuple[float, float]:
    """Enqueue-to-start seconds with one idle worker: the median and the 99th percentile
    (nearest rank)."""
    worker = system.start_worker()
    monitor = psycopg.connect(system.url, autocommit=True)
    try:
        with system.enqueuer() as enqueue:
            # A first job proves the worker is up and listening before timing starts.
            enqueue()
            wait_until(lambda: not system.busy(monitor), 120, f"{system.name} worker start")
            for _ in range(count):
                enqueue()
                # Not polled while the job starts: the worker alone is at work then.
                time.sleep(0.01)
                wait_until(lambda: not system.busy(monitor), 60, f"{system.name} job start")
                time.sleep(0.02)  # let the worker go idle again, as a real idle worker is
    finally:
        monitor.close()
        stop_worker(worker)
    latencies = sorted(system.latencies()[1:])
    return statistics.median(latencies), p99(latencies)


@dataclass
class Row:
    what: str
    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, system: str, value: float) -> None:
        self.values.setdefault(system, []).append(value)

    def median(self, system: str) -> float | None:
        values = self.values.get(system)
        return statistics.median(values) if values else None


def run(args: argparse.Namespace) -> list[Row]:
    """Every measurement of every system, ``args.runs`` times, each on a fresh database."""
    rows: dict[str, Row] = {}

    done: list[str] = []  # this step's figures, printed with its progress line

    def record(what: str, system: str, value: float) -> None:
        rows.setdefault(what, Row(what)).add(system, value)
        done.append(f"{what} {value:,.1f}")

    steps = [
        step
        for step in ("single", "bulk", *(f"drain {n}" for n in args.workers), "latency")
        if step.split()[0] in args.steps
    ]
    for round_ in range(args.runs):
        for name in args.systems:
            url = database_url(args.url, name)
            for step in steps:
                fresh_database(args.url, url)
                system = System(
                    name,
                    url,
                    batch=args.batch,
                    held=args.held,
                    synchronous_commit=args.synchronous_commit,
                    queue_limits=args.jobdef_queue,
                )
                system.install()
                if step == "single":
                    record(
                        "enqueue single (jobs/s)", name, measure_enqueue(system, args.single, False)
                    )
                elif step == "bulk":
                    record("enqueue bulk (jobs/s)", name, measure_enqueue(system, args.jobs, True))
                elif step == "latency":
                    p50, p99 = measure_latency(system, args.latency)
                    record("latency, median (ms)", name, p50 * 1000)
                    record("latency, p99 (ms)", name, p99 * 1000)
                else:
                    processes = int(step.split()[1])
                    rate, ready = measure_drain(system, args.jobs, processes)
                    record(f"drain {processes}p (jobs/s)", name, rate)
                    record(f"drain {processes}p, workers up (s)", name, ready)
                print(f"  run {round_ + 1} {name:13} {'; '.join(done)}", file=sys.stderr)
                done.clear()
            drop_database(args.url, url)
    return list(rows.values())


def report(rows: Sequence[Row], systems: Sequence[str]) -> str:
    lines = [
        f"| what | {' | '.join(systems)} | "
        + " | ".join(f"jobdef / {peer}" for peer in systems if peer != "jobdef")
        + " |"
    ]
    lines.append("|" + " --- |" * (1 + len(systems) + len(systems) - 1))
    for row in rows:
        cells = [f"{row.median(s):,.1f}" if row.median(s) is not None else "-" for s in systems]
        ratios = []
        for peer in systems:
            if peer == "jobdef":
                continue
            mine, theirs = row.median("jobdef"), row.median(peer)
            ratios.append(f"{mine / theirs:.2f}x" if mine and theirs else "-")
        lines.append(f"| {row.what} | {' | '.join(cells)} | {' | '.join(ratios)} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    logging.getLogger("procrastinate").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs per drain and bulk run")
    parser.add_argument("--single", type=int, default=2_000, help="jobs enqueued one by one")
    parser.add_argument("--latency", type=int, default=50, help="jobs timed for latency")
    parser.add_argument("--workers", default="1,2,4", help="worker process counts to drain with")
    parser.add_argument("--runs", type=int, default=3, help="runs; the table shows medians")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument(
        "--steps", default="single,bulk,drain,latency", help="which measurements to take"
    )
    parser.add_argument(
        "--synchronous-commit",
        default="on",
        choices=["on", "off"],
        help="PostgreSQL synchronous_commit for every system's worker sessions (default on)",
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=BATCH,
        help="jobs per claim: pgqueuer's batch_size, and the most jobdef's worker holds "
        "unless --held says otherwise",
    )
    parser.add_argument(
        "--held",
        type=int,
        help="the most jobs a worker holds at once, claimed and not yet finished: jobdef's "
        "prefetch (one handler process), pgqueuer's max_concurrent_tasks (at least twice "
        "--batch). Default: jobdef holds --batch, pgqueuer has no cap (its default: it "
        "dequeues the next batch while the last runs), as the first figures were taken",
    )
    parser.add_argument(
        "--jobdef-queue",
        default="",
        metavar="YAML",
        help="limits of a Queue document for jobdef's queue, e.g. 'rate: 1000000/s' or "
        "'concurrency: 64', to measure the limited claim path (default: none)",
    )
    args = parser.parse_args(argv)
    args.workers = [int(n) for n in args.workers.split(",")]
    args.systems = [s for s in args.systems.split(",") if s]
    args.steps = [s for s in args.steps.split(",") if s]
    if args.held is not None and args.held < 1:
        parser.error(f"--held {args.held}: a worker holds at least one job")
    if args.held is not None and "pgqueuer" in args.systems and args.held < 2 * args.batch:
        # pgqueuer refuses it in each worker process, which the bench would wait for.
        parser.error(f"--held {args.held}: pgqueuer needs at least twice --batch ({args.batch})")
    print(
        f"{args.jobs} no-op jobs, batch {args.batch}, "
        f"held {'default' if args.held is None else args.held}, workers' synchronous_commit "
        f"{args.synchronous_commit}, {os.cpu_count()} cores, PostgreSQL at "
        f"{redact(args.url)}, medians of {args.runs} run(s); latency lower is better",
        file=sys.stderr,
    )
    print(report(run(args), args.systems))
    return 0


if __name__ == "__main__":
    sys.exit(main())
