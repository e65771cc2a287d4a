"""Which idle workers claim after an enqueue's notification: :class:`WakeShare`.

If every idle worker of a fleet claimed after every enqueue, one would get the
job and the others would each pay a claim for nothing (the thundering herd), a
cost that grows with the fleet for every job. Instead the turns of an enqueue's
jobs are shared by a rule: given the queue, how many jobs it stored (``count``)
and the first one's id (:class:`Wakeup`), and the ``n`` live workers of the
queue in the workers table (:mod:`jobdef.backends.workers`) ranked by id, the
``count`` workers from rank ``first_id mod n`` on claim (:attr:`Turn.FIRST`),
and so do the next ``count`` (:attr:`Turn.BACKUP`: the first may be busy, or its
row stale, and on a busy host the first of two processes to get the CPU starts
the job sooner than one alone), and the rest leave the jobs to them. So a job
costs two claims, not one per idle worker. The first ids move on with every
enqueue, so the turns go round the fleet.

On PostgreSQL the enqueue's statement applies the rule itself (queries.sql,
``wake_workers``) and notifies only the workers whose turn it is, each on its
own channel, with its turn in the notification: the others are not woken at
all (an idle process woken for nothing costs the host's CPU, which on a small
host delays the one whose turn it is). An enqueue that cannot address every
worker of the queue (one of them is of an earlier jobdef, which listens on the
schema's channel only) notifies the schema's channel instead, as earlier
releases did, and every worker there takes its turn by the rule from its own
reading of the table, which each worker reads now and then.

Views of the table can disagree for a while (a worker that just started, one
that just died, two workers that read it at different times): a job may then
wake two workers, or only its backups, or none, and the worker's safety poll
takes it. A wake-up without a count (a release, a requeue) or for more jobs
than the queue has workers wakes everyone, as does, on the schema's channel, a
worker that is not in its own view yet.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence

from jobdef.backends.records import Wakeup
from jobdef.backends.workers import WorkerInfo


class Turn(enum.Enum):
    """A worker's part in a wake-up."""

    FIRST = "first"  # claims; if it finds nothing, looks again soon (clock skew)
    BACKUP = "backup"  # claims once: a worker whose turn it is most likely took the job


class WakeShare:
    """The turns of one worker (``worker_id``, serving ``queues``; None: every queue)."""

    def __init__(self, worker_id: str, queues: Sequence[str] | None) -> None:
        self.worker_id = worker_id
        self.queues = None if queues is None else frozenset(queues)
        self._peers: list[WorkerInfo] = []
        self._ranks: dict[str, tuple[int, int] | None] = {}

    def seen(self, workers: Iterable[WorkerInfo], now: float) -> None:
        """The rows of the workers table read at ``now`` (the store's clock). A worker
        that does not listen (``wake_channel`` '': ``?wake=poll``) takes no turn: it
        polls, and a turn given to it would wait for its poll."""
        self._peers = sorted(
            (w for w in workers if not w.stale(now) and w.wake_channel != ""),
            key=lambda w: w.id,
        )
        self._ranks = {}

    def serves(self, queue: str) -> bool:
        return self.queues is None or queue in self.queues

    def turn(self, wakeups: Iterable[Wakeup]) -> Turn | None:
        """This worker's part in ``wakeups``: the first it has, or None (not its turn, nor
        a queue it serves)."""
        parts = {self._turn(wakeup) for wakeup in wakeups}
        if Turn.FIRST in parts:
            return Turn.FIRST
        return Turn.BACKUP if Turn.BACKUP in parts else None

    def _turn(self, wakeup: Wakeup) -> Turn | None:
        if wakeup.queue is None:
            return Turn.FIRST
        if not self.serves(wakeup.queue):
            return None
        if wakeup.turn is not None:
            return Turn(wakeup.turn)  # the enqueue chose this worker, on its own channel
        if wakeup.count is None or wakeup.first_id is None:
            return Turn.FIRST
        place = self._rank(wakeup.queue)
        if place is None:
            return Turn.FIRST
        rank, size = place
        if wakeup.count >= size:
            return Turn.FIRST
        behind = (rank - wakeup.first_id) % size
        if behind < wakeup.count:
            return Turn.FIRST
        if behind < 2 * wakeup.count:
            return Turn.BACKUP
        return None

    def _rank(self, queue: str) -> tuple[int, int] | None:
        """(this worker's rank, the number of live workers) among those serving ``queue``;
        None when this worker is not among them (not seen yet)."""
        if queue not in self._ranks:
            ids = [w.id for w in self._peers if w.queues is None or queue in w.queues]
            mine = self.worker_id in ids
            self._ranks[queue] = (ids.index(self.worker_id), len(ids)) if mine else None
        return self._ranks[queue]
