"""What an operator can do from the dashboard, each through the CLI's backend verbs.

Every action is logged on the ``jobdef.dashboard`` logger with who did it.
The verbs move only rows still in the state they expect (requeue and resolve
take dead jobs, cancel takes queued and running ones, a retried outbox message must be
undelivered), so the same action posted twice changes nothing the second time.

An action on *every job matching a filter* walks the list the way its pages do
(newest first, a window of ids at a time) and hands the verb
:data:`BATCH_SIZE` ids per call: each batch is its own short transaction,
never one that holds the store for a million rows.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from jobdef.dashboard.store import Store
from jobdef.dashboard.views import FROM_STATE, JOB_ACTIONS, NO_CURSOR, JobFilter, matching
from jobdef.errors import JobdefError, UsageError
from jobdef.redact import redact

log = logging.getLogger("jobdef.dashboard")

BATCH_SIZE = 500
# Lines of why-not an outcome shows; the rest are counted.
MAX_NOTES = 5
# What a dead letter group can be given (its jobs are dead).
GROUP_ACTIONS = ("requeue", "resolve")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an action did: how many rows it changed, of how many it was asked about."""

    action: str
    changed: int
    asked: int
    batches: int = 1
    notes: tuple[str, ...] = ()
    """Why a job asked about was not changed, one line each (a job that died in Celery
    or RQ and cannot go back through it from here)."""

    @property
    def text(self) -> str:
        unchanged = self.asked - self.changed - len(self.notes)
        tail = f"; {unchanged} already moved or not in a state it applies to" if unchanged else ""
        batches = f" in {self.batches} batches" if self.batches > 1 else ""
        shown = "".join(f"; {line}" for line in self.notes[:MAX_NOTES])
        if len(self.notes) > MAX_NOTES:
            shown += f"; and {len(self.notes) - MAX_NOTES} more not changed for such a reason"
        return f"{self.action}: {self.changed} of {self.asked} changed{batches}{tail}{shown}"


def _verb(
    store: Store,
    action: str,
    note: str,
    who: str,
    *,
    through: object | None = None,
    notes: list[str] | None = None,
) -> Callable[[Sequence[int]], int]:
    verbs = store.verbs
    if action == "requeue":
        return lambda ids: _requeue(store, ids, who, through, [] if notes is None else notes)
    if action == "resolve":
        text = f"{note} (resolved by {who} in the dashboard)" if note else f"resolved by {who}"
        return lambda ids: sum(bool(store.call(verbs.resolve, i, text)) for i in ids)
    if action == "cancel":
        reason = f"{note} (cancelled by {who} in the dashboard)" if note else f"cancelled by {who}"
        return lambda ids: sum(bool(store.call(verbs.cancel, i, reason)) for i in ids)
    raise UsageError(f"unknown action {action!r}; use one of {', '.join(JOB_ACTIONS)}")


# One requeue through another runtime at a time in this process: the same form posted
# twice at once sends the job once (the second finds its dead row resolved).
_ELSEWHERE = threading.Lock()


def _requeue(
    store: Store, ids: Sequence[int], who: str, through: object | None, notes: list[str]
) -> int:
    """jobdef's requeue of ``ids``; a job among them that died in Celery or RQ goes back
    through ``through`` (the application's Celery app or SheetQueue, ``--app``), or
    gets a line in ``notes`` saying why it cannot."""
    from jobdef.adapters.requeue import needs_app, requeue_through, target_for
    from jobdef.backends.elsewhere import elsewhere

    verbs = store.verbs
    changed = int(store.call(verbs.requeue, list(ids)))
    if changed == len(ids):
        return changed
    for job_id in ids:
        with _ELSEWHERE:
            record = store.call(verbs.get, job_id)
            found = None if record is None or record.state != "dead" else elsewhere(record)
            if record is None or found is None:
                continue
            if target_for(through, found[0]) is None:
                notes.append(needs_app(record, "start the dashboard with"))
                continue
            try:
                requeue_through(
                    through,
                    record,
                    lambda i, text: store.call(verbs.resolve, i, text),
                    by=f"{who} in the dashboard",
                )
            except JobdefError as exc:
                notes.append(exc.message)
            except Exception as exc:  # the runtime's own failure (its broker down...)
                notes.append(
                    f"job {job_id} could not go back through {found[0]}: "
                    f"{type(exc).__name__}: {redact(str(exc))[:200]}"
                )
            else:
                changed += 1
    return changed


