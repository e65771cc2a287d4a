"""``jobdef queues``: list queues, pause and resume them while workers run.

A pause is a row in the job store; running workers read it at their next claim,
so it takes effect without a restart. Jobs already running finish; queued jobs
stay queued until ``jobdef queues resume NAME``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobdef.cli import runtime_options
from jobdef.cli.options import add_format
from jobdef.cli.runtime_options import human_age, table
from jobdef.errors import SheetError, UsageError
from jobdef.policy.registry import Registry
from jobdef.render.escape import clip
from jobdef.sheets.pipeline import load_registry

if TYPE_CHECKING:
    from jobdef.backends.records import QueueInfo


def format_rate(per_second: float | None) -> str:
    """``100/m`` back from starts per second; ``-`` for no limit."""
    if per_second is None:
        return "-"
    for unit, seconds in (("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        count = per_second * seconds
        if abs(count - round(count)) < 1e-9 and round(count) >= 1:
            return f"{round(count)}/{unit}"
    return f"{per_second:g}/s"


def queue_names(registry: Registry | None) -> set[str]:
    """Queues the sheets know: those with a ``Queue`` document and those jobs name."""
    if registry is None:
        return set()
    return set(registry.queues) | {job.queue for job in registry}


def queue_facts(
    infos: Sequence[QueueInfo], registry: Registry | None, *, idle: bool = True
) -> list[dict[str, Any]]:
    """One entry per queue: the store's live state and the limits of its ``Queue``
    document, as the table and ``--format json`` both show them. ``idle=False`` leaves
    out queues that only the sheets name: the store has no job of theirs and they are
    not paused."""
    from jobdef.backends.records import QueueInfo
    from jobdef.backends.verbs import QUEUED_COUNT_CAP

    live = {info.queue: info for info in infos}
    policies = registry.queues if registry is not None else {}
    facts = []
    for name in sorted(set(live) | (queue_names(registry) if idle else set())):
        info = live.get(name, QueueInfo(queue=name, paused=False))
        policy = policies.get(name)
        rate = policy.rate if policy else None
        facts.append(
            {
                "queue": name,
                "paused": info.paused,
                "queued": info.queued,
                # The store counts a queue's queued jobs up to QUEUED_COUNT_CAP only.
                "queued_at_least": info.queued >= QUEUED_COUNT_CAP,
                "running": info.running,
                "oldest_queued_age": info.oldest_queued_age,
                "concurrency": policy.concurrency if policy else None,
                "rate_per_second": rate,
                "rate": None if rate is None else format_rate(rate),
            }
        )
    return facts


def queue_table(infos: Sequence[QueueInfo], registry: Registry | None, *, idle: bool = True) -> str:
    """Depth, running jobs, oldest wait, pause state and limits, one row per queue
    ("" when there is none); see :func:`queue_facts`. A depth the store stopped
    counting at its cap reads ``100000+``."""
    rows = [["QUEUE", "STATE", "QUEUED", "RUNNING", "OLDEST WAITING", "CONCURRENCY", "RATE"]]
    for fact in queue_facts(infos, registry, idle=idle):
        rows.append(
            [
                fact["queue"],
                "paused" if fact["paused"] else "active",
                f"{fact['queued']}+" if fact["queued_at_least"] else str(fact["queued"]),
                str(fact["running"]),
                human_age(fact["oldest_queued_age"]),
                "-" if fact["concurrency"] is None else str(fact["concurrency"]),
                fact["rate"] or "-",
            ]
        )
    return table(rows) if len(rows) > 1 else ""


def sheets_if_any(args: argparse.Namespace) -> Registry | None:
    """The sheets, for the queues' names and limits; None when there are none to read.

    The store answers without them, so a missing folder or a sheet with errors
    costs only the limits columns (and a note on stderr), never the command.
    """
    folder = Path(runtime_options.config(args).sheets)
    if not folder.exists():
        return None
    try:
        return load_registry([folder])
    except SheetError as exc:
        first = exc.message.splitlines()[0]
        print(
            f"note: sheets in {folder} not read ({first}); queue limits not shown", file=sys.stderr
        )
        return None


def run_list(args: argparse.Namespace) -> int:
    registry = sheets_if_any(args)
    backend = runtime_options.backend(args)
    try:
        infos = backend.queues()
    finally:
        backend.close()
    if getattr(args, "format", "text") == "json":
        print(json.dumps({"queues": queue_facts(infos, registry)}, ensure_ascii=False))
        return 0
    print(queue_table(infos, registry))
    return 0


def run_set_paused(args: argparse.Namespace) -> int:
    paused = args.action == "pause"
    registry = sheets_if_any(args)
    backend = runtime_options.backend(args)
    try:
        known = queue_names(registry) | {info.queue for info in backend.queues()}
        if args.name not in known:
            raise UsageError(
                f"no queue named {clip(args.name, 60)!r} in the sheets or the job store "
                f"(queues: {', '.join(sorted(known)) or 'none'}); check the spelling, "
                "or pass --sheets DIR with the sheets that name it"
            )
        backend.set_paused(args.name, paused)
    finally:
        backend.close()
    if paused:
        print(
            f"queue {args.name} paused: workers stop claiming from it at their next claim; "
            f"`jobdef queues resume {args.name}` to undo"
        )
    else:
        print(f"queue {args.name} resumed: workers claim from it again at their next claim")
    return 0


def _add_options(parser: argparse.ArgumentParser, *, nested: bool, listing: bool) -> None:
    runtime_options.add_db(parser)
    runtime_options.add_sheets(parser)
    if listing:
        add_format(parser)
    if nested:
        # Also accepted after the action; SUPPRESS keeps an absent one from
        # overwriting a value given before it.
        for action in parser._actions:
            if action.dest in ("db", "sheets", "format"):
                action.default = argparse.SUPPRESS


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "queues",
        help="list queues; pause or resume one without restarting workers",
        description="List queues with their depth, running jobs, oldest wait, pause state "
        "and the limits their Queue documents set; `pause NAME` stops workers from "
        "claiming jobs of the queue (running jobs finish), `resume NAME` undoes it.",
    )
    _add_options(parser, nested=False, listing=True)
    parser.set_defaults(handler=run_list)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    listing = actions.add_parser("list", help="list queues (the default)")
    _add_options(listing, nested=True, listing=True)
    listing.set_defaults(handler=run_list)
    for action, text in (
        ("pause", "stop claiming from the queue NAME"),
        ("resume", "claim from the queue NAME again"),
    ):
        sub = actions.add_parser(action, help=text, description=text + ".")
        sub.add_argument("name", metavar="NAME", help="queue name")
        _add_options(sub, nested=True, listing=False)
        sub.set_defaults(handler=run_set_paused)
