"""A child whose worker died gives back the tasks it held but never started.

A worker hands each child its tasks ahead (the rest of the batch being run, and
the next batch in the pipe), so when the worker dies (SIGKILL, the OOM killer, a
crash) its children hold jobs leased to the dead worker whose handler never
ran. Left alone, those leases expire and the reclaimer charges each job a
counted attempt that ran nothing. Instead the child notices its worker's death
(the parent's sentinel becomes readable, or the pipe ends or breaks), stops
starting tasks, and releases every task it read and neither started nor had
recalled, with the fenced ``release`` on its own connection to the job store:
the attempt is not counted and the job is queued again at once. Then the child
exits, and the handler it was running, if any, with it: that attempt started,
so it is the reclaimer's to count.

The worker also holds jobs no child has: the answer of a turn it sent and has not
read (the server committed the claim; a pipelining worker has one out most of the
time, see ``WorkerSettings.pipeline_turns``), and the jobs read and not handed out
yet. It names them in a block every child shares (:class:`Unhanded`): the start
each claim it sends writes on its jobs (``ClaimOptions.started_at``), dropped once
the answer is read, and the ids of the jobs it holds back, rewritten before any of
them goes to a child. So a name there is never that of a job a child has, and the
children give those back too (``release``, ``release_unhanded``), once the server is done with
the dead worker's statement: it aborts one whose client is gone within
``client_connection_check_interval`` (250 ms, set on the worker's sessions), so
they wait :data:`SERVER_SETTLES` seconds after the death first. A job whose name
the worker dropped as it handed the job out, and that it died before writing to a
child's pipe, is the reclaimer's, as before.

What a child cannot give back stays the reclaimer's: the tasks of a child killed
together with its worker (a SIGKILL of the whole process group, a host that
died), and any the store does not take within :data:`RELEASE_WITHIN` seconds.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

from jobdef.runtime.wire import Stop, Task

log = logging.getLogger("jobdef.worker")

# How long a child whose worker died may take to give its tasks back before it exits.
RELEASE_WITHIN = 5.0
# Seconds from a worker's death before its children give back its unhanded claims: the
# server has then aborted or committed the statement the worker had out (queries.sql:
# session_settings, client_connection_check_interval 250 ms).
SERVER_SETTLES = 0.6


class Unhanded:
    """The claims a worker holds that no child has, in shared memory its children read
    should it die: the starts of the claims it sent and has not read the answer of
    (:meth:`sent`, :meth:`taken`), and the ids of the jobs it read and holds back
    (:meth:`holding`). Only the worker writes; a child reads once the worker is dead.
    Each write leaves a name of a job a child may have out of the block first (a count
    set to 0 before the values change), so a death half-way through names fewer jobs,
    never one a child has."""

    STAMPS = 8  # claims out at once, at most (a pipelining worker has two)
    IDS = 4096  # jobs held back named, at most (the rest, should it die, are reclaimed)

    def __init__(self, ctx: Any) -> None:
        # What the children are given: the stamps (a count, then the stamps) and the jobs
        # (a count, then each one's id and attempt, as 64-bit integers: exact, whatever
        # the id). The attempt fences the release: a job reclaimed meanwhile and claimed
        # again under the same worker id (an operator's --worker-id, a quick restart)
        # has a later one.
        self.block = (ctx.RawArray("d", 1 + self.STAMPS), ctx.RawArray("q", 1 + 2 * self.IDS))
        self._stamps: list[float] = []
        self._named = 0  # ids named in the block now

    def sent(self, stamp: float) -> None:
        """A claim stamped ``stamp`` is sent (named before it goes)."""
        if stamp in self._stamps:
            return  # named already: a turn that could not be sent, made and waited for
        if len(self._stamps) == self.STAMPS:
            self._stamps.pop(0)  # an answer lost long ago: its jobs are reclaimed
            self._write_stamps()
        stamps = self.block[0]
        stamps[1 + len(self._stamps)] = stamp
        self._stamps.append(stamp)
        stamps[0] = len(self._stamps)

    def taken(self, stamp: float | None, holding: Sequence[tuple[int, int]]) -> None:
        """The answer of the claim stamped ``stamp`` was read: its jobs are among
        ``holding``, the jobs held back now (id, attempt), named first."""
        self.holding(holding)
        if stamp in self._stamps:
            self._stamps.remove(stamp)
            self._write_stamps()

    def holding(self, jobs: Sequence[tuple[int, int]]) -> None:
        """The jobs held back are ``jobs``, (id, attempt) each (before any of them leaves
        for a child)."""
        if not jobs and not self._named:
            return
        block = self.block[1]
        block[0] = 0
        named = min(len(jobs), self.IDS)
        block[1 : 1 + 2 * named] = [number for job in jobs[:named] for number in job]
        block[0] = self._named = named

    def _write_stamps(self) -> None:
        stamps = self.block[0]
        stamps[0] = 0
        for at, stamp in enumerate(self._stamps):
            stamps[1 + at] = stamp
        stamps[0] = len(self._stamps)


def unhanded_claims(block: Any) -> tuple[list[float], list[tuple[int, int]]]:
    """What a dead worker's :attr:`Unhanded.block` names: stamps, and jobs (id, attempt)."""
    stamps, jobs = block
    numbers = jobs[1 : 1 + 2 * jobs[0]]
    return stamps[1 : 1 + int(stamps[0])], list(zip(numbers[::2], numbers[1::2], strict=True))


