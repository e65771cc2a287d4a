"""A shallow backlog on an idle fleet: does one worker take it all while the others idle?

``--workers`` idle worker processes (``jobdef worker --concurrency 1``, as in
bench/fleet.py, whose :class:`~fleet.Fleet` starts them) get ``--jobs`` jobs of
``--sleep`` seconds each, enqueued in one batch; the time from the enqueue to
the last finish, and how many workers ran them, are read from the attempts
rows. Repeated ``--rounds`` times; medians shown. A worker that claimed
``--prefetch`` jobs at once would run the whole batch one after another; a
fleet that shares it finishes in about ``jobs / workers`` sleeps.

    python bench/shallow_backlog.py --workers 8 --jobs 16 --sleep 0.05
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).parent))
from fleet import SCHEMA, SHEET, Fleet, _wait
from pg_store import drop_schema


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=16, help="jobs per batch")
    parser.add_argument("--sleep", type=float, default=0.05, help="seconds each job sleeps")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

    from jobdef.backends import open_backend
    from jobdef.runtime import Queue
    from jobdef.sheets.pipeline import load_registry

    folder = Path(tempfile.mkdtemp(prefix="jobdef-shallow-"))
    (folder / "noop.yaml").write_text(SHEET)
    handler = f"import time\n\ndef noop(ctx, n=0):\n    time.sleep({args.sleep!r})\n"
    (folder / "bench_fleet_noop.py").write_text(handler)
    drop_schema(args.url, SCHEMA)
    store = f"{args.url}?schema={SCHEMA}"
    backend = open_backend(store)
    queue = Queue(backend, load_registry([str(folder)]))
    monitor = psycopg.connect(args.url, autocommit=True)
    table = f'"{SCHEMA}"'

    def count(sql: str) -> int:
        row = monitor.execute(sql).fetchone()
        return int(row[0]) if row else 0

    spans: list[float] = []
    used: list[int] = []
    fleet = Fleet(store, folder, args.workers)
    try:
        registered = f"SELECT count(*) FROM {table}.jobdef_workers"
        _wait(lambda: count(registered) >= args.workers, 600, "the workers starting")
        time.sleep(1.5)  # every worker idle, listening
        left = f"SELECT count(*) FROM {table}.jobdef_jobs WHERE state <> 'done'"
        for _ in range(args.rounds):
            jobs = queue.enqueue_many("noop", ({"n": n} for n in range(args.jobs)))
            _wait(lambda: count(left) == 0, 300, "the batch")
            row = monitor.execute(
                f"SELECT max(a.finished_at) - min(j.created_at), count(DISTINCT a.worker_id) "
                f"FROM {table}.jobdef_attempts a JOIN {table}.jobdef_jobs j ON j.id = a.job_id "
                "WHERE j.id = ANY(%s)",
                [[job.id for job in jobs]],
            ).fetchone()
            assert row is not None
            spans.append(float(row[0]) * 1000)
            used.append(int(row[1]))
            time.sleep(0.5)
    finally:
        fleet.stop()
        monitor.close()
        backend.close()
        drop_schema(args.url, SCHEMA)
        shutil.rmtree(folder, ignore_errors=True)
    print(
        f"{args.jobs} jobs of {args.sleep * 1000:g} ms on {args.workers} idle workers: done in "
        f"{statistics.median(spans):.0f} ms (median of {args.rounds}; "
        f"{', '.join(f'{s:.0f}' for s in spans)}), run by {statistics.median(used):g} workers"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
