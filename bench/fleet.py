"""Many workers on many hosts, simulated: worker processes reach PostgreSQL through a
delay proxy (bench/delay_proxy.py) that adds a round trip of 0, 0.5 or 2 ms, or
(``--rtt direct``) connect to the server itself.

For each round trip and each number of worker processes (``--workers``, each
``jobdef worker --concurrency 1``), on a fresh schema:

- throughput: once every worker is up and idle, ``--jobs`` no-op jobs enqueued
  (directly) into the paused queue, which is then resumed, and drained by the fleet;
  jobs per second from the first start to the last finish (attempts rows);
- claim conflicts: the claims (``claim_jobs``, ``complete_and_claim``...) that
  came back with no job, counted in each worker process at the client, during
  the drain and then during the latency phase (the wake-ups that found nothing:
  the herd an enqueue wakes);
- the drain's middle: jobs per second from the 10th to the 90th percentile of the
  finishes, the fleet at work without its ramp (windows growing from two jobs a
  process) and its tail (the last workers' windows);
- claim index entries read per job: what the claims' walks of ``jobdef_jobs_claim``
  returned (``pg_stat_user_indexes.idx_tup_read``) over the drain, per job drained.
  One a job is the floor; each entry more is a row a claim met that another worker
  had claimed (locked, or claimed since the claim's snapshot and not yet dead to
  every session), read from the heap and skipped. The server's statistics reach the
  view a second or so late, so it is read a second after the drain (the idle fleet's
  few claims in that second are in it);
- connections: the most sessions of the fleet seen in ``pg_stat_activity`` at once;
- CPU per job during the drain, microseconds: the server's (the fleet's sessions, read
  from ``/proc``: the shared part, which more hosts do not add to) and the rest of the
  machine's (the workers, their handler processes, the proxy), so that a drain that
  slows as workers are added says whether each job cost more, or the cores ran short;
  and the server's CPU an idle fleet takes, milliseconds a second;
- enqueue-to-start p50 and p99 with idle workers: ``--latency`` single jobs,
  enqueued directly one at a time, each after the last has finished; and the same
  from the enqueue's return (its commit) to the start: the enqueue's own commit waits
  for the server's WAL flush (``synchronous_commit``), which on a slow disk is most of
  the first figure, and which no worker can shorten. The enqueue is direct, on this
  machine, so its clock is the server's.

The real round trip each proxy adds is measured first (``SELECT 1`` through it)
and printed: the proxy's threads overshoot what they are asked to hold by a
little, more under load. Run it short on a small machine; every process of the
fleet, the proxy and PostgreSQL share its cores:

    python bench/fleet.py --workers 8,16,32 --rtt 0,0.5,2 --jobs 4000
    python bench/fleet.py --workers 8,16,32 --rtt direct --latency 100   # no proxy's hop

Even at "0" the proxy is a hop of its own (the threads of one Python process pass every
chunk on: about 0.1 ms a round trip, more under load), which is in each enqueue-to-start
figure two or three times; "direct" is the fleet on one host's loopback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).parent))
from delay_proxy import _ping_ms, proxy_process
from drain_cpu import machine_cpu, processes_cpu
from percentiles import p99
from pg_store import drop_schema, noop_sheet

SCHEMA = "bench_fleet"
# The --rtt value of a fleet that connects to the server itself: what the proxy's own
# hop (about 0.1 ms a round trip at "0") costs is then not in the figures.
DIRECT = "direct"
APP = "jobdef_fleet"
# Seconds the idle fleet's cost to the server is read over (its workers' maintenance
# rounds, beats and lease asks, about once a second each).
IDLE_SECONDS = 5.0
CLAIMS = ("claim_jobs", "complete_and_claim", "claim_jobs_limited")
SHEET = noop_sheet("bench_fleet_noop:noop")
HANDLER = "def noop(ctx, n=0):\n    pass\n"


# -- in each worker process: count the claims that came back empty ------------------------


def counted_worker(out: str, argv: list[str]) -> None:
    """Run ``jobdef worker argv`` counting its claims into the JSON file ``out``: those it
    runs (psycopg's ``Cursor.execute``) and the turns it sends (``SentTurn``, read once
    by the worker through ``leased``)."""
    from jobdef.backends.postgres.engine import QUERIES, SentTurn
    from jobdef.cli import main

    claims = {" ".join(QUERIES[name].split()): name for name in CLAIMS}
    counts = {"claims": 0, "empty": 0}
    original = psycopg.Cursor.execute

    def execute(cur: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(cur, query, *args, **kwargs)
        text = query if isinstance(query, str) else ""
        name = claims.get(" ".join(text.replace(f'"{SCHEMA}"', "{schema}").split()))
        if name is not None:
            counts["claims"] += 1
            if _claimed_none(cur, name):
                counts["empty"] += 1
        return result

    leased = SentTurn.leased

    def counted_leased(turn: SentTurn) -> int:
        count = leased(turn)
        counts["claims"] += 1
        counts["empty"] += count == 0
        return count

    def dump() -> None:
        Path(out + ".tmp").write_text(json.dumps(counts))
        os.replace(out + ".tmp", out)

    def keep_dumping() -> None:
        while True:
            time.sleep(0.2)
            dump()

    setattr(psycopg.Cursor, "execute", execute)  # noqa: B010 (a counting patch)
    setattr(SentTurn, "leased", counted_leased)  # noqa: B010 (a counting patch)
    threading.Thread(target=keep_dumping, daemon=True).start()
    try:
        main(["worker", *argv])
    finally:
        dump()


def _claimed_none(cur: Any, name: str) -> bool:
    result = cur.pgresult
    if result is None or result.ntuples == 0:
        return True
    if name != "complete_and_claim":
        return False
    # One row comes back even when nothing was claimed: its job columns are NULL.
    for column in range(result.nfields):
        if result.fname(column) == b"id":
            return result.ntuples == 1 and result.get_value(0, column) is None
    return False


# -- the bench ------------------------------------------------------------------------------


def _scalar(url: str, sql: str, params: Sequence[Any] = ()) -> Any:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(sql, params).fetchone()
        return row[0] if row else None


class Fleet:
    """``count`` worker processes on ``url``, counting into ``folder``."""

    def __init__(self, url: str, folder: Path, count: int) -> None:
        self.files = [str(folder / f"counts-{n}.json") for n in range(count)]
        argv = [
            *("--db", url, "--sheets", str(folder), "--pythonpath", str(folder)),
            *("--concurrency", "1", "--log-level", "warning", "--no-migrate"),
        ]
        code = (
            f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            "from fleet import counted_worker; counted_worker(sys.argv[1], sys.argv[2:])"
        )
        self.processes = [
            subprocess.Popen(
                [sys.executable, "-c", code, out, *argv],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for out in self.files
        ]

    def counts(self) -> dict[str, int]:
        total = {"claims": 0, "empty": 0}
        for name in self.files:
            try:
                found = json.loads(Path(name).read_text())
            except (OSError, ValueError):
                continue
            for key in total:
                total[key] += found[key]
        return total

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"fleet bench stuck: {what} within {timeout:.0f}s")
        time.sleep(0.01)


def one_run(
    args: argparse.Namespace, folder: Path, endpoint: tuple[str, int], workers: int
) -> dict[str, Any]:
    from jobdef.backends import open_backend
    from jobdef.runtime import Queue
    from jobdef.sheets.pipeline import load_registry

    direct = args.url
    drop_schema(direct, SCHEMA)
    store = f"{direct}?schema={SCHEMA}"
    parts = direct.split("@", 1)
    host_db = parts[1].split("/", 1)
    host, port = endpoint
    proxied = f"{parts[0]}@{host}:{port}/{host_db[1]}?schema={SCHEMA}&application_name={APP}"
    backend = open_backend(store)
    queue = Queue(backend, load_registry([str(folder)]))
    # One index probe per state: a count of the unfinished jobs scanned the whole table,
    # the drain's finished rows and all, at every poll (7 ms of the server's CPU at 40,000
    # rows, every 10 ms), and the polls of the latency phase ran while each single job was
    # starting. One test of both states is planned as a sequential scan, which walks the
    # rows finished so far before it finds one that is not (queue_postgres.py, busy).
    jobs_left = (
        f"SELECT EXISTS (SELECT 1 FROM \"{SCHEMA}\".jobdef_jobs WHERE state = 'queued') "
        f"OR EXISTS (SELECT 1 FROM \"{SCHEMA}\".jobdef_jobs WHERE state = 'running')"
    )
    sessions = (
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
        "AND datname = current_database()"
    )
    most_sessions = 0
    monitor = psycopg.connect(direct, autocommit=True)

    def pending() -> bool:
        nonlocal most_sessions
        row = monitor.execute(sessions, [APP]).fetchone()
        most_sessions = max(most_sessions, int(row[0]) if row else 0)
        left = monitor.execute(jobs_left).fetchone()
        return bool(left and not left[0])

    try:
        fleet = Fleet(proxied, folder, workers)
        try:
            # Every worker up and idle before the jobs come: the drain measures the
            # fleet at work, not its start-up (32 processes take a while on 2 cores).
            _wait_up(monitor, workers)
            time.sleep(1.0)
            fill_paused(backend, queue, args.jobs)
            # The fill woke workers too (a statement of as many jobs as there are
            # workers tells each), whose claims found the queue paused: those are not
            # the drain's conflicts. Each worker writes its counts every 0.2 s.
            time.sleep(0.5)
            filled = fleet.counts()

            def drain() -> None:
                backend.set_paused("default", False)
                _wait(pending, 600, "the drain")

            read_before = _claim_index_reads(monitor)
            server, machine = _cpu_of(monitor, drain)
            drained = fleet.counts()
            rate, middle = _drain_rates(monitor, args.jobs)
            time.sleep(1.0)  # every worker idle, listening
            walked = (_claim_index_reads(monitor) - read_before) / args.jobs
            idle_server, _ = _cpu_of(monitor, lambda: time.sleep(IDLE_SECONDS))
            before = fleet.counts()
            delays, after_commit = single_jobs(args.latency, queue, monitor, pending)
            after = fleet.counts()
        finally:
            fleet.stop()
        return {
            "rate": rate,
            "middle": middle,
            "walked": walked,
            "empty_drain": drained["empty"] - filled["empty"],
            "claims_drain": drained["claims"] - filled["claims"],
            "empty_idle": after["empty"] - before["empty"],
            "claims_idle": after["claims"] - before["claims"],
            "sessions": most_sessions,
            "server_us": server * 1e6 / args.jobs,
            "idle_ms": idle_server * 1000 / IDLE_SECONDS,
            "rest_us": (machine - server) * 1e6 / args.jobs,
            "p50": statistics.median(delays),
            "p99": p99(delays),
            "commit_p50": statistics.median(after_commit),
            "commit_p99": p99(after_commit),
        }
    finally:
        monitor.close()
        backend.close()
        drop_schema(direct, SCHEMA)


def _drain_rates(monitor: Any, jobs: int) -> tuple[float, float]:
    """Jobs per second from the first start to the last finish, and over the middle 80%
    of the finishes (from the 10th percentile to the 90th)."""
    window = monitor.execute(
        f"SELECT min(started_at), max(finished_at), percentile_cont(ARRAY[0.1, 0.9]) "
        f'WITHIN GROUP (ORDER BY finished_at) FROM "{SCHEMA}".jobdef_attempts'
    ).fetchone()
    assert window is not None
    first_tenth, ninth_tenth = window[2]
    return (
        jobs / max(window[1] - window[0], 1e-9),
        0.8 * jobs / max(ninth_tenth - first_tenth, 1e-9),
    )


def _claim_index_reads(monitor: Any) -> int:
    """Index entries the scans of the claim index have returned so far."""
    row = monitor.execute(
        "SELECT idx_tup_read FROM pg_stat_user_indexes "
        "WHERE schemaname = %s AND indexrelname = 'jobdef_jobs_claim'",
        [SCHEMA],
    ).fetchone()
    return int(row[0]) if row else 0


def _wait_up(monitor: Any, workers: int) -> None:
    """Until ``workers`` workers have registered in the store."""
    registered = f'SELECT count(*) FROM "{SCHEMA}".jobdef_workers'

    def all_up() -> bool:
        row = monitor.execute(registered).fetchone()
        return bool(row and row[0] >= workers)

    _wait(all_up, 600, f"{workers} workers starting")


def _cpu_of(monitor: Any, work: Any) -> tuple[float, float]:
    """Seconds of CPU the fleet's server sessions, and the whole machine, spent while
    ``work()`` ran."""
    server_before = _sessions_cpu(monitor)
    machine_before = machine_cpu()
    work()
    machine = machine_cpu() - machine_before
    server_after = _sessions_cpu(monitor)
    return sum(cpu - server_before.get(pid, 0.0) for pid, cpu in server_after.items()), machine


def _sessions_cpu(monitor: Any) -> dict[int, float]:
    """Seconds of CPU each server process of the fleet's sessions has used so far."""
    rows = monitor.execute(
        "SELECT pid FROM pg_stat_activity WHERE application_name = %s "
        "AND datname = current_database()",
        [APP],
    ).fetchall()
    return {pid: processes_cpu([pid]) for (pid,) in rows}


