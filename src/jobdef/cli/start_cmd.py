"""``jobdef start FLOW --args JSON``: start one workflow, validated against its sheet."""

from __future__ import annotations

import argparse

from jobdef.cli import runtime_options
from jobdef.cli.enqueue_cmd import json_args


def run(args: argparse.Namespace) -> int:
    from jobdef.runtime.queue import Queue

    values = json_args(args.args, '{"order_id": 42}')
    registry = runtime_options.registry(args)
    # Like every operator command it creates nothing: a mistyped --db is one line
    # saying to run `jobdef db upgrade`, not a new empty store.
    queue = Queue(runtime_options.backend(args), registry)
    try:
        result = queue.start(args.name, values)
    finally:
        queue.close()
    if result.created:
        print(f"started flow {result.id} ({args.name}), receipt {result.token}")
    else:
        print(
            f"flow {result.id} ({args.name}) with the same idempotency key is already there, "
            f"receipt {result.token}"
        )
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "start",
        help="start a workflow (args validated against its sheet)",
        description="Start one workflow: the flow and every step are stored in one "
        "transaction, the first steps queued and the others waiting for their parents. "
        "Its args are validated against the sheet's `args`; bad args store nothing. A "
        "start whose idempotency key matches a running flow returns that flow. Prints "
        "the flow's id and its receipt token (see jobdef result, jobdef wait).",
    )
    parser.add_argument("name", help="the workflow's name in its sheet")
    parser.add_argument(
        "--args", default="{}", help="the flow's args as a JSON object (default: {}, no args)"
    )
    runtime_options.add_db(parser)
    runtime_options.add_sheets(parser)
    parser.set_defaults(handler=run)