def on_jobs(
    store: Store,
    action: str,
    ids: Sequence[int],
    who: str,
    note: str = "",
    *,
    through: object | None = None,
) -> Outcome:
    """``action`` on the jobs ``ids`` (one, or a selection), in batches; ``through``: the
    Celery app or SheetQueue that jobs which died there are requeued through."""
    notes: list[str] = []
    verb = _verb(store, action, note, who, through=through, notes=notes)
    unique = list(dict.fromkeys(ids))
    changed = batches = 0
    for start in range(0, len(unique), BATCH_SIZE):
        changed += verb(unique[start : start + BATCH_SIZE])
        batches += 1
    outcome = Outcome(action, changed, len(unique), max(1, batches), tuple(notes))
    log.info("%s: %s on jobs %s", who, outcome.text, _ids_text(unique))
    return outcome


def on_filter(
    store: Store,
    action: str,
    flt: JobFilter,
    who: str,
    note: str = "",
    *,
    progress: Callable[[int, int], None] | None = None,
) -> Outcome:
    """``action`` on every job matching ``flt`` (narrowed to the state it applies to)."""
    outcome = Outcome(action, 0, 0)
    for outcome in filter_steps(store, action, flt, who, note):
        if progress is not None:
            progress(outcome.changed, outcome.asked)
    return outcome


def filter_steps(
    store: Store,
    action: str,
    flt: JobFilter,
    who: str,
    note: str = "",
    *,
    through: object | None = None,
) -> Iterator[Outcome]:
    """:func:`on_filter` one batch at a time: the running total after each batch."""
    wanted = FROM_STATE.get(action)
    if wanted is None:
        raise UsageError(f"unknown action {action!r}; use one of {', '.join(JOB_ACTIONS)}")
    changed = asked = batches = 0
    notes: list[str] = []
    if flt.state in (None, wanted):
        narrowed = replace(flt, state=wanted, before=None)
        verb = _verb(store, action, note, who, through=through, notes=notes)
        for batch in _batches(store, narrowed):
            asked += len(batch)
            changed += verb(batch)
            batches += 1
            yield Outcome(action, changed, asked, batches, tuple(notes))
    outcome = Outcome(action, changed, asked, max(1, batches), tuple(notes))
    log.info("%s: %s on every job matching %s", who, outcome.text, flt.query() or "(no filter)")
    if batches == 0:
        yield outcome


def _batches(store: Store, flt: JobFilter) -> Iterator[list[int]]:
    """Ids matching ``flt``, BATCH_SIZE at a time, newest first, each id once."""
    if flt.job_id is not None:
        yield [flt.job_id]
        return
    before = NO_CURSOR
    while True:
        records, floor = matching(store, flt, before, BATCH_SIZE)
        if records:
            yield [r.id for r in records]
        if len(records) == BATCH_SIZE:
            before = records[-1].id
        elif floor:
            before = floor
        else:
            return


