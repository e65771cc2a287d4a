"""The Chromium that browser tests drive, and how it is started: Debian's build, never a
downloaded one, through Playwright's Python API with ``executable_path``. Browser tests
skip when either is missing, except under ``CI=true``, where they fail."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def skip_or_fail(reason: str) -> None:
    """Skip the test for want of ``reason``; fail it under ``CI=true``."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true requires it: {reason}")
    pytest.skip(reason)


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium (a Playwright ``Browser``), closed on leaving."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright is not installed (pip install playwright)")
    if shutil.which(CHROMIUM) is None:
        skip_or_fail(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()
