"""What a channel sender delivers: one event, or a digest of several.

Each event inside a message keeps its own ``message_id`` (the outbox row's), so
a receiver can drop copies even when a resend groups events differently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jobdef.backends.records import Notification
from jobdef.notify.render import Renderer, digest_subject, subject_for


@dataclass(frozen=True, slots=True)
class Message:
    """One delivery: ``items`` are event payloads, each with its ``message_id``."""

    channel: str
    message_id: str
    items: tuple[Mapping[str, Any], ...]
    subject: str
    text: str
    digest: bool = False

    def as_json(self) -> dict[str, Any]:
        """The full JSON document of the message (webhook ``json`` format, command stdin)."""
        if not self.digest:
            return {**self.items[0], "channel": self.channel, "text": self.text}
        return {
            "message_id": self.message_id,
            "channel": self.channel,
            "event": "digest",
            "count": len(self.items),
            "subject": self.subject,
            "events": [dict(item) for item in self.items],
            "text": self.text,
        }


def event_item(notification: Notification) -> dict[str, Any]:
    """The payload of one outbox message with its message id and channel."""
    return {
        **notification.payload,
        "event": notification.event,
        "job": notification.job,
        "message_id": notification.message_id,
    }


def single_message(notification: Notification, renderer: Renderer) -> Message:
    item = event_item(notification)
    return Message(
        channel=notification.channel,
        message_id=notification.message_id,
        items=(item,),
        subject=subject_for(item),
        text=renderer.event_text(item),
    )


def digest_message(
    channel: str, notifications: Sequence[Notification], renderer: Renderer
) -> Message:
    """Several events in one message; its id is derived from the ids of the events it holds."""
    items = tuple(event_item(n) for n in notifications)
    digest = hashlib.sha256("\n".join(sorted(n.message_id for n in notifications)).encode())
    return Message(
        channel=channel,
        message_id=f"digest:{channel}:{digest.hexdigest()[:24]}",
        items=items,
        subject=digest_subject(channel, items),
        text=renderer.digest_text(channel, items),
        digest=True,
    )
