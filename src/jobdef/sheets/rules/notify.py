"""Notifications (JD251-JD255): a channel that exists, events to send to it, values that
fit the headers they become, and key args that are args of the job.

A message shows the args ``notify.key_args`` names (``key args: order_id=7``), so whoever
reads it knows which piece of work it is about; it takes each name from the job's args
and leaves out a name the job does not have (:func:`jobdef.notify.events.key_args`): a
misspelt name shows nothing in every message, and nothing else would say so. A
Workflow's end message reads its flow's args the same way (JD373,
:mod:`jobdef.sheets.rules.flow_notify`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.document import Document, Path_
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context
from jobdef.sheets.schema_check import dotted
from jobdef.sheets.words import did_you_mean, listing

if TYPE_CHECKING:
    from jobdef.policy.registry import Registry

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
HEADER_UNSAFE = Rule(
    "JD254",
    "header-unsafe",
    "error",
    "A job's title becomes a mail subject, a channel's from/to mail headers, a headers_env "
    "key an HTTP header name; a line break there fails every notification sent.",
)
UNKNOWN_KEY_ARG = Rule(
    "JD255",
    "notify-unknown-arg",
    "error",
    "A message shows the args notify.key_args names; a name that is no arg of the job is "
    "left out of every message, so the reader cannot tell which piece of work it is about.",
)
RULES = (UNKNOWN_CHANNEL, NO_EVENTS, CHANNEL_NOT_READY, HEADER_UNSAFE, UNKNOWN_KEY_ARG)

# C0 controls but tab, and DEL: a header cannot hold them (a line break would end it).
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# An HTTP header name (RFC 9110 token).
# Compiled on first use (re keeps it): only a channel's headers_env needs it.
_TOKEN = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"
_ONE_LINE = "write it on one line (put the rest in description)"
_ONE_ADDRESS = "write one address on one line, such as jobdef <jobdef@example.com>"
_HEADER_OF = {
    "title": ("the mail subject", _ONE_LINE),
    "from": ("the From header", _ONE_ADDRESS),
    "to": ("the To header", _ONE_ADDRESS),
}


def _header_values(doc: Document) -> Iterator[tuple[Path_, str, tuple[str, str]]]:
    """(path, value, what it becomes) of each value of ``doc`` that becomes a header."""
    data = doc.data
    if doc.kind == "Job" and isinstance(data.get("title"), str):
        yield ("title",), data["title"], _HEADER_OF["title"]
    if doc.kind != "Channel":
        return
    if isinstance(data.get("from"), str):
        yield ("from",), data["from"], _HEADER_OF["from"]
    for index, item in enumerate(data.get("to") if isinstance(data.get("to"), list) else ()):
        if isinstance(item, str):
            yield ("to", index), item, _HEADER_OF["to"]


def check_document(doc: Document) -> Iterator[tuple[Path_, Diagnostic]]:
    for path, value, (header, hint) in _header_values(doc):
        bad = _CONTROL.search(value)
        if bad is None:
            continue
        line, column = doc.positions.get(path, (doc.line, doc.column))
        what = "a line break" if bad.group() in "\r\n" else f"the control character {bad.group()!r}"
        yield (
            path,
            HEADER_UNSAFE.at(
                doc.file,
                line,
                column,
                f"{dotted(path)}: holds {what}, but it becomes {header}, which is one line; {hint}",
            ),
        )
    headers = doc.data.get("headers_env") if doc.kind == "Channel" else None
    for name in headers if isinstance(headers, Mapping) else ():
        if isinstance(name, str) and not re.match(_TOKEN, name):
            path = ("headers_env", name)
            line, column = doc.key_positions.get(path, (doc.line, doc.column))
            yield (
                path,
                HEADER_UNSAFE.at(
                    doc.file,
                    line,
                    column,
                    f"headers_env: {name!r} is not an HTTP header name; use letters, digits "
                    "and - (such as X-Api-Key), without spaces, colons or line breaks",
                ),
            )


def check_env(registry: Registry, environ: Mapping[str, str]) -> list[Diagnostic]:
    """``--check-env``: why the channels the jobs use could not deliver in ``environ``."""
    from jobdef.policy.channels import check_channel_env  # only --check-env reads channels

    return [
        CHANNEL_NOT_READY.at(
            p.file, p.line, p.column, f"channel {p.channel!r} {p.field}: {p.message}"
        )
        for p in check_channel_env(registry, environ)
        if p.field != "notify.channel"  # JD251 reports a channel nobody defined
    ]


def unknown_key_arg(name: str, args: Sequence[str], owner: str, instead: str) -> str:
    """The message for a ``notify.key_args`` name that is not among ``args``, the args of
    ``owner`` (``job 'x'`` or ``workflow 'x'``); ``instead``: what to write."""
    return (
        f"notify.key_args names {name!r}, which is no arg of {owner}{did_you_mean(name, args)} "
        f"(args: {listing(args)}); {instead}"
    )


def check(context: Context) -> Iterator[Diagnostic]:
    channels = context.channels
    for doc, policy in context.jobs:
        notify = policy.notify
        if notify.channel is not None and notify.channel not in channels:
            known = listing(sorted(channels))
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
        args = list(policy.args_schema.get("properties", {}))
        origin = policy.origin("notify.key_args")
        for index, name in enumerate(notify.key_args):
            where = context.item(origin, ("notify", "key_args"), index, (doc, policy))
            if name in args or where is None:
                continue
            if origin is not None and origin.source == "defaults":  # at_job names the job
                owner = "this job"
                example = f"key_args: [{''.join(args[:1])}]"
                instead = f"write notify.key_args in this job's sheet, such as {example}"
            else:
                owner = f"job {policy.name!r}"
                instead = "name one of the job's args, or remove it"
            yield UNKNOWN_KEY_ARG.at_origin(where, unknown_key_arg(name, args, owner, instead))
