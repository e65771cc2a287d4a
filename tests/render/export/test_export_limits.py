"""Sheets at the edges of what validate accepts export valid output in every format:
each out-of-range value clamped or rounded up with a note, never written invalid."""

from __future__ import annotations

import json

import pytest
import yaml
from export_cases import (
    CHANNELS,
    asl_valid,
    check_cloud_tasks,
    check_create_queue,
    check_kubernetes,
    check_retriers,
    check_temporal,
    job_sheet,
)

from jobdef.render.export import export

EDGES = {
    # 1000 attempts whose waits overflow to unbounded, a 1000-day timeout, fatal timeouts.
    "overflowing": """\
    max_attempts: 1000
    backoff: {strategy: exponential, initial: 1ms, multiplier: 1000}
    timeout: 1000d
    errors: {default: fatal, retry: [OSError], fatal: [TimeoutError]}
    retention: {done: 100000d}
    """,
    # Sub-second everything, decorrelated jitter, a worker loss that fails the job.
    "tiny": """\
    max_attempts: 7
    backoff: {strategy: fixed, initial: 1ms, jitter: decorrelated, max: 90ms}
    timeout: 1ms
    on_reclaim: fail
    """,
    # A long list whose last wait repeats, equal jitter, a batch job every minute.
    "listed": """\
    mode: batch
    schedule: "* * * * *"
    timezone: America/New_York
    catch_up: all
    max_attempts: 20
    backoff: {strategy: list, delays: [1s, 2s, 3s, 5s, 8s, 13s], jitter: equal}
    timeout: 45s
    retention: {done: 1d, dead: 2d}
    """,
    "n" * 100: "max_attempts: 2\n",
}


@pytest.fixture(scope="module")
def edges(tmp_path_factory):
    from jobdef.sheets.pipeline import load_registry

    folder = tmp_path_factory.mktemp("edges") / "jobdefs"
    folder.mkdir()
    (folder / "channels.yaml").write_text(CHANNELS, "utf-8")
    for name, body in EDGES.items():
        (folder / f"{name[:40]}.yaml").write_text(job_sheet(name, body), "utf-8")
    return load_registry([folder])


def _jobs(registry, fmt):
    result = export(registry, fmt)
    return json.loads(result.text)["jobs"], result.notes


def test_sqs(edges):
    jobs, notes = _jobs(edges, "sqs")
    for entry in jobs.values():
        check_create_queue(entry["queue"])
        check_create_queue(entry["deadLetterQueue"])
    assert jobs["overflowing"]["queue"]["Attributes"]["VisibilityTimeout"] == "43200"
    assert jobs["tiny"]["queue"]["Attributes"]["VisibilityTimeout"] == "1"
    assert {(n.job, n.field) for n in notes} >= {("overflowing", "timeout"), ("tiny", "timeout")}
    # TimeoutError is fatal there, but SQS receives a timed-out message again: noted.
    assert any("treats a timeout as fatal" in n for n in jobs["overflowing"]["notes"])
    assert not any("treats a timeout as fatal" in n for n in jobs["tiny"]["notes"])


def test_cloud_tasks(edges):
    jobs, _ = _jobs(edges, "cloud-tasks")
    for entry in jobs.values():
        check_cloud_tasks(entry)
        assert len(entry["queue"]["name"].rpartition("/")[2]) <= 100
    assert jobs["overflowing"]["task"] == {"dispatchDeadline": "1800s"}
    assert jobs["tiny"]["task"] == {"dispatchDeadline": "15s"}


def test_temporal(edges):
    jobs, _ = _jobs(edges, "temporal")
    for entry in jobs.values():
        check_temporal(entry)
    policy = jobs["overflowing"]["activity"]["retryPolicy"]
    assert policy["maximumInterval"] == "315576000000s"  # unbounded: the largest Duration
    assert any(n.startswith("backoff.max: unbounded") for n in jobs["overflowing"]["notes"])
    assert jobs["tiny"]["activity"]["startToCloseTimeout"] == "0.001s"


@pytest.mark.slow
def test_step_functions(edges, asl_validator):
    jobs, _ = _jobs(edges, "step-functions")
    machines = [entry["definition"] for entry in jobs.values()]
    asl_valid(asl_validator, *machines)
    for machine in machines:
        check_retriers(machine["States"][machine["StartAt"]])
        assert len(machine["StartAt"]) <= 80
        function = machine["States"][machine["StartAt"]]["Parameters"]["FunctionName"]
        assert len(function) <= 64


def test_kubernetes(edges):
    manifests = list(yaml.safe_load_all(export(edges, "kubernetes").text))
    for manifest in manifests:
        check_kubernetes(manifest)
    (cron,) = [m for m in manifests if m["kind"] == "CronJob"]
    assert cron["spec"]["timeZone"] == "America/New_York"
    assert "jobdef.dev/note.catch_up" in cron["metadata"]["annotations"]
