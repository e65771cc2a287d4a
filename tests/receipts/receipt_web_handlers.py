"""Handlers of the receipt endpoint's tests (imported by worker child processes)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def export(ctx: Any, month: str, note: str, api_token: str) -> dict[str, Any]:
    return {"file": f"{month}.csv", "rows": 3, "path": "/srv/exports/internal"}


def whole(ctx: Any, count: int) -> dict[str, int]:
    return {"count": count, "square": count * count}


def failing(ctx: Any, count: int) -> None:
    raise ConnectionError(f"secret detail {count}")


def gated(ctx: Any, path: str) -> dict[str, bool]:
    """Report progress, then run until the file ``path`` exists."""
    ctx.heartbeat({"step": "waiting"})
    while not Path(path).exists():
        time.sleep(0.01)
    return {"opened": True}
