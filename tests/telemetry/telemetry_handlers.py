"""Handlers of the telemetry tests' sheets: one per way an attempt ends."""

from __future__ import annotations

import os
import time
import warnings

# The secret a test puts in the worker's environment; handlers quote it, no line may.
SECRET_VARIABLE = "TELEMETRY_TEST_API_TOKEN"
# Set: importing this module warns, as a library a handler imports may.
WARN_VARIABLE = "TELEMETRY_TEST_WARN_AT_IMPORT"

if os.environ.get(WARN_VARIABLE):
    warnings.warn("this module is imported with a warning", UserWarning, stacklevel=1)


def quick(ctx, i: int) -> None:
    ctx.logger.info("calling the API with %s", os.environ.get(SECRET_VARIABLE))
    ctx.logger.info(
        "quick job working",
        extra={"step": i, "credentials": f"token={os.environ.get(SECRET_VARIABLE, '')}"},
    )


def flaky(ctx, i: int) -> None:
    if ctx.attempt == 1:
        raise ConnectionError(f"first attempt fails (api key {os.environ.get(SECRET_VARIABLE)})")


def broken(ctx, i: int) -> None:
    raise ValueError(f"cannot work with {os.environ.get(SECRET_VARIABLE)}")


def slow(ctx, i: int) -> None:
    time.sleep(60)


def crash(ctx, i: int) -> None:
    os._exit(7)
