"""How faithfully each runtime honours each field of a sheet, through its adapter.

Each field a job uses gets a :class:`Verdict`: ``exact``, ``approximate`` (and
how), or ``unsupported`` (and why). ``jobdef check --runtime`` prints them per
sheet and fails on a non-exact one the sheet has not accepted
(``runtime: {celery: {accept: [field, ...]}}``); docs/runtimes.md is generated
from :func:`field_table`, so the page and the command cannot disagree.

The verdicts depend on the job's values where the runtime's limits do (RQ counts
in whole seconds, so a ``1500ms`` wait is approximate there and ``2s`` exact).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from jobdef.policy.fields import JOB_FIELDS
from jobdef.policy.model import JobPolicy

Runtime = Literal["celery", "rq"]
RUNTIMES: tuple[Runtime, ...] = ("celery", "rq")
Level = Literal["exact", "approximate", "unsupported"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """How one runtime honours one field of one job."""

    field: str
    level: Level
    how: str = ""

    def __str__(self) -> str:
        return self.level if not self.how or self.level == "exact" else f"{self.level} ({self.how})"


Rule = Callable[[JobPolicy], tuple[Level, str]]

_DOCS: tuple[Level, str] = ("exact", "documentation: no runtime reads it")


def _docs(job: JobPolicy) -> tuple[Level, str]:
    return _DOCS


# Rules whose verdict is exact whatever the job says: a sheet never needs to accept them.
_ALWAYS_EXACT: set[Rule] = {_docs}


def _exact(how: str) -> Rule:
    def rule(job: JobPolicy) -> tuple[Level, str]:
        return "exact", how

    _ALWAYS_EXACT.add(rule)
    return rule


def _whole(seconds: float | None) -> bool:
    return seconds is None or math.isinf(seconds) or float(seconds).is_integer()


# -- rules shared by both runtimes -------------------------------------------------------

_SCHEDULE: Rule = lambda job: (  # noqa: E731
    ("unsupported", "the adapters do not drive cron schedules: run the job from the "
     "runtime's scheduler (celery beat, RQ's cron) or from jobdef's worker")
    if job.mode == "batch"
    else ("exact", "")
)  # fmt: skip


def _events(job: JobPolicy) -> tuple[Level, str]:
    others = [e for e in job.notify.events if e != "dead"]
    if not others:
        return "exact", "the dead notification goes through jobdef's outbox, once"
    return "unsupported", (
        f"only `dead` is notified; {', '.join(others)} would need a row in jobdef's "
        "database for each attempt, and the adapters write one only when a job dies"
    )


# Where each runtime keeps a task's return value: the source of a run's result (see
# jobdef.adapters.core.runtime_result for why it is not jobdef's store).
_RESULT_STORE = {
    "celery": "Celery's result backend (AsyncResult)",
    "rq": "RQ's job result (job.return_value())",
}


def _result_store(job: JobPolicy) -> tuple[Level, str]:
    return "exact", (
        "with store: false the adapter hands the runtime None: its result store keeps "
        "nothing of the value"
    )


def _result_checked(job: JobPolicy) -> tuple[Level, str]:
    # Not in _ALWAYS_EXACT: a sheet written when these were unsupported may accept them.
    return "exact", (
        "checked as jobdef's worker checks it: a value the sheet refuses fails the attempt "
        "with jobdef.ResultRefused, classified by the sheet's errors"
    )


# What each runtime does instead of a field of `result:` that its adapter does not carry out.
_RESULT_WHY = {
    "result.retention": "{store} keeps it for the app's result_expires, one setting for every task",
    "result.public": "a run of this runtime has no receipt: read the value from {store}",
    "result.notify": "no done notification is sent (see notify.events)",
}


def _result_rule(runtime: Runtime, path: str) -> Rule:
    """The verdict on a field of ``result:`` an adapter does not carry out: exact while
    the sheet says nothing of it (the value goes where the runtime puts it, as it always
    did); else unsupported, with what the runtime does instead."""
    why = _RESULT_WHY[path]

    def rule(job: JobPolicy) -> tuple[Level, str]:
        if job.origin(path) is None:
            return "exact", ""
        return "unsupported", why.format(store=_RESULT_STORE[runtime])

    return rule


def _rq_result_retention(job: JobPolicy) -> tuple[Level, str]:
    retention = job.result.retention
    if retention is None or _whole(retention):
        return "exact", "result_ttl of the RQ job"
    return "approximate", f"result_ttl is whole seconds: {math.ceil(retention)}s"


def _retention_done(job: JobPolicy) -> tuple[Level, str]:
    if job.retention.done is None:
        return "exact", ""
    return "approximate", "a done run leaves no row in jobdef's database to keep or prune"


_COMMON: dict[str, Rule] = {
    "name": _exact("the task or job is matched to its sheet by this name"),
    "title": _docs,
    "description": _docs,
    "owner": _docs,
    "trigger": _docs,
    "rerun": _docs,
    "mode": _SCHEDULE,
    "schedule": _SCHEDULE,
    "timezone": _SCHEDULE,
    "catch_up": _SCHEDULE,
    "args": _exact("checked against the sheet at enqueue; a bad call sends nothing"),
    "limits.args_bytes": _exact("checked at enqueue"),
    "max_attempts": _exact("the adapter counts attempts itself, crash redeliveries included"),
    "deadline": _exact("carried as an absolute time; a retry past it is not scheduled"),
    "idempotency.key": _exact(
        "the task id is derived from the key; a duplicate is not sent while one is active"
    ),
    "idempotency.dedupe_window": _exact("a done marker in the run store lives this long"),
    "errors.retry": _exact("classified by the sheet, most specific class first"),
    "errors.fatal": _exact("classified by the sheet; a fatal error is never retried"),
    "errors.default": _exact("classified by the sheet"),
    "dead_letter.target": _exact("a dead row of jobdef's jobs table, with its attempts"),
    "notify.channel": _exact("through jobdef's outbox"),
    "notify.events": _events,
    "notify.key_args": _exact(""),
    "retention.done": _retention_done,
    "retention.dead": _exact("dead rows are pruned by `jobdef prune` like any other"),
}
for _field in JOB_FIELDS:
    if _field.path.startswith("decision."):
        _COMMON[_field.path] = _docs

# -- Celery ------------------------------------------------------------------------------


def _celery_priority(job: JobPolicy) -> tuple[Level, str]:
    if job.priority == 0:
        return "exact", ""
    return "unsupported", (
        "Celery's message priority means the opposite on Redis (0 first) and RabbitMQ "
        "(highest first) and needs broker setup: give urgent jobs a queue of their own"
    )


_CELERY: dict[str, Rule] = {
    "handler": _exact("the task function decorated with @sheet_task runs"),
    "queue": _exact("the task is sent to the sheet's queue (the worker must consume it: -Q)"),
    "priority": _celery_priority,
    "backoff.strategy": _exact("the adapter computes each countdown with jobdef's backoff"),
    "backoff.delays": _exact(""),
    "backoff.initial": _exact(""),
    "backoff.multiplier": _exact("not Celery's int-cast retry_backoff"),
    "backoff.max": _exact("not Celery's silent 600 s retry_backoff_max"),
    "backoff.jitter": _exact("drawn by jobdef at each failure, never Celery's 0 s jitter"),
    "timeout": _exact(
        "soft_time_limit, and a hard time_limit a little later whose kill is retried per "
        "the sheet (needs the prefork or threads pool)"
    ),
    "on_reclaim": _exact(
        "acks_late with reject_on_worker_lost: the redelivery of a lost worker's task counts "
        "as an attempt (on Redis it returns after the broker's visibility_timeout)"
    ),
}

# -- RQ ----------------------------------------------------------------------------------


def _rq_priority(job: JobPolicy) -> tuple[Level, str]:
    if job.priority == 0:
        return "exact", ""
    return "unsupported", "RQ has no priorities: give urgent jobs a queue of their own"


def _rq_waits(job: JobPolicy) -> tuple[Level, str]:
    b = job.backoff
    if all(_whole(s) for s in (b.initial, b.max, *b.delays)) and b.strategy != "exponential":
        return "exact", "RQ retry intervals from the sheet, one per attempt"
    if b.strategy == "exponential" and _whole(b.initial) and float(b.multiplier).is_integer():
        return "exact", "RQ retry intervals from the sheet, one per attempt"
    return "approximate", "RQ waits whole seconds: each wait is rounded up to the next second"


def _rq_jitter(job: JobPolicy) -> tuple[Level, str]:
    if job.backoff.jitter == "none":
        return "exact", ""
    return "approximate", (
        "every wait is drawn at enqueue (RQ's intervals are fixed then) and rounded up to "
        "a whole second"
    )


def _rq_timeout(job: JobPolicy) -> tuple[Level, str]:
    if _whole(job.timeout):
        return "exact", "job_timeout; a timed-out attempt is classified as the sheet says"
    return "approximate", f"job_timeout is whole seconds: {math.ceil(job.timeout)}s"


_RQ: dict[str, Rule] = {
    "handler": _exact("the wrapper imports and calls the sheet's handler"),
    "queue": _exact("enqueued on the RQ queue of the sheet's name"),
    "priority": _rq_priority,
    "backoff.strategy": _exact("the waits are computed by jobdef, RQ keeps them as intervals"),
    "backoff.delays": _rq_waits,
    "backoff.initial": _rq_waits,
    "backoff.multiplier": _rq_waits,
    "backoff.max": _rq_waits,
    "backoff.jitter": _rq_jitter,
    "timeout": _rq_timeout,
    "on_reclaim": lambda job: (
        "approximate",
        "a killed work horse is counted by SheetWorker; a whole worker killed leaves its "
        "job to RQ's abandoned-job cleanup, after which its next start counts the attempt",
    ),
}

_CHECKED = ("result.store", "result.max_bytes", "result.schema")
_RESULT_FIELDS = [
    f.path for f in JOB_FIELDS if f.path.startswith("result.") and f.path not in _CHECKED
]
_OWN: dict[Runtime, dict[str, Rule]] = {"celery": _CELERY, "rq": _RQ}
RULES: dict[Runtime, dict[str, Rule]] = {
    runtime: _COMMON
    | {path: _result_rule(runtime, path) for path in _RESULT_FIELDS}
    | {"result.store": _result_store, "result.max_bytes": _result_checked}
    | {"result.schema": _result_checked}
    | ({"result.retention": _rq_result_retention} if runtime == "rq" else {})
    | own
    for runtime, own in _OWN.items()
}


def verdicts(runtime: Runtime, job: JobPolicy) -> list[Verdict]:
    """The verdict on each field that shapes ``job``, in sheet order."""
    rules = RULES[runtime]
    out = []
    for field in JOB_FIELDS:
        if not field.applies(job) or field.path.startswith("runtime."):
            continue
        level, how = rules[field.path](job)
        out.append(Verdict(field.path, level, how))
    return out


def unaccepted(runtime: Runtime, job: JobPolicy, found: Iterable[Verdict]) -> list[Verdict]:
    """The non-exact verdicts the sheet has not accepted for ``runtime``."""
    accepted = set(getattr(job.runtime, runtime).accept)
    return [v for v in found if v.level != "exact" and v.field not in accepted]


def acceptable_fields() -> tuple[str, ...]:
    """The fields some runtime may not honour exactly: what ``accept`` may name."""
    return tuple(
        f.path
        for f in JOB_FIELDS
        if not f.path.startswith("runtime.")
        and any(rules[f.path] not in _ALWAYS_EXACT for rules in RULES.values())
    )


def field_table() -> list[tuple[str, dict[Runtime, str]]]:
    """Every field and what each runtime does with it in general (docs/runtimes.md)."""
    rows = []
    for field in JOB_FIELDS:
        if field.path.startswith("runtime."):
            continue
        cells: dict[Runtime, str] = {}
        for runtime in RUNTIMES:
            rule = RULES[runtime][field.path]
            cells[runtime] = GENERAL.get((runtime, field.path)) or _describe(rule)
        rows.append((field.path, cells))
    return rows


def _describe(rule: Rule) -> str:
    from jobdef.policy.model import JobPolicy as _Job

    level, how = rule(_Job(name="x", handler="x"))
    return level if not how else f"{level}: {how}"


# Where the verdict depends on the values, the docs say when.
GENERAL: dict[tuple[Runtime, str], str] = {
    **{
        (r, f): "exact for `mode: async`; unsupported for `mode: batch`: the adapters do "
        "not drive cron schedules "
        "(celery beat, RQ's cron or jobdef's worker do)"
        for r in RUNTIMES
        for f in ("mode", "schedule", "timezone", "catch_up")
    },
    **{
        (r, "notify.events"): "exact for `dead` (once, through jobdef's outbox); "
        "unsupported for retry, timeout, reclaimed and done"
        for r in RUNTIMES
    },
    **{
        (r, "retention.done"): "exact when unset; else approximate: a done run leaves no "
        "row in jobdef's database"
        for r in RUNTIMES
    },
    ("celery", "priority"): "exact at 0; else unsupported: Celery's message priority means "
    "the opposite on Redis and RabbitMQ; give urgent jobs a queue of their own",
    ("rq", "priority"): "exact at 0; else unsupported: RQ has no priorities",
    **{
        ("rq", f): "exact in whole seconds; else approximate: each wait rounded up to a second"
        for f in (
            "backoff.delays",
            "backoff.initial",
            "backoff.multiplier",
            "backoff.max",
        )
    },
    ("rq", "backoff.jitter"): "exact for `none`; else approximate: drawn at enqueue, "
    "rounded up to a whole second",
    ("rq", "timeout"): "exact in whole seconds; else approximate: job_timeout rounded up",
    **{
        (r, f): "exact while the sheet does not write it; else unsupported: "
        + _RESULT_WHY[f].format(store=_RESULT_STORE[r])
        for r in RUNTIMES
        for f in _RESULT_FIELDS
        if (r, f) != ("rq", "result.retention")
    },
    ("rq", "result.retention"): "exact: result_ttl of the RQ job (RQ's own 500 s while the "
    "sheet declares no `result:`); approximate past whole seconds",
}


def markdown_table() -> str:
    """The field table of docs/runtimes.md (between its ``fidelity-table`` markers)."""
    lines = ["| field | Celery | RQ |", "| --- | --- | --- |"]
    for path, cells in field_table():
        row = [f"`{path}`", cells["celery"], cells["rq"]]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    return "\n".join(lines) + "\n"


# What each runtime's own way of ordering tasks would take of a flow, and what it would
# not: a flow runs only on jobdef's worker, whatever runtime runs its jobs alone.
_FLOW_MAPPING: dict[Runtime, str] = {
    "celery": "Celery's canvas would take its order alone (chain, group, and a chord for "
    "each fan-in, which needs a result backend), with no equivalent of the edge policies "
    "(cancel's cascade, run, ignore) or of finally",
    "rq": "RQ's depends_on would take its order alone (Dependency(allow_failure=True) for a "
    "run edge), but a dead parent leaves a cancel edge's child deferred, never cancelled, "
    "and ignore and finally have no equivalent",
}


def flow_line(runtime: Runtime, flow: str, queues: Iterable[str]) -> str:
    """One line for ``jobdef check --runtime``: a flow runs on jobdef's worker, not on
    ``runtime``; what ``runtime``'s own ordering would keep; where jobdef's worker runs."""
    served = ", ".join(dict.fromkeys(queues))
    return (
        f"runs only on jobdef's worker (jobdef start {flow}), not on {runtime}: "
        f"{_FLOW_MAPPING[runtime]}; run jobdef worker on its steps' queues ({served}), "
        "apart from the queues that runtime serves"
    )
