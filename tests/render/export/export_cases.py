"""What the export tests share: where the example sheets are, and validators that may be missing.

The validators are the formats' own: botocore's SQS service model, the Cloud Tasks
and Temporal protobuf messages (google-cloud-tasks, temporalio), the Kubernetes
OpenAPI schemas of kubernetes-validate, and the npm package asl-validator run with
node. Each is missing only off CI: there the test skips, under ``CI=true`` it fails.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import subprocess
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "jobdefs"

CHANNELS = """\
apiVersion: jobdef/v1
kind: Channel
name: ops-log
type: log
---
apiVersion: jobdef/v1
kind: Defaults
name: test-defaults
errors: {default: retry}
"""


def job_sheet(name: str, body: str) -> str:
    """A Job sheet named ``name``; ``body`` (dedented) holds the policy under test."""
    return (
        "apiVersion: jobdef/v1\n"
        "kind: Job\n"
        f"name: {name}\n"
        "handler: app.jobs:run\n"
        "args: {}\n"
        "notify: {channel: ops-log, events: [dead]}\n" + textwrap.dedent(body)
    )


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


# The documented ranges of the CreateQueue attributes (Amazon SQS API Reference, CreateQueue).
LIMITS = {
    "VisibilityTimeout": (0, 43200),
    "MessageRetentionPeriod": (60, 1209600),
}


@functools.cache
def _create_queue_shape() -> Any:
    botocore_session = need("botocore.session")
    model = botocore_session.get_session().get_service_model("sqs")
    return model.operation_model("CreateQueue").input_shape


def check_create_queue(params: dict) -> None:
    """Valid for botocore's SQS model, attribute names of its enum, values in range."""
    validate = need("botocore.validate")
    shape = _create_queue_shape()
    validate.validate_parameters(params, shape)  # raises ParamValidationError
    names = set(shape.members["Attributes"].key.enum)
    assert set(params["Attributes"]) <= names
    for name, (low, high) in LIMITS.items():
        if name in params["Attributes"]:
            assert low <= int(params["Attributes"][name]) <= high


def check_cloud_tasks(entry: dict) -> None:
    """Parse with the published protobuf messages (unknown fields and bad durations raise)."""
    tasks_v2 = need("google.cloud.tasks_v2")
    json_format = need("google.protobuf.json_format")
    json_format.Parse(json.dumps(entry["queue"]), tasks_v2.Queue.pb(tasks_v2.Queue()))
    json_format.Parse(json.dumps(entry["task"]), tasks_v2.Task.pb(tasks_v2.Task()))


# The retrier fields and their limits (AWS Step Functions developer guide, "Handling errors
# in Step Functions workflows": IntervalSeconds and MaxAttempts positive integers up to
# 99999999, BackoffRate at least 1.0, MaxDelaySeconds below 31622401, JitterStrategy FULL
# or NONE).
RETRIER_FIELDS = {
    "ErrorEquals",
    "IntervalSeconds",
    "MaxAttempts",
    "BackoffRate",
    "MaxDelaySeconds",
    "JitterStrategy",
}


def asl_valid(validator: list[str], *definitions: dict) -> None:
    """Each definition valid for asl-validator (one node process for all of them)."""
    args = [arg for d in definitions for arg in ("--json-definition", json.dumps(d))]
    result = subprocess.run(
        [*validator, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def check_retriers(task: dict) -> None:
    retry = task.get("Retry", [])
    for i, retrier in enumerate(retry):
        assert set(retrier) <= RETRIER_FIELDS
        if "States.ALL" in retrier["ErrorEquals"]:
            assert retrier["ErrorEquals"] == ["States.ALL"]
            assert i == len(retry) - 1
        assert isinstance(retrier["MaxAttempts"], int)
        assert 0 <= retrier["MaxAttempts"] <= 99999999
        if "IntervalSeconds" in retrier:
            assert isinstance(retrier["IntervalSeconds"], int)
            assert 1 <= retrier["IntervalSeconds"] <= 99999999
            assert retrier["BackoffRate"] >= 1.0
            assert retrier["JitterStrategy"] in ("FULL", "NONE")
        if "MaxDelaySeconds" in retrier:
            assert isinstance(retrier["MaxDelaySeconds"], int)
            assert 1 <= retrier["MaxDelaySeconds"] < 31622401
    assert isinstance(task["TimeoutSeconds"], int)
    assert task["TimeoutSeconds"] >= 1


def check_temporal(entry: dict) -> None:
    """Parse with temporalio's generated API messages (unknown fields or bad durations raise)."""
    command = need("temporalio.api.command.v1")
    schedule = need("temporalio.api.schedule.v1")
    json_format = need("google.protobuf.json_format")
    json_format.Parse(
        json.dumps(entry["activity"]), command.ScheduleActivityTaskCommandAttributes()
    )
    if "schedule" in entry:
        json_format.Parse(json.dumps(entry["schedule"]), schedule.Schedule())


# An annotation key: an optional DNS subdomain prefix and a name of at most 63 characters
# (Kubernetes docs, "Annotations: Syntax and character set").
ANNOTATION_KEY = re.compile(r"^([a-z0-9.-]{1,253}/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def check_kubernetes(manifest: dict) -> None:
    kubernetes_validate = need("kubernetes_validate")
    kubernetes_validate.validate(manifest, kubernetes_validate.latest_version(), strict=True)
    for key in manifest["metadata"]["annotations"]:
        assert ANNOTATION_KEY.match(key), key
    assert DNS_LABEL.match(manifest["metadata"]["name"])
