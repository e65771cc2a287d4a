"""Notifications (JD251, JD252): a channel that exists, and events to send to it."""

from __future__ import annotations

from collections.abc import Iterator

from jobdef.diagnostics import Diagnostic
from jobdef.rules.base import Rule
from jobdef.rules.context import Context
from jobdef.schema_check import did_you_mean

UNKNOWN_CHANNEL = Rule(
    "JD251",
    "notify-unknown-channel",
    "error",
    "A dead job reported to a channel nobody defined is a dead job nobody hears about.",
)
NO_EVENTS = Rule(
    "JD252",
    "notify-without-events",
    "error",
    "A notify block without events never sends anything, which reads as if it did.",
)
RULES = (UNKNOWN_CHANNEL, NO_EVENTS)


def check(context: Context) -> Iterator[Diagnostic]:
    channels = context.channels
    for doc, policy in context.jobs:
        notify = policy.notify
        if notify.channel is not None and notify.channel not in channels:
            known = ", ".join(sorted(channels)) or "none"
            yield UNKNOWN_CHANNEL.at_origin(
                context.where(doc, policy, "notify.channel"),
                f"notify.channel {notify.channel!r} is not defined by any Channel"
                f"{did_you_mean(notify.channel, channels)} (channels: {known}); add a "
                "Channel document with that name or fix the name",
            )
        if (notify.channel is not None or "notify.events" in policy.origins) and not notify.events:
            yield NO_EVENTS.at_origin(
                context.where(doc, policy, "notify.events", "notify.channel"),
                "notify has no events, so nothing is ever sent; list them, such as events: [dead]",
            )
