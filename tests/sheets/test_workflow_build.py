"""A Workflow document built into its policy: steps, edges, arg sources, finally, origins."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobdef.errors import UnknownWorkflowError
from jobdef.policy.workflow import ArgSource
from jobdef.sheets.pipeline import load_registry

FIXTURE = Path(__file__).resolve().parent / "valid" / "workflow"


def test_the_fixture_flow_is_built_as_written() -> None:
    registry = load_registry([FIXTURE])
    flow = registry.workflow("order_placed")
    assert len(registry) == 3  # the jobs only: a workflow runs jobs, it is not one
    assert flow.order() == ("charge", "receipt", "ledger", "finally")
    assert dict(flow.steps["receipt"].after) == {"charge": "cancel"}  # a list: the default
    assert dict(flow.steps["ledger"].after) == {"receipt": "cancel"}
    ledger = flow.steps["ledger"].args
    assert ledger["charge_id"] == ArgSource(path=("steps", "charge", "result", "charge_id"))
    assert ledger["note"] == ArgSource(literal="posted by the flow")  # {value: ...}
    last = flow.steps["finally"]
    assert last.is_finally
    assert not last.after
    assert last.args["charge_id"] == ArgSource(literal="none")
    assert flow.args["required"] == ("order_id",)
    assert flow.idempotency is not None
    assert flow.idempotency.key == "order-{order_id}"
    assert flow.deadline == 3600.0
    origin = flow.origin("steps.ledger.job")
    assert origin is not None
    assert (Path(origin.file).name, origin.line) == ("flow.yaml", 20)


def test_an_unknown_workflow_names_the_known_ones() -> None:
    registry = load_registry([FIXTURE])
    with pytest.raises(UnknownWorkflowError, match=r"workflows: order_placed"):
        registry.workflow("order_place")