def fill_paused(backend: Any, queue: Any, jobs: int) -> None:
    """``jobs`` no-op jobs into the paused queue, resumed by the caller once every job is
    in (the resume wakes the fleet): the drain measures the fleet on a backlog. Fed as it
    drains, it measured the one enqueuing process instead, which gets a 65th of two cores
    beside 32 busy workers and their handler processes, so that the more workers, the
    slower the feed (the rate fell by half from 8 to 32)."""
    backend.set_paused("default", True)
    for first in range(0, jobs, 1000):
        last = min(jobs, first + 1000)
        queue.enqueue_many("noop", ({"n": n} for n in range(first, last)))


def single_jobs(
    count: int, queue: Any, monitor: Any, pending: Any
) -> tuple[list[float], list[float]]:
    """Milliseconds from the enqueue's start, and from its return, to the start of
    ``count`` jobs enqueued one at a time, each once the last has finished; sorted."""
    returned: dict[int, float] = {}
    for _ in range(count):
        job_id = queue.enqueue("noop", {"n": -1}).job_id
        returned[job_id] = time.time()
        time.sleep(0.01)  # not polled while the job starts: the fleet alone is at work then
        _wait(pending, 60, "a single job")
        time.sleep(0.05)
    found = monitor.execute(
        f'SELECT j.id, j.created_at, a.started_at FROM "{SCHEMA}".jobdef_attempts a '
        f'JOIN "{SCHEMA}".jobdef_jobs j ON j.id = a.job_id WHERE j.id = ANY(%s)',
        [list(returned)],
    ).fetchall()
    from_start = sorted((started - created) * 1000 for _, created, started in found)
    from_return = sorted((started - returned[id_]) * 1000 for id_, _, started in found)
    return from_start, from_return


