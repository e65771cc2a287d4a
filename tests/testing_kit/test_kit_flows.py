"""The kit drains flows on its virtual clock: start() stores the flow, drain() runs its
steps, each step's end releasing its children as the worker's does, and assert_flow()
checks how the flow and each step ended (the example ``order_placed`` workflow)."""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "jobdefs"

pytestmark = [
    pytest.mark.jobdef(sheets=str(EXAMPLES), start=1_800_000_000),
    pytest.mark.usefixtures("examples_dir"),
]

ORDER = {"order_id": 42, "member_id": 7, "amount": 1200}


def test_an_order_runs_every_step_and_the_ledger_reads_the_charge(jobdef_queue):
    receipt = jobdef_queue.start("order_placed", ORDER)
    jobdef_queue.drain()
    flow = jobdef_queue.assert_flow(
        receipt,
        "done",
        {"charge": "done", "mail_receipt": "done", "award_points": "done", "post_ledger": "done"},
    )
    ledger = jobdef_queue.get_step(flow, "post_ledger")
    assert ledger.args == {"order_id": 42, "charge_id": "ch-00000042"}


def test_a_declined_card_cancels_every_later_step_with_its_reason(jobdef_queue):
    receipt = jobdef_queue.start("order_placed", {**ORDER, "order_id": 13})
    jobdef_queue.drain()
    flow = jobdef_queue.assert_flow(
        receipt,
        "failed",
        {"charge": "dead", "mail_receipt": "cancelled", "post_ledger": "cancelled"},
    )
    assert jobdef_queue.get_step(flow, "mail_receipt").note == "parent step charge ended dead"


def test_a_closed_member_still_gets_the_ledger_posted_through_the_run_edge(jobdef_queue):
    receipt = jobdef_queue.start("order_placed", {**ORDER, "member_id": 9})
    jobdef_queue.drain()
    jobdef_queue.assert_flow(receipt, "failed", {"award_points": "dead", "post_ledger": "done"})


def test_a_wrong_expectation_lists_every_step_and_why(jobdef_queue):
    receipt = jobdef_queue.start("order_placed", {**ORDER, "order_id": 13})
    jobdef_queue.drain()
    with pytest.raises(AssertionError) as failed:
        jobdef_queue.assert_flow(receipt, "done", {"post_ledger": "done"})
    message = str(failed.value)
    assert message.startswith("flow 1 (order_placed) is failed, expected done")
    assert "! post_ledger: cancelled, expected done (parent step mail_receipt ended cancelled)" in (
        message
    )
    assert "  charge: dead (jobdef.examples.errors.CardDeclined:" in message
