"""``jobdef requeue``: queue dead jobs again, attempts back to 0, history kept."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from jobdef.cli import runtime_options
from jobdef.cli.options import JobIds, plain
from jobdef.cli.runtime_options import JOB_STATES
from jobdef.errors import UsageError


def run(args: argparse.Namespace) -> int:
    if not args.ids and not args.job:
        raise UsageError("name jobs to requeue: jobdef requeue ID ... or --job NAME --state dead")
    if args.job:
        runtime_options.note_unknown_job(args, args.job)
    backend = runtime_options.backend(args)
    try:
        others = _elsewhere(backend, args)
        count = backend.requeue(args.ids, job=args.job, state=args.state)
        if others:
            count += _through_runtimes(args, backend, others)
    finally:
        backend.close()
    print(f"requeued {count} job{'s' if count != 1 else ''}")
    return 0 if count else 1


def _through_runtimes(args: argparse.Namespace, backend: Any, records: list[Any]) -> int:
    """Send the jobs that died in Celery or RQ back through the application's object
    (``--app``, else ``[tool.jobdef] celery_app`` or ``rq_app``); a line for each job
    whose runtime has none. How many went back."""
    from jobdef.adapters.requeue import Targets, needs_app, requeue_elsewhere
    from jobdef.backends.elsewhere import elsewhere

    targets = Targets(args.app, runtime_options.config(args))
    going = []
    for record in records:
        if targets.get((elsewhere(record) or ("", ""))[0]) is not None:
            going.append(record)
            continue
        once = f"pass it once: jobdef requeue {record.id}"
        print(f"jobdef requeue: {needs_app(record, once)}", file=sys.stderr)
    return requeue_elsewhere(backend, targets, going)


def _elsewhere(backend: Any, args: argparse.Namespace) -> list[Any]:
    """The named jobs in ``--state`` that died in another runtime (Celery, RQ)."""
    from jobdef.backends.elsewhere import elsewhere

    records = [backend.get(job_id) for job_id in args.ids]
    if args.job:
        records += backend.list_jobs(state=args.state, job=args.job, limit=10_000)
    seen: dict[int, Any] = {}
    for record in records:
        if record is not None and record.state == args.state and elsewhere(record):
            seen[record.id] = record
    return list(seen.values())


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "requeue", help="queue dead jobs again (attempts back to 0)", description=plain(__doc__)
    )
    parser.add_argument(
        "ids", nargs="*", action=JobIds, help="job ids (default: none; then --job is needed)"
    )
    parser.add_argument(
        "--job",
        metavar="NAME",
        help="every job of this name in --state (default: only the jobs given by id)",
    )
    parser.add_argument(
        "--state",
        default="dead",
        choices=[s for s in JOB_STATES if s not in ("waiting", "queued", "running", "done")],
        help="the state the --job jobs are taken from (default: dead)",
    )
    parser.add_argument(
        "--app",
        metavar="MODULE:OBJ",
        help="send jobs that died in Celery or RQ back through it: the Celery app, or the "
        "jobdef.adapters.rq.SheetQueue (default: [tool.jobdef] celery_app or rq_app, "
        "JOBDEF_CELERY_APP or JOBDEF_RQ_APP; else such jobs are listed, not requeued)",
    )
    runtime_options.add_db(parser)
    runtime_options.add_sheets(parser, purpose="that --job is checked against")
    parser.set_defaults(handler=run)