class Holdings:
    """The tasks a child has read and not started, shared by its main thread (which reads
    and starts them) and its watcher thread (which gives them back if the worker dies).
    One per child process: :data:`HOLDINGS`."""

    def __init__(self) -> None:
        self.lease_holder = ""
        self.store_url = ""
        self.recall_slot = 0
        self._conn: Connection | None = None
        self._shared: Any = None
        self._unhanded: Any = None  # the worker's Unhanded.block
        self.waiting: dict[int, Task] = {}
        # Held while a task is registered, started or skipped, and while the watcher
        # takes over: a task is either started or given back, never both.
        self.guard = threading.Lock()
        # Held by the main thread while it reads a message and registers its tasks, so
        # the watcher never reads the pipe at the same time (reentrant: the main thread
        # may be the one that gives back).
        self.reading = threading.RLock()
        self.orphaned = False
        self.stopped = False  # the worker sent Stop: the pipe ends without a death
        self._once = threading.Lock()

    def read(self, message: object) -> None:
        """The main thread read ``message`` from the pipe (with ``reading`` held)."""
        if isinstance(message, Stop):
            self.stopped = True
            return
        tasks = getattr(message, "tasks", None)
        if tasks is None:
            return  # a Cancel: no task to hold
        with self.guard:
            for task in tasks:
                self.waiting[task.seq] = task

    def may_start(self, seq: int, recalled: float) -> bool:
        """With ``guard`` held: whether task ``seq`` starts now (it was not recalled, and the
        worker lives). Once the worker is dead it still waits, for the watcher to give
        it back; otherwise it no longer waits."""
        if self.orphaned:
            return False
        self.waiting.pop(seq, None)
        return seq > recalled

    def wait_if_orphaned(self) -> None:
        """A task was not started because the worker died: wait for the exit."""
        if self.orphaned:
            threading.Event().wait()

    def watch(
        self,
        lease_holder: str,
        store_url: str,
        recall_slot: int,
        conn: Connection,
        shared: Any,
        *,
        unhanded: Any = None,
    ) -> None:
        """Start the thread that gives the tasks back, under ``lease_holder`` to the store at
        ``store_url``, once the worker has died (``conn``: the pipe from it; ``shared``: the
        shared block, whose ``recall_slot`` holds the highest task it recalled;
        ``unhanded``: the worker's :attr:`Unhanded.block`, whose claims go back too)."""
        self.lease_holder, self.store_url, self.recall_slot = lease_holder, store_url, recall_slot
        self._conn, self._shared, self._unhanded = conn, shared, unhanded
        parent = multiprocessing.parent_process()
        if parent is None:
            return

        def wait_for_death() -> None:
            parent.join()
            self.give_back()

        threading.Thread(target=wait_for_death, name="jobdef-orphan", daemon=True).start()

    def ended(self) -> None:
        """The main thread is leaving: if the pipe ended or broke because the worker died
        (not at a Stop), give back what waits, as the watcher would."""
        parent = multiprocessing.parent_process()
        if self.stopped or parent is None:
            return
        # The worker closes a pipe only after killing its child, so an end here is a death;
        # the parent's sentinel follows the pipe's end by a moment.
        parent.join(1.0)
        if parent.exitcode is not None or not parent.is_alive():
            self.give_back()

    def give_back(self) -> None:
        """Stop starting tasks, release the ones read and not started, and the worker's
        claims no child had, and exit the process; a second caller waits for the first
        one's exit."""
        self._once.acquire()
        died = time.monotonic()
        with self.guard:
            self.orphaned = True
        # The main thread may be reading a message the worker wrote before it died: it
        # returns at once (the data is there, or the pipe has ended), then the rest is read.
        if self.reading.acquire(timeout=1.0):
            for message in _unread(self._conn):
                self.read(message)
        with self.guard:
            recalled = self._shared[self.recall_slot]
            tasks = [task for seq, task in sorted(self.waiting.items()) if seq > recalled]
        stamps, jobs = unhanded_claims(self._unhanded) if self._unhanded is not None else ([], [])
        if (tasks or stamps or jobs) and self.lease_holder:
            # Not a daemon: the process waits for it even if its main thread fails meanwhile.
            releasing = threading.Thread(
                target=_release,
                args=(tasks, (stamps, jobs, died), self.lease_holder, self.store_url),
                daemon=False,
            )
            releasing.start()
            releasing.join(RELEASE_WITHIN)
        logging.shutdown()
        os._exit(0)


