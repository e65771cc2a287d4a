"""jobdef beside graphile-worker (Node.js), measured the same way on the same PostgreSQL.

For each system, on a fresh database of its own, each run:

- bulk add: ``--jobs`` no-op jobs in batches of ``--batch``, timed inside the
  client after it connected (graphile: ``workerUtils.addJobs``; jobdef:
  ``Queue.enqueue_many``);
- start-up: the wall time of 1 (or 2) worker processes started together on an
  empty queue, until all have exited (graphile ``--once``, jobdef ``--burst``), the
  median of ``--startup-runs`` (3) such starts;
- drain: the same processes on the ``--jobs`` queued jobs; the figure is
  ``jobs / (wall - start-up)``;
- CPU per job of the drain, less that of the start-up, in microseconds: the server's
  (all its processes, read from ``/proc``: the server must run on this machine, and
  nothing else use it meanwhile) and the workers' (graphile's Node.js process; jobdef's
  worker and its handler processes). On a machine whose cores the server and the workers share,
  the two together bound the drain; the server's part is what every worker host
  added to a fleet shares.

Runs are interleaved (graphile, jobdef, graphile, jobdef...) and the table shows
medians. graphile-worker runs with the preset of its performance page
(https://worker.graphile.org/docs/performance): ``concurrentJobs: 24``,
``maxPoolSize: 25``, ``localQueue: {size: 500}``, ``completeJobBatchDelay: 0``,
``failJobBatchDelay: 0``; with ``NO_LOG_SUCCESS=1`` as jobdef runs with
``--log-level warning`` (neither writes a line per job). jobdef's worker runs
``--concurrency`` handler processes (default 2, the cores of the machine this was
written on).

graphile-worker is installed with npm into a temporary folder (never into this
repository), or taken from ``--node-dir`` where ``npm install graphile-worker@0.18.0
pg`` was run before::

    python bench/graphile.py                          # 20,000 jobs, 1 and 2 processes, 3 runs
    python bench/graphile.py --jobs 2000 --runs 1     # smoke

The server is the one in ``--url``; databases ``<db>_bench_graphile`` and
``<db>_bench_jobdef`` are created and dropped there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import psycopg

from drain_cpu import children_cpu, server_cpu
from pg_store import database_url, drop_database, fresh_database, noop_sheet
from validate_startup import bytecode_env

GRAPHILE_VERSION = "0.18.0"
SYSTEMS = ("graphile", "jobdef")

# The preset of graphile-worker's performance page, with this run's database.
GRAPHILE_CONFIG = """\
module.exports = {
  worker: {
    connectionString: process.env.DATABASE_URL,
    fileExtensions: [".js", ".cjs", ".mjs"],
    concurrentJobs: 24,
    maxPoolSize: 25,
    localQueue: { size: 500 },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0,
  },
};
"""

GRAPHILE_TASK = "module.exports = async () => {};\n"

# Adds jobs in batches and prints the seconds it took, after connecting.
GRAPHILE_ADD = """\
const { makeWorkerUtils } = require("graphile-worker");
async function main() {
  const [count, batch] = process.argv.slice(2).map(Number);
  const utils = await makeWorkerUtils({ connectionString: process.env.DATABASE_URL });
  await utils.migrate();
  const start = process.hrtime.bigint();
  for (let first = 0; first < count; first += batch) {
    const specs = [];
    for (let n = first; n < Math.min(count, first + batch); n++) {
      specs.push({ identifier: "noop", payload: { n } });
    }
    await utils.addJobs(specs);
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  await utils.release();
  console.log(JSON.stringify({ seconds }));
}
main().catch((e) => { console.error(e); process.exit(1); });
"""

JOBDEF_SHEET = noop_sheet("bench_noop:noop")

JOBDEF_HANDLER = '''\
def noop(ctx, n=0):
    """Does nothing: the bench measures the queue."""
'''

# Adds jobs in batches and prints the seconds it took, after connecting.
JOBDEF_ADD = """\
import json, sys, time
from jobdef.runtime import connect
from jobdef.sheets.pipeline import load_registry

url, sheets, count, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with connect(url, load_registry([sheets])) as queue:
    start = time.perf_counter()
    for first in range(0, count, batch):
        queue.enqueue_many("noop", ({"n": n} for n in range(first, min(count, first + batch))))
    print(json.dumps({"seconds": time.perf_counter() - start}))
"""


def install_graphile(folder: Path) -> None:
    """``npm install graphile-worker pg`` into ``folder`` (a temporary one)."""
    subprocess.run(["npm", "init", "-y"], cwd=folder, check=True, capture_output=True)
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", f"graphile-worker@{GRAPHILE_VERSION}", "pg"],
        cwd=folder,
        check=True,
        capture_output=True,
    )


class Bench:
    """The files both systems run from, in one temporary folder."""

    def __init__(
        self, server_url: str, node_dir: Path, work: Path, concurrency: int, pipeline: bool
    ) -> None:
        self.server_url = server_url
        self.pipeline = pipeline
        self.node_dir = node_dir
        self.work = work
        self.concurrency = concurrency
        (work / "tasks").mkdir()
        (work / "tasks" / "noop.js").write_text(GRAPHILE_TASK)
        (work / "graphile.config.js").write_text(GRAPHILE_CONFIG)
        (work / "add.js").write_text(GRAPHILE_ADD)
        (work / "sheets").mkdir()
        (work / "sheets" / "noop.yaml").write_text(JOBDEF_SHEET)
        (work / "bench_noop.py").write_text(JOBDEF_HANDLER)
        (work / "add.py").write_text(JOBDEF_ADD)

    def env(self, system: str) -> dict[str, str]:
        url = database_url(self.server_url, system)
        if system == "graphile":
            return os.environ | {
                "DATABASE_URL": url,
                "NODE_PATH": str(self.node_dir / "node_modules"),
                "NO_LOG_SUCCESS": "1",
            }
        return bytecode_env()

    def fresh(self, system: str) -> None:
        url = database_url(self.server_url, system)
        fresh_database(self.server_url, url)
        if system == "graphile":
            self._run(system, [*self._graphile_cli(), "--schema-only"])
        else:
            from jobdef.backends import open_backend

            open_backend(url).close()

    def drop(self, system: str) -> None:
        drop_database(self.server_url, database_url(self.server_url, system))

    def _graphile_cli(self) -> list[str]:
        cli = self.node_dir / "node_modules" / ".bin" / "graphile-worker"
        return [str(cli), "-C", str(self.work / "graphile.config.js")]

    def worker_command(self, system: str) -> list[str]:
        if system == "graphile":
            return [*self._graphile_cli(), "--once"]
        url = database_url(self.server_url, system)
        return [
            *(sys.executable, "-m", "jobdef", "worker"),
            *("--db", url, "--sheets", str(self.work / "sheets")),
            *("--pythonpath", str(self.work), "--burst"),
            *("--concurrency", str(self.concurrency), "--log-level", "warning"),
            *([] if self.pipeline else ["--no-pipeline-turns"]),
        ]

    def _run(self, system: str, command: list[str]) -> str:
        done = subprocess.run(
            command,
            cwd=self.work,
            env=self.env(system),
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"{system}: {' '.join(command[:3])} failed:\n{done.stderr[-2000:]}")
        return done.stdout

    def add(self, system: str, count: int, batch: int) -> float:
        """Seconds to add ``count`` jobs in batches of ``batch``, timed in the client."""
        if system == "graphile":
            command = ["node", str(self.work / "add.js"), str(count), str(batch)]
        else:
            url = database_url(self.server_url, system)
            sheets = str(self.work / "sheets")
            command = [sys.executable, str(self.work / "add.py"), url, sheets, str(count)]
            command.append(str(batch))
        out = self._run(system, command)
        return float(json.loads(out.strip().splitlines()[-1])["seconds"])

    def workers(self, system: str, processes: int) -> tuple[float, float, float]:
        """Wall seconds of ``processes`` workers started together, until all exit, and
        the CPU seconds of the server's sessions and of the workers meanwhile."""
        server, workers = server_cpu(), children_cpu()
        wall = self._workers(system, processes)
        return wall, server_cpu() - server, children_cpu() - workers

    def startup(self, system: str, processes: int, runs: int) -> tuple[float, float, float]:
        """:meth:`workers` on the empty queue ``runs`` times: the medians of its wall
        time, of the server's CPU and of the workers'. One start-up of a few hundred
        milliseconds swings by a tenth from run to run on a small machine, and the
        drain's figure subtracts it from a wall of about as much again."""
        samples = [self.workers(system, processes) for _ in range(runs)]
        wall, server, workers = (statistics.median(column) for column in zip(*samples, strict=True))
        return wall, server, workers

    def _workers(self, system: str, processes: int) -> float:
        command = self.worker_command(system)
        start = time.perf_counter()
        running = [
            subprocess.Popen(
                command,
                cwd=self.work,
                env=self.env(system),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for _ in range(processes)
        ]
        failed = []
        for process in running:
            _, err = process.communicate(timeout=600)
            if process.returncode != 0:
                failed.append(err.decode(errors="replace")[-2000:])
        wall = time.perf_counter() - start
        if failed:
            raise SystemExit(f"{system} worker failed:\n{failed[0]}")
        return wall

    def left(self, system: str) -> int:
        """Jobs not finished."""
        statement = (
            "SELECT count(*) FROM graphile_worker.jobs"
            if system == "graphile"
            else "SELECT count(*) FROM jobdef_jobs WHERE state <> 'done'"
        )
        with psycopg.connect(database_url(self.server_url, system), autocommit=True) as conn:
            row = conn.execute(statement).fetchone()
            return int(row[0]) if row else 0


def run(args: argparse.Namespace, bench: Bench) -> dict[str, dict[str, list[float]]]:
    """``{what: {system: [figure of each run]}}``."""
    table: dict[str, dict[str, list[float]]] = {}

    def record(what: str, system: str, value: float) -> None:
        table.setdefault(what, {}).setdefault(system, []).append(value)

    for round_ in range(args.runs):
        for processes in args.processes:
            for system in args.systems:
                bench.fresh(system)
                startup, startup_server, startup_workers = bench.startup(
                    system, processes, args.startup_runs
                )
                seconds = bench.add(system, args.jobs, args.batch)
                wall, server, workers = bench.workers(system, processes)
                left = bench.left(system)
                if left:
                    raise SystemExit(f"{system}: {left} jobs left after the drain")
                drain = args.jobs / max(wall - startup, 1e-9)
                record("bulk add (jobs/s)", system, args.jobs / seconds)
                record(f"drain {processes}p, N/(wall - start-up) (jobs/s)", system, drain)
                record(f"start-up {processes}p (ms)", system, startup * 1000)
                record(f"drain {processes}p, wall incl. start-up (s)", system, wall)
                micro = 1e6 / args.jobs
                server_us = (server - startup_server) * micro
                workers_us = (workers - startup_workers) * micro
                record(f"drain {processes}p, server CPU per job (us)", system, server_us)
                record(f"drain {processes}p, workers' CPU per job (us)", system, workers_us)
                print(
                    f"  run {round_ + 1} {system:8} {processes}p: "
                    f"add {args.jobs / seconds:,.0f}/s, "
                    f"start-up {startup * 1000:.0f} ms, wall {wall:.2f} s, "
                    f"drain {drain:,.0f}/s, CPU per job: server {server_us:.1f} us, "
                    f"workers {workers_us:.1f} us",
                    file=sys.stderr,
                )
                bench.drop(system)
    return table


def report(table: dict[str, dict[str, list[float]]], systems: Sequence[str]) -> str:
    lines = [f"| what | {' | '.join(systems)} | jobdef / graphile |", "| --- |" + " --- |" * 3]
    for what, values in sorted(table.items()):
        medians = {s: statistics.median(values[s]) for s in systems if s in values}
        cells = [f"{medians[s]:,.1f}" if s in medians else "-" for s in systems]
        ratio = (
            f"{medians['jobdef'] / medians['graphile']:.2f}x"
            if "jobdef" in medians and "graphile" in medians
            else "-"
        )
        lines.append(f"| {what} | {' | '.join(cells)} | {ratio} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs per run")
    parser.add_argument("--batch", type=int, default=1000, help="jobs per bulk add call")
    parser.add_argument("--processes", default="1,2", help="worker process counts")
    parser.add_argument("--runs", type=int, default=3, help="runs; the table shows medians")
    parser.add_argument(
        "--startup-runs",
        type=int,
        default=3,
        help="start-ups timed per run, on the empty queue; the median is subtracted",
    )
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument(
        "--concurrency", type=int, default=2, help="jobdef's handler processes per worker"
    )
    parser.add_argument(
        "--pipeline-turns",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="jobdef's workers send their turns without waiting (the default); "
        "--no-pipeline-turns runs them with --no-pipeline-turns, each answer waited for",
    )
    parser.add_argument(
        "--node-dir",
        type=Path,
        help="a folder where `npm install graphile-worker@0.18.0 pg` was run "
        "(default: install into a temporary folder, removed after)",
    )
    args = parser.parse_args(argv)
    args.processes = [int(n) for n in args.processes.split(",")]
    args.systems = [s for s in args.systems.split(",") if s]
    work = Path(tempfile.mkdtemp(prefix="jobdef-graphile-bench-"))
    try:
        node_dir = args.node_dir
        if node_dir is None and "graphile" in args.systems:
            node_dir = work / "node"
            node_dir.mkdir()
            print(f"installing graphile-worker {GRAPHILE_VERSION} into {node_dir}", file=sys.stderr)
            install_graphile(node_dir)
        bench = Bench(args.url, node_dir or work, work, args.concurrency, args.pipeline_turns)
        print(
            f"{args.jobs:,} no-op jobs, bulk batches of {args.batch}, {os.cpu_count()} cores, "
            f"jobdef --concurrency {args.concurrency}"
            f"{'' if args.pipeline_turns else ' --no-pipeline-turns'}, "
            f"medians of {args.runs} interleaved run(s)",
            file=sys.stderr,
        )
        print(report(run(args, bench), args.systems))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
