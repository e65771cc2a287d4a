"""``jobdef prune``: delete finished jobs past their sheet's retention, then the ended
flows none of whose steps remain (workers also do this)."""

from __future__ import annotations

import argparse

from jobdef.cli import runtime_options
from jobdef.cli.options import plain, whole_number


def run(args: argparse.Namespace) -> int:
    from jobdef.runtime.maintenance.retention import retention_rules

    rules = retention_rules(runtime_options.registry(args))
    backend = runtime_options.backend(args)
    try:
        count = backend.prune(rules, args.batch_size, dry_run=args.dry_run)
        # After the jobs: a flow whose last steps this run deleted goes in the same run
        # (a dry run counts only the flows with no step left now).
        flows = backend.prune_flows(args.batch_size, dry_run=args.dry_run)
    finally:
        backend.close()
    verb = "would delete" if args.dry_run else "deleted"
    print(f"{verb} {count} finished job{'s' if count != 1 else ''} past retention")
    print(f"{verb} {flows} ended flow{'s' if flows != 1 else ''} with no step left")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "prune", help="delete jobs past retention", description=plain(__doc__)
    )
    parser.add_argument("--dry-run", action="store_true", help="only count")
    parser.add_argument(
        "--batch-size",
        type=whole_number(1, 100_000),
        default=1000,
        help="rows deleted per transaction, 1 to 100,000, so a large prune never holds a "
        "long lock (default: 1000)",
    )
    runtime_options.add_db(parser)
    runtime_options.add_sheets(parser)
    parser.set_defaults(handler=run)
