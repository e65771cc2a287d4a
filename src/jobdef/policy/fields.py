"""The fields of a Job sheet, in sheet order: the one list of them.

Each :class:`PolicyField` names a sheet path (``backoff.initial``), what kind of
value it holds (which decides how it is read, compared and written), its
built-in default, and when it shapes a job at all: the docs and ``jobdef
explain`` leave out the fields that a job's mode or backoff strategy ignores,
while ``jobdef diff`` compares every field. The builder
(:func:`jobdef.sheets.build.build_job`), ``jobdef new``'s scaffold, the resolved
export, the duration and size rules and the adapters' fidelity table all follow this list;
``tests/policy/test_policy_fields.py`` holds each of them, and this list, to the
schema's ``Job``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from jobdef.policy.backoff import cut_by_max
from jobdef.policy.values import DEFAULT_ARGS_BYTES, DEFAULT_RESULT_BYTES
from jobdef.records import Record, record

if TYPE_CHECKING:
    from jobdef.policy.model import JobPolicy

# text: as written; integer and number: an int and a float; duration: float seconds
# (None: none or forever); durations: a list of them; bytes: an int, written as one or
# with a unit (64KiB); names: a list of words; errors: error classes; args: the args'
# JSON Schema; schema: a JSON Schema as written (None: none); flag: true or false;
# selection: true (all), false (none) or a list of names; answer: a yes/no answer of
# the decision block (None: not answered).
Kind = Literal[
    "text",
    "integer",
    "number",
    "duration",
    "durations",
    "bytes",
    "names",
    "errors",
    "args",
    "schema",
    "flag",
    "selection",
    "answer",
]


def _always(job: JobPolicy) -> bool:
    return True


def batch_only(job: JobPolicy) -> bool:
    """Whether ``job`` is a batch job: the fields of a schedule shape only those."""
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


def _stored(job: JobPolicy) -> bool:
    """The fields of a result shape a job only when its value is stored."""
    return job.result.store


def declares_result(job: JobPolicy) -> bool:
    """Whether the job's sheet or a Defaults document writes a ``result:`` field: the
    classic sheet's tables then show a result row, and exports say what they keep."""
    return any(path.startswith("result.") for path in job.origins)


@record
class PolicyField(Record):
    """One field of a Job sheet: its path, its kind, its default, and whether it shapes a job.

    ``default`` is the value a job has when neither its sheet nor a Defaults document
    writes the field, written as a sheet writes it (``"60s"``); ``None`` leaves it
    unset. ``unset`` is the word a sheet may write for unset (``until_resolved``).
    ``attribute`` is where :class:`JobPolicy` holds the value, when not at ``path``.
    ``inherits`` is the path of the field whose value it takes when neither the sheet
    nor Defaults writes it (``result.retention`` takes ``retention.done``'s).
    """

    path: str
    kind: Kind = "text"
    applies: Callable[[JobPolicy], bool] = _always
    default: Any = None
    unset: str | None = None
    attribute: str = ""
    inherits: str = ""

    @property
    def where(self) -> str:
        """The dotted attribute path of the value in :class:`JobPolicy`."""
        return self.attribute or self.path


JOB_FIELDS: tuple[PolicyField, ...] = (
    PolicyField("name"),
    PolicyField("title", default=""),
    PolicyField("description", default=""),
    PolicyField("owner", default=""),
    PolicyField("trigger", default=""),
    PolicyField("mode", default="async"),
    PolicyField("schedule", applies=batch_only),
    PolicyField("timezone", applies=batch_only, default="UTC"),
    PolicyField("catch_up", applies=batch_only, default="latest"),
    PolicyField("handler", default=""),
    PolicyField("queue", default="default"),
    PolicyField("priority", "integer", default=0),
    PolicyField("args", "args", attribute="args_schema"),
    PolicyField("max_attempts", "integer", default=1),
    PolicyField("backoff.strategy", default="fixed"),
    PolicyField("backoff.delays", "durations", _listed_delays),
    PolicyField("backoff.initial", "duration", _computed_delays, default="0s"),
    PolicyField("backoff.multiplier", "number", _exponential, default=2),
    PolicyField("backoff.max", "duration", _capped),
    PolicyField("backoff.jitter", default="full"),
    PolicyField("timeout", "duration", default="60s"),
    PolicyField("deadline", "duration"),
    PolicyField("idempotency.key"),
    PolicyField("idempotency.dedupe_window", "duration"),
    PolicyField("errors.retry", "errors"),
    PolicyField("errors.fatal", "errors"),
    PolicyField("errors.default", default="retry"),
    PolicyField("on_reclaim", default="retry"),
    PolicyField("dead_letter.target", default="table", attribute="dead_letter"),
    PolicyField("notify.channel"),
    PolicyField("notify.events", "names"),
    PolicyField("notify.key_args", "names"),
    PolicyField("rerun", default=""),
    PolicyField("retention.done", "duration"),
    PolicyField("retention.dead", "duration", default="until_resolved", unset="until_resolved"),
    PolicyField("limits.args_bytes", "integer", default=DEFAULT_ARGS_BYTES),
    PolicyField("result.store", "flag", default=True),
    PolicyField("result.max_bytes", "bytes", _stored, default=DEFAULT_RESULT_BYTES),
    PolicyField("result.retention", "duration", _stored, inherits="retention.done"),
    PolicyField("result.schema", "schema", _stored),
    PolicyField("result.public", "selection", _stored, default=False),
    PolicyField("result.notify", "names", _stored),
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
    value: Any = job
    for part in FIELDS[path].where.split("."):
        if value is None:  # a decision block the sheet does not have
            return None
        value = getattr(value, part)
    return value
