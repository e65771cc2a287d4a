"""Notifications (JD251, JD252): a channel that exists, and events to send to it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from jobdef.policy.channels import check_channel_env
from jobdef.policy.registry import Registry
from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context
from jobdef.sheets.words import did_you_mean

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
CHANNEL_NOT_READY = Rule(
    "JD253",
    "channel-not-ready",
    "error",
    "A worker refuses to start while a channel it needs lacks a variable; "
    "`validate --check-env` says so before the deploy.",
)
RULES = (UNKNOWN_CHANNEL, NO_EVENTS, CHANNEL_NOT_READY)


def check_env(registry: Registry, environ: Mapping[str, str]) -> list[Diagnostic]:
    """``--check-env``: why the channels the jobs use could not deliver in ``environ``."""
    return [
        CHANNEL_NOT_READY.at(
            p.file, p.line, p.column, f"channel {p.channel!r} {p.field}: {p.message}"
        )
        for p in check_channel_env(registry, environ)
        if p.field != "notify.channel"  # JD251 reports a channel nobody defined
    ]


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
