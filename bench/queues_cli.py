"""`jobdef queues` and `jobdef prune` on SQLite, timed as an operator runs them.

Each figure is the median wall time of ``--runs`` runs of the command in a fresh
Python process (start-up included, as the operator waits for it), on a store with
``--finished`` done/dead rows plus a few queued and running jobs in three queues.
`jobdef queues` should cost the same with a thousand finished rows or a million:
its counts read only the partial indexes of active rows.

    python bench/queues_cli.py                         # 1,000 and 1,000,000 rows, 5 runs
    python bench/queues_cli.py --finished 1000 --runs 1   # smoke
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jobdef.backends import open_backend
from jobdef.backends.records import NewJob


def fill(path: Path, finished: int) -> str:
    """A store at ``path`` with ``finished`` finished jobs and a few active ones."""
    url = f"sqlite:///{path}"
    backend = open_backend(url)
    backend.enqueue(
        [NewJob(job="noop", args={"n": i}, queue=q) for i in range(20) for q in ("a", "b", "c")]
    )
    backend.close()
    conn = sqlite3.connect(path)
    now = time.time()
    conn.execute(
        """
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
        INSERT INTO jobdef_jobs (job, queue, priority, args, state, attempt, max_attempts,
                                 run_after, created_at, updated_at, finished_at)
        SELECT 'noop', CASE i % 3 WHEN 0 THEN 'a' WHEN 1 THEN 'b' ELSE 'c' END, 0, '{}',
               CASE i % 10 WHEN 0 THEN 'dead' ELSE 'done' END, 1, 3, ? - i, ? - i, ? - i, ? - i
        FROM n
        """,
        (finished, now, now, now, now),
    )
    conn.execute(
        "UPDATE jobdef_jobs SET state = 'running', started_at = ?, lease_until = ?, "
        "worker_id = 'w', attempt = 1 WHERE id IN (1, 2, 3)",
        (now, now + 600),
    )
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return url


def timed(argv: list[str], runs: int) -> float:
    """Median seconds of ``python -m jobdef ARGV`` over ``runs`` runs."""
    times = []
    env = {**os.environ, "NO_COLOR": "1"}
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "jobdef", *argv],
            check=True,
            stdout=subprocess.DEVNULL,
            env=env,
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def verb_ms(url: str, runs: int) -> float:
    """Median milliseconds of the ``queues()`` verb alone, on a fresh connection each."""
    times = []
    for _ in range(runs):
        backend = open_backend(url)
        try:
            start = time.perf_counter()
            backend.queues()
            times.append(time.perf_counter() - start)
        finally:
            backend.close()
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--finished", default="1000,1000000", help="finished rows, comma list")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sheets", default="jobdefs", help="sheets for prune")
    parser.add_argument("--skip-prune", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.finished.split(",")):
            url = fill(Path(tmp) / f"q-{size}.db", size)
            seconds = timed(["queues", "--db", url, "--sheets", "/nonexistent"], args.runs)
            print(f"jobdef queues, {size:,} finished rows: {seconds * 1000:.1f} ms (median)")
            print(f"  of which backend.queues(): {verb_ms(url, args.runs):.2f} ms (median)")
        if not args.skip_prune:
            url = fill(Path(tmp) / "prune.db", 1000)
            seconds = timed(["prune", "--db", url, "--sheets", args.sheets], args.runs)
            print(f"jobdef prune, 1,000 finished rows: {seconds * 1000:.1f} ms (median)")


if __name__ == "__main__":
    main()
