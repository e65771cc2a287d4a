"""Retry waits: one pure function shared by the runtime, the docs and the review tools.

``n`` is always the number of the attempt that just failed (1-based): the wait
computed for ``n`` is the pause between attempt ``n`` and attempt ``n + 1``.

Jitter follows the AWS Architecture Blog formulas ("Exponential Backoff And
Jitter"): full ``uniform(0, d)``, equal ``d/2 + uniform(0, d/2)``, decorrelated
``min(max, uniform(initial, prev * 3))``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobdef.policy.leases import DEFAULT_LEASE, RECLAIM_INTERVAL
from jobdef.records import Record, record

if TYPE_CHECKING:
    import random

    from jobdef.policy.model import BackoffPolicy, JobPolicy

# An exponential schedule is computed with the exponent capped here, so that a
# sheet with max_attempts in the thousands cannot overflow a float.
_MAX_EXPONENT = 1000


def _cap(policy: BackoffPolicy, seconds: float) -> float:
    return seconds if policy.max is None else min(policy.max, seconds)


def base_delay(policy: BackoffPolicy, n: int) -> float:
    """The wait after failed attempt ``n`` before jitter, capped at ``policy.max``."""
    if n < 1:
        raise ValueError(f"attempt numbers start at 1, got {n}")
    if policy.strategy == "fixed":
        delay = policy.initial
    elif policy.strategy == "linear":
        delay = policy.initial * n
    elif policy.strategy == "exponential":
        exponent = min(n - 1, _MAX_EXPONENT)
        try:
            delay = policy.initial * policy.multiplier**exponent
        except OverflowError:
            delay = float("inf")
    else:  # list: the n-th entry, the last one repeating
        delays = policy.delays or (policy.initial,)
        delay = delays[min(n, len(delays)) - 1]
    return _cap(policy, delay)


def cut_by_max(policy: BackoffPolicy, retries: int | None = None) -> tuple[int, ...]:
    """The waits of a list or fixed schedule that ``max`` cuts, among those ``retries``
    retries reach (all when None): indexes into ``delays`` (list), ``(0,)`` for a fixed
    ``initial``. The docs show such a cap, and rule JD216 warns about it: a growing
    schedule is meant to be capped, a written wait is not."""
    if policy.max is None or policy.strategy not in ("list", "fixed"):
        return ()
    cap = policy.max
    if policy.strategy == "fixed":
        return (0,) if policy.initial > cap and (retries is None or retries >= 1) else ()
    reached = policy.delays if retries is None else policy.delays[: max(retries, 0)]
    return tuple(i for i, wait in enumerate(reached) if wait > cap)


def delay_range(policy: BackoffPolicy, n: int) -> tuple[float, float]:
    """The smallest and largest wait after failed attempt ``n``, jitter included."""
    if policy.jitter == "decorrelated":
        exponent = min(n, _MAX_EXPONENT)
        try:
            high = policy.initial * 3.0**exponent
        except OverflowError:
            high = float("inf")
        return _cap(policy, policy.initial), _cap(policy, high)
    delay = base_delay(policy, n)
    if policy.jitter == "full":
        return 0.0, delay
    if policy.jitter == "equal":
        return delay / 2, delay
    return delay, delay


def next_delay(
    policy: BackoffPolicy,
    n: int,
    rng: random.Random | None = None,
    previous: float | None = None,
) -> float:
    """Draw the actual wait after failed attempt ``n``.

    ``rng`` is injectable so tests can seed it; ``previous`` is the wait drawn
    after the attempt before (decorrelated jitter only; defaults to ``initial``).
    """
    import random  # here, not at import: loading sheets draws nothing

    draw = (rng or random).uniform
    if policy.jitter == "decorrelated":
        prev = policy.initial if previous is None else previous
        return _cap(policy, draw(policy.initial, max(policy.initial, prev * 3)))
    delay = base_delay(policy, n)
    if policy.jitter == "full":
        return draw(0.0, delay)
    if policy.jitter == "equal":
        return delay / 2 + draw(0.0, delay / 2)
    return delay


@record
class TimelineRow(Record):
    """One attempt of the retry timeline, all times in seconds from the enqueue.

    ``wait_min``/``wait_max`` is the pause before this attempt (zero for the
    first). Earliest start assumes every earlier attempt failed at once with the
    shortest wait; latest start assumes each ran to its timeout with the longest
    wait. ``latest_end`` is ``latest_start + timeout``.

    ``latest_start_lost`` is the latest start when every earlier attempt was lost
    instead (its worker died or froze): such an attempt ends, for the queue, only
    when its lease has expired and a reclaimer found it, up to
    :attr:`Timeline.lost_slack` after its timeout. Each lost attempt moves the later
    latest starts by that much, so with ``k`` of the earlier attempts lost the bound
    is ``latest_start + k * lost_slack``.
    """

    attempt: int
    wait_min: float
    wait_max: float
    earliest_start: float
    latest_start: float
    latest_end: float
    within_deadline: bool | None
    latest_start_lost: float


@record
class Timeline(Record):
    """The whole retry schedule of a job in the worst and best case.

    ``lease`` and ``reclaim_interval`` are what the bounds after a lost attempt
    assume: the lease the lost attempt's worker held (the worker's default unless
    the caller knows better) and how often the workers reclaim expired leases.
    ``reclaim_retries``: whether a lost attempt is retried (``on_reclaim: retry``)
    or buries the job (``fail``).
    """

    rows: tuple[TimelineRow, ...]
    deadline: float | None
    lease: float = DEFAULT_LEASE
    reclaim_interval: float = RECLAIM_INTERVAL
    reclaim_retries: bool = True

    @property
    def worst_case(self) -> float:
        """Latest end of the last attempt: every wait at its maximum, every attempt timed out."""
        return self.rows[-1].latest_end if self.rows else 0.0

    @property
    def worst_case_lost(self) -> float:
        """The latest the job can end for the queue when attempts are lost too: each lost
        attempt ends only at its timeout + :attr:`lost_slack`. With ``on_reclaim: retry``
        every attempt may be lost; with ``fail`` the first lost one is the last, so the
        worst is the last attempt lost after the others failed. This is the bound a
        workflow's worst case adds up, since a step ends only when the queue says so."""
        if not self.rows:
            return 0.0
        lost = len(self.rows) if self.reclaim_retries else 1
        return self.rows[-1].latest_end + lost * self.lost_slack

    @property
    def fits_deadline(self) -> bool | None:
        """``None`` when the job has no deadline."""
        return None if self.deadline is None else self.worst_case <= self.deadline

    @property
    def lost_slack(self) -> float:
        """How much later than after a timeout a lost attempt's job can be back in the
        queue: its lease runs out (the last heartbeat came at the latest at the
        timeout), then the next reclaim finds it."""
        return self.lease + self.reclaim_interval

    def latest_start_after(self, attempt: int, lost: int) -> float:
        """The latest start of ``attempt`` when ``lost`` of the attempts before it were
        lost and the others failed; ``KeyError`` for an attempt the timeline has not."""
        if not 1 <= attempt <= len(self.rows):
            raise KeyError(attempt)
        if not 0 <= lost < attempt:
            raise ValueError(f"attempt {attempt} follows {attempt - 1} attempts, not {lost}")
        return self.rows[attempt - 1].latest_start + lost * self.lost_slack


