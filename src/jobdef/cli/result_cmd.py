"""``jobdef result ID|TOKEN``: a job's state as its receipt shows it, and what its handler
returned once it is done: one line, or ``--format json``. A flow's receipt token (from
``jobdef start``) shows the flow's state and its steps'."""

from __future__ import annotations

import argparse

from jobdef.cli import runtime_options
from jobdef.cli.options import add_format, plain
from jobdef.cli.receipt_lines import (
    add_target,
    as_json,
    flow_json,
    flow_line,
    line,
    open_queue,
    target,
    unknown,
)


def run(args: argparse.Namespace) -> int:
    found = target(args.target)
    queue = open_queue(args)
    try:
        status = queue.status(found)
        flow = queue.flow(found) if status is None and isinstance(found, str) else None
    finally:
        queue.close()
    if flow is not None:
        print(flow_json(flow) if args.format == "json" else flow_line(flow))
        return 0
    if status is None:
        raise unknown(found)
    print(as_json(status) if args.format == "json" else line(status))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "result",
        help="a job's state and, once done, its result (by id or receipt token)",
        description=plain(__doc__),
    )
    add_target(parser)
    add_format(parser)
    runtime_options.add_db(parser)
    runtime_options.add_sheets(parser, purpose="that give the job's title")
    parser.set_defaults(handler=run)
