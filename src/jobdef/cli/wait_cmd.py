"""``jobdef wait ID|TOKEN``: wait until a job has ended, then print it as ``jobdef result``
does. Exit 0 when it is done, 1 when it is dead, failed or cancelled, 2 when
``--timeout`` passed first (the line says its state then), or for an unknown job.
A flow's receipt token waits for the flow's end: 0 done, 1 failed or cancelled."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

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
from jobdef.errors import UsageError
from jobdef.policy.durations import format_duration, parse_duration_or_none
from jobdef.render.escape import clip

if TYPE_CHECKING:
    from jobdef.runtime.queue import Queue

EXIT_DONE = 0
EXIT_ENDED_OTHERWISE = 1
EXIT_TIMEOUT = 2
DEFAULT_TIMEOUT = "30s"
# How often a wait for a flow reads it (a flow ends with its last step's commit).
FLOW_POLL = 0.2


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
        flow = queue.flow(found) if isinstance(found, str) else None
        status = queue.wait(found, timeout) if flow is None else None
        if flow is not None:
            return _wait_flow(args, queue, flow.id, timeout)
    finally:
        queue.close()
    if status is None:
        raise unknown(found)
    timed_out = not status.ended
    text = as_json(status, timed_out=timed_out) if args.format == "json" else line(status)
    return _report(args, text, timed_out, timeout, status.state)


def _wait_flow(args: argparse.Namespace, queue: Queue, flow_id: int, timeout: float) -> int:
    """Wait for a flow's end by reading it every ``FLOW_POLL`` seconds."""
    limit = time.monotonic() + timeout
    while True:
        flow = queue.flow(flow_id)
        if flow is None:
            raise UsageError(f"flow {flow_id} is gone (deleted while waited for)")
        if flow.ended or time.monotonic() >= limit:
            break
        time.sleep(min(FLOW_POLL, max(0.0, limit - time.monotonic())))
    timed_out = not flow.ended
    text = flow_json(flow, timed_out=timed_out) if args.format == "json" else flow_line(flow)
    return _report(args, text, timed_out, timeout, flow.state)


def _report(
    args: argparse.Namespace, text: str, timed_out: bool, timeout: float, state: str
) -> int:
    """Print the job's or flow's ``text`` (a plain line says the wait timed out) and
    return the exit status its ``state`` gives."""
    if timed_out and args.format != "json":
        text = f"{text}; not ended after {format_duration(timeout)}"
    print(text)
    if timed_out:
        return EXIT_TIMEOUT
    return EXIT_DONE if state == "done" else EXIT_ENDED_OTHERWISE


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
