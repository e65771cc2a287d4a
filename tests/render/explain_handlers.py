"""Handlers for the test that runs a job through the real worker."""

from __future__ import annotations

from typing import Any


def always_fails(ctx: Any, **args: Any) -> None:
    """Fail at once, every time, with an error the sheet retries."""
    raise ConnectionError(f"attempt {ctx.attempt}: the server is down")
