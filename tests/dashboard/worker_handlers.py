"""The handler of the workers page's tests: a job that runs until the test lets it end."""

from __future__ import annotations

import os
import time


def hold(ctx, until: str) -> None:
    """Run until the file ``until`` exists (two minutes at most)."""
    deadline = time.monotonic() + 120
    while not os.path.exists(until) and time.monotonic() < deadline:
        time.sleep(0.05)
