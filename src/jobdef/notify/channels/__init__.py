"""Channel senders, one module per channel type: ``log``, ``webhook``, ``email``, ``command``.

Each module has ``build(config) -> Sender``. :class:`ChannelConfig` reads the
channel's settings and the environment variables it names, and collects every
problem instead of stopping at the first, so that worker start and
``jobdef validate --check-env`` can list them all. Secrets are only ever read
from the environment and never appear in a problem or an error text.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from jobdef.errors import ChannelError
from jobdef.notify.message import Message
from jobdef.policy.durations import parse_duration_or_none
from jobdef.policy.model import ChannelPolicy

DEFAULT_TIMEOUT = 10.0

# Channel type -> module under jobdef.notify.channels.
_MODULES = {"log": "log", "webhook": "webhook", "email": "mail", "command": "command"}


class Sender(Protocol):
    """Delivers messages to one channel; raises :class:`~jobdef.errors.DeliveryError`."""

    def send(self, message: Message) -> None:
        """Deliver ``message`` within the channel's timeout, or raise DeliveryError."""


@dataclass(frozen=True, slots=True)
class ChannelProblem:
    """Why a channel cannot deliver: a missing variable or an unusable setting."""

    channel: str
    field: str
    message: str
    file: str = ""
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}: " if self.file else ""
        return f"{where}channel {self.channel!r} {self.field}: {self.message}"


class ChannelConfig:
    """The settings of one channel, read with every problem recorded in ``problems``."""

    def __init__(self, channel: ChannelPolicy, environ: Mapping[str, str]) -> None:
        self.channel = channel
        self.environ = environ
        self.problems: list[ChannelProblem] = []

    @property
    def name(self) -> str:
        return self.channel.name

    def problem(self, field: str, message: str) -> None:
        origins = self.channel.origins
        origin = origins.get(field) or origins.get("type") or origins.get("name")
        file, line, column = (
            (origin.file, origin.line, origin.column) if origin else (self.channel.file, 0, 0)
        )
        self.problems.append(ChannelProblem(self.name, field, message, file, line, column))

    def get(self, field: str, default: Any = None) -> Any:
        return self.channel.settings.get(field, default)

    def require(self, field: str, what: str) -> Any:
        """A setting the channel type needs; records a problem when it is absent."""
        value = self.channel.settings.get(field)
        if value in (None, "", ()):
            kind = self.channel.type
            article = "an" if kind[0] in "aeiou" else "a"
            self.problem(field, f"{article} {kind} channel needs `{field}`: {what}")
        return value

    def env(self, field: str, variable: str | None = None) -> str | None:
        """The value of the environment variable that setting ``field`` names."""
        variable = variable or self.get(field)
        if not variable:
            return None
        value = self.environ.get(str(variable), "")
        if not value:
            self.problem(
                field,
                f"environment variable {variable} is not set; export it in the worker's "
                "environment (secrets never go in sheets)",
            )
            return None
        return value

    def timeout(self) -> float:
        raw = self.get("timeout")
        if raw is None:
            return DEFAULT_TIMEOUT
        seconds = parse_duration_or_none(str(raw))
        if not seconds:
            self.problem("timeout", f'{raw!r} is not a positive duration; write e.g. "5s"')
            return DEFAULT_TIMEOUT
        return seconds


def configure(channel: ChannelPolicy, environ: Mapping[str, str]) -> tuple[Sender, ChannelConfig]:
    """Build the sender of ``channel``; the config's ``problems`` say what is missing."""
    config = ChannelConfig(channel, environ)
    module = importlib.import_module(f"jobdef.notify.channels.{_MODULES[channel.type]}")
    return module.build(config), config


def build_sender(channel: ChannelPolicy, environ: Mapping[str, str]) -> Sender:
    """The sender of ``channel``; raises :class:`ChannelError` listing every problem."""
    sender, config = configure(channel, environ)
    if config.problems:
        raise ChannelError("; ".join(str(p) for p in config.problems))
    return sender
