"""What the change notifications cost a PostgreSQL worker: no-op drain with and without them.

The workers of an engine send at most one ``pg_notify`` per quarter second on the
changes channel when they moved something (``jobdef.backends.postgres.changes``),
so a dashboard can follow without polling. This drains the same queue of no-op
jobs with jobdef's worker as it ships ("notify") and with the notifier switched
off in the worker process ("quiet"), the two interleaved in every run, each on a
fresh database, and prints the medians (jobs/s from the first start to the last
finish, as ``bench/queue_postgres.py`` measures a drain).

    python bench/live_notify.py --jobs 20000 --runs 3 --workers 1,2
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pg_store import database_url, drop_database, fresh_database
from queue_postgres import SPAWN, System, measure_drain, run_worker

MODES = ("notify", "quiet")


def run_worker_quiet(spec: System, drain: bool) -> None:
    """jobdef's worker with the change notifier switched off (the baseline)."""
    from jobdef.backends.postgres.changes import ChangeNotifier

    ChangeNotifier.touched = lambda self: None  # type: ignore[method-assign]
    run_worker(spec, drain)


@dataclass
class QuietSystem(System):
    """jobdef, its workers sending no change notification."""

    def start_worker(self, drain: bool) -> Any:
        process = SPAWN.Process(target=run_worker_quiet, args=(self, drain))
        process.start()
        return process


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--workers", default="1,2", help="worker process counts")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.workers.split(",")]
    url = database_url(args.url, "jobdef_live")
    rates: dict[tuple[int, str], list[float]] = {}
    for round_ in range(args.runs):
        for processes in counts:
            # Alternate which goes first, so a drift of the machine hits both alike.
            order = MODES if round_ % 2 == 0 else MODES[::-1]
            for mode in order:
                fresh_database(args.url, url)
                kind = System if mode == "notify" else QuietSystem
                system = kind("jobdef", url)
                system.install()
                rate, _ = measure_drain(system, args.jobs, processes)
                rates.setdefault((processes, mode), []).append(rate)
                print(
                    f"  run {round_ + 1} {processes}p {mode:6} {rate:,.0f} jobs/s", file=sys.stderr
                )
    drop_database(args.url, url)
    print(f"{args.jobs} no-op jobs, medians of {args.runs} interleaved runs (jobs/s)")
    print("| workers | notify | quiet | notify / quiet | runs notify | runs quiet |")
    print("| --- | --- | --- | --- | --- | --- |")
    for processes in counts:
        on, off = rates[(processes, "notify")], rates[(processes, "quiet")]
        ratio = statistics.median(on) / statistics.median(off)
        print(
            f"| {processes} | {statistics.median(on):,.0f} | {statistics.median(off):,.0f} "
            f"| {ratio:.3f} | {', '.join(f'{r:,.0f}' for r in on)} "
            f"| {', '.join(f'{r:,.0f}' for r in off)} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
