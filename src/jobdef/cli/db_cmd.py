"""``jobdef db upgrade``: create the job database or bring its schema to the newest migration."""

from __future__ import annotations

import argparse

from jobdef.cli import runtime_options
from jobdef.errors import UsageError


def run(args: argparse.Namespace) -> int:
    if args.action != "upgrade":
        raise UsageError("say what to do: jobdef db upgrade")
    backend = runtime_options.backend(args, create=True)
    backend.close()
    print(f"job database {runtime_options.config(args).database} is up to date")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("db", help="manage the job database", description=__doc__)
    parser.add_argument("action", choices=["upgrade"], help="upgrade: apply new migrations")
    runtime_options.add_db(parser)
    parser.set_defaults(handler=run)
