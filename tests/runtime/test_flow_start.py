"""Starting a flow from Python and from the command line, and reading it back.

``Queue.start`` checks the flow's args against its sheet and each first step's args
against its job before anything is stored; ``jobdef start`` prints the receipt,
``jobdef status`` counts flows, ``jobdef result`` and ``jobdef wait`` take a flow's
receipt token. The flows here are never run by a worker: the store's tests
(tests/backends/test_flows.py) and the fidelity suite run them.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.cli import main
from jobdef.errors import ArgsError, UnknownWorkflowError
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry

SHEETS = """\
apiVersion: jobdef/v1
kind: Job
name: charge
handler: app:charge
max_attempts: 1
backoff: {strategy: fixed, initial: 0s, jitter: none}
timeout: 30s
errors: {default: retry}
args:
  order_id: {type: integer, minimum: 1}
result:
  schema:
    type: object
    properties:
      charge_id: {type: string}
---
apiVersion: jobdef/v1
kind: Job
name: mail
handler: app:mail
max_attempts: 1
backoff: {strategy: fixed, initial: 0s, jitter: none}
timeout: 30s
errors: {default: retry}
args:
  order_id: {type: integer}
  charge_id: {type: string}
---
apiVersion: jobdef/v1
kind: Workflow
name: order_placed
args:
  order_id: {type: integer}
idempotency: {key: "order-{order_id}"}
steps:
  charge:
    job: charge
    args: {order_id: {from: args.order_id}}
  mail:
    job: mail
    after: [charge]
    args:
      order_id: {from: args.order_id}
      charge_id: {from: steps.charge.result.charge_id}
"""


@pytest.fixture
def sheets(tmp_path: Path) -> Path:
    folder = tmp_path / "sheets"
    folder.mkdir()
    (folder / "flows.yaml").write_text(SHEETS, "utf-8")
    return folder


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    open_backend(url).close()
    return url


@pytest.fixture
def queue(url: str, sheets: Path):
    opened = Queue(open_backend(url), load_registry([sheets]))
    yield opened
    opened.close()


def test_start_stores_the_flow_with_its_first_step_queued(queue):
    receipt = queue.start("order_placed", {"order_id": 7})
    flow = queue.flow(receipt)
    assert flow.steps == {"charge": "queued", "mail": "waiting"}
    assert queue.get(flow.step_ids["charge"]).args == {"order_id": 7}
    assert queue.flow(receipt.token).id == queue.flow(receipt.id).id == receipt.id
    again = queue.start("order_placed", {"order_id": 7})
    assert (again.id, again.created) == (receipt.id, False)


def test_args_that_break_the_flow_or_a_first_step_store_nothing(queue):
    with pytest.raises(ArgsError, match=r"workflow 'order_placed': .*order_id"):
        queue.start("order_placed", {"order_id": "seven"})
    with pytest.raises(ArgsError, match=r"step charge: job 'charge': .*minimum"):
        queue.start("order_placed", {"order_id": 0})
    with pytest.raises(UnknownWorkflowError, match="no sheet defines a workflow"):
        queue.start("order_taken", {})
    assert queue.backend.list_flows() == []
    assert queue.backend.list_jobs() == []


def test_a_start_on_the_callers_connection_is_there_only_if_it_commits(queue, tmp_path):
    conn = sqlite3.connect(tmp_path / "jobs.db", isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    queue.start("order_placed", {"order_id": 1}, connection=conn)
    conn.execute("ROLLBACK")
    assert queue.backend.list_flows() == []
    conn.execute("BEGIN IMMEDIATE")
    receipt = queue.start("order_placed", {"order_id": 1}, connection=conn)
    conn.execute("COMMIT")
    conn.close()
    assert queue.flow(receipt).steps == {"charge": "queued", "mail": "waiting"}


def test_cancel_flow_cancels_its_waiting_and_queued_steps(queue):
    receipt = queue.start("order_placed", {"order_id": 3})
    assert queue.cancel_flow(receipt, "the order was withdrawn")
    flow = queue.flow(receipt)
    assert (flow.state, flow.note) == ("cancelled", "the order was withdrawn")
    assert flow.steps == {"charge": "cancelled", "mail": "cancelled"}


def test_the_command_line_starts_counts_and_reads_a_flow(url, sheets, capsys):
    common = ["--db", url, "--sheets", str(sheets)]
    assert main(["start", "order_placed", "--args", '{"order_id": 5}', *common]) == 0
    out = capsys.readouterr().out
    assert out.startswith("started flow 1 (order_placed), receipt ")
    token = out.split("receipt ")[1].strip()
    assert main(["start", "order_placed", "--args", '{"order_id": 5}', *common]) == 0
    assert "already there" in capsys.readouterr().out
    assert main(["start", "order_placed", "--args", "[1]", *common]) == 2
    assert "--args must be a JSON object" in capsys.readouterr().err

    assert main(["status", "--db", url]) == 0
    status = capsys.readouterr().out
    assert "FLOW" in status
    assert "order_placed  running  1" in status
    assert main(["status", "--db", url, "--format", "json"]) == 0
    flows = json.loads(capsys.readouterr().out)["flows"]
    assert flows == [{"flow": "order_placed", "state": "running", "count": 1}]

    assert main(["result", token, *common]) == 0
    assert capsys.readouterr().out == (
        "flow 1 (order_placed): running; steps: 1 queued, 1 waiting\n"
    )
    assert main(["wait", token, "--timeout", "0s", "--format", "json", *common]) == 2
    shown = json.loads(capsys.readouterr().out)
    assert (shown["state"], shown["timed_out"]) == ("running", True)
