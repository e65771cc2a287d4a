"""``jobdef queues``: list queues, pause and resume them while workers run.

A pause is a row in the job store; running workers read it at their next claim,
so it takes effect without a restart. Jobs already running finish; queued jobs
stay queued until ``jobdef queues resume NAME``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

from jobdef.backends.base import Backend, QueueInfo
from jobdef.config import Config, load_config
from jobdef.durations import format_duration
from jobdef.errors import UsageError
from jobdef.policy import QueuePolicy
from jobdef.registry import Registry


def _rate(per_second: float | None) -> str:
    if per_second is None:
        return "-"
    for unit, seconds in (("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        count = per_second * seconds
        if abs(count - round(count)) < 1e-9 and round(count) >= 1:
            return f"{round(count)}/{unit}"
    return f"{per_second:g}/s"


def queue_rows(
    infos: Sequence[QueueInfo],
    policies: Mapping[str, QueuePolicy],
    known: Sequence[str] = (),
    lang: str = "en",
) -> list[list[str]]:
    """Rows of the queue table: one per queue seen in the store, the sheets or ``known``."""
    live = {info.queue: info for info in infos}
    rows = [["QUEUE", "STATE", "QUEUED", "RUNNING", "OLDEST WAIT", "CONCURRENCY", "RATE"]]
    for name in sorted(set(live) | set(policies) | set(known)):
        info = live.get(name, QueueInfo(queue=name, paused=False))
        policy = policies.get(name)
        concurrency = policy.concurrency if policy else info.concurrency
        oldest = info.oldest_queued_age
        rows.append(
            [
                name,
                "paused" if info.paused else "active",
                str(info.queued),
                str(info.running),
                "-" if oldest is None else format_duration(max(0.0, oldest), lang),
                "-" if concurrency is None else str(concurrency),
                _rate(policy.rate if policy else None),
            ]
        )
    return rows


def format_table(rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns separated by two spaces."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _registry(config: Config) -> Registry | None:
    """The sheets' registry, or None when there are no sheets to read (the store still answers)."""
    from pathlib import Path

    from jobdef.registry import load_registry

    if not Path(config.sheets).exists():
        return None
    return load_registry([config.sheets])


def _open(config: Config) -> Backend:
    from jobdef.backends import open_backend

    return open_backend(config.database, create=False)


def _known_queues(registry: Registry | None) -> list[str]:
    if registry is None:
        return []
    return sorted(set(registry.queues) | {job.queue for job in registry})


def run_list(args: argparse.Namespace) -> int:
    config = load_config({"database": args.database, "sheets": args.sheets})
    registry = _registry(config)
    backend = _open(config)
    try:
        infos = backend.queues()
    finally:
        backend.close()
    policies = registry.queues if registry else {}
    print(format_table(queue_rows(infos, policies, _known_queues(registry), config.lang)))
    return 0


def run_set_paused(args: argparse.Namespace) -> int:
    paused = args.action == "pause"
    config = load_config({"database": args.database, "sheets": args.sheets})
    registry = _registry(config)
    backend = _open(config)
    try:
        known = set(_known_queues(registry)) | {info.queue for info in backend.queues()}
        if args.name not in known:
            raise UsageError(
                f"no queue named {args.name!r} in the sheets or the job store "
                f"(queues: {', '.join(sorted(known)) or 'none'}); check the spelling"
            )
        backend.set_paused(args.name, paused)
    finally:
        backend.close()
    verb = "paused" if paused else "resumed"
    follow = (
        f"workers stop claiming from it at their next claim; "
        f"`jobdef queues resume {args.name}` to undo"
        if paused
        else "workers claim from it again at their next claim"
    )
    print(f"queue {args.name} {verb}: {follow}")
    return 0


def _add_common(parser: argparse.ArgumentParser, *, nested: bool = False) -> None:
    # On an action the options may also follow the action; SUPPRESS keeps an
    # absent one from overwriting a value given before the action.
    default = argparse.SUPPRESS if nested else None
    parser.add_argument(
        "--db",
        dest="database",
        metavar="URL",
        default=default,
        help="job store URL (default: from config)",
    )
    parser.add_argument(
        "--sheets", metavar="PATH", default=default, help="sheets folder (default: from config)"
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "queues",
        help="list queues; pause or resume one without restarting workers",
        description="List queues with their depth, running jobs, oldest wait, pause state "
        "and the limits their Queue documents set; `pause NAME` stops workers from "
        "claiming jobs of the queue (running jobs finish), `resume NAME` undoes it.",
    )
    _add_common(parser)
    parser.set_defaults(handler=run_list)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    listing = actions.add_parser("list", help="list queues (the default)")
    _add_common(listing, nested=True)
    listing.set_defaults(handler=run_list)
    for action, text in (
        ("pause", "stop claiming from the queue NAME"),
        ("resume", "claim from the queue NAME again"),
    ):
        sub = actions.add_parser(action, help=text, description=text + ".")
        sub.add_argument("name", metavar="NAME", help="queue name")
        _add_common(sub, nested=True)
        sub.set_defaults(handler=run_set_paused)
