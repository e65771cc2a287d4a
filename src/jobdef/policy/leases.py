"""How long a lost attempt keeps its job: the worker's default lease and the reclaim interval.

An attempt is lost when its worker dies or freezes: nothing records it, and the
job comes back only once its lease has expired and a reclaimer has found it, at
most ``timeout + lease + RECLAIM_INTERVAL`` after the attempt began. The worker
(its ``--lease`` default), the lease reclaimer and the retry timeline that
``jobdef explain`` and the docs print all read these numbers from here; they sit
in the policy layer so that the timeline, below the runtime, can name them.
"""

from __future__ import annotations

# The lease a worker holds on each job it runs, unless started with another (--lease).
DEFAULT_LEASE = 30.0
# The shortest lease: the worker heartbeats every lease/3, once per turn of its loop,
# and a turn lasts up to 0.1 s while it holds running jobs (plus a store call), so a
# lease of 1 s holds three heartbeats of several turns each.
MIN_LEASE = 1.0
# How often every worker looks for expired leases and reclaims their jobs.
RECLAIM_INTERVAL = 2.0
# One turn of the worker's loop while it holds running jobs (see MIN_LEASE).
TURN_WHILE_RUNNING = 0.1


def heartbeat_period(lease_seconds: float) -> float:
    """How often a worker heartbeats each job it runs: a third of its lease."""
    return lease_seconds / 3


def vouch_span(lease_seconds: float) -> float:
    """How long after a heartbeat round of its worker a handler process may still start
    a job it holds: a third of the lease. The round left every lease renewed within the
    last third of it, so each holds for two thirds more; the last third is margin. A
    worker frozen (or cut from the store) past that stops vouching, and its processes
    start nothing whose lease another worker may have reclaimed."""
    return lease_seconds - 2 * heartbeat_period(lease_seconds)


def cancel_reach(lease_seconds: float) -> float:
    """The longest a cancel of a running job takes to reach its handler: the worker
    learns it at the job's next heartbeat, which its fence refuses (up to one period
    away, once per turn of its loop), and stops the handler's child in that turn."""
    return heartbeat_period(lease_seconds) + TURN_WHILE_RUNNING