def rows(args: argparse.Namespace, folder: Path) -> Iterator[str]:
    host, port = args.url.split("@", 1)[1].split("/", 1)[0].split(":")
    target = (host, int(port))
    direct_ms = _ping_ms(target[1], target[0], 300)
    for rtt in args.rtt:
        with contextlib.ExitStack() as stack:
            if rtt == DIRECT:
                endpoint, label = target, "direct"
            else:
                proxy_port, _ = stack.enter_context(proxy_process(target, rtt / 1000))
                endpoint = ("127.0.0.1", proxy_port)
                added = _ping_ms(proxy_port, "127.0.0.1", 300) - direct_ms
                label = f"{rtt:g} ms (adds {added:.2f})"
            for workers in args.workers:
                results = [one_run(args, folder, endpoint, workers) for _ in range(args.runs)]

                def median(key: str, results: list[dict[str, Any]] = results) -> float:
                    return float(statistics.median(r[key] for r in results))

                yield (
                    f"| {label} | {workers} | {median('rate'):,.0f} | {median('middle'):,.0f} | "
                    f"{median('empty_drain'):.0f} / {median('claims_drain'):.0f} | "
                    f"{median('empty_idle'):.0f} / {median('claims_idle'):.0f} | "
                    f"{median('walked'):.1f} | "
                    f"{median('sessions'):.0f} | {median('server_us'):.1f} | "
                    f"{median('rest_us'):.1f} | {median('idle_ms'):.1f} | "
                    f"{median('p50'):.2f} | {median('p99'):.2f} | "
                    f"{median('commit_p50'):.2f} | {median('commit_p99'):.2f} |"
                )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--workers", default="8,16,32", help="worker processes in total")
    parser.add_argument(
        "--rtt",
        default="0,0.5,2",
        help="round trips the proxy adds, milliseconds; 'direct': the workers connect to the "
        "server itself, no proxy",
    )
    parser.add_argument("--jobs", type=int, default=4000, help="jobs drained per run")
    parser.add_argument("--latency", type=int, default=30, help="single jobs timed per run")
    parser.add_argument("--runs", type=int, default=1, help="runs per cell; medians shown")
    args = parser.parse_args(argv)
    args.workers = [int(n) for n in args.workers.split(",")]
    args.rtt = [n if n == DIRECT else float(n) for n in args.rtt.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="jobdef-fleet-"))
    (folder / "noop.yaml").write_text(SHEET)
    (folder / "bench_fleet_noop.py").write_text(HANDLER)
    print(
        f"{args.jobs:,} no-op jobs per drain, {args.latency} single jobs for latency, "
        f"{os.cpu_count()} cores, medians of {args.runs} run(s)",
        file=sys.stderr,
    )
    print(
        "| round trip | workers | drain (jobs/s) | middle 80% (jobs/s) "
        "| empty claims / claims, drain | empty claims / claims, idle "
        "| claim index entries read / job | sessions | server CPU (us/job) | rest CPU (us/job) "
        "| server CPU, idle fleet (ms/s) | enqueue-to-start p50 (ms) | p99 (ms) "
        "| commit-to-start p50 (ms) | p99 (ms) |"
    )
    print("| --- |" + " --- |" * 14)
    try:
        for row in rows(args, folder):
            print(row, flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
