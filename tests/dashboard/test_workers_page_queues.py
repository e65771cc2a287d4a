"""The workers page and ``jobdef workers --format json`` tell a worker of every queue
from one serving a queue named ``all``."""

from __future__ import annotations

import json
import re

import pytest
from dashboard_steps import SHEETS, Client

from jobdef.backends.workers import WorkerInfo
from jobdef.cli import main
from jobdef.dashboard import create_app


def queues_cell(body: str, worker_id: str) -> str:
    [row] = re.findall(rf'<tr data-worker="{worker_id}".*?</tr>', body, re.DOTALL)
    return str(re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)[4])


@pytest.fixture
def two_workers(backend) -> None:
    backend.register_worker(WorkerInfo("every-1", "h", 1, None, 2, 3600.0, "0", 0.0, 0.0))
    backend.register_worker(WorkerInfo("named-1", "h", 2, ("all",), 1, 3600.0, "0", 0.0, 0.0))


def test_the_page_says_all_queues_not_a_queue_name(store_url, serve, two_workers) -> None:
    served = serve(create_app(store_url, SHEETS))
    status, _, body = Client(served.url).request("/workers")
    assert status == 200
    assert queues_cell(body, "every-1") == "<em>all queues</em>"
    assert queues_cell(body, "named-1") == "all"


def test_the_cli_json_has_all_queues(store_url, two_workers, capsys) -> None:
    assert main(["workers", "--db", store_url, "--format", "json"]) == 0
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)["workers"]}
    assert (rows["every-1"]["all_queues"], rows["every-1"]["queues"]) == (True, None)
    assert (rows["named-1"]["all_queues"], rows["named-1"]["queues"]) == (False, ["all"])
