"""``jobdef notify test CHANNEL``: send a sample message through a channel, right now.

The message goes straight to the channel (not through the outbox), so the
command tells at once whether the URL, the SMTP login or the program works.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from jobdef.cli import EXIT_FINDINGS, EXIT_OK
from jobdef.cli.options import add_sheets
from jobdef.render.escape import clip, visible


def run_test(args: argparse.Namespace) -> int:
    # Imported here: every command's parser is built at start, and only this one needs them.
    from jobdef.errors import ChannelError, DeliveryError
    from jobdef.notify.checks import build_channels
    from jobdef.notify.message import single_message
    from jobdef.notify.sample import sample_notification
    from jobdef.project import load_config
    from jobdef.sheets.pipeline import load_registry

    config = load_config({"sheets": args.sheets})
    registry = load_registry([config.sheets])
    if args.channel not in registry.channels:
        known = ", ".join(sorted(registry.channels)) or "none"
        raise ChannelError(
            f"no Channel document named {clip(args.channel, 60)!r} under {config.sheets} "
            f"(channels: {known}); check the name or pass --sheets"
        )
    channel = build_channels(registry, os.environ, names=[args.channel])[args.channel]
    message = single_message(sample_notification(channel.name, time.time()), channel.renderer)
    try:
        channel.sender.send(message)
    except DeliveryError as exc:
        failed = visible(exc.message)  # the receiver's answer is not ours to trust
        print(f"jobdef notify: delivery to {channel.name} failed: {failed}", file=sys.stderr)
        return EXIT_FINDINGS
    print(f"sent a sample message to {channel.name} ({channel.type}), id {message.message_id}")
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "notify",
        help="try notification channels",
        description="Work with the notification channels that the sheets define.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    test = actions.add_parser(
        "test",
        help="send a sample message through a channel now",
        description="Send a sample `dead` event through CHANNEL, with the channel's template, "
        "straight to its receiver. Exit 0 when it was accepted, 1 when delivery failed, "
        "2 when the channel cannot be used (e.g. an environment variable is missing).",
    )
    test.add_argument("channel", metavar="CHANNEL", help="name of a Channel document")
    add_sheets(test, purpose="that define the channel")
    test.set_defaults(handler=run_test)
