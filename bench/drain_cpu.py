"""CPU per job of a PostgreSQL drain, split by the three kinds of process that share the
cores: the worker's main process, its handler processes, and the PostgreSQL backends.

Wall-clock drain rates swing with whatever else the machine runs; the CPU each process
spent per job holds better, and it says where to look. Enqueues ``--jobs`` no-op jobs
into a fresh database of its own, then drains them with one worker run in this process
(``burst``), and prints, per job:

- ``main``: this process's CPU during the drain (the worker's loop, the engine, psycopg);
- ``children``: the handler processes' CPU, their start-up included (a fixed cost:
  compare two ``--jobs`` to see the part per job);
- ``pg``: the CPU of this database's backends during the drain, read from ``/proc``
  (the server must run on this machine);
- ``jobs_s``: the drain's rate, for what it is worth.

    python bench/drain_cpu.py                        # 20,000 jobs, 3 runs
    python bench/drain_cpu.py --jobs 5000 --runs 1   # smoke

Run it from two checkouts in turn (``PYTHONPATH=<checkout>/src``) to compare them.
The database ``<db>_bench_drain_cpu`` is created in ``--url`` and dropped after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import psycopg

from pg_store import database_url, drop_database, fresh_database, noop_sheet

TICKS = os.sysconf("SC_CLK_TCK")
HANDLER = "def noop(ctx, n=0):\n    pass\n"


def backends_cpu(database: str) -> float:
    """Seconds of CPU the server's processes for ``database`` have used so far."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_text()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if command.startswith("postgres: ") and f" {database} " in command:
            pids.append(int(pid))
    return processes_cpu(pids)


def server_cpu() -> float:
    """Seconds of CPU the whole server on this machine has used so far: its postmaster
    with every child it has reaped (sessions that ended), and each child alive (sessions,
    the WAL writer, autovacuum...). The difference of two readings is exact, sessions that
    came and went between them included (graphile-worker's pool opens its connections
    with the worker and closes them as it exits)."""
    stats = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_text().startswith("postgres: "):
                stats[int(pid)] = _stat(int(pid))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    if not stats:
        raise SystemExit("no PostgreSQL server runs on this machine: its CPU cannot be read")
    postmaster = int(next(iter(stats.values()))[1])  # the children's parent
    own = _stat(postmaster)
    total = sum(int(own[at]) for at in (11, 12, 13, 14))  # utime stime cutime cstime
    for fields in stats.values():
        if int(fields[1]) == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / TICKS


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command's name: state first (so
    ppid is [1], utime [11], stime [12], cutime [13], cstime [14])."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def processes_cpu(pids: Iterable[int]) -> float:
    """Seconds of CPU the processes ``pids`` have used so far (those gone count 0): the
    scheduler's own count, in nanoseconds (``/proc/<pid>/schedstat``), where the kernel
    keeps it. The ticks of ``/proc/<pid>/stat`` (10 ms) charge a whole tick to whichever
    process runs when it falls: for a session that wakes for a quarter of a millisecond
    a few times a second, a reading over seconds is a sample, not a count."""
    total = 0.0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
            continue
        except (OSError, ValueError, IndexError):  # no schedstat here, or gone meanwhile
            pass
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def machine_cpu() -> float:
    """Seconds of CPU every process of the machine has used so far, all cores together
    (/proc/stat: user, nice, system, irq, softirq and steal time)."""
    first = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in first[1:9])
    return (user + nice + system + irq + softirq + steal) / TICKS


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(
    server_url: str, jobs: int, concurrency: int, prefetch: int | None, folder: Path
) -> dict[str, float]:
    from jobdef.backends import open_backend
    from jobdef.runtime import Queue, Worker, WorkerSettings
    from jobdef.sheets.pipeline import load_registry

    url = database_url(server_url, "drain_cpu")
    database = urlsplit(url).path.lstrip("/")
    fresh_database(server_url, url)
    try:
        registry = load_registry([str(folder)])
        backend = open_backend(url)
        try:
            queue = Queue(backend, registry)
            for first in range(0, jobs, 1000):
                queue.enqueue_many(
                    "noop", ({"n": n} for n in range(first, min(jobs, first + 1000)))
                )
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE")
                conn.execute("CHECKPOINT")
            ahead = {} if prefetch is None else {"prefetch": prefetch}
            settings = WorkerSettings(burst=True, concurrency=concurrency, **ahead)
            worker = Worker(backend, registry, settings)
            pg, main, children = backends_cpu(database), time.process_time(), children_cpu()
            start = time.perf_counter()
            worker.run()
            wall = time.perf_counter() - start
            main = time.process_time() - main
            pg = backends_cpu(database) - pg
            children = children_cpu() - children
        finally:
            backend.close()
    finally:
        drop_database(server_url, url)
    micro = 1e6 / jobs
    return {
        "jobs_s": jobs / wall,
        "main": main * micro,
        "children": children * micro,
        "pg": pg * micro,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=2, help="handler processes")
    parser.add_argument("--runs", type=int, default=3, help="runs; medians are printed")
    parser.add_argument(
        "--prefetch",
        type=int,
        default=None,
        help="tasks each handler process takes ahead (bench/queue_postgres.py uses 10; "
        "default: the worker's own)",
    )
    args = parser.parse_args(argv)

    folder = Path(tempfile.mkdtemp(prefix="jobdef-drain-cpu-"))
    (folder / "noop.yaml").write_text(noop_sheet("bench_drain_cpu_noop:noop"))
    (folder / "bench_drain_cpu_noop.py").write_text(HANDLER)
    sys.path.insert(0, str(folder))
    # The handler processes import the handler's module too.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(folder), os.environ.get("PYTHONPATH")])
    )
    try:
        runs = []
        for number in range(args.runs):
            figures = one_run(args.url, args.jobs, args.concurrency, args.prefetch, folder)
            load = os.getloadavg()[0]
            print(
                f"  run {number + 1}: {json.dumps(_rounded(figures))} load {load:.2f}",
                file=sys.stderr,
            )
            runs.append(figures)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    medians = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    print(
        f"{args.jobs:,} no-op jobs, concurrency {args.concurrency}, prefetch "
        f"{args.prefetch or 'default'}, medians of {args.runs}: "
        f"{medians['jobs_s']:,.0f} jobs/s; CPU us/job: main {medians['main']:.1f}, "
        f"children {medians['children']:.1f}, PostgreSQL {medians['pg']:.1f}"
    )
    return 0


def _rounded(figures: dict[str, float]) -> dict[str, float]:
    return {key: round(value, 1) for key, value in figures.items()}


if __name__ == "__main__":  # the handler processes are spawned: they import this module
    sys.exit(main())
