"""``jobdef requeue``: queue dead jobs again, attempts back to 0, history kept."""

from __future__ import annotations

import argparse

from jobdef.cli import runtime_options
from jobdef.cli.options import JobIds
from jobdef.cli.runtime_options import JOB_STATES
from jobdef.errors import UsageError


def run(args: argparse.Namespace) -> int:
    if not args.ids and not args.job:
        raise UsageError("name jobs to requeue: jobdef requeue ID ... or --job NAME --state dead")
    backend = runtime_options.backend(args)
    try:
        count = backend.requeue(args.ids, job=args.job, state=args.state)
    finally:
        backend.close()
    print(f"requeued {count} job{'s' if count != 1 else ''}")
    return 0 if count else 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "requeue", help="queue dead jobs again (attempts back to 0)", description=__doc__
    )
    parser.add_argument("ids", nargs="*", action=JobIds, help="job ids")
    parser.add_argument("--job", metavar="NAME", help="every job of this name in --state")
    parser.add_argument(
        "--state",
        default="dead",
        choices=[s for s in JOB_STATES if s not in ("queued", "running", "done")],
    )
    runtime_options.add_db(parser)
    parser.set_defaults(handler=run)
