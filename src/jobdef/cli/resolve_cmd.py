"""``jobdef resolve ID --note TEXT``: close a dead job that an operator handled."""

from __future__ import annotations

import argparse

from jobdef.cli import runtime_options
from jobdef.cli.options import JobIds, plain
from jobdef.errors import UsageError


def run(args: argparse.Namespace) -> int:
    backend = runtime_options.backend(args)
    try:
        record = backend.get(args.id)
        ok = backend.resolve(args.id, args.note)
    finally:
        backend.close()
    if not ok:
        state = record.state if record else "missing"
        raise UsageError(f"job {args.id} is {state}, not dead; only dead jobs can be resolved")
    print(f"job {args.id} resolved")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("resolve", help="close a dead job", description=plain(__doc__))
    parser.add_argument("id", action=JobIds, help="the id of the dead job (see jobdef jobs)")
    parser.add_argument("--note", required=True, help="what was done about it")
    runtime_options.add_db(parser)
    parser.set_defaults(handler=run)
