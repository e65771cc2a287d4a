"""Public conformance data beside the checkout (``../shared/external/``), read in place.

The suites are never copied into the repository: a test that needs one calls
:func:`external_data`, which skips when the folder is absent, except under
``CI=true``, where a missing suite fails the run (as PostgreSQL does).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

EXTERNAL = Path(__file__).resolve().parents[2].parent / "shared" / "external"


def external_data(name: str) -> Path:
    """The folder ``../shared/external/<name>``, or a skip (a failure under CI=true)."""
    folder = EXTERNAL / name
    if not folder.is_dir():
        reason = f"conformance data {name!r} not found at {folder} (see its SOURCE.txt)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true requires the {name} data: {reason}")
        pytest.skip(reason)
    return folder
