"""``jobdef export --format sqs``: a source queue and a dead-letter queue per job.

Each queue is the parameters of SQS ``CreateQueue`` (``QueueName``, ``Attributes``
as the API's strings). How the sheet maps:

- ``timeout`` -> ``VisibilityTimeout`` (0..43200 s): a message stays hidden for the
  attempt's whole timeout, so no second consumer starts it while the first runs.
- ``max_attempts`` -> ``RedrivePolicy.maxReceiveCount`` (1..1000): every receive is an
  attempt, a crash redelivery included, and the last failed one moves the message
  to the dead-letter queue.
- the source queue's ``MessageRetentionPeriod`` (60..1209600 s) covers the whole
  retry timeline (at least SQS's 4-day default): SQS *deletes* an expired message,
  it never dead-letters it, so a deadline must not be mapped there.
- the dead-letter queue keeps a message for ``retention.dead`` plus the timeline:
  a standard queue counts a message's age from its first enqueue, not from the move.

The ARNs hold ``${AWS_REGION}`` and ``${AWS_ACCOUNT_ID}`` for ``envsubst`` or the
deployment tool to fill in.
"""

from __future__ import annotations

import json
import math
from typing import Any

from jobdef.policy.backoff import retry_timeline
from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry
from jobdef.render.export.common import (
    Notes,
    bounded_name,
    clamp_count,
    note_fatal_timeout,
    note_result,
    queue_policy,
    seconds,
    sheet_waits,
    waits_text,
    whole_seconds,
)

VISIBILITY_MAX = 43200
RETENTION_MIN = 60
RETENTION_MAX = 1209600
RETENTION_DEFAULT = 345600
RECEIVES_MAX = 1000
NAME_MAX = 80
DEAD_SUFFIX = "-dead"
ARN_PREFIX = "arn:aws:sqs:${AWS_REGION}:${AWS_ACCOUNT_ID}:"


def convert(job: JobPolicy, registry: Registry, notes: Notes) -> dict[str, Any]:
    """The two CreateQueue requests of ``job`` (source and dead-letter queue)."""
    name = bounded_name(job.name, NAME_MAX - len(DEAD_SUFFIX), notes, "an SQS queue name")
    dead_name = name + DEAD_SUFFIX
    visibility = whole_seconds(
        job.timeout, 0, VISIBILITY_MAX, notes, "timeout", target="VisibilityTimeout"
    )
    if job.timeout > VISIBILITY_MAX:
        notes.add(
            "timeout",
            "extend the visibility with ChangeMessageVisibility while the attempt runs, "
            "or a second consumer starts it",
        )
    receives = clamp_count(
        job.max_attempts, 1, RECEIVES_MAX, notes, "max_attempts", target="maxReceiveCount"
    )
    worst = retry_timeline(job).worst_case
    source_retention = max(RETENTION_DEFAULT, math.ceil(worst) if math.isfinite(worst) else 0)
    if not math.isfinite(worst) or source_retention > RETENTION_MAX:
        notes.add(
            "max_attempts",
            f"the retry timeline ({seconds(worst)}) is longer than SQS keeps a message "
            f"(14d); a message still retrying then is deleted, not dead-lettered",
        )
        source_retention = RETENTION_MAX
    dead_retention = _dead_retention(job, worst, notes)
    _notes(job, registry, notes, visibility)
    return {
        "queue": {
            "QueueName": name,
            "Attributes": {
                "VisibilityTimeout": str(visibility),
                "MessageRetentionPeriod": str(source_retention),
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": ARN_PREFIX + dead_name, "maxReceiveCount": receives},
                    separators=(",", ":"),
                ),
            },
        },
        "deadLetterQueue": {
            "QueueName": dead_name,
            "Attributes": {
                "MessageRetentionPeriod": str(dead_retention),
                "RedriveAllowPolicy": json.dumps(
                    {"redrivePermission": "byQueue", "sourceQueueArns": [ARN_PREFIX + name]},
                    separators=(",", ":"),
                ),
            },
        },
    }


