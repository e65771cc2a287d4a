"""A channel's settings read with every problem recorded: what a channel needs, without sending.

:class:`ChannelConfig` reads the settings of one Channel document and the
environment variables it names, and collects every problem instead of stopping
at the first, so that worker start and ``jobdef validate --check-env`` can list
them all. Secrets are only ever read from the environment and never appear in a
problem or an error text.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from jobdef.policy.durations import parse_duration_or_none
from jobdef.policy.model import ChannelPolicy
from jobdef.policy.registry import Registry

DEFAULT_TIMEOUT = 10.0


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


def used_channels(registry: Registry) -> list[str]:
    """Channel names that some job's ``notify.channel`` refers to, sorted."""
    return sorted({job.notify.channel for job in registry if job.notify.channel})


def unknown_channel_problems(registry: Registry, names: Collection[str]) -> list[ChannelProblem]:
    problems = []
    known = ", ".join(sorted(registry.channels)) or "none"
    for name in names:
        if name in registry.channels:
            continue
        for job in registry:
            if job.notify.channel != name:
                continue
            origin = job.origin("notify.channel")
            problems.append(
                ChannelProblem(
                    channel=name,
                    field="notify.channel",
                    message=f"job {job.name} names a channel no Channel document defines "
                    f"(channels: {known}); add the Channel or fix the name",
                    file=origin.file if origin else job.file,
                    line=origin.line if origin else 0,
                    column=origin.column if origin else 0,
                )
            )
    return problems
