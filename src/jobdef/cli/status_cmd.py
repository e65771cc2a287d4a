"""``jobdef status``: how many jobs per job and state, and how long the oldest one waits.

Then one row per queue: depth, running jobs, oldest wait, pause state, and the
limits its ``Queue`` document sets (when the sheets folder is found); the flows
per workflow and state, when there are any (their steps are among the jobs above,
``waiting`` the ones held for their parents). Last, the outbox: notifications
waiting for delivery, and failed deliveries, per channel.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict

from jobdef.cli import runtime_options
from jobdef.cli.options import add_format, plain
from jobdef.cli.queues_cmd import queue_facts, queue_table, sheets_if_any
from jobdef.cli.runtime_options import human_age, table
from jobdef.render.escape import visible


def run(args: argparse.Namespace) -> int:
    from jobdef.notify.status import outbox_lines, outbox_status

    backend = runtime_options.backend(args)
    try:
        counts = backend.stats()
        queues = backend.queues()
        flows = backend.flow_counts()
        outbox = outbox_status(backend, time.time())
    finally:
        backend.close()
    registry = sheets_if_any(args)
    if args.format == "json":  # the same facts as the text: the queues' limits included
        print(
            json.dumps(
                {
                    "jobs": [asdict(c) for c in counts],
                    "queues": queue_facts(queues, registry, idle=False),
                    "flows": [
                        {"flow": name, "state": state, "count": count}
                        for name, state, count in flows
                    ],
                    "outbox": outbox.as_json(),
                }
            )
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
    section = queue_table(queues, registry, idle=False)
    if section:
        print(f"\n{section}")
    if flows:
        rows = [["FLOW", "STATE", "COUNT"]]
        rows += [[name, state, str(count)] for name, state, count in flows]
        print(f"\n{table(rows)}")
    if outbox.channels:  # quiet while every notification is delivered
        print("\n" + "\n".join(visible(line) for line in outbox_lines(outbox)))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "status", help="job counts per job and state", description=plain(__doc__)
    )
    runtime_options.add_db(parser)
    runtime_options.add_sheets(parser, purpose="that give the queues' limits")
    add_format(parser)
    parser.set_defaults(handler=run)
