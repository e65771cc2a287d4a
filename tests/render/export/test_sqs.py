"""``--format sqs``: CreateQueue parameters valid for botocore's SQS model, within SQS's limits."""

from __future__ import annotations

import json

import pytest
from export_cases import check_create_queue

from jobdef.render.export import export


def _jobs(registry, *names):
    return json.loads(export(registry, "sqs", names).text)["jobs"]


def test_every_example_sheet_exports_valid_create_queue_requests(examples):
    for entry in _jobs(examples).values():
        check_create_queue(entry["queue"])
        check_create_queue(entry["deadLetterQueue"])
        redrive = json.loads(entry["queue"]["Attributes"]["RedrivePolicy"])
        assert set(redrive) == {"deadLetterTargetArn", "maxReceiveCount"}
        assert 1 <= redrive["maxReceiveCount"] <= 1000
        assert redrive["deadLetterTargetArn"].endswith(":" + entry["deadLetterQueue"]["QueueName"])


def test_attempts_timeout_and_retention_map_to_their_attributes(examples):
    entry = _jobs(examples, "send_reservation_mail")["send_reservation_mail"]
    attributes = entry["queue"]["Attributes"]
    assert attributes["VisibilityTimeout"] == "30"  # the attempt's timeout
    assert json.loads(attributes["RedrivePolicy"])["maxReceiveCount"] == 5  # attempts, not retries
    assert attributes["MessageRetentionPeriod"] == "345600"  # the timeline fits SQS's default
    # until_resolved cannot be expressed: the longest SQS keeps a message, with a note.
    assert entry["deadLetterQueue"]["Attributes"]["MessageRetentionPeriod"] == "1209600"
    assert any(n.startswith("retention.dead: until_resolved") for n in entry["notes"])


def test_a_dead_retention_counts_from_the_first_enqueue(sheets):
    registry = sheets(
        {
            "short": """\
            max_attempts: 3
            backoff: {strategy: fixed, initial: 1m}
            timeout: 10m
            retention: {dead: 1d}
            """
        }
    )
    entry = _jobs(registry)["short"]
    # A standard queue keeps a message's first enqueue time when it moves: the dead-letter
    # queue keeps 1d plus the worst-case timeline (3 x 10m + 2 x 1m).
    assert entry["deadLetterQueue"]["Attributes"]["MessageRetentionPeriod"] == str(86400 + 1920)


@pytest.mark.parametrize(
    ("timeout", "expected", "note"),
    [("13h", "43200", "above the maximum of VisibilityTimeout"), ("250ms", "1", "rounded up")],
)
def test_a_timeout_outside_what_sqs_takes_is_clamped_with_a_note(sheets, timeout, expected, note):
    registry = sheets({"slow": f"max_attempts: 2\ntimeout: {timeout}\n"})
    entry = _jobs(registry)["slow"]
    check_create_queue(entry["queue"])
    assert entry["queue"]["Attributes"]["VisibilityTimeout"] == expected
    assert any(n.startswith("timeout:") and note in n for n in entry["notes"])


def test_what_sqs_cannot_express_is_a_note(examples):
    notes = _jobs(examples, "send_reservation_mail")["send_reservation_mail"]["notes"]
    fields = {n.partition(":")[0] for n in notes}
    assert {"backoff", "backoff.jitter", "errors", "deadline", "idempotency.key"} <= fields


def test_a_long_name_is_cut_to_an_sqs_queue_name_with_a_hash(sheets):
    name = "a" * 90
    entry = _jobs(sheets({name: "max_attempts: 2\n"}))[name]
    assert len(entry["deadLetterQueue"]["QueueName"]) <= 80
    check_create_queue(entry["queue"])
    check_create_queue(entry["deadLetterQueue"])
    assert any(n.startswith("name:") for n in entry["notes"])