HOLDINGS = Holdings()


def _unread(conn: Connection | None) -> list[object]:
    """The whole messages still in the pipe."""
    messages: list[object] = []
    if conn is None:
        return messages
    try:
        while conn.poll(0):
            messages.append(conn.recv())
    except (EOFError, OSError):
        pass
    return messages


def _release(
    tasks: list[Task],
    unhanded: tuple[list[float], list[tuple[int, int]], float],
    lease_holder: str,
    store_url: str,
) -> None:
    """Give ``tasks`` back through the fenced release (the attempt is not counted), then
    the worker's ``unhanded`` claims (stamps, and jobs by id and attempt, named by
    :class:`Unhanded`) once the server has settled its statement
    (:data:`SERVER_SETTLES` after the death)."""
    from jobdef.backends import open_backend
    from jobdef.backends.records import Lease

    stamps, jobs, died = unhanded
    released = unclaimed = 0
    try:
        backend = open_backend(store_url, create=False, migrate=False)
        try:
            for task in tasks:
                released += backend.release(Lease(task.job_id, task.attempt, lease_holder))
            if stamps or jobs:
                time.sleep(max(0.0, died + SERVER_SETTLES - time.monotonic()))
                for job_id, attempt in jobs:
                    unclaimed += backend.release(Lease(job_id, attempt, lease_holder))
                if stamps:
                    unclaimed += backend.release_unhanded(lease_holder, stamps)
        finally:
            backend.close()
    except Exception as exc:
        log.warning(
            "worker %s died; its handler process gave back %d of the %d job(s) it had not "
            "started, and %d the worker had claimed and not handed out (%s): the leases of "
            "the rest expire and they are reclaimed",
            lease_holder,
            released,
            len(tasks),
            unclaimed,
            exc,
        )
        return
    log.warning(
        "worker %s died; its handler process gave back the %d job(s) it had not started, "
        "and %d the worker had claimed and not handed out",
        lease_holder,
        released,
        unclaimed,
    )
