"""``jobdef requeue``: queue dead jobs again, attempts back to 0, history kept."""

from __future__ import annotations

import argparse

from jobdef.cli import runtime_options
from jobdef.cli.options import JobIds, plain
from jobdef.cli.runtime_options import JOB_STATES
from jobdef.errors import UsageError


def run(args: argparse.Namespace) -> int:
    if not args.ids and not args.job:
        raise UsageError("name jobs to requeue: jobdef requeue ID ... or --job NAME --state dead")
    if args.job:
        runtime_options.note_unknown_job(args, args.job)
    backend = runtime_options.backend(args)
    try:
        count = backend.requeue(args.ids, job=args.job, state=args.state)
    finally:
        backend.close()
    print(f"requeued {count} job{'s' if count != 1 else ''}")
    return 0 if count else 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "requeue", help="queue dead jobs again (attempts back to 0)", description=plain(__doc__)
    )
    parser.add_argument(
        "ids", nargs="*", action=JobIds, help="job ids (default: none; then --job is needed)"
    )
    parser.add_argument(
        "--job",
        metavar="NAME",
        help="every job of this name in --state (default: only the jobs given by id)",
    )
    parser.add_argument(
        "--state",
        default="dead",
        choices=[s for s in JOB_STATES if s not in ("queued", "running", "done")],
        help="the state the --job jobs are taken from (default: dead)",
    )
    runtime_options.add_db(parser)
    runtime_options.add_sheets(parser, purpose="that --job is checked against")
    parser.set_defaults(handler=run)