def _dead_retention(job: JobPolicy, worst: float, notes: Notes) -> int:
    if job.retention.dead is None:
        notes.add(
            "retention.dead",
            "until_resolved cannot be expressed: SQS keeps a message at most 14d; the "
            "dead-letter queue is set to 14d",
        )
        return RETENTION_MAX
    timeline = worst if math.isfinite(worst) else float(RETENTION_MAX)
    wanted = job.retention.dead + timeline
    if math.ceil(wanted) > RETENTION_MAX:
        notes.add(
            "retention.dead",
            f"{seconds(job.retention.dead)} plus the {seconds(timeline)} retry timeline (SQS "
            "counts a dead message's age from its first enqueue) is above SQS's 14d; set to 14d",
        )
        return RETENTION_MAX
    return whole_seconds(
        wanted,
        RETENTION_MIN,
        RETENTION_MAX,
        notes,
        "retention.dead",
        target="MessageRetentionPeriod",
    )


def _notes(job: JobPolicy, registry: Registry, notes: Notes, visibility: int) -> None:
    waits = sheet_waits(job)
    if waits:
        notes.add(
            "backoff",
            f"SQS has no backoff: a failed message is received again {visibility}s after "
            f"the last receive; for the sheet's waits ({waits_text(waits)}) the consumer "
            "calls ChangeMessageVisibility with the wait when an attempt fails",
        )
        if job.backoff.jitter != "none":
            notes.add(
                "backoff.jitter",
                f"{job.backoff.jitter} jitter is not expressible; draw it in the consumer "
                "before ChangeMessageVisibility",
            )
    if job.errors.retry or job.errors.fatal or job.errors.default == "fatal":
        notes.add(
            "errors",
            "SQS has no error classes: the consumer sends a message whose error is fatal "
            "to the dead-letter queue itself (and deletes it from the source queue)",
        )
    note_fatal_timeout(
        job, notes, "a message whose attempt outlives its visibility timeout is received again"
    )
    if job.deadline is not None:
        notes.add(
            "deadline",
            f"SQS has no deadline ({seconds(job.deadline)}); the consumer checks the "
            "message's SentTimestamp and dead-letters it past the deadline",
        )
    if job.on_reclaim == "fail":
        notes.add(
            "on_reclaim",
            "fail cannot be expressed: SQS redelivers the message of a consumer that died "
            "and counts it as a receive (a retry)",
        )
    if job.idempotency.key:
        notes.add(
            "idempotency.key",
            "a standard queue does not de-duplicate; a FIFO queue's MessageDeduplicationId "
            "covers 5 minutes only, so the consumer checks the key",
        )
    if job.priority != 0:
        notes.add("priority", f"SQS has no priorities ({job.priority}); use a queue per priority")
    queue = queue_policy(job, registry)
    if queue is not None and (queue.concurrency is not None or queue.rate is not None):
        notes.add(
            "queue",
            f"the limits of queue {job.queue} (concurrency, rate) are not SQS attributes; "
            "bound the consumers instead",
        )
    if job.mode == "batch":
        notes.add(
            "schedule",
            f"SQS does not schedule; send the message from an EventBridge Scheduler "
            f"schedule cron({job.schedule}) in {job.timezone}",
        )
    if job.retention.done is not None:
        notes.add(
            "retention.done", "SQS deletes a message once it is processed; done rows are not kept"
        )
    if job.notify.events:
        notes.add(
            "notify",
            "SQS sends no notification; alarm on the dead-letter queue's "
            "ApproximateNumberOfMessagesVisible instead",
        )
    if job.result.store:
        note_result(
            job,
            notes,
            "SQS keeps no return value: the consumer stores it itself (say, in a table keyed "
            "by the message id), within the sheet's bounds",
        )