def on_groups(
    store: Store,
    action: str,
    groups: Sequence[tuple[str, str]],
    who: str,
    note: str = "",
    *,
    through: object | None = None,
) -> Outcome:
    """``action`` (requeue or resolve) on every dead job of each ``(job, error type)``
    group of the dead letter, BATCH_SIZE ids per call, newest first."""
    if action not in GROUP_ACTIONS:
        raise UsageError(f"action: a dead letter group takes {' or '.join(GROUP_ACTIONS)}")
    notes: list[str] = []
    verb = _verb(store, action, note, who, through=through, notes=notes)
    changed = asked = batches = 0
    for batch in _group_batches(store, groups):
        asked += len(batch)
        changed += verb(batch)
        batches += 1
    outcome = Outcome(action, changed, asked, max(1, batches), tuple(notes))
    shown = "; ".join(f"{job} {error_type}" for job, error_type in groups[:20])
    log.info("%s: %s on the dead letter groups %s", who, outcome.text, shown)
    return outcome


def _group_batches(store: Store, groups: Sequence[tuple[str, str]]) -> Iterator[list[int]]:
    """The dead ids of ``groups``, BATCH_SIZE at a time (a batch may span groups), each
    group walked newest first by id, so a row the verb left dead is not read again."""
    pending: list[int] = []
    for job, error_type in dict.fromkeys(groups):
        before = NO_CURSOR
        while True:
            rows = store.rows(
                "dead_group_ids", job=job, error_type=error_type, before=before, limit=BATCH_SIZE
            )
            pending += [int(row["id"]) for row in rows]
            while len(pending) >= BATCH_SIZE:
                yield pending[:BATCH_SIZE]
                pending = pending[BATCH_SIZE:]
            if len(rows) < BATCH_SIZE:
                break
            before = int(rows[-1]["id"])
    if pending:
        yield pending


# Held from the look at a queue or message to the verb that changes it, so two posts of
# this dashboard never both count the same change.
_LOOK_THEN_CHANGE = threading.Lock()


def set_paused(store: Store, queue: str, paused: bool, who: str) -> Outcome:
    """Pause or resume ``queue``; a queue already so is left alone and counted unchanged."""
    word = "pause" if paused else "resume"
    with _LOOK_THEN_CHANGE:
        rows = store.rows("queue_paused", queue=queue)
        changed = paused != bool(rows and rows[0]["paused"])  # no row: not paused
        if changed:
            store.call(store.verbs.set_paused, queue, paused)
    outcome = Outcome(word, int(changed), 1)
    log.info("%s: %s on queue %s", who, outcome.text, queue)
    return outcome


def retry_outbox(store: Store, ids: Sequence[int], who: str) -> Outcome:
    """Make undelivered messages due now; one already due, with no sender holding it, is
    left alone and counted unchanged (the verb would only stamp it again)."""
    unique = list(dict.fromkeys(ids))
    with _LOOK_THEN_CHANGE:
        rows = store.rows("outbox_retryable", ids=unique, now=store.clock())
        retryable = [int(row["id"]) for row in rows]
        changed = int(store.call(store.verbs.outbox_retry, retryable)) if retryable else 0
    outcome = Outcome("retry delivery", changed, len(unique))
    log.info("%s: %s on outbox messages %s", who, outcome.text, _ids_text(unique))
    return outcome


def cancel_flows(store: Store, ids: Sequence[int], who: str, note: str) -> Outcome:
    """Cancel running flows (:meth:`~jobdef.runtime.queue.Queue.cancel_flow`'s verb): their
    waiting, queued and running steps are cancelled with the reason (a running one's
    handler is stopped by its worker at its next heartbeat). A flow
    that already ended is left alone and counted unchanged."""
    unique = list(dict.fromkeys(ids))
    reason = f"{note} (cancelled by {who} in the dashboard)" if note else f"cancelled by {who}"
    changed = sum(bool(store.call(store.verbs.cancel_flow, i, reason)) for i in unique)
    outcome = Outcome("cancel flow", changed, len(unique))
    log.info("%s: %s on flows %s", who, outcome.text, _ids_text(unique))
    return outcome


def _ids_text(ids: Sequence[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:20])
    return shown + (f" and {len(ids) - 20} more" if len(ids) > 20 else "")
