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
