"""The Chromium the dashboard's browser tests drive, and how it is started: Debian's
build, never a downloaded one. A module of its own, since ``from conftest import``
gets whichever test folder's conftest was imported first."""

from __future__ import annotations

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