def retry_timeline(
    job: JobPolicy, *, lease: float = DEFAULT_LEASE, reclaim_interval: float = RECLAIM_INTERVAL
) -> Timeline:
    """The attempt-by-attempt schedule that the runtime will follow for ``job``.

    ``lease`` is the lease of the worker that runs the job (``jobdef worker
    --lease``), which only the bounds after a lost attempt depend on.
    """
    if not lease > 0 or not reclaim_interval >= 0:
        raise ValueError(f"a lease must be positive, got {lease}, and reclaims not negative")
    slack = lease + reclaim_interval
    rows: list[TimelineRow] = []
    earliest = latest = 0.0
    for attempt in range(1, job.max_attempts + 1):
        wait_min, wait_max = (0.0, 0.0) if attempt == 1 else delay_range(job.backoff, attempt - 1)
        earliest += wait_min
        latest += wait_max
        end = latest + job.timeout
        rows.append(
            TimelineRow(
                attempt=attempt,
                wait_min=wait_min,
                wait_max=wait_max,
                earliest_start=earliest,
                latest_start=latest,
                latest_end=end,
                within_deadline=None if job.deadline is None else end <= job.deadline,
                latest_start_lost=latest + (attempt - 1) * slack,
            )
        )
        latest = end
    return Timeline(
        rows=tuple(rows),
        deadline=job.deadline,
        lease=lease,
        reclaim_interval=reclaim_interval,
        reclaim_retries=job.on_reclaim == "retry",
    )
