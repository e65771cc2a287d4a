"""The verbs written once for both engines, over a few primitives each engine provides.

A verb here runs queries whose names and parameters are the same in both
engines' ``queries.sql``: only the dialect of their SQL differs. An engine
inherits :class:`SharedVerbs` (with the fenced transitions of
:mod:`jobdef.backends.transitions` and the workers table's verbs of
:mod:`jobdef.backends.workers`) and gives it

- ``_read(name, params)``: the rows of one query, read by column name;
- ``_read_all(statements)``: the rows of each, read from one snapshot;
- ``_write_one(name, params)``: run one statement in its own transaction, its rowcount;
- ``_write_all(statements)``: run them in one transaction, the rows each returns;
- ``_ids_param(ids)``: how the dialect passes a list of ids, or of other numbers
  (SQLite: JSON text, PostgreSQL: an array);
- ``_decode(value)``: a JSON column as the driver returns it, decoded;
- ``_wakes()``: the parameters a statement that makes jobs runnable takes to
  wake idle workers (PostgreSQL: its notify channel; SQLite: none);
- ``_ends()``: those a statement that ends a job takes to tell its waiters
  (PostgreSQL: the waiters' channel; SQLite: none, its waiters poll);
- ``clock``: the engine's clock, epoch seconds;
- ``_fenced_move`` and ``_complete``: the transactions of the fenced
  transitions (see :mod:`jobdef.backends.transitions`).

Each engine keeps what its dialect does differently: enqueue, claim, prune,
migrations, and on PostgreSQL the listener. The engine's error translation (and
PostgreSQL's reconnect) lives in its primitives, so every verb here has it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from jobdef.backends import flows
from jobdef.backends.cancels import CancelledFrom, end_running_attempts
from jobdef.backends.elsewhere import ElsewhereVerbs
from jobdef.backends.flows import NO_FLOW_CURSOR, FlowRecord, FlowTx, NewFlow
from jobdef.backends.records import (
    AttemptRecord,
    JobRecord,
    Lease,
    OutboxRecord,
    QueueInfo,
    Receipt,
    State,
    StateCount,
)
from jobdef.backends.rows import (
    Row,
    attempt_history,
    job_record,
    looks_like_token,
    outbox_record,
    same_token,
)
from jobdef.backends.sql import Statement
from jobdef.backends.transitions import FencedTransitions
from jobdef.backends.workers import WorkerVerbs

# A queue's queued jobs are counted up to this many (``queue_depths``): the count
# walks the queue's entries of the index of queued rows and stops there, so a
# backlog of millions costs no more to read. A count that reaches it means "at
# least this many".
QUEUED_COUNT_CAP = 100_000

T = TypeVar("T")


class SharedVerbs(WorkerVerbs, ElsewhereVerbs, FencedTransitions, ABC):
    """The dialect-neutral verbs of :class:`~jobdef.backends.protocol.Backend`."""

    clock: Callable[[], float]

    @abstractmethod
    def _read(self, name: str, params: Mapping[str, Any]) -> Sequence[Row]: ...

    @abstractmethod
    def _read_all(self, statements: Sequence[Statement]) -> Sequence[Sequence[Row]]: ...

    @abstractmethod
    def _read_on(self, connection: Any, statements: Sequence[Statement]) -> Sequence[Sequence[Row]]:
        """Run ``statements`` on the caller's DB-API ``connection``, in its transaction."""

    @abstractmethod
    def _write_one(self, name: str, params: Mapping[str, Any]) -> int: ...

    @abstractmethod
    def _write_all(self, statements: Sequence[Statement]) -> Sequence[Sequence[Row]]: ...

    @abstractmethod
    def _ids_param(self, ids: Sequence[float]) -> Any: ...

    @abstractmethod
    def _flow_tx(
        self,
        work: Callable[[FlowTx], T],
        connection: Any = None,
        *,
        retry: bool = True,
        reads: bool = False,
    ) -> T:
        """``work`` in one transaction (the caller's, given ``connection``) through a
        :class:`~jobdef.backends.flows.FlowTx`; its messages stored before the commit.
        ``retry``: whether an engine that runs a verb again after a lost session may;
        ``reads``: ``work`` only reads (SQLite then takes no write lock)."""

    @abstractmethod
    def _decode(self, value: Any) -> Any: ...

    def _wakes(self) -> dict[str, Any]:
        return {}

    def _ends(self) -> dict[str, Any]:
        return {}

    def _job(self, row: Row) -> JobRecord:
        return job_record(row, self._decode)

    # -- operator verbs ---------------------------------------------------------

    def cancel(self, job_id: int, reason: str = "cancelled") -> CancelledFrom | None:
        """Cancel a queued or running job (:mod:`jobdef.backends.cancels`); a step of a
        flow settles its flow in the same transaction. The state it was in, or None
        when it was in neither."""

        def work(tx: FlowTx) -> CancelledFrom | None:
            targets = tx.run("cancel_job_target", {"job_id": job_id})
            if not targets:
                return None
            params = {"job_id": job_id, "note": reason, "now": tx.now, **self._ends()}
            rows = tx.run("cancel_job", params)
            end_running_attempts(tx.run, targets, reason, tx.now)
            flows.settle(tx, [row["flow_id"] for row in rows if row["flow_id"] is not None])
            was: CancelledFrom = "running" if targets[0]["state"] == "running" else "queued"
            return was

        return self._flow_tx(work)

    # -- flows (jobdef.backends.flows) ---------------------------------------------

    def start_flow(self, flow: NewFlow, connection: Any = None) -> Receipt:
        """Store a flow and all its steps in one transaction (the caller's, given
        ``connection``), or return the receipt of the flow its key merges into."""
        # A start without a key is not run again after a lost session: it could
        # store the flow twice. One with a key finds the first.
        retry = flow.idempotency_key is not None
        return self._flow_tx(lambda tx: flows.start(tx, flow), connection, retry=retry)

    def cancel_flow(self, flow_id: int, reason: str) -> bool:
        """Cancel a running flow (see :func:`jobdef.backends.flows.cancel`)."""
        return self._flow_tx(lambda tx: flows.cancel(tx, flow_id, reason))

    def sweep_flows(self, limit: int = 100) -> tuple[int, int]:
        """Settle what no step's end can settle any more (:func:`jobdef.backends.flows.sweep`)."""
        return self._flow_tx(lambda tx: flows.sweep(tx, limit))

    def get_flow(self, flow_id: int) -> FlowRecord | None:
        """One flow and its steps' states, or None."""
        return self._flow_tx(lambda tx: _one_flow(tx, "flow_get", {"flow_id": flow_id}), reads=True)

    def find_flow(self, token: str) -> FlowRecord | None:
        """The flow whose receipt token is ``token``, or None."""
        if not looks_like_token(token):
            return None
        found = self._flow_tx(
            lambda tx: _one_flow(tx, "flow_by_receipt", {"receipt": token}), reads=True
        )
        return found if found is not None and same_token(found.receipt, token) else None

    def list_flows(
        self,
        state: str | None = None,
        name: str | None = None,
        limit: int = 100,
        *,
        before: int = NO_FLOW_CURSOR,
        floor: int = 0,
    ) -> list[FlowRecord]:
        """Flows, newest first, with their steps' states."""
        params = {"state": state, "name": name, "limit": limit, "before": before, "floor": floor}
        return self._flow_tx(
            lambda tx: [flows.flow_record(tx, row) for row in tx.run("flow_list", params)],
            reads=True,
        )

    def flow_counts(self) -> list[tuple[str, str, int]]:
        """(flow name, state, count) of every flow stored."""
        rows = self._read("flow_counts", {})
        return [(row["name"], row["state"], int(row["count"])) for row in rows]

    def prune_flows(self, batch_size: int = 1000, *, dry_run: bool = False) -> int:
        """Delete the ended flows none of whose steps' rows remain, in batches of
        ``batch_size``, each its own short transaction, walking the ended flows once
        by id. Returns how many; with ``dry_run`` only counts them."""
        if dry_run:
            return int(self._read("prune_flows_count", {})[0]["count"])
        deleted, after = 0, 0
        while True:
            params = {"after": after, "limit": batch_size}
            [rows] = self._write_all([Statement("prune_flows_batch", params)])
            deleted += len(rows)
            if len(rows) < batch_size:
                return deleted
            after = max(int(row["id"]) for row in rows)

    def requeue(
        self, job_ids: Sequence[int] = (), job: str | None = None, state: State = "dead"
    ) -> int:
        """Both selections in one transaction; each query returns one row per job it moved."""
        params = {"state": state, "now": self.clock(), **self._wakes()}
        statements = []
        if job_ids:
            statements.append(Statement("requeue_ids", params | {"ids": self._ids_param(job_ids)}))
        if job is not None:
            statements.append(Statement("requeue_job", params | {"job": job}))
        if not statements:
            return 0
        return sum(len(rows) for rows in self._write_all(statements))

    def resolve(self, job_id: int, note: str) -> bool:
        params = {"job_id": job_id, "note": note, "now": self.clock()}
        return self._write_one("resolve_job", params) == 1

    def expired_leases(self, limit: int = 100) -> list[JobRecord]:
        rows = self._read("expired_leases", {"now": self.clock(), "limit": limit})
        return [self._job(row) for row in rows]

    def release_unhanded(self, worker_id: str, started_at: Sequence[float]) -> int:
        """Found, then each given back through the fenced release (a shutdown's)."""
        params = {"worker_id": worker_id, "started": self._ids_param(started_at)}
        rows = self._read("unhanded_claims", params)
        leases = [Lease(int(row["id"]), int(row["attempt"]), worker_id) for row in rows]
        return sum(self.release(lease) for lease in leases)

    # -- reading ----------------------------------------------------------------

    def dead_count(self, job: str, cap: int) -> int:
        """``job``'s dead jobs, counted up to ``cap`` through the index of finished rows
        (a bounded read, whatever the table holds)."""
        [row] = self._read("dead_count", {"job": job, "cap": cap})
        return int(row["count"])

    def stats(self) -> list[StateCount]:
        return [
            StateCount(
                job=row["job"],
                queue=row["queue"],
                state=row["state"],
                count=row["count"],
                oldest_age=row["oldest_age"],
            )
            for row in self._read("stats", {"now": self.clock()})
        ]

    def store_id(self) -> str:
        """The id the store holds (drawn when its tables were made): two URLs reach one
        store when they read the same id, however they spell its host or path."""
        [row] = self._read("store_id", {})
        return str(row["id"])

    def get(self, job_id: int) -> JobRecord | None:
        rows = self._read("get_job", {"job_id": job_id})
        return self._job(rows[0]) if rows else None

    # -- receipts and their waiters -------------------------------------------------

    def find_receipt(self, token: str) -> JobRecord | None:
        """The job whose receipt token is ``token``, or None. Found through the unique
        index of receipts (on PostgreSQL, of the jobs not running, and through the index
        of running jobs for those), then the stored token compared in constant time; a
        text that cannot be a token is not looked up."""
        if not looks_like_token(token):
            return None
        rows = self._read("job_by_receipt", {"receipt": token})
        if not rows or not same_token(rows[0]["receipt"], token):
            return None
        return self._job(rows[0])

    def ended_jobs(self, ids: Sequence[int]) -> tuple[list[JobRecord], list[int]]:
        """Of the jobs ``ids``, those that ended (done, dead, resolved, cancelled), and
        the ids of those that are gone (never stored, or pruned): one statement for all."""
        return self._ended_or_gone(self._read("ended_jobs", {"ids": self._ids_param(ids)}))

    def watch_jobs(self, ids: Sequence[int]) -> tuple[list[JobRecord], list[int]]:
        """Start waiting for the jobs ``ids``: as :meth:`ended_jobs` on an engine whose
        waiters poll; one that tells its waiters (PostgreSQL) also marks them watched."""
        return self.ended_jobs(ids)

    def _ended_or_gone(self, rows: Sequence[Row]) -> tuple[list[JobRecord], list[int]]:
        """The rows of ended_jobs or watch_jobs: the ended jobs, and the gone ids."""
        ended = [self._job(row) for row in rows if row["id"] is not None]
        return ended, [int(row["waited"]) for row in rows if row["id"] is None]

    def last_slot(self, job: str) -> float | None:
        rows = self._read("last_slot", {"job": job})
        return rows[0]["slot"] if rows else None

    def list_jobs(
        self, state: State | None = None, job: str | None = None, limit: int = 100
    ) -> list[JobRecord]:
        rows = self._read("list_jobs", {"state": state, "job": job, "limit": limit})
        return [self._job(row) for row in rows]

    def attempts(self, job_id: int) -> list[AttemptRecord]:
        """Finished attempts from the attempts table, then the running one from the job
        row, read together so that an attempt that ends meanwhile is seen once."""
        params = {"job_id": job_id}
        rows, job = self._read_all(
            [Statement("job_attempts", params), Statement("get_job", params)]
        )
        return attempt_history(rows, job[0] if job else None, self._decode)

    def get_on(self, connection: Any, job_id: int) -> tuple[JobRecord | None, list[AttemptRecord]]:
        params = {"job_id": job_id}
        rows, job = self._read_on(
            connection, [Statement("job_attempts", params), Statement("get_job", params)]
        )
        if not job:
            return None, []
        return self._job(job[0]), attempt_history(rows, job[0], self._decode)

    # -- outbox -----------------------------------------------------------------

    def outbox_claim(self, limit: int, lease_seconds: float) -> list[OutboxRecord]:
        now = self.clock()
        params = {"now": now, "lease_until": now + lease_seconds, "limit": limit}
        [rows] = self._write_all([Statement("outbox_claim", params)])
        records = (outbox_record(row, self._decode) for row in rows)
        return sorted(records, key=lambda r: (r.next_at, r.id))

    def outbox_delivered(self, ids: Sequence[int]) -> None:
        params = {"ids": self._ids_param(ids), "now": self.clock()}
        self._write_one("outbox_delivered", params)

    def outbox_failed(self, id: int, error: str, next_at: float) -> None:
        self._write_one("outbox_failed", {"id": id, "error": error, "next_at": next_at})

    def outbox_retry(self, ids: Sequence[int]) -> int:
        """Make undelivered messages due now (an operator's "retry now"); how many."""
        return self._write_one("outbox_retry", {"ids": self._ids_param(ids), "now": self.clock()})

    def outbox_pending(self) -> list[OutboxRecord]:
        return [outbox_record(row, self._decode) for row in self._read("outbox_pending", {})]

    def outbox_backlog(self, limit: int) -> int:
        """How many messages are undelivered, counted up to ``limit`` (a bounded read)."""
        return int(self._read("outbox_backlog", {"limit": limit})[0]["backlog"])

    # -- queue controls ---------------------------------------------------------

    def set_paused(self, queue: str, paused: bool) -> None:
        params = {"queue": queue, "paused": paused, "now": self.clock(), **self._wakes()}
        self._write_one("set_paused", params)

    def queues(self) -> list[QueueInfo]:
        """Every queue that has a row (a paused one, a limited one) or active jobs.

        Read from the partial indexes of active rows only, whatever the number of
        finished ones; ``queued`` is counted up to :data:`QUEUED_COUNT_CAP`.
        """
        return [
            QueueInfo(
                queue=row["queue"],
                paused=bool(row["paused"]),
                queued=int(row["queued"]),
                running=int(row["running"]),
                oldest_queued_age=row["oldest_queued_age"],
            )
            for row in self._read("queue_depths", {"now": self.clock(), "cap": QUEUED_COUNT_CAP})
        ]


def _one_flow(tx: FlowTx, query: str, params: Mapping[str, Any]) -> FlowRecord | None:
    rows = tx.run(query, params)
    return flows.flow_record(tx, rows[0]) if rows else None
