"""The handler of the lost-attempt test: attempt 1 is held until its worker is killed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def hold_first(ctx: Any, marker: str) -> None:
    """Note the attempt's start in ``marker.N``; hold attempt 1 far past any wait of the test."""
    Path(f"{marker}.{ctx.attempt}").touch()
    if ctx.attempt == 1:
        time.sleep(120)
