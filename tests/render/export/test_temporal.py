"""``--format temporal``: activity options that parse as the Temporal API's messages."""

from __future__ import annotations

import json

import pytest
from export_cases import check_temporal

from jobdef.render.export import export


def _jobs(registry, *names):
    return json.loads(export(registry, "temporal", names).text)["jobs"]


def test_every_example_sheet_parses_as_temporal_activity_options(examples):
    for entry in _jobs(examples).values():
        check_temporal(entry)


def test_the_mail_job_maps_field_by_field(examples):
    activity = _jobs(examples, "send_reservation_mail")["send_reservation_mail"]["activity"]
    assert activity == {
        "activityType": {"name": "send_reservation_mail"},
        "taskQueue": {"name": "mail"},
        "scheduleToCloseTimeout": "7200s",  # the deadline, across retries
        "startToCloseTimeout": "30s",  # one attempt
        "retryPolicy": {
            "initialInterval": "10s",
            "backoffCoefficient": 2.0,
            "maximumInterval": "80s",  # the effective cap, not Temporal's 100x default
            "maximumAttempts": 5,  # attempts, as the sheet counts
            "nonRetryableErrorTypes": ["InvalidAddress", "Cancelled"],
        },
    }


def test_a_batch_job_gets_a_schedule_spec(examples):
    entry = _jobs(examples, "nightly_report")["nightly_report"]
    assert entry["schedule"] == {
        "spec": {"cronString": ["0 3 * * *"], "timezoneName": "Asia/Tokyo"}
    }
    assert "scheduleToCloseTimeout" in entry["activity"]
    # errors.default fatal has no Temporal equivalent: noted.
    assert any(n.startswith("errors.default:") for n in entry["notes"])


@pytest.mark.parametrize(
    ("body", "duration"),
    [("timeout: 250ms\n", "0.25s"), ("timeout: 1h30m\n", "5400s")],
)
def test_durations_are_protobuf_json_durations(sheets, body, duration):
    entry = _jobs(sheets({"job": "max_attempts: 2\n" + body}))["job"]
    check_temporal(entry)
    assert entry["activity"]["startToCloseTimeout"] == duration


def test_a_job_without_a_deadline_has_no_schedule_to_close_timeout(examples):
    activity = _jobs(examples, "resize_image")["resize_image"]["activity"]
    assert "scheduleToCloseTimeout" not in activity
