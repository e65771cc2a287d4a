"""The outbox part of ``jobdef status``: messages waiting, failed deliveries, per channel."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jobdef.backends.protocol import Backend
from jobdef.backends.records import OutboxRecord
from jobdef.policy.durations import format_duration


@dataclass(slots=True)
class ChannelBacklog:
    """Undelivered messages of one channel."""

    channel: str
    waiting: int = 0
    failing: int = 0
    oldest_at: float | None = None
    last_error: str | None = None
    next_at: float | None = None


@dataclass(slots=True)
class OutboxStatus:
    """Undelivered messages; ``failing`` ones had at least one failed delivery."""

    now: float
    channels: dict[str, ChannelBacklog] = field(default_factory=dict)

    @property
    def waiting(self) -> int:
        return sum(c.waiting for c in self.channels.values())

    @property
    def failing(self) -> int:
        return sum(c.failing for c in self.channels.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "waiting": self.waiting,
            "failing": self.failing,
            "channels": [
                {
                    "channel": c.channel,
                    "waiting": c.waiting,
                    "failing": c.failing,
                    "oldest_age": None if c.oldest_at is None else self.now - c.oldest_at,
                    "last_error": c.last_error,
                    "next_attempt_in": None
                    if c.next_at is None
                    else max(0.0, c.next_at - self.now),
                }
                for c in self.channels.values()
            ],
        }


def summarize(records: Sequence[OutboxRecord], now: float) -> OutboxStatus:
    """Group undelivered outbox rows by channel."""
    status = OutboxStatus(now=now)
    for record in records:
        name = record.notification.channel
        backlog = status.channels.setdefault(name, ChannelBacklog(name))
        backlog.waiting += 1
        if backlog.oldest_at is None or record.created_at < backlog.oldest_at:
            backlog.oldest_at = record.created_at
        if record.attempts:
            backlog.failing += 1
            backlog.last_error = record.last_error
            backlog.next_at = (
                record.next_at if backlog.next_at is None else min(backlog.next_at, record.next_at)
            )
    status.channels = dict(sorted(status.channels.items()))
    return status


def outbox_status(backend: Backend, now: float) -> OutboxStatus:
    """The outbox backlog of ``backend``."""
    return summarize(backend.outbox_pending(), now)


def outbox_lines(status: OutboxStatus, lang: str = "en") -> list[str]:
    """Text lines for ``jobdef status``."""
    if not status.channels:
        return ["outbox: empty (every notification delivered)"]
    lines = [f"outbox: {status.waiting} waiting, {status.failing} with failed deliveries"]
    for c in status.channels.values():
        age = format_duration(round(max(0.0, status.now - (c.oldest_at or status.now))), lang)
        line = f"  {c.channel}: {c.waiting} waiting (oldest {age})"
        if c.failing:
            retry = format_duration(round(max(0.0, (c.next_at or status.now) - status.now)), lang)
            line += f", {c.failing} failing, next try in {retry}; last error: {c.last_error}"
        lines.append(line)
    return lines
