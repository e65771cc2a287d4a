"""The policy fields of a job, in sheet order: the one list the review diff and the docs read.

Each :class:`PolicyField` names a sheet path (``backoff.initial``), what kind of
value it holds (which decides how it is compared and written), and when it
shapes a job at all: the docs and ``jobdef explain`` leave out the fields that
a job's mode or backoff strategy ignores, while ``jobdef diff`` compares every
field. The builder (:func:`jobdef.sheets.build.build_job`) and ``jobdef new``'s
scaffold name the fields one by one; ``tests/policy/test_policy_fields.py``
keeps all of them in step with the schema's ``Job``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from jobdef.policy.backoff import cut_by_max
from jobdef.policy.model import JobPolicy

# text and number: as written; duration: float seconds (None: none or forever);
# durations: a list of them; names: a list of words; errors: error classes;
# args: the args' JSON Schema; answer: a yes/no answer of the decision block.
Kind = Literal["text", "number", "duration", "durations", "names", "errors", "args", "answer"]


def _always(job: JobPolicy) -> bool:
    return True


def _batch(job: JobPolicy) -> bool:
    return job.mode == "batch"


def _listed_delays(job: JobPolicy) -> bool:
    return job.backoff.strategy == "list"


def _computed_delays(job: JobPolicy) -> bool:
    # Decorrelated jitter draws from initial whatever the strategy (policy.backoff.delay_range).
    return job.backoff.strategy != "list" or job.backoff.jitter == "decorrelated"


def _exponential(job: JobPolicy) -> bool:
    return job.backoff.strategy == "exponential"


def _capped(job: JobPolicy) -> bool:
    """A cap shapes growing and decorrelated waits always, listed and fixed ones when it
    cuts a wait the job reaches (an inherited ``max: 5m`` under ``delays: [.., 10m]``)."""
    b = job.backoff
    if b.strategy in ("exponential", "linear") or b.jitter == "decorrelated":
        return True
    return bool(cut_by_max(b, job.max_attempts - 1))


def _accepts_celery(job: JobPolicy) -> bool:
    return bool(job.runtime.celery.accept)


def _accepts_rq(job: JobPolicy) -> bool:
    return bool(job.runtime.rq.accept)


def _answered(job: JobPolicy) -> bool:
    return job.decision is not None


@dataclass(frozen=True, slots=True)
class PolicyField:
    """One field of a Job sheet: its path, its kind, and whether it shapes a given job."""

    path: str
    kind: Kind = "text"
    applies: Callable[[JobPolicy], bool] = _always


JOB_FIELDS: tuple[PolicyField, ...] = (
    PolicyField("name"),
    PolicyField("title"),
    PolicyField("description"),
    PolicyField("owner"),
    PolicyField("trigger"),
    PolicyField("mode"),
    PolicyField("schedule", applies=_batch),
    PolicyField("timezone", applies=_batch),
    PolicyField("catch_up", applies=_batch),
    PolicyField("handler"),
    PolicyField("queue"),
    PolicyField("priority", "number"),
    PolicyField("args", "args"),
    PolicyField("max_attempts", "number"),
    PolicyField("backoff.strategy"),
    PolicyField("backoff.delays", "durations", _listed_delays),
    PolicyField("backoff.initial", "duration", _computed_delays),
    PolicyField("backoff.multiplier", "number", _exponential),
    PolicyField("backoff.max", "duration", _capped),
    PolicyField("backoff.jitter"),
    PolicyField("timeout", "duration"),
    PolicyField("deadline", "duration"),
    PolicyField("idempotency.key"),
    PolicyField("idempotency.dedupe_window", "duration"),
    PolicyField("errors.retry", "errors"),
    PolicyField("errors.fatal", "errors"),
    PolicyField("errors.default"),
    PolicyField("on_reclaim"),
    PolicyField("dead_letter.target"),
    PolicyField("notify.channel"),
    PolicyField("notify.events", "names"),
    PolicyField("notify.key_args", "names"),
    PolicyField("rerun"),
    PolicyField("retention.done", "duration"),
    PolicyField("retention.dead", "duration"),
    PolicyField("limits.args_bytes", "number"),
    PolicyField("runtime.celery.accept", "names", _accepts_celery),
    PolicyField("runtime.rq.accept", "names", _accepts_rq),
    PolicyField("decision.time_triggered", "answer", _answered),
    PolicyField("decision.result_needed_at_once", "answer", _answered),
    PolicyField("decision.done_within_seconds", "answer", _answered),
    PolicyField("decision.calls_external_systems", "answer", _answered),
    PolicyField("decision.must_accept_when_external_down", "answer", _answered),
)

FIELDS: Mapping[str, PolicyField] = {field.path: field for field in JOB_FIELDS}


def policy_value(job: JobPolicy, path: str) -> Any:
    """The value at sheet path ``path`` as ``job`` holds it (``None``: an unanswered question)."""
    if path == "args":
        return job.args_schema
    if path == "dead_letter.target":  # the policy keeps the target alone
        return job.dead_letter
    if path.startswith("decision."):
        return None if job.decision is None else getattr(job.decision, path.partition(".")[2])
    value: Any = job
    for part in path.split("."):
        value = getattr(value, part)
    return value
