"""``jobdef workers``: the workers serving the store, their running jobs and last beat.

Each worker registers in the workers table at its start and stamps its row every
lease/3 (:mod:`jobdef.backends.workers`). A row whose last beat is older than the
worker's lease is marked ``stale``: the worker died or is frozen, and its jobs'
leases have expired or are about to (another worker reclaims them). Stale rows
are removed a day later by the retention service.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import TYPE_CHECKING

from jobdef.cli import runtime_options
from jobdef.cli.options import add_format
from jobdef.cli.runtime_options import human_age, table

if TYPE_CHECKING:
    from jobdef.backends.workers import WorkerInfo

# Running job ids listed per worker in the text table; --format json lists them all.
_SHOWN_JOBS = 5

# The QUEUES cell of a worker started without --queues. Not "all": that is a valid
# queue name, and a worker of the queue "all" would look the same. A queue name
# matches ^[a-z][a-z0-9_-]*$ (the sheet schema), so parentheses and a space are
# never one; --format json says it as "all_queues": true.
EVERY_QUEUE = "(every queue)"


def _registered(backend: object) -> tuple[list[WorkerInfo], float]:
    """The workers table's rows and the store's time now (the dashboard reads them alike)."""
    from jobdef.telemetry.presence import registered_workers

    return registered_workers(backend)


def run(args: argparse.Namespace) -> int:
    backend = runtime_options.backend(args)
    try:
        found, now = _registered(backend)
    finally:
        backend.close()
    if args.format == "json":
        from jobdef.telemetry.presence import queue_fields

        rows = [
            {
                "id": w.id,
                "host": w.host,
                "pid": w.pid,
                **queue_fields(w),
                "concurrency": w.concurrency,
                "version": w.version,
                "started_at": w.started_at,
                "last_beat": w.last_beat,
                "last_beat_age": round(max(now - w.last_beat, 0.0), 3),
                "stale": w.stale(now),
                "running": list(w.running),
            }
            for w in found
        ]
        print(json.dumps({"workers": rows, "now": now}, indent=2))
        return 0
    if not found:
        print("no worker is registered (a worker registers when it starts)")
        return 0
    lines = [
        ["WORKER", "STATE", "HOST", "PID", "QUEUES", "CONC", "STARTED", "LAST BEAT", "RUNNING"]
    ]
    for w in found:
        running = ", ".join(str(i) for i in w.running[:_SHOWN_JOBS])
        if len(w.running) > _SHOWN_JOBS:
            running += f" (+{len(w.running) - _SHOWN_JOBS})"
        lines.append(
            [
                w.id,
                "stale" if w.stale(now) else "alive",
                w.host,
                str(w.pid),
                EVERY_QUEUE if w.queues is None else ",".join(w.queues),
                str(w.concurrency),
                time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(w.started_at)),
                f"{human_age(max(now - w.last_beat, 0.0))} ago",
                running or "-",
            ]
        )
    print(table(lines))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "workers",
        help="list the workers serving the store, stale ones marked",
        description="The workers registered in the store: host, pid, queues, concurrency "
        "(the jobs it may run at once: handler processes times --async-per-process), "
        "start, last heartbeat and running jobs. A worker whose last beat is older than "
        "its lease is marked stale (dead or frozen).",
    )
    runtime_options.add_db(parser)
    add_format(parser)
    parser.set_defaults(handler=run)
