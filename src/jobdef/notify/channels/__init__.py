"""Channel senders, one module per channel type, named as the type (``email.py`` for ``email``).

Each module has ``build(settings) -> Sender``, from the settings that
:func:`jobdef.policy.channels.read_channel` reads (and checks) without sending anything;
:data:`jobdef.policy.channels.CHANNEL_TYPES` lists the types.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Protocol

from jobdef.errors import ChannelError
from jobdef.notify.message import Message
from jobdef.policy.channels import ChannelConfig, read_channel
from jobdef.policy.model import ChannelPolicy


class Sender(Protocol):
    """Delivers messages to one channel; raises :class:`~jobdef.errors.DeliveryError`.

    A sender whose settings hold a secret that :func:`jobdef.redact.redact` cannot know
    (a webhook's URL) also has ``scrub(text) -> str``, which the lanes apply to an
    unexpected error before it is stored or logged.
    """

    def send(self, message: Message) -> None:
        """Deliver ``message`` within the channel's timeout, or raise DeliveryError."""


def configure(channel: ChannelPolicy, environ: Mapping[str, str]) -> tuple[Sender, ChannelConfig]:
    """Build the sender of ``channel``; the config's ``problems`` say what is missing."""
    settings, config = read_channel(channel, environ)
    module = importlib.import_module(f"{__name__}.{channel.type}")
    return module.build(settings), config


def build_sender(channel: ChannelPolicy, environ: Mapping[str, str]) -> Sender:
    """The sender of ``channel``; raises :class:`ChannelError` listing every problem."""
    sender, config = configure(channel, environ)
    if config.problems:
        raise ChannelError("; ".join(str(p) for p in config.problems))
    return sender
