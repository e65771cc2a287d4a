"""Recording a failed attempt: decide by the sheet, write the fenced move, queue the notes.

An attempt fails in one of four ways: the handler raised, it ran past its
``timeout`` and was killed, its process died, or its worker stopped
heart-beating and the lease reclaimer found the lease expired. The worker
records the first three, the reclaimer the last; both call
:func:`record_failure`, so a sheet's ``errors``, ``on_reclaim``,
``max_attempts``, ``backoff``, ``deadline`` and ``notify`` mean the same
whoever records the attempt.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from jobdef.backends.protocol import Backend
from jobdef.backends.records import ErrorInfo, JobRecord, Outcome
from jobdef.notify.events import notifications_for
from jobdef.policy.model import JobPolicy
from jobdef.redact import redact, sensitive_values
from jobdef.runtime.decisions import Decision, after_error, after_reclaim


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """One attempt that did not succeed, fenced on ``record.lease``.

    ``names``: the error's class and its bases as sheet names, nearest first
    (what ``errors.retry`` and ``errors.fatal`` are matched against).
    ``outcome``: how the attempt ended when the handler did not raise on its own
    (``timeout``, ``crashed``, ``reclaimed``); ``None`` when it raised.
    """

    record: JobRecord
    policy: JobPolicy
    error: ErrorInfo
    names: tuple[str, ...]
    outcome: Outcome | None = None


@dataclass(frozen=True, slots=True)
class Recorded:
    """What became of a failed attempt; ``moved`` is False when the store refused the move
    (the lease was no longer held: it expired and the job was reclaimed elsewhere)."""

    decision: Decision
    moved: bool


# How an attempt ended, as a notification event sent before the decision's own
# (``retry`` or ``dead``); a crash has no event of its own.
_ENDED = frozenset({"timeout", "reclaimed"})


def decide(failed: FailedAttempt, now: float, rng: random.Random | None = None) -> Decision:
    """Retry or bury: ``on_reclaim`` for a reclaimed job, else the sheet's ``errors``."""
    if failed.outcome == "reclaimed":
        return after_reclaim(failed.policy, failed.record, now, rng)
    return after_error(failed.policy, failed.record, failed.names, now, rng)


def record_failure(
    backend: Backend, failed: FailedAttempt, now: float, rng: random.Random | None = None
) -> Recorded:
    """Decide what ``failed`` leads to, then retry or bury the job in one fenced transition,
    with the sheet's notifications for how the attempt ended and what was decided."""
    record, policy, error = failed.record, failed.policy, failed.error
    # The handler's words, without the values the displays hide (an exception that
    # quotes the password it was given): stored, notified and shown from here on.
    hidden = sensitive_values(policy, record.args)
    if hidden:
        message, trace = redact(error.message, hidden), redact(error.traceback, hidden)
        error = ErrorInfo(error.type, message, trace)
    decision = decide(failed, now, rng)
    if decision.action == "dead":
        error = ErrorInfo(error.type, f"{error.message}; dead: {decision.reason}", error.traceback)
    ended = failed.outcome
    events: list[str] = [ended] if ended is not None and ended in _ENDED else []
    events.append(decision.action)
    notes = [n for e in events for n in notifications_for(policy, e, record, error, now)]
    outcome: Outcome = failed.outcome or decision.action
    if decision.action == "retry":
        moved = backend.retry(
            record.lease,
            error,
            decision.run_after or now,
            decision.delay or 0.0,
            outcome=outcome,
            notifications=notes,
        )
    else:
        moved = backend.bury(record.lease, error, outcome=outcome, notifications=notes)
    return Recorded(decision, moved)
