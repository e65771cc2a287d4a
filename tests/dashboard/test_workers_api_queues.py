"""``/api/workers`` says outright that a worker takes every queue: ``"all_queues": true``
(``"queues": null``), beside a worker of named queues (``"all_queues": false``), one
of them a queue that happens to be called ``all``."""

from __future__ import annotations

import json

from dashboard_steps import SHEETS, Client

from jobdef.backends.workers import WorkerInfo
from jobdef.dashboard import create_app


def test_a_worker_of_every_queue_says_so_and_one_of_named_queues_lists_them(
    store_url, serve, backend
) -> None:
    backend.register_worker(WorkerInfo("every-1", "h", 1, None, 2, 3600.0, "0", 0.0, 0.0))
    backend.register_worker(
        WorkerInfo("named-1", "h", 2, ("all", "mail"), 1, 3600.0, "0", 0.0, 0.0)
    )
    served = serve(create_app(store_url, SHEETS))
    status, _, text = Client(served.url).request("/api/workers")
    assert status == 200
    rows = {row["id"]: row for row in json.loads(text)["workers"]}
    assert (rows["every-1"]["all_queues"], rows["every-1"]["queues"]) == (True, None)
    assert (rows["named-1"]["all_queues"], rows["named-1"]["queues"]) == (False, ["all", "mail"])
