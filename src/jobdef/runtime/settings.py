"""The bounds of a worker's options."""

from __future__ import annotations

from jobdef.errors import UsageError
from jobdef.policy.leases import DEFAULT_LEASE, MIN_LEASE

# Handler processes per worker: past this, start more worker processes instead.
MAX_CONCURRENCY = 256


class WorkerOptionError(UsageError, ValueError):
    """A worker option is out of its bounds."""


def check_options(
    concurrency: int,
    lease_seconds: float,
    *,
    names: tuple[str, str] = ("concurrency", "lease_seconds"),
) -> None:
    """Raise :class:`WorkerOptionError` (one line, naming what to write) when the
    concurrency or the lease is out of bounds; ``names`` are the options as the caller
    spells them (the CLI's flags)."""
    concurrency_name, lease_name = names
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise WorkerOptionError(
            f"{concurrency_name} {concurrency} is out of bounds: write a number from 1 to "
            f"{MAX_CONCURRENCY}, and start more worker processes for more"
        )
    if lease_seconds < MIN_LEASE:
        raise WorkerOptionError(
            f"{lease_name} {lease_seconds:g}s is too short: the worker heartbeats every "
            f"lease/3, so a shorter lease would expire under its own live jobs; write "
            f"{MIN_LEASE:g}s or more ({DEFAULT_LEASE:g}s by default)"
        )
