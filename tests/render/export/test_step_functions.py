"""``--format step-functions``: valid ASL (the npm package asl-validator), with the retriers
the sheet means: MaxAttempts counts retries, States.ALL last and alone, fields in range."""

from __future__ import annotations

import json

import pytest
from export_cases import asl_valid, check_retriers

from jobdef.render.export import export


def _machines(registry, *names):
    jobs = json.loads(export(registry, "step-functions", names).text)["jobs"]
    return {name: entry["definition"] for name, entry in jobs.items()}


@pytest.mark.slow
def test_every_example_sheet_is_valid_asl(examples, asl_validator):
    machines = _machines(examples)
    asl_valid(asl_validator, *machines.values())
    for name, machine in machines.items():
        check_retriers(machine["States"][name])


def test_the_mail_job_retries_as_its_sheet_says(examples):
    machine = _machines(examples, "send_reservation_mail")["send_reservation_mail"]
    task = machine["States"]["send_reservation_mail"]
    fatal, everything = task["Retry"]
    assert fatal == {"ErrorEquals": ["InvalidAddress", "Cancelled"], "MaxAttempts": 0}
    assert everything == {
        "ErrorEquals": ["States.ALL"],
        "IntervalSeconds": 10,
        "MaxAttempts": 4,  # ASL counts retries: max_attempts 5 is 4 retries
        "BackoffRate": 2.0,
        "MaxDelaySeconds": 600,
        "JitterStrategy": "FULL",
    }
    assert task["TimeoutSeconds"] == 30
    assert machine["TimeoutSeconds"] == 7200  # the deadline, over the whole execution
    assert task["Catch"][0]["Next"] == "RecordDead"
    assert task["Comment"].startswith("jobdef notes: ")


def test_with_default_fatal_only_the_listed_classes_retry(examples):
    machine = _machines(examples, "resize_image")["resize_image"]
    (retrier,) = machine["States"]["resize_image"]["Retry"]
    # ConnectionError retries; a timeout does not (TimeoutError is not listed, default fatal).
    assert retrier["ErrorEquals"] == ["ConnectionError"]
    assert retrier["JitterStrategy"] == "NONE"  # equal jitter: the top of the range, noted


def test_a_listed_timeout_error_retries_states_timeout(examples):
    machine = _machines(examples, "nightly_report")["nightly_report"]
    (retrier,) = machine["States"]["nightly_report"]["Retry"]
    assert retrier["ErrorEquals"] == ["ConnectionError", "TimeoutError", "States.Timeout"]
    assert (retrier["IntervalSeconds"], retrier["BackoffRate"]) == (60, 5.0)  # 1m, 5m exactly


@pytest.mark.slow
def test_rounded_and_retry_free_machines_are_valid_asl(sheets, asl_validator):
    registry = sheets(
        {
            "once": "max_attempts: 1\n",
            "quick": "max_attempts: 3\ntimeout: 500ms\n"
            "backoff: {strategy: fixed, initial: 200ms}\n",
            "steps": "max_attempts: 4\nbackoff: {strategy: linear, initial: 10s, max: 25s}\n",
            "lists": "max_attempts: 6\n"
            "backoff: {strategy: list, delays: [1s, 1m, 1h], jitter: equal}\n",
        }
    )
    machines = _machines(registry)
    assert "Retry" not in machines["once"]["States"]["once"]
    asl_valid(asl_validator, *machines.values())
    for name, machine in machines.items():
        check_retriers(machine["States"][name])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("max_attempts: 3\ntimeout: 500ms\n", "timeout"),
        ("max_attempts: 3\nbackoff: {strategy: fixed, initial: 200ms}\n", "backoff.initial"),
        ("max_attempts: 4\nbackoff: {strategy: linear, initial: 10s}\n", "backoff"),
    ],
)
def test_what_asl_cannot_take_is_rounded_up_with_a_note(sheets, body, field):
    registry = sheets({"job": body})
    entry = json.loads(export(registry, "step-functions").text)["jobs"]["job"]
    check_retriers(entry["definition"]["States"]["job"])
    assert any(n.startswith(field + ":") for n in entry["notes"])


def test_a_timeout_past_lambdas_limit_is_noted(examples):
    jobs = json.loads(export(examples, "step-functions").text)["jobs"]
    long = [n for n in jobs["export_csv"]["notes"] if "Lambda's 15m maximum" in n]
    assert long  # timeout: 2h
    assert not any("Lambda's" in n for n in jobs["resize_image"]["notes"])  # timeout: 20s
