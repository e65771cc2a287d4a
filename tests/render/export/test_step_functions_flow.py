"""``jobdef export FLOW --format step-functions``: a flow as one valid state machine, in
layers, each step its job's Task, with a note for each thing the layers cannot say."""

from __future__ import annotations

import json

import pytest
from export_cases import asl_valid

from jobdef.errors import UsageError
from jobdef.render.export import FLOW_FORMATS, FORMATS, export
from jobdef.render.export.step_functions_flow import layers

JOBS = {
    "a": "max_attempts: 3\n",
    "b": "max_attempts: 1\n",
    "c": "max_attempts: 2\n",
    "d": "max_attempts: 1\n",
}


def flow(name: str, steps: str, final: str = "") -> str:
    return (
        "---\napiVersion: jobdef/v1\nkind: Workflow\n"
        f"name: {name}\nargs: {{}}\nsteps:\n{steps}{final}"
    )


DIAMOND = flow(
    "diamond",
    "  first: {job: a}\n"
    "  left: {job: b, after: [first]}\n"
    "  right: {job: c, after: [first]}\n"
    "  last: {job: d, after: {left: cancel, right: run}}\n",
    "finally: {job: d}\n",
)
# right waits for first only, but the layers make it wait for left too.
SKEWED = flow(
    "skewed",
    "  first: {job: a}\n"
    "  left: {job: b, after: [first]}\n"
    "  right: {job: c, after: [left]}\n"
    "  side: {job: d, after: [first]}\n"
    "  join: {job: d, after: [right, side]}\n",
)
MIXED = flow(
    "mixed",
    "  first: {job: a}\n"
    "  keeps: {job: b, after: {first: run}}\n"
    "  drops: {job: c, after: {first: cancel}}\n",
)


def machine(registry, name: str) -> tuple[dict, list[str]]:
    result = export(registry, "step-functions", [name])
    entry = json.loads(result.text)["workflows"][name]
    assert entry["notes"] == [n.line().partition(": ")[2] for n in result.notes]
    return entry["definition"], entry["notes"]


def test_every_flow_is_valid_asl(sheets, asl_validator):
    registry = sheets(JOBS, DIAMOND + SKEWED + MIXED)
    asl_valid(asl_validator, *(machine(registry, n)[0] for n in ("diamond", "skewed", "mixed")))


def test_the_example_flow_is_valid_asl(examples, asl_validator):
    asl_valid(asl_validator, machine(examples, "order_placed")[0])


def test_a_diamond_is_a_task_a_parallel_and_a_task_then_finally(sheets):
    registry = sheets(JOBS, DIAMOND)
    definition, notes = machine(registry, "diamond")
    states = definition["States"]
    assert definition["StartAt"] == "first"
    assert states["first"]["Next"] == "layer 2"
    parallel = states["layer 2"]
    assert parallel["Type"] == "Parallel"
    assert [b["StartAt"] for b in parallel["Branches"]] == ["left", "right"]
    assert parallel["Next"] == "last"
    # A failed layer runs finally, which then ends the execution Failed.
    assert parallel["Catch"] == [
        {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "finally"}
    ]
    assert states["last"]["Next"] == "finally"
    assert states["finally"]["Next"] == "Ended"
    assert states["Ended"]["Choices"][0] == {
        "Variable": "$.error",
        "IsPresent": True,
        "Next": "Failed",
    }
    assert states["Ended"]["Default"] == "Done"
    # The layers are exact for a diamond: no step waits for more than its parents.
    assert not [n for n in notes if ".after" in n.partition(":")[0]]


def test_each_step_is_its_jobs_task_with_the_sheets_retriers(sheets):
    registry = sheets(JOBS, DIAMOND)
    definition, _ = machine(registry, "diamond")
    job = json.loads(export(registry, "step-functions", ["a"]).text)["jobs"]["a"]["definition"]
    task = definition["States"]["first"]
    assert task["Retry"] == job["States"]["a"]["Retry"]
    assert task["Parameters"]["FunctionName"] == "a"
    assert task["TimeoutSeconds"] == job["States"]["a"]["TimeoutSeconds"]
    assert task["Catch"][0]["Next"] == "first.RecordDead"
    assert definition["States"]["first.RecordDead"]["Next"] == "finally"


def test_a_cancel_edge_fails_the_branch_and_a_run_edge_goes_on(sheets):
    registry = sheets(JOBS, DIAMOND)
    definition, notes = machine(registry, "diamond")
    left, right = (b["States"] for b in definition["States"]["layer 2"]["Branches"])
    assert left["left.RecordDead"]["Next"] == "left.Dead"
    assert left["left.Dead"]["Type"] == "Fail"
    # right's only edge runs anyway: its failure ends its branch normally.
    assert right["right.RecordDead"]["End"] is True
    assert right["right"]["Catch"][0]["ResultPath"] is None
    assert any("a dead right lets the execution go on" in n for n in notes)
    assert any("stops the other branches" in n for n in notes)


def test_a_step_made_to_wait_for_more_than_its_parents_is_noted(sheets):
    registry = sheets(JOBS, SKEWED)
    assert layers(registry.workflow("skewed")) == [
        ["first"],
        ["left", "side"],
        ["right"],
        ["join"],
    ]
    _, notes = machine(registry, "skewed")
    assert (
        "steps.right.after: Step Functions runs the flow in layers, so right also waits "
        "for side, which the sheet does not make it wait for" in notes
    )
    assert not [n for n in notes if n.startswith("steps.join.after")]


def test_a_run_edge_beside_a_cancel_edge_of_one_parent_is_noted(sheets):
    registry = sheets(JOBS, MIXED)
    definition, notes = machine(registry, "mixed")
    assert definition["States"]["first.RecordDead"]["Next"] == "Failed"
    assert any(
        n.startswith("steps.keeps.after.first: run cannot be kept: first also has cancel")
        for n in notes
    )


def test_the_flows_args_read_from_a_result_are_noted(examples):
    _, notes = machine(examples, "order_placed")
    assert any(n.startswith("steps.mail_receipt.args:") for n in notes)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f not in FLOW_FORMATS])
def test_other_formats_refuse_a_flow_in_one_line(examples, fmt):
    with pytest.raises(UsageError) as caught:
        export(examples, fmt, ["order_placed"])
    message = str(caught.value)
    assert "\n" not in message
    assert "'order_placed' is a workflow" in message
    assert "--format step-functions" in message
