"""``jobdef export FLOW --format step-functions``: a flow as one valid state machine of
sequences and Parallel states, each step its job's Task, with a note for each thing
Step Functions cannot say."""

from __future__ import annotations

import json

import pytest
from export_cases import asl_valid

from jobdef.errors import UsageError
from jobdef.render.export import FLOW_FORMATS, FORMATS, export
from jobdef.render.export.step_functions_flow import nest

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
# Series-parallel, but not layer by layer: a chain beside a single step.
SKEWED = flow(
    "skewed",
    "  first: {job: a}\n"
    "  left: {job: b, after: [first]}\n"
    "  right: {job: c, after: [left]}\n"
    "  side: {job: d, after: [first]}\n"
    "  join: {job: d, after: [right, side]}\n",
)
# Not series-parallel (an N): d waits for b only, but the machine makes it wait for a.
NSHAPE = flow(
    "nshape",
    "  a: {job: a}\n  b: {job: b}\n  c: {job: c, after: [a, b]}\n  d: {job: d, after: [b]}\n",
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
    registry = sheets(JOBS, DIAMOND + SKEWED + NSHAPE + MIXED)
    names = ("diamond", "skewed", "nshape", "mixed")
    asl_valid(asl_validator, *(machine(registry, n)[0] for n in names))


def test_the_example_flow_is_valid_asl(examples, asl_validator):
    asl_valid(asl_validator, machine(examples, "order_placed")[0])


def test_a_diamond_is_a_task_a_parallel_and_a_task_then_finally(sheets):
    registry = sheets(JOBS, DIAMOND)
    definition, notes = machine(registry, "diamond")
    states = definition["States"]
    assert definition["StartAt"] == "first"
    assert states["first"]["Next"] == "parallel 1"
    parallel = states["parallel 1"]
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
    left, right = (b["States"] for b in definition["States"]["parallel 1"]["Branches"])
    assert left["left.RecordDead"]["Next"] == "left.Dead"
    assert left["left.Dead"]["Type"] == "Fail"
    # right's only edge runs anyway: its failure ends its branch normally.
    assert right["right.RecordDead"]["End"] is True
    assert right["right"]["Catch"][0]["ResultPath"] is None
    assert any("a dead right lets the execution go on" in n for n in notes)
    assert any("stops the other branches" in n for n in notes)


def test_a_chain_beside_a_step_is_a_branch_of_its_own_exactly(sheets):
    registry = sheets(JOBS, SKEWED)
    assert nest(registry.workflow("skewed")) == ["first", [["left", "right"], ["side"]], "join"]
    definition, notes = machine(registry, "skewed")
    chain = definition["States"]["parallel 1"]["Branches"][0]
    assert chain["StartAt"] == "left"
    assert chain["States"]["left"]["Next"] == "right"
    assert not [n for n in notes if ".after" in n.partition(":")[0]]


def test_a_step_made_to_wait_for_more_than_its_parents_is_noted(sheets, asl_validator):
    registry = sheets(JOBS, NSHAPE)
    assert nest(registry.workflow("nshape")) == [[["a"], ["b"]], [["c"], ["d"]]]
    _, notes = machine(registry, "nshape")
    assert (
        "steps.d.after: the graph is not series-parallel, so in Step Functions d also "
        "waits for a, which the sheet does not make it wait for" in notes
    )
    assert not [n for n in notes if n.startswith("steps.c.after")]


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
