"""Building an adapter's :class:`~jobdef.adapters.core.SheetRuntime` from three settings.

Both adapters take the same three: the sheets folder, jobdef's database (where
dead jobs and the outbox live) and the Redis URL of the run store. A process
builds one runtime per distinct setting, once (a forked worker child inherits
it; its database connection is reopened there).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from jobdef.adapters.core import SheetRuntime
from jobdef.adapters.store import RunStore
from jobdef.errors import UsageError
from jobdef.sheets.pipeline import load_registry


@dataclass(frozen=True, slots=True)
class Settings:
    """Where an adapter finds its sheets, jobdef's database and its run store."""

    sheets: str
    database: str
    redis: str
    prefix: str = "jobdef"
    redelivery: float = 0.0
    """How late the runtime may deliver an unacknowledged message again, in seconds
    (:attr:`~jobdef.adapters.core.SheetRuntime.redelivery`)."""


def redis_client(url: str) -> object:
    """A Redis client for ``url`` (redis-py, which both runtimes install)."""
    try:
        import redis
    except ImportError as exc:  # pragma: no cover - both extras install it
        raise UsageError("the adapters need redis-py: pip install 'jobdef[celery]'") from exc
    return redis.Redis.from_url(url)


def sheet_runtime(
    runtime: str, sheets: str, database: str, store: RunStore, *, redelivery: float = 0.0
) -> SheetRuntime:
    """A :class:`SheetRuntime` of the sheets under ``sheets`` over ``store``."""
    if not Path(sheets).exists():
        raise UsageError(f"{sheets}: no such folder of sheets (the adapter's `sheets`)")
    registry = load_registry([sheets])
    return SheetRuntime(runtime, registry, database, store, redelivery=redelivery)


@cache
def runtime_for(runtime: str, settings: Settings) -> SheetRuntime:
    """The one :class:`SheetRuntime` of ``settings`` in this process."""
    store = RunStore(redis_client(settings.redis), settings.prefix)  # type: ignore[arg-type]
    return sheet_runtime(
        runtime, settings.sheets, settings.database, store, redelivery=settings.redelivery
    )
