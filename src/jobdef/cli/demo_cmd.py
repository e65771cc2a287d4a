"""``jobdef demo``: run the example sheets for real and print what happened."""

from __future__ import annotations

import argparse
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    from jobdef.examples.demo import run_demo
    from jobdef.project import load_config, use_pythonpath

    use_pythonpath(load_config({"pythonpath": args.pythonpath}))  # as jobdef worker does
    folder = None
    if args.keep:
        folder = Path(args.keep).resolve()
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("demo.db*"):
            stale.unlink()
    return 0 if run_demo(folder) else 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="watch the example sheets drive real workers (retries, dead jobs, kills)",
        description="Run the example sheets on a fresh SQLite file with real worker "
        "processes: retries, a fatal error, a worker killed mid-job, two workers at once.",
    )
    parser.add_argument(
        "--keep",
        metavar="DIR",
        help="work in DIR and keep it afterwards (default: a temporary folder, removed at the end)",
    )
    from jobdef.cli.config import add_pythonpath

    add_pythonpath(parser)
    parser.set_defaults(handler=run)
