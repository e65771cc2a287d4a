"""Which idle workers claim after an enqueue's notification: :class:`WakeShare`.

Every idle worker of a fleet listens on the same channel, so every enqueue
wakes all of them; if all claimed, one would get the job and the others would
each pay a claim for nothing (the thundering herd), a cost that grows with the
fleet for every job. Instead each enqueue's notification says its queue, how
many jobs it stored (``count``) and the first one's id (:class:`Wakeup`), and
every worker sees the same notifications in the same order (commit order).
Each worker also reads, now and then, the live workers of the workers table
(:mod:`jobdef.backends.workers`), so each can rank itself among the ``n``
workers of the queue: the ``count`` workers from rank ``first_id mod n`` on
claim at once, the next ``count`` a moment later (:data:`BACKUP_DELAY`: the
first may be busy, or its row stale) and the rest leave the jobs to them. The
first ids move on with every enqueue, so the turns go round the fleet.

Workers read the table at different times, so their views can disagree for a
while (a worker that just started, one that just died): a job may then wake two
workers, or only its backups, or none, and the worker's safety poll takes it.
A wake-up without a count (a release, a requeue) or for more jobs than the
queue has workers wakes everyone, as does a worker that is not in its own view
yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from jobdef.backends.records import Wakeup
from jobdef.backends.workers import WorkerInfo

# Seconds the backups of a wake-up wait before they claim: more than the claim of the
# workers whose turn it is takes on a fast network, less than a p99 target of 10 ms.
BACKUP_DELAY = 0.003


class WakeShare:
    """The turns of one worker (``worker_id``, serving ``queues``; None: every queue)."""

    def __init__(self, worker_id: str, queues: Sequence[str] | None) -> None:
        self.worker_id = worker_id
        self.queues = None if queues is None else frozenset(queues)
        self._peers: list[WorkerInfo] = []
        self._ranks: dict[str, tuple[int, int] | None] = {}

    def seen(self, workers: Iterable[WorkerInfo], now: float) -> None:
        """The rows of the workers table read at ``now`` (the store's clock)."""
        self._peers = sorted((w for w in workers if not w.stale(now)), key=lambda w: w.id)
        self._ranks = {}

    def serves(self, queue: str) -> bool:
        return self.queues is None or queue in self.queues

    def delay(self, wakeups: Iterable[Wakeup]) -> float | None:
        """Seconds to wait before claiming after ``wakeups``, or None: not this worker's
        turn (nor a queue it serves)."""
        soonest: float | None = None
        for wakeup in wakeups:
            wait = self._turn(wakeup)
            if wait is not None and (soonest is None or wait < soonest):
                soonest = wait
            if soonest == 0.0:
                break
        return soonest

    def _turn(self, wakeup: Wakeup) -> float | None:
        if wakeup.queue is None:
            return 0.0
        if not self.serves(wakeup.queue):
            return None
        if wakeup.count is None or wakeup.first_id is None:
            return 0.0
        place = self._rank(wakeup.queue)
        if place is None:
            return 0.0
        rank, size = place
        at_once = wakeup.count
        if at_once >= size:
            return 0.0
        behind = (rank - wakeup.first_id) % size
        if behind < at_once:
            return 0.0
        if behind < at_once + wakeup.count:
            return BACKUP_DELAY
        return None

    def _rank(self, queue: str) -> tuple[int, int] | None:
        """(this worker's rank, the number of live workers) among those serving ``queue``;
        None when this worker is not among them (not seen yet)."""
        if queue not in self._ranks:
            ids = [w.id for w in self._peers if w.queues is None or queue in w.queues]
            mine = self.worker_id in ids
            self._ranks[queue] = (ids.index(self.worker_id), len(ids)) if mine else None
        return self._ranks[queue]
