"""Can each channel deliver? Checked at worker start and by ``jobdef validate --check-env``.

:func:`check_channel_env` lists every problem: environment variables a channel
names but the environment lacks, settings its type needs, templates that do not
compile, and jobs whose ``notify.channel`` names no Channel document.
:func:`build_channels` is what the worker calls: it raises one
:class:`~jobdef.errors.ChannelError` that lists them all, or returns the ready
channels.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from jinja2 import TemplateSyntaxError

from jobdef.errors import ChannelError
from jobdef.notify.channels import Sender, configure
from jobdef.notify.render import Renderer
from jobdef.policy.channels import (
    ChannelConfig,
    ChannelProblem,
    unknown_channel_problems,
    used_channels,
)
from jobdef.policy.registry import Registry

DEFAULT_DIGEST_AFTER = 20


@dataclass(frozen=True, slots=True)
class Channel:
    """A channel ready to deliver: its sender, its text renderer and its digest threshold."""

    name: str
    type: str
    sender: Sender
    renderer: Renderer
    digest_after: int = DEFAULT_DIGEST_AFTER


def _template(config: ChannelConfig) -> Renderer | None:
    try:
        return Renderer(config.get("template"))
    except TemplateSyntaxError as exc:
        config.problem("template", f"the Jinja2 template does not compile: {exc.message}")
        return None


def _configure_all(
    registry: Registry, environ: Mapping[str, str], names: Collection[str] | None
) -> tuple[dict[str, Channel], list[ChannelProblem]]:
    wanted = used_channels(registry) if names is None else sorted(names)
    problems = unknown_channel_problems(registry, wanted)
    channels: dict[str, Channel] = {}
    for name in wanted:
        policy = registry.channels.get(name)
        if policy is None:
            continue
        sender, config = configure(policy, environ)
        renderer = _template(config)
        problems.extend(config.problems)
        if renderer is not None and not config.problems:
            digest_after = int(config.get("digest_after", DEFAULT_DIGEST_AFTER))
            channels[name] = Channel(name, policy.type, sender, renderer, digest_after)
    return channels, problems


def check_channel_env(
    registry: Registry, environ: Mapping[str, str], names: Collection[str] | None = None
) -> list[ChannelProblem]:
    """Every reason the channels in use (or ``names``) could not deliver; empty when ready."""
    return _configure_all(registry, environ, names)[1]


def build_channels(
    registry: Registry, environ: Mapping[str, str], names: Collection[str] | None = None
) -> dict[str, Channel]:
    """The channels in use (or ``names``), ready to deliver; raises ChannelError on any problem."""
    channels, problems = _configure_all(registry, environ, names)
    if problems:
        listed = "\n  ".join(str(p) for p in problems)
        raise ChannelError(
            f"{len(problems)} notification channel problem(s):\n  {listed}\n"
            "set the variables in the worker's environment, or fix the Channel documents"
        )
    return channels
