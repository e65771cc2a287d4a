"""Key recipes, as pure functions of a policy: the idempotency key of a call, the key of a slot.

The queue computes a job's idempotency key with :func:`idempotency_key`; the
batch scheduler keys each cron slot with :func:`slot_key`, so that two
schedulers reaching the same slot store one job.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from jobdef.errors import ArgsError
from jobdef.policy.model import JobPolicy


def idempotency_key(policy: JobPolicy, args: Mapping[str, Any]) -> str | None:
    """The key from the sheet's recipe: ``"{reservation_id}:mail"`` -> ``"42:mail"``."""
    recipe = policy.idempotency.key
    if recipe is None:
        return None
    names = [field for _, field, _, _ in string.Formatter().parse(recipe) if field]
    missing = [name for name in names if name not in args]
    if missing:
        raise ArgsError(
            f"job {policy.name!r}: the idempotency key {recipe!r} uses "
            f"{', '.join(missing)}, which the call did not pass. Nothing was stored; pass it"
        )
    return recipe.format_map(dict(args))


def slot_key(policy: JobPolicy, slot: datetime) -> str:
    """The idempotency key of one slot: the sheet's key (or the job name) ``@`` the slot time."""
    return f"{idempotency_key(policy, {}) or policy.name}@{slot.isoformat()}"
