"""Public conformance data beside the checkout (``../shared/external/``), read in place.

The suites are never copied into the repository: a test that needs one calls
:func:`external_data`, which skips when the folder is absent, except under
``CI=true``, where a missing suite fails the run (as PostgreSQL does). A linked git
worktree (``git worktree add``) reads the data beside the checkout it was added from.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]


def _main_checkout(checkout: Path) -> Path:
    """The checkout itself, or for a linked worktree (whose ``.git`` is a file naming
    ``<main>/.git/worktrees/<name>``) the main checkout it was added from."""
    marker = checkout / ".git"
    if marker.is_file():
        line = marker.read_text("utf-8").strip()
        gitdir = Path(line.removeprefix("gitdir:").strip())
        if gitdir.parent.name == "worktrees" and gitdir.parent.parent.name == ".git":
            return gitdir.parent.parent.parent
    return checkout


def _external() -> Path:
    beside = CHECKOUT.parent / "shared" / "external"
    if beside.is_dir():
        return beside
    return _main_checkout(CHECKOUT).parent / "shared" / "external"


EXTERNAL = _external()


def external_data(name: str) -> Path:
    """The folder ``../shared/external/<name>``, or a skip (a failure under CI=true)."""
    folder = EXTERNAL / name
    if not folder.is_dir():
        reason = f"conformance data {name!r} not found at {folder} (see its SOURCE.txt)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true requires the {name} data: {reason}")
        pytest.skip(reason)
    return folder
