"""A sheet's ``result:`` in each export: the JSON export and Step Functions carry it (the
return value becomes the execution's output under $.result, or none with ``store:
false``); SQS, Cloud Tasks, Temporal and Kubernetes say in a note what they keep instead.
A sheet that declares no result exports as before, with no note about it."""

from __future__ import annotations

import json

import pytest
import yaml
from export_cases import asl_valid, check_kubernetes, check_temporal

from jobdef.render.export import export

STORED = """\
result:
  max_bytes: 512KiB
  retention: 1d
  schema: {type: object, properties: {total: {type: integer}}}
  public: [total]
"""
DROPPED = "result: {store: false}\n"


def _notes(registry, fmt: str, name: str) -> list[str]:
    return [n.text for n in export(registry, fmt, [name]).notes if n.field.startswith("result")]


def test_the_json_export_carries_the_result_policy(sheets) -> None:
    registry = sheets({"quote": STORED, "plain": ""})
    jobs = {job["name"]: job for job in json.loads(export(registry, "json").text)["jobs"]}
    assert jobs["quote"]["result"] == {
        "store": True,
        "max_bytes": 524288,
        "retention": 86400.0,
        "schema": {"type": "object", "properties": {"total": {"type": "integer"}}},
        "public": ["total"],
        "notify": [],
    }
    assert jobs["quote"]["origins"]["result.max_bytes"]["source"] == "sheet"
    assert jobs["plain"]["result"]["store"] is True
    assert jobs["plain"]["result"]["max_bytes"] == 65536


@pytest.mark.slow
def test_step_functions_puts_the_value_in_the_output_or_drops_it(sheets, asl_validator) -> None:
    registry = sheets({"quote": STORED, "purge": DROPPED, "plain": ""})
    jobs = json.loads(export(registry, "step-functions").text)["jobs"]
    machines = {name: entry["definition"] for name, entry in jobs.items()}
    asl_valid(asl_validator, *machines.values())
    quote = machines["quote"]["States"]["quote"]
    assert quote["ResultSelector"] == {"value.$": "$.Payload"}
    assert quote["ResultPath"] == "$.result"
    purge = machines["purge"]["States"]["purge"]
    assert "ResultPath" in purge
    assert purge["ResultPath"] is None  # the input passes on; the return value is dropped
    plain = machines["plain"]["States"]["plain"]
    assert "ResultPath" not in plain
    assert "ResultSelector" not in plain
    notes = _notes(registry, "step-functions", "quote")
    assert notes[0].startswith("Step Functions passes at most 256KiB between states")
    assert "kept with its history for 90 days" in notes[1]
    assert notes[1].endswith("the sheet's result: stored (at most 512KiB, kept 1d, checked "
                             "against its schema); shown on receipts: total")  # fmt: skip
    assert _notes(registry, "step-functions", "purge") == []


@pytest.mark.parametrize(
    ("fmt", "says"),
    [
        ("sqs", "SQS keeps no return value: the consumer stores it itself"),
        ("cloud-tasks", "Cloud Tasks discards the target's response"),
        ("kubernetes", "a Job keeps no return value"),
        ("temporal", "the activity's return value is kept in the workflow history"),
    ],
)
def test_a_target_without_a_result_store_says_so(sheets, fmt: str, says: str) -> None:
    registry = sheets({"quote": STORED, "plain": ""})
    (note,) = _notes(registry, fmt, "quote")
    assert note.startswith(says)
    assert "the sheet's result: stored (at most 512KiB, kept 1d" in note
    assert _notes(registry, fmt, "plain") == []


def test_store_false_is_exact_where_nothing_is_kept_and_noted_where_it_is(sheets) -> None:
    registry = sheets({"purge": DROPPED})
    for fmt in ("sqs", "cloud-tasks", "kubernetes"):
        assert _notes(registry, fmt, "purge") == [], fmt
    (note,) = _notes(registry, "temporal", "purge")
    assert note.startswith("Temporal records every activity's return value in the workflow")


def test_the_outputs_with_a_result_are_valid_in_their_formats(sheets) -> None:
    registry = sheets({"quote": STORED, "purge": DROPPED})
    for entry in json.loads(export(registry, "temporal").text)["jobs"].values():
        check_temporal(entry)
    for manifest in yaml.safe_load_all(export(registry, "kubernetes").text):
        check_kubernetes(manifest)
