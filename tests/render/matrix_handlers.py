"""The handler of the timeline conformance matrix: one script of acts, one act per attempt.

Imported by the worker's child processes. ``script[n - 1]`` says what attempt ``n``
does; the last act repeats for every later attempt.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

# What each act does. The test predicts the outcome of each from `jobdef explain`.
ACTS = ("ok", "retry", "fatal", "hang", "crash", "die")


def act(ctx: Any, script: list[str], marker: str = "") -> None:
    """Do what the script says for this attempt."""
    what = script[min(ctx.attempt, len(script)) - 1]
    if what == "retry":
        raise ConnectionError(f"attempt {ctx.attempt}: the server is down")
    if what == "fatal":
        raise ValueError(f"attempt {ctx.attempt}: the input is wrong")
    if what == "hang":
        time.sleep(60)  # far past the sheet's timeout: the worker kills the child
    elif what == "crash":
        os._exit(3)
    elif what == "die":
        # The test kills this worker once every such attempt has begun: the lease is
        # left to expire and another worker reclaims the job.
        Path(f"{marker}.{ctx.attempt}").touch()
        time.sleep(60)
