"""``jobdef status``: how many jobs per job and state, and how long the oldest one waits."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from jobdef.cli import runtime_options
from jobdef.cli.runtime_options import human_age, table


def run(args: argparse.Namespace) -> int:
    backend = runtime_options.backend(args)
    try:
        counts = backend.stats()
        queues = backend.queues()
    finally:
        backend.close()
    if args.format == "json":
        print(
            json.dumps({"jobs": [asdict(c) for c in counts], "queues": [asdict(q) for q in queues]})
        )
        return 0
    if not counts:
        print("no jobs")
    else:
        rows = [["JOB", "QUEUE", "STATE", "COUNT", "OLDEST WAITING"]]
        rows += [
            [
                c.job,
                c.queue,
                c.state,
                str(c.count),
                human_age(c.oldest_age) if c.state == "queued" else "",
            ]
            for c in counts
        ]
        print(table(rows))
    paused = [q.queue for q in queues if q.paused]
    if paused:
        print(f"\npaused queues: {', '.join(paused)}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "status", help="job counts per job and state", description=__doc__
    )
    runtime_options.add_db(parser)
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.set_defaults(handler=run)
