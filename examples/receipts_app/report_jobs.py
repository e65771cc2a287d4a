"""The example's one handler: builds a "report" slowly enough to watch, telling its progress."""

from __future__ import annotations

import time
from typing import Any


def build_report(ctx: Any, month: str, seconds: int) -> dict[str, Any]:
    """Work ``seconds`` seconds in steps, reporting each (the receipt shows the progress)."""
    steps = seconds * 2
    for step in range(steps):
        ctx.heartbeat({"done": step, "of": steps})
        time.sleep(0.5)
    ctx.heartbeat({"done": steps, "of": steps})
    return {"file": f"report-{month}.csv", "rows": 31 * seconds, "path": f"/tmp/reports/{month}"}
