"""The workers table: who is serving the store, seen by ``jobdef workers``.

A worker registers when it starts (id, host, pid, queues, concurrency, lease,
version, start time), stamps ``last_beat`` on the cadence of its lease
heartbeats (every lease/3, one small UPDATE by primary key) and deletes its row
when it stops. A worker that died, or froze (SIGSTOP, a deadlock), stops
beating: its row is *stale* once ``last_beat`` is older than its lease, which is
also when its jobs' leases expire and they are reclaimed. Stale rows are
deleted by the retention service after :data:`STALE_WORKER_RETENTION`.

Every time is on the store's clock, the one all hosts share on PostgreSQL.
The running jobs of a worker are not stored here: they are the jobs whose
``worker_id`` is the worker's, read from the jobs table.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeGuard

from jobdef.backends.rows import Row
from jobdef.records import Record, record

# A stale worker's row is kept this long (seconds) for `jobdef workers` to show it.
STALE_WORKER_RETENTION = 24 * 3600.0
# The migration that creates the workers table, in both engines.
WORKERS_TABLE_VERSION = 5


@record
class WorkerInfo(Record):
    """One row of the workers table. ``queues`` is None for a worker of every queue."""

    id: str
    host: str
    pid: int
    queues: tuple[str, ...] | None
    concurrency: int
    lease_seconds: float
    version: str
    started_at: float
    last_beat: float
    # The jobs running under this worker's leases (from the jobs table).
    running: tuple[int, ...] = ()
    # The channel on which enqueues tell the worker its turns (runtime.wake_share); ''
    # for one that does not listen (?wake=poll); None: it listens on the schema's
    # channel only (an earlier jobdef's worker), or the engine tells no one (SQLite).
    wake_channel: str | None = None

    def stale(self, now: float) -> bool:
        """No beat for longer than its lease: dead or frozen."""
        return now - self.last_beat > self.lease_seconds


class WorkerVerbs(ABC):
    """The verbs of the workers table, over the shared primitives of each engine."""

    clock: Callable[[], float]

    @abstractmethod
    def _read(self, name: str, params: Mapping[str, Any]) -> Sequence[Row]: ...

    @abstractmethod
    def _write_one(self, name: str, params: Mapping[str, Any]) -> int: ...

    def register_worker(self, info: WorkerInfo) -> None:
        """Insert (or replace) the row of ``info.id``, stamped now on the store's clock."""
        now = self.clock()
        queues = None if info.queues is None else json.dumps(list(info.queues))
        params = {
            "id": info.id,
            "host": info.host,
            "pid": info.pid,
            "queues": queues,
            "concurrency": info.concurrency,
            "lease_seconds": info.lease_seconds,
            "version": info.version,
            "now": now,
            "wake_channel": self._wake_channel(),
        }
        self._write_one("register_worker", params)

    def _wake_channel(self) -> str | None:
        """The channel on which enqueues tell this engine's worker its turns
        (runtime.wake_share); None: the engine is told of no enqueue (SQLite polls)."""
        return None

    def beat_worker(self, worker_id: str) -> bool:
        """Stamp ``last_beat``; False when the row is gone (pruned while frozen)."""
        return self._write_one("beat_worker", {"id": worker_id, "now": self.clock()}) == 1

    def unregister_worker(self, worker_id: str) -> None:
        self._write_one("unregister_worker", {"id": worker_id})

    def workers(self) -> list[WorkerInfo]:
        """Every registered worker with its running jobs, oldest start first."""
        running: dict[str, list[int]] = {}
        for row in self._read("running_by_worker", {}):
            running.setdefault(row["worker_id"], []).append(int(row["id"]))
        return [
            replace(info, running=tuple(sorted(running.get(info.id, []))))
            for info in self.worker_rows()
        ]

    def worker_rows(self) -> list[WorkerInfo]:
        """Every registered worker, oldest start first, without its running jobs (one
        small read: what an idle worker reads to take its turns, runtime.wake_share)."""
        return [
            WorkerInfo(
                id=row["id"],
                host=row["host"],
                pid=int(row["pid"]),
                queues=None if row["queues"] is None else tuple(json.loads(row["queues"])),
                concurrency=int(row["concurrency"]),
                lease_seconds=float(row["lease_seconds"]),
                version=row["version"],
                started_at=float(row["started_at"]),
                last_beat=float(row["last_beat"]),
                wake_channel=row["wake_channel"],
            )
            for row in self._read("list_workers", {})
        ]

    def prune_workers(self, older_than: float = STALE_WORKER_RETENTION) -> int:
        """Delete the rows of workers that have not beaten for ``older_than`` seconds."""
        return self._write_one("prune_workers", {"before": self.clock() - older_than})


def tracks_workers(backend: object) -> TypeGuard[WorkerVerbs]:
    """Whether ``backend`` keeps the workers table: both engines have the verbs, and the
    table exists once the store's schema is at :data:`WORKERS_TABLE_VERSION`."""
    if not isinstance(backend, WorkerVerbs):
        return False
    version = getattr(backend, "schema_version", None)
    return callable(version) and int(version()) >= WORKERS_TABLE_VERSION
