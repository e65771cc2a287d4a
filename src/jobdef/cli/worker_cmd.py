"""``jobdef worker``: run the jobs of the sheets until stopped (or, with --burst, drained)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from dataclasses import replace

from jobdef.cli import runtime_options
from jobdef.cli.config import add_pythonpath
from jobdef.cli.options import whole_number
from jobdef.cli.telemetry_options import add_telemetry_options, close_telemetry, worker_telemetry
from jobdef.errors import JobdefError
from jobdef.policy.durations import format_duration, format_wait, parse_duration
from jobdef.project import use_pythonpath
from jobdef.redact import url_secrets
from jobdef.runtime.settings import (
    MAX_ASYNC_PER_PROCESS,
    MAX_CONCURRENCY,
    MAX_PREFETCH,
    MAX_PREFETCH_MIB,
    WorkerOptionError,
    WorkerSettings,
    worker_id,
)
from jobdef.telemetry.logs import LogSettings, command_line, level_number
from jobdef.telemetry.logs import configure as configure_logs


def run(args: argparse.Namespace) -> int:
    wid = worker_id()
    # Before anything starts: a lease shorter than the heartbeats would let the worker
    # reclaim its own live jobs, and thousands of processes would swamp the host.
    settings = worker_settings(args, wid)
    # Where the handlers are imported from, by the start check and by the children.
    use_pythonpath(runtime_options.config(args))
    # A Django project's --db comes from its DATABASES: read it before the log settings,
    # so that its password is among the secrets no log line prints.
    if os.environ.get("DJANGO_SETTINGS_MODULE"):
        settings = replace(settings, child_setup=runtime_options.django_project(args))
    secrets = tuple(url_secrets(runtime_options.config(args).database))
    logs = LogSettings(level_number(args.log_level), args.log_format, wid, secrets)
    configure_logs(logs)
    try:
        return _work(args, logs, settings, wid)
    except JobdefError as exc:
        if logs.format != "json":
            raise
        # With JSON lines, every line is one: the error too (it may span several).
        line = f"jobdef worker: error: {exc.message}"
        print(command_line(logs, line, level=logging.ERROR), file=sys.stderr)
        return 2


# The flag of each WorkerSettings field that `jobdef worker` sets from one.
FLAGS = {
    "queues": "--queues",
    "concurrency": "--concurrency",
    "burst": "--burst",
    "lease_seconds": "--lease",
    "poll_interval": "--poll",
    "grace": "--grace",
    "prefetch": "--prefetch",
    "prefetch_mib": "--prefetch-mib",
    "async_per_process": "--async-per-process",
    "pipeline_turns": "--pipeline-turns",
}


def worker_settings(args: argparse.Namespace, wid: str) -> WorkerSettings:
    """The settings of the flags in ``args``; one out of bounds is one line naming its flag."""
    try:
        return WorkerSettings(
            queues=[q.strip() for q in args.queues.split(",") if q.strip()]
            if args.queues
            else None,
            concurrency=args.concurrency,
            burst=args.burst,
            lease_seconds=parse_duration(args.lease),
            poll_interval=parse_duration(args.poll),
            grace=parse_duration(args.grace),
            prefetch=args.prefetch,
            prefetch_mib=args.prefetch_mib,
            async_per_process=args.async_per_process,
            pipeline_turns=args.pipeline_turns,
            id=wid,
        )
    except WorkerOptionError as exc:
        raise exc.spelled(FLAGS.get(exc.option, exc.option)) from None


def _work(args: argparse.Namespace, logs: LogSettings, settings: WorkerSettings, wid: str) -> int:
    """The worker ``wid`` (``settings.id``) of ``args`` run to its end."""
    from jobdef.runtime.child import freeze_start
    from jobdef.runtime.handler_pool import child_settings, start_pool

    registry = runtime_options.registry(args)
    url = runtime_options.config(args).database
    with contextlib.ExitStack() as stack:
        telemetry = worker_telemetry(args, url)
        stack.callback(close_telemetry, telemetry)
        # The handler processes boot (a fresh interpreter each, importing the handlers)
        # while this one imports the worker and opens the store, not after. The worker
        # stops them as it ends; if it never runs, they hold nothing: they go at once.
        children = child_settings(
            url, registry, settings, worker_id=wid, log_format=telemetry.log_format
        )
        pool = start_pool(settings, children)
        stack.callback(pool.close, grace=0.0)
        from jobdef.runtime.worker import Worker  # here: its import overlaps their boot

        # --no-migrate: the tables must exist already (a role without DDL rights).
        backend = runtime_options.backend(
            args, create=not args.no_migrate, migrate=not args.no_migrate
        )
        stack.callback(backend.close)
        worker = Worker(backend, registry, settings, telemetry=telemetry)
        if args.own_process:  # main called in-process leaves its caller's objects collectable
            freeze_start()
        stats = worker.run(pool)
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
    print(command_line(logs, summary, **counts), flush=True)
    if args.burst and stats.waiting and stats.next_due is not None:
        wait = max(0.0, stats.next_due - time.time())
        line = (
            f"{stats.waiting} retried job(s) still queued: the first next attempt is due in "
            f"{format_wait(wait)}; run the worker again "
            "then, or without --burst to wait for it"
        )
        print(command_line(logs, line, waiting=stats.waiting, next_due=stats.next_due))
    if worker.failure is not None:
        # The drain went well, but the deployment did not: say so, as a failed command.
        line = f"jobdef worker: error: {worker.failure}"
        print(command_line(logs, line, level=logging.ERROR), file=sys.stderr)
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
        "signal stops at once: running handlers are killed and each recorded as a failed "
        "attempt (the sheet decides on a retry), jobs not yet started are released; none is "
        "lost.",
    )
    runtime_options.add_db(parser)
    runtime_options.add_sheets(parser)
    add_pythonpath(parser)
    defaults = WorkerSettings()
    parser.add_argument("--queues", metavar="A,B", help="only these queues (default: all)")
    parser.add_argument(
        "--concurrency",
        type=_positive,
        default=defaults.concurrency,
        help=f"handler processes, 1 to {MAX_CONCURRENCY} (default: {defaults.concurrency})",
    )
    parser.add_argument("--burst", action="store_true", help="exit when nothing is runnable")
    parser.add_argument(
        "--prefetch",
        type=whole_number(1, MAX_PREFETCH),
        default=defaults.prefetch,
        help=f"jobs handed ahead to each handler process, 1 to {MAX_PREFETCH:,}, which is all "
        "a worker claims ahead (on a deep backlog; it claims two per process when the "
        "backlog is shallow); jobs stuck behind a slow one are taken back after 0.5s "
        f"(default: {defaults.prefetch})",
    )
    parser.add_argument(
        "--prefetch-mib",
        type=whole_number(1, MAX_PREFETCH_MIB),
        default=defaults.prefetch_mib,
        metavar="MIB",
        help="the most MiB of args the jobs a worker holds carry, about: its claims stop "
        "growing there on a backlog of jobs with large args (never below two jobs per "
        "process, nor below --async-per-process, which it then never passes; "
        f"default: {defaults.prefetch_mib})",
    )
    parser.add_argument(
        "--async-per-process",
        type=whole_number(1, MAX_ASYNC_PER_PROCESS),
        default=defaults.async_per_process,
        metavar="N",
        help="async def handlers each handler process runs at once on its event loop, "
        f"1 to {MAX_ASYNC_PER_PROCESS:,}; the sheet's timeout cancels one, and one that "
        "blocks the loop past its timeout gets its process killed with the jobs beside it; "
        "sync handlers still run one per process, and --prefetch does not apply "
        f"(default: {defaults.async_per_process}: one job at a time per process)",
    )
    parser.add_argument(
        "--pipeline-turns",
        action=argparse.BooleanOptionalAction,
        default=defaults.pipeline_turns,
        help="on a PostgreSQL store, send each turn without waiting for its answer while "
        "the handler processes have work, and the next one as soon as the answer says how "
        "many jobs it brings (default: on; --no-pipeline-turns waits for each answer)",
    )
    parser.add_argument(
        "--no-migrate",
        action="store_true",
        help="do not create or upgrade the job tables at start (run `jobdef db upgrade`)",
    )
    lease, grace, poll = (
        format_duration(seconds)
        for seconds in (defaults.lease_seconds, defaults.grace, defaults.poll_interval)
    )
    parser.add_argument(
        "--lease", default=lease, help=f"lease length (default {lease}; at least 1s)"
    )
    parser.add_argument(
        "--grace", default=grace, help=f"drain time after SIGTERM (default: {grace})"
    )
    parser.add_argument(
        "--poll",
        default=poll,
        help=f"idle poll interval (default: {poll}); on PostgreSQL, while LISTEN wakes the "
        "worker, it polls only about every second; with ?wake=poll in the URL (behind "
        "PgBouncer in transaction mode) it polls at this interval",
    )
    add_telemetry_options(parser)
    parser.set_defaults(handler=run)
