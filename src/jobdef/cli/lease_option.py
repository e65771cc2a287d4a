"""``--lease`` for the commands that compute with the workers' lease (``explain``,
``dashboard``): the lease a lost attempt's job is held for before it is reclaimed."""

from __future__ import annotations

import argparse
import math

from jobdef.errors import UsageError
from jobdef.policy.durations import format_duration, parse_duration_or_none
from jobdef.policy.leases import DEFAULT_LEASE, MIN_LEASE
from jobdef.render.escape import clip


def add_lease(parser: argparse.ArgumentParser, uses: str) -> None:
    """``--lease DURATION``; ``uses``: what the command does with it."""
    parser.add_argument(
        "--lease",
        metavar="DURATION",
        default=None,
        help=f"the lease of the workers that run the jobs, as given to jobdef worker --lease "
        f"(e.g. 45s): {uses} (default: the worker's default, {format_duration(DEFAULT_LEASE)})",
    )


def lease_from(args: argparse.Namespace) -> float | None:
    """``--lease`` as the worker reads it: a duration with a unit, at least its minimum
    (None: not given)."""
    text: str | None = args.lease
    if text is None:
        return None
    seconds = parse_duration_or_none(text)
    if seconds is None or not math.isfinite(seconds):
        raise UsageError(
            f"--lease {clip(text, 40)!r} is not a duration; write the lease the worker runs "
            f"with as given to jobdef worker --lease, e.g. --lease 45s "
            f"(default {format_duration(DEFAULT_LEASE)})"
        )
    if seconds < MIN_LEASE:
        raise UsageError(
            f"--lease {clip(text, 40)} is shorter than jobdef worker accepts; write "
            f"{format_duration(MIN_LEASE)} or more, as given to jobdef worker --lease"
        )
    return seconds
