"""``jobdef worker``: run the jobs of the sheets until stopped (or, with --burst, drained)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

from jobdef.cli import runtime_options
from jobdef.cli.config import add_pythonpath
from jobdef.cli.options import whole_number
from jobdef.cli.telemetry_options import add_telemetry_options, close_telemetry, worker_telemetry
from jobdef.errors import JobdefError
from jobdef.policy.durations import format_duration, format_wait, parse_duration
from jobdef.policy.leases import DEFAULT_LEASE
from jobdef.project import use_pythonpath
from jobdef.redact import url_secrets
from jobdef.telemetry.logs import LogSettings, command_line, level_number
from jobdef.telemetry.logs import configure as configure_logs


def run(args: argparse.Namespace) -> int:
    from jobdef.runtime.settings import check_options
    from jobdef.runtime.worker import worker_id

    lease, poll = parse_duration(args.lease), parse_duration(args.poll)
    # Before anything starts: a lease shorter than the heartbeats would let the worker
    # reclaim its own live jobs, and thousands of processes would swamp the host.
    check_options(args.concurrency, lease, names=("--concurrency", "--lease"))
    # Where the handlers are imported from, by the start check and by the children.
    use_pythonpath(runtime_options.config(args))
    # A Django project's --db comes from its DATABASES: read it before the log settings,
    # so that its password is among the secrets no log line prints.
    child_setup = (
        runtime_options.django_project(args) if os.environ.get("DJANGO_SETTINGS_MODULE") else None
    )
    wid = worker_id()
    secrets = tuple(url_secrets(runtime_options.config(args).database))
    settings = LogSettings(level_number(args.log_level), args.log_format, wid, secrets)
    configure_logs(settings)
    try:
        return _work(args, settings, wid, (lease, poll), child_setup)
    except JobdefError as exc:
        if settings.format != "json":
            raise
        # With JSON lines, every line is one: the error too (it may span several).
        line = f"jobdef worker: error: {exc.message}"
        print(command_line(settings, line, level=logging.ERROR), file=sys.stderr)
        return 2


def _work(
    args: argparse.Namespace,
    settings: LogSettings,
    wid: str,
    timing: tuple[float, float],
    child_setup: str | None,
) -> int:
    """The worker of ``args`` run to its end; ``timing``: its lease and poll, seconds."""
    from jobdef.runtime.worker import Worker

    lease, poll = timing
    registry = runtime_options.registry(args)
    url = runtime_options.config(args).database
    telemetry = worker_telemetry(args, wid, url)
    # --no-migrate: the tables must exist already (a role without DDL rights).
    try:
        backend = runtime_options.backend(
            args, create=not args.no_migrate, migrate=not args.no_migrate
        )
    except BaseException:
        close_telemetry(telemetry)
        raise
    worker = Worker(
        backend,
        registry,
        database_url=url,
        queues=[q.strip() for q in args.queues.split(",") if q.strip()] if args.queues else None,
        concurrency=args.concurrency,
        burst=args.burst,
        lease_seconds=lease,
        grace=parse_duration(args.grace),
        poll_interval=poll,
        depth=args.prefetch,
        worker_id_=wid,
        telemetry=telemetry,
        child_setup=child_setup,
    )
    try:
        stats = worker.run()
    finally:
        backend.close()
        close_telemetry(telemetry)
    counts = {
        "done": stats.done,
        "retried": stats.retried,
        "dead": stats.dead,
        "released": stats.released,
        "late_writes_refused": stats.refused,
    }
    summary = (
        f"worker {worker.id}: {stats.done} done, {stats.retried} retried, {stats.dead} dead, "
        f"{stats.released} released, {stats.refused} late writes refused"
    )
    print(command_line(settings, summary, **counts), flush=True)
    if args.burst and stats.waiting and stats.next_due is not None:
        wait = max(0.0, stats.next_due - time.time())
        line = (
            f"{stats.waiting} retried job(s) still queued: the first next attempt is due in "
            f"{format_wait(wait)}; run the worker again "
            "then, or without --burst to wait for it"
        )
        print(command_line(settings, line, waiting=stats.waiting, next_due=stats.next_due))
    if worker.failure is not None:
        # The drain went well, but the deployment did not: say so, as a failed command.
        line = f"jobdef worker: error: {worker.failure}"
        print(command_line(settings, line, level=logging.ERROR), file=sys.stderr)
        return 1
    return 0


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer of 1 or more, got {text}")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "worker",
        help="run jobs with the policy of their sheets",
        description="Claim jobs, run their handlers in child processes with the sheet's "
        "timeout, retry or bury failures per the sheet. SIGTERM/SIGINT drains; a second "
        "signal stops at once (running jobs are released, never lost).",
    )
    runtime_options.add_db(parser)
    runtime_options.add_sheets(parser)
    add_pythonpath(parser)
    parser.add_argument("--queues", metavar="A,B", help="only these queues (default: all)")
    parser.add_argument(
        "--concurrency",
        type=_positive,
        default=1,
        help="handler processes, 1 to 256 (default: 1)",
    )
    parser.add_argument("--burst", action="store_true", help="exit when nothing is runnable")
    parser.add_argument(
        "--prefetch",
        type=whole_number(1, 10_000),
        default=32,
        help="jobs handed ahead to each handler process, 1 to 10,000, which is all a "
        "worker claims ahead; jobs stuck behind a slow one are taken back after 0.5s "
        "(default: 32)",
    )
    parser.add_argument(
        "--no-migrate",
        action="store_true",
        help="do not create or upgrade the job tables at start (run `jobdef db upgrade`)",
    )
    parser.add_argument(
        "--lease",
        default=format_duration(DEFAULT_LEASE),
        help=f"lease length (default {format_duration(DEFAULT_LEASE)}; at least 1s)",
    )
    parser.add_argument("--grace", default="10s", help="drain time after SIGTERM (default: 10s)")
    parser.add_argument("--poll", default="250ms", help="idle poll interval (default: 250ms)")
    add_telemetry_options(parser)
    parser.set_defaults(handler=run)
