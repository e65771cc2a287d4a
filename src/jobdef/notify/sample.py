"""A sample event, for ``jobdef notify test CHANNEL`` and for trying a template."""

from __future__ import annotations

from jobdef.backends.records import ErrorInfo, JobRecord, Notification
from jobdef.notify.events import payload_for
from jobdef.policy.model import IdempotencyPolicy, JobPolicy, NotifyPolicy


def sample_notification(channel: str, at: float) -> Notification:
    """A ``dead`` event of a made-up job, shaped exactly like a real one."""
    policy = JobPolicy(
        name="jobdef_notify_test",
        handler="jobdef.notify.sample:none",
        title="Test message from `jobdef notify test`",
        owner="jobdef",
        max_attempts=3,
        idempotency=IdempotencyPolicy(key="{order_id}"),
        notify=NotifyPolicy(channel=channel, events=("dead",)),
        rerun="nothing to re-run: this is a test message",
    )
    record = JobRecord(
        id=0,
        job=policy.name,
        queue="default",
        priority=0,
        args={"order_id": 12345},
        state="dead",
        attempt=3,
        max_attempts=3,
        idempotency_key="12345",
        run_after=at,
        created_at=at,
        updated_at=at,
    )
    error = ErrorInfo("ConnectionError", "sample error: the payment service refused the connection")
    return Notification(
        channel=channel,
        event="dead",
        job=policy.name,
        payload=payload_for(policy, "dead", record, error, at),
        message_id=f"notify-test:{channel}:{round(at * 1000)}",
    )
