"""Key recipes, as pure functions of a policy: the idempotency key of a call, the key of a slot.

The queue computes a job's idempotency key with :func:`idempotency_key`; the
batch scheduler keys each cron slot with :func:`slot_key`, so that two
schedulers reaching the same slot store one job. :func:`key_placeholders` is
how everything else (the sheet rules, the notifications' key args) reads a recipe.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobdef.errors import ArgsError

if TYPE_CHECKING:
    from jobdef.policy.model import JobPolicy


def key_placeholders(recipe: str) -> list[str]:
    """The names a key recipe fills in, in order: ``"{order_id}:{kind}"`` -> ``order_id, kind``.

    Read as :meth:`str.format_map` reads the recipe (``{{`` is a literal brace),
    so the sheet rules, the queue and the notifications agree on them. Raises
    :class:`ValueError` for a recipe ``str.format`` cannot read (a lone ``{`` or ``}``).
    """
    return [name for _, name, _, _ in string.Formatter().parse(recipe) if name is not None]


def idempotency_key(policy: JobPolicy, args: Mapping[str, Any]) -> str | None:
    """The key from the sheet's recipe: ``"{reservation_id}:mail"`` -> ``"42:mail"``."""
    recipe = policy.idempotency.key
    if recipe is None:
        return None
    missing = [name for name in key_placeholders(recipe) if name and name not in args]
    if missing:
        raise ArgsError(
            f"job {policy.name!r}: the idempotency key {recipe!r} uses "
            f"{', '.join(missing)}, which the call did not pass. Nothing was stored; pass it"
        )
    return recipe.format_map(dict(args))


def slot_key(policy: JobPolicy, slot: datetime) -> str:
    """The idempotency key of one slot: the sheet's key (or the job name) ``@`` the slot time."""
    return f"{idempotency_key(policy, {}) or policy.name}@{slot.isoformat()}"
