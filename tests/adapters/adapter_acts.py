"""What a test job does on each attempt, for both adapters: one act per attempt.

Every attempt first appends its start time to a Redis list (the ledger), so the
test reads how many attempts ran and when each began; the list's length is the
attempt's number. ``script[n - 1]`` says what attempt ``n`` does, the last act
repeating. ``held-<act>`` touches ``<marker>.<n>`` and waits for ``<marker>.go``
before it does ``<act>``: the test cuts a store meanwhile. The ledger is in the
Redis at ``JOBDEF_TEST_LEDGER_REDIS`` (default ``JOBDEF_TEST_REDIS``), so a test
may cut the run store's connection and still read it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path

import redis

ACTS = ("ok", "retry", "fatal", "hang", "stubborn", "die")
HELD = "held-"


def ledger_key(prefix: str, cell: str) -> str:
    return f"{prefix}:ledger:{cell}"


def act(cell: str, script: list[str], marker: str = "") -> None:
    url = os.environ.get("JOBDEF_TEST_LEDGER_REDIS") or os.environ["JOBDEF_TEST_REDIS"]
    client = redis.Redis.from_url(url)
    attempt = int(
        client.rpush(ledger_key(os.environ["JOBDEF_TEST_PREFIX"], cell), repr(time.time()))
    )
    what = script[min(attempt, len(script)) - 1]
    if what.startswith(HELD):
        what = what.removeprefix(HELD)
        Path(f"{marker}.{attempt}").touch()
        go = Path(f"{marker}.go")
        deadline = time.monotonic() + 60
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    if what == "retry":
        raise ConnectionError(f"attempt {attempt}: the server is down")
    if what == "fatal":
        raise ValueError(f"attempt {attempt}: the input is wrong")
    if what == "hang":
        time.sleep(60)  # past the timeout: the runtime's soft limit interrupts it
    elif what == "stubborn":
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # swallows the soft limit: the hard one kills it
            with contextlib.suppress(BaseException):  # the soft limit's exception, too
                time.sleep(0.05)
    elif what == "die":
        Path(f"{marker}.{attempt}").touch()  # the test kills the worker now
        time.sleep(60)


async def act_async(cell: str, script: list[str], marker: str = "") -> None:
    """:func:`act` as an ``async def`` handler: its act happens only when it is awaited."""
    await asyncio.sleep(0)
    act(cell, script, marker)
