"""Handlers of the return-value tests: what each returns, and one that kills its process."""

from __future__ import annotations

import os
import time
from typing import Any


def returns(ctx: Any, value: Any) -> Any:
    return value


def returns_a_set(ctx: Any) -> Any:
    return {1, 2}


def returns_big(ctx: Any, size: int) -> Any:
    return "x" * size


async def returns_later(ctx: Any, value: Any) -> Any:
    return value


def dies(ctx: Any) -> None:
    os._exit(9)


def returns_after_gate(ctx: Any, value: Any, gate: str, mark: str) -> Any:
    """Wait for the file ``gate``, write the file ``mark`` (the test's sign that the
    handler returns now), and return ``value``."""
    while not os.path.exists(gate):
        time.sleep(0.005)
    with open(mark, "w") as handle:
        handle.write(f"{ctx.job_id} {ctx.attempt}\n")
    return value
