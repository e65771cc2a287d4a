"""Handlers of the return-value tests: what each returns, and one that kills its process."""

from __future__ import annotations

import os
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
