"""``jobdef wait ID|TOKEN``: wait until a job has ended, then print it as ``jobdef result``
does. Exit 0 when it is done, 1 when it is dead, failed or cancelled, 2 when
``--timeout`` passed first (the line says its state then), or for an unknown job."""

from __future__ import annotations

import argparse

from jobdef.cli import runtime_options
from jobdef.cli.options import add_format, plain
from jobdef.cli.receipt_lines import add_target, as_json, line, open_queue, target, unknown
from jobdef.errors import UsageError
from jobdef.policy.durations import format_duration, parse_duration_or_none
from jobdef.render.escape import clip

EXIT_DONE = 0
EXIT_ENDED_OTHERWISE = 1
EXIT_TIMEOUT = 2
DEFAULT_TIMEOUT = "30s"


def run(args: argparse.Namespace) -> int:
    found = target(args.target)
    timeout = parse_duration_or_none(args.timeout)
    if timeout is None or not 0 <= timeout < float("inf"):
        raise UsageError(
            f"--timeout {clip(args.timeout, 40)!r} is not a duration; write how long to wait, "
            f"e.g. --timeout 5m (default {DEFAULT_TIMEOUT})"
        )
    queue = open_queue(args)
    try:
        status = queue.wait(found, timeout)
    finally:
        queue.close()
    if status is None:
        raise unknown(found)
    timed_out = not status.ended
    if args.format == "json":
        print(as_json(status, timed_out=timed_out))
    elif timed_out:
        print(f"{line(status)}; not ended after {format_duration(timeout)}")
    else:
        print(line(status))
    if timed_out:
        return EXIT_TIMEOUT
    return EXIT_DONE if status.state == "done" else EXIT_ENDED_OTHERWISE


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "wait",
        help="wait until a job has ended (exit 0 done, 1 dead/failed/cancelled, 2 timeout)",
        description=plain(__doc__),
    )
    add_target(parser)
    parser.add_argument(
        "--timeout",
        metavar="DURATION",
        default=DEFAULT_TIMEOUT,
        help=f"how long to wait at most, e.g. 5m (default: {DEFAULT_TIMEOUT})",
    )
    add_format(parser)
    runtime_options.add_db(parser)
    runtime_options.add_sheets(parser, purpose="that give the job's title")
    parser.set_defaults(handler=run)
