"""``jobdef export --format step-functions``: an Amazon States Language state machine per job.

One ``Task`` state invokes the handler (``arn:aws:states:::lambda:invoke``, the
function named after the job). Its ``Retry`` list, in order:

1. when unlisted errors retry (``errors.default: retry``): the fatal classes with
   ``MaxAttempts: 0``, then one ``States.ALL`` retrier (ASL keeps a count per
   retrier, so one retrier keeps the sheet's single attempt budget);
2. otherwise: one retrier for the retry classes (and ``States.Timeout`` when the
   sheet retries a timeout).

``MaxAttempts`` counts *retries* in ASL: ``max_attempts - 1``. ``TimeoutSeconds``
on the Task is the attempt timeout; on the state machine, the deadline. A job
that is dead is caught into ``RecordDead`` (an SQS ``SendMessage`` to
``${DeadLetterQueueUrl}``) and ends in the ``Dead`` Fail state. A sheet that declares a
``result:`` gets the handler's return value as the execution's output under ``$.result``
(or, with ``store: false``, no value at all). The notes are the Task's ``Comment``.

Error names are the classes' own names (``SMTPServerDisconnected``): the Lambda
Python runtime reports a raised exception's ``errorType`` so, and ASL matches
names exactly, never a class's subclasses.
"""

from __future__ import annotations

import math
from pathlib import PurePath
from typing import Any

from jobdef.policy.fields import declares_result
from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry
from jobdef.policy.sizes import format_size
from jobdef.render.describe import retention
from jobdef.render.export.common import (
    Notes,
    bounded_name,
    clamp_count,
    fitted_rate,
    geometric_waits,
    note_result,
    retries,
    same_waits,
    seconds,
    sheet_waits,
    short_class,
    short_classes,
    timeout_action,
    waits_text,
    whole_seconds,
)

# The limits of the Amazon States Language fields (AWS Step Functions developer guide).
INTEGER_MAX = 99_999_999
MAX_DELAY_MAX = 31_622_400
STATE_NAME_MAX = 80
FUNCTION_NAME_MAX = 64
LAMBDA_TIMEOUT_MAX = 900  # a Lambda function runs at most 15 minutes
PAYLOAD_MAX = 256 * 1024  # the largest input or output a state passes on
DEAD_STATE = "Dead"
RECORD_STATE = "RecordDead"


def _retry_params(job: JobPolicy, notes: Notes) -> dict[str, Any]:
    """IntervalSeconds, MaxAttempts, BackoffRate, MaxDelaySeconds, JitterStrategy."""
    b = job.backoff
    waits = sheet_waits(job)
    first = waits[0] if waits else b.initial
    interval = whole_seconds(
        first, 1, INTEGER_MAX, notes, "backoff.initial", target="IntervalSeconds"
    )
    if b.strategy == "fixed":
        rate = 1.0
    elif b.strategy == "exponential":
        rate = max(b.multiplier, 1.0)  # ASL's BackoffRate is at least 1
    else:
        rate = fitted_rate(waits)
    params: dict[str, Any] = {
        "IntervalSeconds": interval,
        "MaxAttempts": clamp_count(
            retries(job), 0, INTEGER_MAX, notes, "max_attempts", target="MaxAttempts (retries)"
        ),
        "BackoffRate": rate,
    }
    cap: int | None = None
    if b.max is not None and b.strategy != "fixed":
        cap = whole_seconds(b.max, 1, MAX_DELAY_MAX, notes, "backoff.max", target="MaxDelaySeconds")
        params["MaxDelaySeconds"] = cap
    elif b.strategy in ("list", "linear") and waits and math.isfinite(max(waits)):
        cap = whole_seconds(
            max(waits), 1, MAX_DELAY_MAX, notes, "backoff.max", target="MaxDelaySeconds"
        )
        params["MaxDelaySeconds"] = cap
    made = geometric_waits(float(interval), rate, None if cap is None else float(cap), len(waits))
    if not same_waits(made, waits):
        why = {"linear": "ASL grows waits geometrically", "list": "ASL cannot follow a list"}
        notes.add(
            "backoff",
            f"{why.get(b.strategy, 'whole seconds')}: retries wait {waits_text(made)} "
            f"instead of {waits_text(waits)}",
        )
    params["JitterStrategy"] = "FULL" if b.jitter == "full" else "NONE"
    if b.jitter == "equal":
        notes.add(
            "backoff.jitter",
            "ASL has FULL or NONE jitter, not equal; NONE waits the top of the sheet's "
            "range (the whole wait) every time",
        )
    elif b.jitter == "decorrelated":
        notes.add(
            "backoff.jitter",
            "ASL has FULL or NONE jitter, not decorrelated; NONE waits the strategy's own "
            "waits, where the sheet draws each between initial and 3 times the last wait",
        )
    return params


def _retriers(job: JobPolicy, notes: Notes) -> list[dict[str, Any]]:
    if retries(job) == 0:
        return []
    params = _retry_params(job, notes)
    timeouts = timeout_action(job.errors)
    fatal = short_classes([c.name for c in job.errors.fatal])
    out: list[dict[str, Any]] = []
    if job.errors.default == "retry":
        if timeouts == "fatal":
            fatal.append("States.Timeout")
        if fatal:
            out.append({"ErrorEquals": fatal, "MaxAttempts": 0})
        out.append({"ErrorEquals": ["States.ALL"], **params})
    else:
        names = short_classes([c.name for c in job.errors.retry])
        if timeouts == "retry":
            names.append("States.Timeout")
        if names:
            out.append({"ErrorEquals": names, **params})
    dotted = [
        c.name for c in (*job.errors.retry, *job.errors.fatal) if short_class(c.name) != c.name
    ]
    if job.errors.retry or job.errors.fatal:
        notes.add(
            "errors",
            "ASL matches the error name exactly: a subclass of a listed class "
            f"(e.g. of {(job.errors.retry or job.errors.fatal)[0].name}) takes errors.default"
            + (f"; {', '.join(dotted)} matched by the bare class name" if dotted else ""),
        )
    return out


