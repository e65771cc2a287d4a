"""``jobdef export --format json``: valid against its shipped schema, in seconds, with origins."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest
from export_cases import REPO

from jobdef.render.export import export, schema_text
from jobdef.render.export.resolved import resolved_document


def _validator() -> jsonschema.Draft7Validator:
    schema = json.loads(schema_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())


def test_the_example_sheets_export_valid_against_the_shipped_schema(examples):
    document = json.loads(export(examples, "json", base=REPO).text)
    errors = [e.message for e in _validator().iter_errors(document)]
    assert errors == []
    assert [job["name"] for job in document["jobs"]] == sorted(examples.jobs)


def test_values_are_seconds_with_the_effective_cap(examples):
    (job,) = json.loads(export(examples, "json", ["send_reservation_mail"]).text)["jobs"]
    assert job["timeout"] == 30.0
    assert job["deadline"] == 7200.0
    assert job["retention"] == {"done": 30 * 86400.0, "dead": None}
    # exponential 10s x2, max 10m, 5 attempts: the longest wait reached is 80s, not 10m.
    assert job["backoff"]["max"] == 600.0
    assert job["backoff"]["effective_max"] == 80.0
    assert [w["max"] for w in job["backoff"]["waits"]] == [10.0, 20.0, 40.0, 80.0]
    assert {w["min"] for w in job["backoff"]["waits"]} == {0.0}  # full jitter
    assert job["retries"] == 4


def test_error_classes_and_how_a_timeout_is_treated(examples):
    jobs = {j["name"]: j for j in json.loads(export(examples, "json").text)["jobs"]}
    mail = jobs["send_reservation_mail"]["errors"]
    assert [c["class"] for c in mail["fatal"]] == [
        "jobdef.examples.errors.InvalidAddress",
        "jobdef.examples.errors.Cancelled",
    ]
    assert mail["timeout"] == "retry"  # TimeoutError is listed in errors.retry
    # resize_image: errors.default fatal and TimeoutError not listed, so a timeout is fatal.
    assert jobs["resize_image"]["errors"]["timeout"] == "fatal"


def test_each_origin_points_at_the_line_that_holds_the_value(examples):
    (job,) = json.loads(export(examples, "json", ["award_member_points"], base=REPO).text)["jobs"]
    origins = job["origins"]
    for path, key in [("timeout", "timeout:"), ("backoff.max", "max:"), ("deadline", "deadline:")]:
        origin = origins[path]
        assert origin["source"] == "sheet"
        line = (REPO / origin["file"]).read_text("utf-8").splitlines()[origin["line"] - 1]
        assert line.strip().startswith(key), (path, line)
    on_reclaim = origins["on_reclaim"]  # inherited from the Defaults document
    assert on_reclaim["source"] == "defaults"
    assert on_reclaim["file"] == "jobdefs/defaults.yaml"
    assert origins["limits.args_bytes"] == {"source": "builtin"}


def test_an_unbounded_wait_is_null_not_infinity(sheets):
    registry = sheets(
        {
            "grows": """\
            max_attempts: 1000
            backoff: {strategy: exponential, initial: 1s, multiplier: 1000}
            timeout: 1s
            """
        }
    )
    text = export(registry, "json").text  # json.dumps(allow_nan=False) would raise on inf
    document = json.loads(text)
    assert list(_validator().iter_errors(document)) == []
    assert document["jobs"][0]["backoff"]["effective_max"] is None
    assert document["jobs"][0]["worst_case"] is None


def test_a_field_accepted_for_a_runtime_has_its_origin_in_a_valid_document(sheets):
    registry = sheets({"urgent": "priority: 5\nruntime: {celery: {accept: [priority]}}\n"})
    document = json.loads(export(registry, "json").text)
    assert "runtime.celery.accept" in document["jobs"][0]["origins"]
    assert [e.message for e in _validator().iter_errors(document)] == []


def test_the_document_is_what_resolved_document_returns(examples):
    assert json.loads(export(examples, "json", base=REPO).text) == resolved_document(
        list(examples), examples, REPO
    )


@pytest.mark.slow
def test_jobdef_schema_export_prints_the_shipped_file():
    out = subprocess.run(
        [sys.executable, "-m", "jobdef", "schema", "export"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == schema_text()
    assert json.loads(out)["$id"].endswith("/jobdef-export-v1.schema.json")


@pytest.mark.parametrize("broken", [{"format": "other"}, {"jobs": [{"name": "x"}]}])
def test_the_schema_refuses_what_it_does_not_describe(examples, broken):
    document = json.loads(export(examples, "json").text) | broken
    assert list(_validator().iter_errors(document))
