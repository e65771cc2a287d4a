"""``jobdef cancel ID``: cancel a queued job before it runs."""

from __future__ import annotations

import argparse

from jobdef.cli import runtime_options
from jobdef.cli.options import JobIds, plain
from jobdef.errors import UsageError


def run(args: argparse.Namespace) -> int:
    backend = runtime_options.backend(args)
    try:
        record = backend.get(args.id)
        ok = backend.cancel(args.id)
    finally:
        backend.close()
    if not ok:
        state = record.state if record else "missing"
        raise UsageError(f"job {args.id} is {state}; only queued jobs can be cancelled")
    print(f"job {args.id} cancelled")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("cancel", help="cancel a queued job", description=plain(__doc__))
    parser.add_argument("id", action=JobIds, help="the id of the queued job (see jobdef jobs)")
    runtime_options.add_db(parser)
    parser.set_defaults(handler=run)