def convert(job: JobPolicy, registry: Registry, notes: Notes) -> dict[str, Any]:
    """The state machine definition of ``job``."""
    state = bounded_name(job.name, STATE_NAME_MAX, notes, "an ASL state name")
    task: dict[str, Any] = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {
            "FunctionName": bounded_name(job.name, FUNCTION_NAME_MAX, notes, "a Lambda name"),
            "Payload.$": "$",
        },
        "TimeoutSeconds": whole_seconds(
            job.timeout, 1, INTEGER_MAX, notes, "timeout", target="TimeoutSeconds"
        ),
    }
    retry = _retriers(job, notes)
    if retry:
        task["Retry"] = retry
    task["Catch"] = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": RECORD_STATE}]
    task.update(_result_paths(job, notes))
    task["End"] = True
    machine = state_machine(job.name, job.file, state, job.deadline, notes, catch=RECORD_STATE)
    _notes(job, notes)
    if notes.items:
        task["Comment"] = "jobdef notes: " + " | ".join(notes.texts())
    machine["States"] = {
        state: task,
        RECORD_STATE: {
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage",
            "Parameters": {"QueueUrl": "${DeadLetterQueueUrl}", "MessageBody.$": "$"},
            "Next": DEAD_STATE,
        },
        DEAD_STATE: {
            "Type": "Fail",
            "Error": "jobdef.Dead",
            "Cause": f"{job.name} is dead: a fatal error, or its last attempt failed",
        },
    }
    return {"definition": machine}


def state_machine(
    name: str, file: str, start: str, deadline: float | None, notes: Notes, *, catch: str
) -> dict[str, Any]:
    """The head of the state machine of ``name`` (from the sheet ``file``), its states
    to add: its comment, first state and the deadline as its ``TimeoutSeconds``, with
    the note that ``catch``, the state that records an end, does not run past it."""
    sheet = PurePath(file).name or "its sheet"  # the name alone: the same from any folder
    machine: dict[str, Any] = {"Comment": f"{name}: exported by jobdef from {sheet}"}
    machine["StartAt"] = start
    if deadline is not None:
        machine["TimeoutSeconds"] = whole_seconds(
            deadline,
            1,
            INTEGER_MAX,
            notes,
            "deadline",
            target="the state machine's TimeoutSeconds",
        )
        notes.add(
            "deadline",
            "an execution past its TimeoutSeconds fails with States.Timeout uncaught: "
            f"{catch} does not run for it",
        )
    return machine


def _result_paths(job: JobPolicy, notes: Notes) -> dict[str, Any]:
    """Where the Task puts the handler's return value, for a sheet that declares a result:
    the Lambda response's payload under ``$.result`` of the execution's output, or
    nowhere (``ResultPath: null`` keeps the input as the output) with ``store: false``."""
    if not declares_result(job):
        return {}
    if not job.result.store:
        return {"ResultPath": None}
    if job.result.max_bytes > PAYLOAD_MAX:
        notes.add(
            "result.max_bytes",
            f"Step Functions passes at most {format_size(PAYLOAD_MAX)} between states; a value "
            f"over it (the sheet allows {format_size(job.result.max_bytes)}) fails the "
            "execution with States.DataLimitExceeded",
        )
    note_result(
        job,
        notes,
        "the value is the execution's output under $.result, kept with its history for 90 "
        "days after it ends, unchecked by any schema, and Step Functions has no receipts or "
        "done notification to carry it",
    )
    return {"ResultSelector": {"value.$": "$.Payload"}, "ResultPath": "$.result"}


def _notes(job: JobPolicy, notes: Notes) -> None:
    if job.timeout > LAMBDA_TIMEOUT_MAX:
        notes.add(
            "timeout",
            f"{seconds(job.timeout)} is above Lambda's 15m maximum: run the handler as an ECS "
            "task (arn:aws:states:::ecs:runTask.sync) or a Batch job instead",
        )
    if job.on_reclaim == "fail":
        notes.add(
            "on_reclaim",
            "fail cannot be expressed: a lost worker is a States.Timeout, retried as a timeout",
        )
    if job.idempotency.key:
        notes.add(
            "idempotency.key",
            "start each execution with the key as its name: a Standard state machine "
            "refuses a duplicate name for 90 days",
        )
    if job.priority != 0:
        notes.add("priority", f"Step Functions has no priorities ({job.priority})")
    if job.mode == "batch":
        notes.add(
            "schedule",
            f"start the execution from an EventBridge Scheduler schedule cron({job.schedule}) "
            f"in {job.timezone}",
        )
    notes.add(
        "retention",
        "Step Functions keeps a Standard execution's history for 90 days after it ends; "
        f"the sheet's retention ({retention(job.retention)}) is not expressible",
    )
    if job.notify.events:
        notes.add(
            "notify",
            "not sent by Step Functions; add an SNS Publish after RecordDead or alarm on "
            "ExecutionsFailed",
        )
