"""``jobdef explain NAME``: what one job will do, each value with where it came from; for a
workflow, its steps, what each waits for and what its failure does, and its worst case."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

from jobdef.cli.lease_option import add_lease, lease_from
from jobdef.cli.options import add_lang, add_sheets, add_templates, config_from, registry_from
from jobdef.render.explain import FORMATS, explain
from jobdef.render.flow import explain_flow


def run(args: argparse.Namespace) -> int:
    lease = lease_from(args)
    config = config_from(args)
    registry = registry_from(config)
    registry.known(args.name)
    if args.name in registry.workflows:
        sys.stdout.write(
            explain_flow(
                registry.workflow(args.name),
                registry,
                args.format,
                lang=config.lang,
                templates=config.templates,
                base=config.root,
                lease=lease,
            )
        )
        return 0
    job = registry.job(args.name)
    text = explain(
        job,
        registry,
        args.format,
        lang=config.lang,
        templates=config.templates,
        base=config.root,
        now=args.now,
        lease=lease,
    )
    sys.stdout.write(text)
    return 0


def _instant(text: str) -> float:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time; write e.g. 2026-12-01T00:00+09:00"
        ) from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} has no UTC offset; add one, e.g. 2026-12-01T00:00+09:00 or ...Z"
        )
    return moment.timestamp()


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="show the effective policy of one job (values, origins, retry timeline) or "
        "one workflow (steps, edges, worst case)",
        description="Show the effective policy of one job: each value with the sheet or "
        "Defaults line it came from, the retry timeline (the schedule the worker follows), "
        "how each error class is treated, what happens when the worker dies, where a dead "
        "job goes, who is told, how to re-run it and how long rows are kept. For a workflow: "
        "each step with its job, what it waits for and what its failure does, and the flow's "
        "worst case along its longest path (markdown: its docs page).",
    )
    parser.add_argument("name", metavar="NAME", help="the job's or the workflow's name")
    add_sheets(parser)
    parser.add_argument(
        "--format", choices=FORMATS, default="text", help="output format (default: text)"
    )
    parser.add_argument(
        "--now",
        type=_instant,
        default=None,
        metavar="ISO",
        help="list a batch job's next runs after this time (ISO 8601 with offset, "
        "e.g. 2026-12-01T00:00+09:00; default: now)",
    )
    add_lease(
        parser,
        "the latest starts after a lost attempt (its worker died or froze), and a "
        "workflow's worst case, allow for it",
    )
    add_lang(parser)
    add_templates(parser)
    parser.set_defaults(handler=run)
