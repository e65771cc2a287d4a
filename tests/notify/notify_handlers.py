"""Handlers for the end-to-end notification tests (imported by the worker's children)."""

from __future__ import annotations

from typing import Any


def refuse(ctx: Any, n: int) -> None:
    raise PermissionError(f"job {n}: access denied by the test")
