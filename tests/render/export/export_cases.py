"""What the export tests share: where the example sheets are, and validators that may be missing.

The validators are the formats' own: botocore's SQS service model, the Cloud Tasks
and Temporal protobuf messages (google-cloud-tasks, temporalio), the Kubernetes
OpenAPI schemas of kubernetes-validate, and the npm package asl-validator run with
node. Each is missing only off CI: there the test skips, under ``CI=true`` it fails.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "jobdefs"


def missing(what: str) -> None:
    """Skip for a validator that is not installed, or fail under CI=true."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true requires {what}")
    pytest.skip(f"{what} is not installed")


def need(module: str) -> ModuleType:
    """``module`` imported, or a skip (a failure under CI=true)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        missing(f"the Python module {module} (pip install -e '.[test]')")
        raise  # unreachable: missing() skips or fails
