"""``jobdef enqueue NAME --args JSON``: put one job in, validated against its sheet."""

from __future__ import annotations

import argparse
import json
from typing import Any

from jobdef.cli import runtime_options
from jobdef.errors import ArgsError
from jobdef.policy.durations import parse_duration


def json_args(text: str, example: str) -> dict[str, Any]:
    """The ``--args`` of a command: a JSON object, or one line saying what to write."""
    try:
        values = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArgsError(
            f"--args is not JSON ({exc.msg} at column {exc.colno}); write e.g. --args '{example}'"
        ) from None
    except RecursionError:
        raise ArgsError(
            f"--args is nested too deep to read; write a flat JSON object, e.g. --args '{example}'"
        ) from None
    if not isinstance(values, dict):
        raise ArgsError(f"--args must be a JSON object such as '{example}'")
    return values


def run(args: argparse.Namespace) -> int:
    from jobdef.runtime.queue import Queue
    from jobdef.telemetry import enqueues

    values = json_args(args.args, '{"reservation_id": 42}')
    registry = runtime_options.registry(args)
    # Like every operator command it creates nothing: a mistyped --db is one line
    # saying to run `jobdef db upgrade`, not a new empty store.
    queue = Queue(runtime_options.backend(args), registry)
    try:
        delay = parse_duration(args.delay) if args.delay else None
        with enqueues.from_the_cli():
            result = queue.enqueue(args.name, values, delay=delay, priority=args.priority)
    finally:
        queue.close()
    # The receipt's token: what `jobdef result` and `jobdef wait` (and an application's
    # receipt page) take, where the id would let one guess other jobs.
    if result.created:
        print(f"enqueued job {result.id} ({args.name}), receipt {result.token}")
    else:
        print(
            f"job {result.id} ({args.name}) with the same idempotency key is already there, "
            f"receipt {result.token or '(none: its job was pruned)'}"
        )
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "enqueue",
        help="add a job (args validated against its sheet)",
        description="Add one job. Its args are validated against the sheet's `args`; "
        "bad args store nothing. A duplicate of an active job returns the existing one. "
        "Prints the job's id and its receipt token (see jobdef result, jobdef wait).",
    )
    parser.add_argument("name", help="the job's name in its sheet")
    parser.add_argument(
        "--args", default="{}", help="the args as a JSON object (default: {}, no args)"
    )
    parser.add_argument(
        "--delay", help="run no earlier than this from now, e.g. 5m (default: at once)"
    )
    parser.add_argument(
        "--priority", type=int, help="override the sheet's priority (default: the sheet's)"
    )
    runtime_options.add_db(parser)
    runtime_options.add_sheets(parser)
    parser.set_defaults(handler=run)
