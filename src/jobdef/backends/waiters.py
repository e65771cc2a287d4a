"""Waiting for jobs to end: one thread per process and store, whatever the number of waiters.

``Queue.wait`` and ``Queue.wait_async`` (:mod:`jobdef.runtime.receipts`) register
each waiter here with the job it waits for and a callback, and the callback is
called once, from this module's thread, with the job's record when it ended
(done, dead, resolved, cancelled) or None when the job is gone (never stored,
pruned). A waiter that gives up (its timeout) takes itself off.

The thread (:class:`JobWaiters`, one per store URL in a process, made by
:func:`job_waiters`) starts with the first waiter and ends after
:data:`IDLE_SECONDS` without any, closing its sessions. What it runs:

- New waiters are read in one statement for all that came since the last round
  (the store's ``watch_jobs``): a job that ended already, or is gone, is answered
  at once. On PostgreSQL the same statement marks the jobs ``watched``, so the
  statement that ends each one notifies the waiters' channel, which the thread
  LISTENs on before it marks any (its :class:`~jobdef.backends.protocol.EndSignal`).
- When the signal tells which jobs ended, one ``ended_jobs`` statement reads them.
- Every ``poll_seconds`` of the signal it reads every waited job, one statement:
  that is how SQLite's waiters learn anything (every 50 ms); on PostgreSQL it is the
  slow fallback (every 5 s) for a notification that was lost with its session.
- A round of statements starts at most once per :data:`ROUND_GAP`: under a burst
  of new waiters or of ends, many share one statement. So a thousand waiters cost
  what a few do: at most a statement per round, and between ends only the poll.

The thread reads through a store session of its own, never the caller's, so a
waiter's request thread is never held up behind it, nor it behind them.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jobdef.backends.engines import driver
from jobdef.backends.protocol import Backend, EndSignal
from jobdef.backends.records import JobRecord
from jobdef.errors import JobdefError

if TYPE_CHECKING:
    import logging


def _log() -> logging.Logger:
    """The waiters' logger. logging is imported when there is something to say: a
    command that enqueues one job and exits would pay for it at every start."""
    import logging

    return logging.getLogger("jobdef.waiters")


# Seconds the thread stays (with its sessions) after the last waiter left.
IDLE_SECONDS = 30.0
# Seconds between the starts of two rounds of statements, at least.
ROUND_GAP = 0.01
# Seconds between tries when the store cannot be read (the waiters keep waiting).
RETRY_SECONDS = 1.0

OnEnd = Callable[[JobRecord | None], None]


@dataclass(eq=False)
class Watch:
    """One waiter: the job it waits for and what to call when the job ended or is gone."""

    job_id: int
    on_end: OnEnd


class Polling:
    """The :class:`~jobdef.backends.protocol.EndSignal` of an engine that tells nothing
    (SQLite): no session, and every waited job read every ``poll_seconds``."""

    def __init__(self, poll_seconds: float) -> None:
        self.poll_seconds = poll_seconds
        self._woken = threading.Event()

    def listen(self) -> bool:
        return False

    def heard(self, timeout: float) -> set[int]:
        self._woken.wait(timeout)
        self._woken.clear()
        return set()

    def wake(self) -> None:
        self._woken.set()

    def close(self) -> None:
        pass


class JobWaiters:
    """Every waiter of one store in this process, served by one thread (see the module).

    ``open_store`` opens the thread's own session on the store and ``open_signal`` its
    :class:`~jobdef.backends.protocol.EndSignal`; each run of the thread opens both and
    closes them when it ends.
    """

    def __init__(
        self, open_store: Callable[[], Backend], open_signal: Callable[[], EndSignal]
    ) -> None:
        self._open_store = open_store
        self._open_signal = open_signal
        self._cond = threading.Condition()
        self._watches: dict[int, list[Watch]] = {}
        self._new: set[int] = set()
        self._thread: threading.Thread | None = None
        self._signal: EndSignal | None = None

    @property
    def waiting(self) -> int:
        """How many waiters wait now."""
        with self._cond:
            return sum(len(watches) for watches in self._watches.values())

    def watch(self, job_id: int, on_end: OnEnd) -> Watch:
        """Call ``on_end`` (from the thread, once) when job ``job_id`` has ended or is gone."""
        watch = Watch(job_id, on_end)
        with self._cond:
            self._watches.setdefault(job_id, []).append(watch)
            self._new.add(job_id)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="jobdef-waiters", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()
            signal = self._signal
        if signal is not None:
            signal.wake()
        return watch

    def unwatch(self, watch: Watch) -> None:
        """Take a waiter off (it gave up); nothing when it was answered already."""
        with self._cond:
            watches = self._watches.get(watch.job_id, [])
            if watch in watches:
                watches.remove(watch)
            if not watches:
                self._watches.pop(watch.job_id, None)
                self._new.discard(watch.job_id)

    # -- the thread ---------------------------------------------------------------------

    def _run(self) -> None:
        store: Backend | None = None
        signal: EndSignal | None = None
        try:
            signal = self._open_signal()
            with self._cond:
                self._signal = signal
            store = self._open_store()
            self._serve(store, signal)
        except JobdefError as exc:  # the waiters time out; the next one starts a new thread
            _log().warning("waiters cannot reach the job store: %s", exc)
        except Exception:
            _log().exception("the thread that tells waiters their jobs ended stopped")
        finally:
            with self._cond:
                if self._thread is threading.current_thread():
                    self._thread, self._signal = None, None
            if signal is not None:
                signal.close()
            if store is not None:
                store.close()

    def _serve(self, store: Backend, signal: EndSignal) -> None:
        """Rounds of statements until no waiter came for :data:`IDLE_SECONDS`."""
        next_poll = time.monotonic() + signal.poll_seconds
        last_round = float("-inf")
        heard: set[int] = set()
        while True:
            if not self._wait_for_waiters():
                return
            gap = last_round + ROUND_GAP - time.monotonic()
            if gap > 0:  # what comes meanwhile shares the next statements
                time.sleep(gap)
            if signal.listen():  # a new session: an end may have gone unheard
                with self._cond:  # read every waited job again (it stands for the poll)
                    self._new |= set(self._watches)
                next_poll = time.monotonic() + signal.poll_seconds
            heard |= signal.heard(0)
            new = self._take_new()
            ran = False
            try:
                if new:
                    ran = True
                    self._settle(store.watch_jobs(sorted(new)))
                now = time.monotonic()
                if now >= next_poll:
                    next_poll = now + signal.poll_seconds
                    heard.clear()
                    ran = self._read(store, self._waited() - new) or ran
                elif heard:
                    told, heard = heard, set()
                    ran = self._read(store, told & self._waited() - new) or ran
            except JobdefError as exc:  # the store is out of reach: wait, then try again
                _log().debug("waiters cannot read the job store: %s", exc)
                with self._cond:
                    self._new |= new & set(self._watches)
                time.sleep(RETRY_SECONDS)
            if ran:
                last_round = time.monotonic()
            # The signal's poll may have become shorter (a lost session is polled more).
            next_poll = min(next_poll, time.monotonic() + signal.poll_seconds)
            heard |= signal.heard(max(0.0, next_poll - time.monotonic()))

    def _wait_for_waiters(self) -> bool:
        """False when no waiter came for :data:`IDLE_SECONDS` (the thread ends; a later
        waiter starts another)."""
        with self._cond:
            if self._watches:
                return True
            self._cond.wait_for(lambda: bool(self._watches), IDLE_SECONDS)
            if self._watches:
                return True
            self._thread, self._signal = None, None
            return False

    def _take_new(self) -> set[int]:
        with self._cond:
            new, self._new = self._new, set()
            return new & set(self._watches)

    def _waited(self) -> set[int]:
        with self._cond:
            return set(self._watches)

    def _read(self, store: Backend, ids: set[int]) -> bool:
        """Answer the waiters of ``ids`` whose jobs ended; whether a statement ran."""
        if not ids:
            return False
        self._settle(store.ended_jobs(sorted(ids)))
        return True

    def _settle(self, found: tuple[list[JobRecord], list[int]]) -> None:
        """Call back every waiter of the ended jobs (with the record) and of the gone
        ones (with None), each once, outside the lock."""
        ended, gone = found
        calls: list[tuple[Watch, JobRecord | None]] = []
        with self._cond:
            for record in ended:
                calls += [(watch, record) for watch in self._watches.pop(record.id, [])]
            for job_id in gone:
                calls += [(watch, None) for watch in self._watches.pop(job_id, [])]
        for watch, answer in calls:
            try:
                watch.on_end(answer)
            except Exception:  # one waiter's callback does not stop the others'
                _log().exception("a waiter's callback for job %d failed", watch.job_id)


class _Hubs:
    """The waiters of each store in this process (a forked child starts with none)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.by_url: dict[str, JobWaiters] = {}


_HUBS = _Hubs()


def job_waiters(url: str) -> JobWaiters:
    """The waiters of the store at ``url`` in this process (one for every caller; a
    forked child gets its own)."""
    with _HUBS.lock:
        if _HUBS.pid != os.getpid():
            _HUBS.by_url.clear()
            _HUBS.pid = os.getpid()
        hub = _HUBS.by_url.get(url)
        if hub is None:
            found = driver(url)
            hub = JobWaiters(lambda: found.open(url, create=False), lambda: found.end_signal(url))
            _HUBS.by_url[url] = hub
        return hub
