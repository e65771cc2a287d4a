"""Cancelling jobs, written once for both engines: a queued job, and a running one.

A cancel reads the jobs it takes as they are before it (``cancel_job_target``,
``flow_cancel_targets``; PostgreSQL locks those rows for the transaction, so a
completion, heartbeat or claim of one waits for the cancel and then finds it
cancelled), moves them to ``cancelled`` with the reason as their note and their
lease cleared, and ends each running one's open attempt: its attempts row is
written with the outcome ``cancelled`` and an error naming who cancelled it and
why (``record_cancelled_attempt``). All of it is one transaction.

The worker running a cancelled attempt learns it at its next heartbeat, which
the fence refuses (the job is no longer ``running``): it stops the handler's
child and records nothing, since the attempt has ended already
(:mod:`jobdef.runtime.worker`). A completion or failure the handler reports
after the cancel is refused by the same fence, and nothing is retried.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from jobdef.backends.records import ErrorInfo
from jobdef.backends.rows import error_text

# The state a cancelled job was in: a running one's handler is stopped by its worker.
CancelledFrom = Literal["queued", "running"]

# The error type of an attempt a cancel ended, as the attempts row and explain show it.
CANCELLED_TYPE = "jobdef.Cancelled"

# A named query run on the cancel's open transaction (a FlowTx's ``run``).
Run = Callable[[str, Mapping[str, Any]], Sequence[Any]]


def cancelled_error(reason: str) -> ErrorInfo:
    """What a cancelled attempt's row records as its error: who cancelled it and why."""
    return ErrorInfo(CANCELLED_TYPE, f"the attempt was cancelled while it ran: {reason}")


def end_running_attempts(
    run: Run, targets: Iterable[Mapping[str, Any]], reason: str, now: float
) -> None:
    """Write the attempts row of each running job among ``targets`` (rows read before
    the cancel moved them), ended now with the outcome ``cancelled``."""
    error = error_text(cancelled_error(reason))
    for row in targets:
        if row["state"] != "running":
            continue
        run(
            "record_cancelled_attempt",
            {
                "job_id": row["id"],
                "attempt": row["attempt"],
                "worker_id": row["worker_id"] or "",
                # A running job has started; the start is never missing on its row.
                "started_at": row["started_at"] if row["started_at"] is not None else now,
                "now": now,
                "error": error,
            },
        )
