"""``--format cloud-tasks``: a Queue that parses as the Cloud Tasks v2 API message, exact
where Cloud Tasks' schedule can follow the sheet."""

from __future__ import annotations

import json

import pytest
from export_cases import check_cloud_tasks

from jobdef.render.export import export
from jobdef.render.export.cloud_tasks import schedule


def _jobs(registry, *names):
    return json.loads(export(registry, "cloud-tasks", names).text)["jobs"]


def test_cloud_tasks_schedule_follows_the_documented_example():
    # The RetryConfig reference: minBackoff 10s, maxBackoff 300s, maxDoublings 3 retries at
    # 10s, 20s, 40s, 80s, 160s, 240s, 300s, 300s.
    assert schedule(10, 300, 3, 8) == [10, 20, 40, 80, 160, 240, 300, 300]


def test_every_example_sheet_parses_as_a_cloud_tasks_queue(examples):
    for entry in _jobs(examples).values():
        check_cloud_tasks(entry)
        retry = entry["queue"]["retryConfig"]
        assert retry["maxRetryDuration"] == "0s"
        for key in ("minBackoff", "maxBackoff"):
            assert retry[key].endswith("s")
            assert retry[key][:-1].isdigit()


def test_exponential_by_two_is_exact(examples):
    entry = _jobs(examples, "send_reservation_mail")["send_reservation_mail"]
    retry = entry["queue"]["retryConfig"]
    assert retry == {
        "maxAttempts": 5,  # attempts, the first included, as the sheet counts
        "maxRetryDuration": "0s",
        "minBackoff": "10s",
        "maxBackoff": "80s",
        "maxDoublings": 3,
    }
    assert not any(n.startswith("backoff:") for n in entry["notes"])
    assert any(n.startswith("backoff.jitter:") for n in entry["notes"])
    assert entry["queue"]["name"].endswith("/queues/send-reservation-mail")  # ids take no _
    assert entry["queue"]["rateLimits"] == {"maxDispatchesPerSecond": pytest.approx(100 / 60)}


@pytest.mark.parametrize(
    ("backoff", "exact"),
    [
        ("{strategy: linear, initial: 10s}", True),
        ("{strategy: fixed, initial: 30s}", True),
        ("{strategy: exponential, initial: 5s, multiplier: 3}", False),
        ("{strategy: list, delays: [1m, 5m, 15m]}", False),
    ],
)
def test_a_backoff_note_exactly_when_the_waits_differ(sheets, backoff, exact):
    entry = _jobs(sheets({"job": f"max_attempts: 4\nbackoff: {backoff}\n"}))["job"]
    check_cloud_tasks(entry)
    notes = [n for n in entry["notes"] if n.startswith("backoff:")]
    assert (notes == []) is exact, notes


def test_a_timeout_outside_an_http_tasks_dispatch_deadline_is_clamped(sheets):
    entry = _jobs(sheets({"job": "max_attempts: 2\ntimeout: 2h\n"}))["job"]
    assert entry["task"] == {"dispatchDeadline": "1800s"}
    assert any(n.startswith("timeout:") and "maximum" in n for n in entry["notes"])
    entry = _jobs(sheets({"quick": "max_attempts: 2\ntimeout: 5s\n"}))["quick"]
    assert entry["task"] == {"dispatchDeadline": "15s"}
