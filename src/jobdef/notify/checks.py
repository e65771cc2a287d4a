"""Channels ready to deliver, built at worker start: a sender, a renderer, a digest threshold.

Whether a channel can deliver (environment variables, settings its type needs,
templates that compile, ``notify.channel`` naming a Channel document) is checked
by :func:`jobdef.policy.channels.check_channel_env`, which ``jobdef validate
--check-env`` also runs. :func:`build_channels` raises one
:class:`~jobdef.errors.ChannelError` that lists every problem, or returns the
ready channels.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from jobdef.errors import ChannelError
from jobdef.notify.channels import Sender, configure
from jobdef.notify.render import Renderer
from jobdef.policy.channels import check_channel_env, used_channels
from jobdef.policy.model import ChannelPolicy
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


def _ready(policy: ChannelPolicy, environ: Mapping[str, str]) -> Channel:
    sender, config = configure(policy, environ)
    digest_after = int(config.get("digest_after", DEFAULT_DIGEST_AFTER))
    return Channel(policy.name, policy.type, sender, Renderer(config.get("template")), digest_after)


def build_channels(
    registry: Registry, environ: Mapping[str, str], names: Collection[str] | None = None
) -> dict[str, Channel]:
    """The channels in use (or ``names``), ready to deliver; raises ChannelError on any problem.

    The problems are those of :func:`~jobdef.policy.channels.check_channel_env`.
    """
    problems = check_channel_env(registry, environ, names)
    if problems:
        listed = "\n  ".join(str(p) for p in problems)
        raise ChannelError(
            f"{len(problems)} notification channel problem(s):\n  {listed}\n"
            "set the variables in the worker's environment, or fix the Channel documents"
        )
    wanted = used_channels(registry) if names is None else sorted(names)
    return {
        name: _ready(registry.channels[name], environ)
        for name in wanted
        if name in registry.channels
    }
