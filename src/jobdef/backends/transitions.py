"""The fenced transitions, written once for both engines: heartbeat, complete, retry,
bury and release. A reclaim is a retry or a bury with the outcome ``reclaimed``.

Each acts on a running job only while the caller's lease holds: the job row's id,
attempt number and worker id are the lease's, in state ``running`` (a reclaim also
needs the lease to have expired on the engine's clock, so a heartbeat that renewed
it first keeps the job). A lease that no longer holds is refused (``False``) and
nothing is written. A move that holds writes in one transaction the job's new
state, the attempt's row in the attempts table (outcome, error, start and end)
and the outbox messages of the transition: the ledger never shows a move without
its attempt, nor a message of a move that was refused.

An engine gives two primitives, each one transaction that reads the engine's
clock for ``now`` (SQLite inside its write lock, so attempt times follow commit
order):

- ``_fenced_move(name, params, notifications, flows)``: the move of one job by the
  query ``name`` (``retry_job``, ``bury_job``, ``release_job``, whose parameters
  are built here), its attempt row, and the messages if it was not refused; then,
  given ``flows``, :func:`jobdef.backends.flows.settle` of those flows;
- ``_complete(done, claim)``: finish ``done``'s leases as done (attempt rows,
  results, the messages of the jobs that finished), settle the flows of the
  finished leases that are steps (``Completion.flows``), then, given ``claim``,
  claim the worker's next jobs in the same transaction.

A step of a flow settles its flow in the transaction of its end (done, and dead by
a bury, also a reclaim's): its children are queued or cancelled in the commit that
ends it, never after. A retry and a release are not ends, and settle nothing.
The lease says whether its job is a step (``Lease.flow_id``, read with the claimed
row), so a plain job's move costs what it did.

Where each engine writes the attempt row (PostgreSQL in the move's statement,
SQLite in a second one) is said once, at the top of its ``queries.sql``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from jobdef.backends.flows import flows_of
from jobdef.backends.records import (
    ClaimOptions,
    ErrorInfo,
    JobRecord,
    Lease,
    Notification,
    Outcome,
)
from jobdef.backends.rows import dump_json, error_text, lease_params
from jobdef.records import Record, record


@record
class Completion(Record):
    """Attempts that finished their jobs, to record together (a worker's turn)."""

    leases: Sequence[Lease]
    # Job id: the handler's return value as JSON text (checked in the worker's child).
    results: Mapping[int, str]
    # Job id: the messages its completion sends; a refused lease's are not stored.
    notifications: Mapping[int, Sequence[Notification]]

    def flows(self, finished: Collection[int]) -> set[int]:
        """The flows whose steps among the leases are in ``finished``."""
        return flows_of(self.leases, finished)


class FencedTransitions(ABC):
    """The fenced transitions of :class:`~jobdef.backends.protocol.Backend`."""

    clock: Callable[[], float]

    @abstractmethod
    def _write_one(self, name: str, params: Mapping[str, Any]) -> int: ...

    @abstractmethod
    def _wakes(self) -> dict[str, Any]: ...

    @abstractmethod
    def _ends(self) -> dict[str, Any]: ...

    @abstractmethod
    def _fenced_move(
        self,
        name: str,
        params: Mapping[str, Any],
        notifications: Sequence[Notification],
        flows: Collection[int] = (),
    ) -> bool: ...

    @abstractmethod
    def _complete(
        self, done: Completion, claim: ClaimOptions | None
    ) -> tuple[set[int], list[JobRecord]]: ...

    def heartbeat(self, lease: Lease, lease_seconds: float, progress: Any = None) -> bool:
        now = self.clock()
        params = lease_params(lease) | {
            "now": now,
            "lease_until": now + lease_seconds,
            "progress": None if progress is None else dump_json(progress),
        }
        return self._write_one("heartbeat", params) == 1

    def complete(
        self,
        leases: Sequence[Lease],
        notifications: Mapping[int, Sequence[Notification]] | None = None,
        results: Mapping[int, str] | None = None,
    ) -> list[bool]:
        if not leases:
            return []
        done, _ = self._complete(Completion(leases, results or {}, notifications or {}), None)
        return [lease.job_id in done for lease in leases]

    def complete_and_claim(
        self,
        leases: Sequence[Lease],
        notifications: Mapping[int, Sequence[Notification]] | None,
        options: ClaimOptions,
        results: Mapping[int, str] | None = None,
    ) -> tuple[list[bool], list[JobRecord]]:
        completion = Completion(leases, results or {}, notifications or {})
        done, claimed = self._complete(completion, options)
        return [lease.job_id in done for lease in leases], claimed

    def retry(
        self,
        lease: Lease,
        error: ErrorInfo,
        run_after: float,
        delay: float,
        *,
        outcome: Outcome = "retry",
        notifications: Sequence[Notification] = (),
    ) -> bool:
        params = _attempt(lease, outcome, error) | {"run_after": run_after, "delay": delay}
        return self._fenced_move("retry_job", params | self._wakes(), notifications)

    def bury(
        self,
        lease: Lease,
        error: ErrorInfo,
        *,
        outcome: Outcome = "dead",
        notifications: Sequence[Notification] = (),
    ) -> bool:
        params = _attempt(lease, outcome, error) | self._ends()
        flows = () if lease.flow_id is None else (lease.flow_id,)
        return self._fenced_move("bury_job", params, notifications, flows)

    def release(self, lease: Lease) -> bool:
        params = _attempt(lease, "released", None) | self._wakes()
        return self._fenced_move("release_job", params, ())


def _attempt(lease: Lease, outcome: Outcome, error: ErrorInfo | None) -> dict[str, Any]:
    """The parameters of every move: the fence, and what the attempt's row records."""
    return lease_params(lease) | {"outcome": outcome, "error": error_text(error)}
