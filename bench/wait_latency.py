"""Wait latency: from a job's end to the return of ``Queue.wait`` on its receipt, on both engines.

A real worker process (``python -m jobdef worker``) runs jobs that nap a few
milliseconds each; this process enqueues one at a time and waits on its receipt
(``Queue.wait``), so the waiter is waiting when the job ends. The latency of one
sample is the store's clock at the waiter's return minus the job's ``finished_at``
(both on the store's clock: PostgreSQL's is the server's, read by this process
through the engine, so the two hosts' clocks never meet). PostgreSQL wakes the
waiter by a notification; SQLite's waiters read the store every 50 ms, so its
latency is spread over one poll.

    python bench/wait_latency.py                       # both engines, medians of 3 runs
    python bench/wait_latency.py --samples 50 --runs 1 --engines sqlite   # smoke
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

SHEET = f"""\
apiVersion: jobdef/v1
kind: Job
name: nap
handler: {Path(__file__).stem}:nap
timeout: 30s
errors: {{default: fatal}}
retention: {{done: 1h, dead: until_resolved}}
args:
  ms: {{type: integer}}
"""


def nap(ctx: Any, ms: int) -> int:
    """The job: sleep ``ms`` milliseconds, so that its waiter is waiting when it ends."""
    time.sleep(ms / 1000)
    return ms


def _worker(url: str, sheets: Path, log: Path) -> subprocess.Popen[bytes]:
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(HERE), str(SRC)])}
    command = [sys.executable, "-m", "jobdef", "worker", "--db", url, "--sheets", str(sheets)]
    with log.open("wb") as out:
        return subprocess.Popen(
            [*command, "--poll", "50ms"], env=env, stdout=out, stderr=subprocess.STDOUT
        )


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def measure(url: str, samples: int, folder: Path) -> tuple[float, float]:
    """p50 and p99 of the wait latency, in milliseconds, over ``samples`` jobs."""
    from jobdef.runtime.queue import connect
    from jobdef.sheets.pipeline import load_registry

    sheets = folder / "sheets"
    sheets.mkdir(exist_ok=True)
    (sheets / "nap.yaml").write_text(SHEET, "utf-8")
    queue = connect(url, load_registry([sheets]))
    worker = _worker(url, sheets, folder / "worker.log")
    try:
        first = queue.enqueue("nap", {"ms": 0})  # the worker is up once it ran one
        if queue.wait(first, 60) is None or not queue.status(first).ended:
            raise SystemExit(f"the worker did not start: {(folder / 'worker.log').read_text()}")
        latencies = []
        for i in range(samples):
            receipt = queue.enqueue("nap", {"ms": 20 + i % 30})
            status = queue.wait(receipt, 30)
            returned = queue.clock()
            if status is None or status.state != "done" or status.finished_at is None:
                raise SystemExit(f"job {receipt.job_id} did not end done: {status}")
            latencies.append((returned - status.finished_at) * 1000)
    finally:
        worker.terminate()
        worker.wait(30)
        queue.close()
    return _percentile(latencies, 0.50), _percentile(latencies, 0.99)


def _store(engine: str, server: str, folder: Path) -> tuple[str, Any]:
    """The URL of a fresh store, and how to remove it."""
    if engine == "sqlite":
        return f"sqlite:///{folder / 'jobs.db'}", lambda: None
    from pg_store import drop_schema

    schema = f"bench_wait_{uuid.uuid4().hex[:8]}"
    return f"{server}?schema={schema}", lambda: drop_schema(server, schema)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--engines", default="sqlite,postgres", help="comma list")
    parser.add_argument("--samples", type=int, default=200, help="jobs waited on per run")
    parser.add_argument("--runs", type=int, default=3, help="runs; the figures are medians")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    print(
        f"{os.cpu_count()} CPUs, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"{args.samples} jobs per run, medians of {args.runs} run(s)",
        flush=True,
    )
    for engine in args.engines.split(","):
        p50s, p99s = [], []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="jobdef-bench-") as tmp:
                url, drop = _store(engine, args.url, Path(tmp))
                try:
                    p50, p99 = measure(url, args.samples, Path(tmp))
                finally:
                    drop()
            p50s.append(p50)
            p99s.append(p99)
        print(
            f"{engine:<10} wait latency p50 {statistics.median(p50s):7.1f} ms   "
            f"p99 {statistics.median(p99s):7.1f} ms   (runs: p50 "
            + ", ".join(f"{v:.1f}" for v in p50s)
            + "; p99 "
            + ", ".join(f"{v:.1f}" for v in p99s)
            + ")",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
