"""``jobdef cancel ID``: cancel a queued job before it runs, or a running one.

A running job's attempt ends ``cancelled`` at once, in the store; its worker
learns it at the job's next heartbeat (every third of the worker's lease) and
stops the handler. Nothing is retried, and what the handler reports afterwards
is refused."""

from __future__ import annotations

import argparse

from jobdef.backends.records import JobRecord
from jobdef.backends.workers import tracks_workers
from jobdef.cli import runtime_options
from jobdef.cli.options import JobIds, plain
from jobdef.errors import UsageError
from jobdef.policy.durations import format_duration
from jobdef.policy.leases import DEFAULT_LEASE, cancel_reach

# Characters of --note kept (the dashboard's reasons are cut to as many).
MAX_NOTE = 2000


def run(args: argparse.Namespace) -> int:
    backend = runtime_options.backend(args)
    # The note is kept on the job and its attempt: bounded, as the dashboard's are.
    note = args.note[:MAX_NOTE] if args.note else ""
    reason = "cancelled with jobdef cancel" + (f": {note}" if note else "")
    try:
        was = backend.cancel(args.id, reason)
        # Read after the cancel: the state that refused it, or the worker it stops.
        record = backend.get(args.id)
        lease = _lease_of(backend, record) if was == "running" else None
    finally:
        backend.close()
    if was is None:
        state = record.state if record else "missing"
        raise UsageError(f"job {args.id} is {state}; only queued and running jobs can be cancelled")
    if was == "running":
        reach = format_duration(cancel_reach(lease or DEFAULT_LEASE))
        print(
            f"job {args.id} cancelled (it was running: its worker stops the handler within {reach})"
        )
    else:
        print(f"job {args.id} cancelled")
    return 0


def _lease_of(backend: object, record: JobRecord | None) -> float | None:
    """The lease of the worker that ran ``record``, from the workers table (None: the
    worker is not registered there)."""
    if record is None or not tracks_workers(backend):
        return None
    rows = backend.worker_rows()  # not workers(): their running jobs are not needed
    return next((w.lease_seconds for w in rows if w.id == record.worker_id), None)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "cancel", help="cancel a queued or running job", description=plain(__doc__)
    )
    parser.add_argument(
        "id", action=JobIds, help="the id of the queued or running job (see jobdef jobs)"
    )
    parser.add_argument(
        "--note",
        default=None,
        help="why, kept on the job and on its running attempt (default: none)",
    )
    runtime_options.add_db(parser)
    parser.set_defaults(handler=run)
