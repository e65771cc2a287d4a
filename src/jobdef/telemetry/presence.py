"""A worker's row in the workers table (:mod:`jobdef.backends.workers`), and its reading.

Written at the start, beaten on the worker's lease-heartbeat cadence (every
lease/3, from its loop: a frozen loop stops beating, which is what makes the
row stale), deleted at a clean stop. A store error here never stops the
worker: the row is for operators, the jobs do not depend on it (the loop
notices an outage through its own calls). A failed beat is logged once, and
tried again at the next beat.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Callable, Sequence
from typing import Any

from jobdef import __version__
from jobdef.backends.workers import (
    WORKERS_TABLE_VERSION,
    WorkerInfo,
    WorkerVerbs,
    tracks_workers,
)
from jobdef.errors import BackendError, UsageError

log = logging.getLogger("jobdef.worker")


class Presence:
    """Registers, beats and unregisters one worker."""

    def __init__(
        self,
        backend: object,
        worker_id: str,
        *,
        queues: Sequence[str] | None,
        concurrency: int,
        lease_seconds: float,
    ) -> None:
        self.backend = backend if isinstance(backend, WorkerVerbs) else None
        self.every = lease_seconds / 3
        self.info = WorkerInfo(
            id=worker_id,
            host=socket.gethostname(),
            pid=os.getpid(),
            queues=None if queues is None else tuple(queues),
            concurrency=concurrency,
            lease_seconds=lease_seconds,
            version=__version__,
            started_at=0.0,
            last_beat=0.0,
        )
        self._last: float | None = None
        self._failing = False
        # Called with the workers table's rows and the store's time at each beat, when
        # given (the worker's turns after a wake-up, runtime.wake_share).
        self.on_rows: Callable[[list[WorkerInfo], float], None] | None = None
        self._rows_read: float | None = None

    def start(self, mono: float) -> None:
        if self.backend is None:
            return
        try:
            if not tracks_workers(self.backend):
                self.backend = None  # a store whose schema predates the table
                return
            self.backend.register_worker(self.info)
            self._last = mono
        except BackendError as exc:
            log.warning("could not register worker %s in the workers table: %s", self.info.id, exc)
        self.read_rows(mono, 0.0)

    def beat(self, mono: float) -> None:
        """Stamp the row if lease/3 has passed; write it again if it was pruned meanwhile."""
        if self.backend is None or (self._last is not None and mono - self._last < self.every):
            return
        self._last = mono
        try:
            if not self.backend.beat_worker(self.info.id):
                self.backend.register_worker(self.info)
        except BackendError as exc:
            if not self._failing:
                log.warning("could not beat worker %s in the workers table: %s", self.info.id, exc)
            self._failing = True
        else:
            self._failing = False
        self.read_rows(mono, 0.0)

    def read_rows(self, mono: float, every: float) -> None:
        """Read the table's rows for ``on_rows`` now if ``every`` seconds have passed since
        the last read (0: now; each beat reads them); a store error is left for later."""
        if self.on_rows is None or self.backend is None:
            return
        if self._rows_read is not None and mono - self._rows_read < every:
            return
        self._rows_read = mono
        with contextlib.suppress(BackendError):
            self.on_rows(self.backend.worker_rows(), self.backend.clock())

    def stop(self) -> None:
        if self.backend is None:
            return
        try:
            self.backend.unregister_worker(self.info.id)
        except BackendError as exc:
            log.warning("could not remove worker %s from the workers table: %s", self.info.id, exc)


def registered_workers(backend: object) -> tuple[list[WorkerInfo], float]:
    """The workers table's rows and the store's time now, as ``jobdef workers`` and the
    dashboard's workers page read them (a worker is stale by :meth:`WorkerInfo.stale`
    at that time). A store whose schema predates the table is a :class:`UsageError`."""
    if not tracks_workers(backend):
        version = getattr(backend, "schema_version", lambda: 0)()
        raise UsageError(
            f"this store's schema (version {version}) has no workers table, which version "
            f"{WORKERS_TABLE_VERSION} adds; run `jobdef db upgrade` with a jobdef that ships it"
        )
    return backend.workers(), backend.clock()


def queue_fields(info: WorkerInfo) -> dict[str, Any]:
    """A worker's queues as ``jobdef workers --format json`` and ``/api/workers`` show them.

    A worker started without ``--queues`` takes every queue: ``"all_queues": true``
    and ``"queues": null``. Otherwise ``"all_queues": false`` and ``queues`` lists
    the names. Not ``[]`` for every queue, which a reader of ``queues`` alone would
    take for none, and not ``"all"``, which is also a valid queue name.
    """
    return {
        "queues": None if info.queues is None else list(info.queues),
        "all_queues": info.queues is None,
    }
