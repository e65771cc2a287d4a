"""The actions and the bounded reads behind the pages, on both engines, without a browser."""

from __future__ import annotations

import re

from dashboard_steps import SHEETS, Client, make_dead

from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions, ErrorInfo, NewJob, Notification
from jobdef.dashboard import actions, create_app, views
from jobdef.dashboard.store import Store
from jobdef.runtime.queue import connect
from jobdef.sheets.pipeline import load_registry

CONNECTION = ErrorInfo("ConnectionError", "carrier timed out", "")


def test_everything_matching_a_filter_goes_in_batches_of_500(tmp_path, serve):
    # synchronous=off: 1,201 burials, each its own commit, without 1,201 flushes.
    url = f"sqlite:///{tmp_path / 'jobs.db'}?synchronous=off"
    backend = open_backend(url)
    try:
        ids = [
            r.id
            for r in backend.enqueue(
                [NewJob("ship_order", {"order_id": i}, "default") for i in range(1, 1202)]
            )
        ]
        backend.enqueue([NewJob("build_report", {"report_id": 1}, "reports")])
        claimed = backend.claim(ClaimOptions(worker_id="t", lease_seconds=60, limit=1201))
        assert len(claimed) == 1201
        for record in claimed:
            assert backend.bury(record.lease, CONNECTION)
    finally:
        backend.close()
    store = Store(url)
    try:
        seen: list[tuple[int, int]] = []
        flt = views.JobFilter(job="ship_order")
        outcome = actions.on_filter(
            store, "requeue", flt, "ops", progress=lambda done, asked: seen.append((done, asked))
        )
        assert (outcome.changed, outcome.asked, outcome.batches) == (1201, 1201, 3)
        assert seen == [(500, 500), (1000, 1000), (1201, 1201)]
        assert {store.verbs.get(i).state for i in ids} == {"queued"}
        # Again: nothing is dead any more, nothing moves.
        again = actions.on_filter(store, "requeue", flt, "ops")
        assert (again.changed, again.asked) == (0, 0)
        # The build_report job was never dead and was not touched.
        assert [r.state for r in store.verbs.list_jobs(job="build_report")] == ["queued"]
    finally:
        store.close()
    # Through the page: it is written batch by batch as the cancels commit.
    client = Client(serve(create_app(url, SHEETS)).url)
    form = [("action", "cancel"), ("scope", "filter"), ("job", "ship_order"), ("confirm", "yes")]
    status, _, body = client.request("/actions/jobs", [*form, ("csrf", client.csrf())])
    assert status == 200
    assert re.findall(r"<li>(batch \d: [^<]*)</li>", body) == [
        "batch 1: 500 of 500 changed so far",
        "batch 2: 1000 of 1000 changed so far",
        "batch 3: 1201 of 1201 changed so far",
    ]
    assert '<p class="done" role="status" id="outcome">cancel: 1201 of 1201 changed' in body


def test_the_job_list_pages_by_keyset_and_searches_args_and_errors(store_url):
    registry = load_registry([SHEETS])
    backend = open_backend(store_url)
    queue = connect(store_url, registry)
    try:
        make_dead(backend, queue, "ship_order", [{"order_id": 500}], CONNECTION)
        queue.enqueue_many("ship_order", [{"order_id": i} for i in range(1, 121)])
    finally:
        queue.close()
        backend.close()
    store = Store(store_url)
    try:
        now = store.clock()
        first = views.jobs(store, views.parse_filter({}, now))
        assert len(first["jobs"]) == views.PAGE_SIZE
        second = views.jobs(store, views.parse_filter(first["older"], now))
        third = views.jobs(store, views.parse_filter(second["older"], now))
        listed = [j["id"] for page in (first, second, third) for j in page["jobs"]]
        assert len(listed) == 121
        assert listed == sorted(listed, reverse=True)
        assert third["older"] is None

        found = views.jobs(store, views.parse_filter({"q": "args.order_id:77"}, now))
        assert [j["args"] for j in found["jobs"]] == ['{"order_id": 77}']
        errors = views.jobs(store, views.parse_filter({"q": "carrier TIMED"}, now))
        assert [j["args"] for j in errors["jobs"]] == ['{"order_id": 500}']
        by_id = views.jobs(store, views.parse_filter({"q": f"#{listed[0]}"}, now))
        assert [j["id"] for j in by_id["jobs"]] == [listed[0]]

        overview = views.overview(store, registry)
        [default] = [q for q in overview["queues"] if q["queue"] == "default"]
        assert (default["queued"], default["running"]) == (120, 0)
        assert overview["dead"] == [
            {"job": "ship_order", "count": 1, "at_least": False, "text": "1"}
        ]
        assert overview["queues"][0]["failed_last_hour"] + default["failed_last_hour"] >= 1
    finally:
        store.close()


def test_retry_delivery_now_makes_a_failing_message_due_once(store_url):
    backend = open_backend(store_url)
    try:
        [job] = backend.enqueue([NewJob("ship_order", {"order_id": 1}, "default")])
        [record] = backend.claim(ClaimOptions(worker_id="t", lease_seconds=60))
        note = Notification("ops", "dead", "ship_order", {"id": job.id}, f"m-{job.id}")
        assert backend.bury(record.lease, CONNECTION, notifications=[note])
        [message] = backend.outbox_claim(10, 30)
        backend.outbox_failed(message.id, "webhook said 503", backend.clock() + 3600)
        assert backend.outbox_claim(10, 30) == []
    finally:
        backend.close()
    store = Store(store_url)
    try:
        page = views.outbox(store)
        assert [c["failing"] for c in page["channels"]] == [1]
        assert page["messages"][0]["last_error"] == "webhook said 503"
        assert actions.retry_outbox(store, [message.id], "ops").changed == 1
        [due] = store.verbs.outbox_claim(10, 30)
        assert due.id == message.id
        store.verbs.outbox_delivered([message.id])
        assert actions.retry_outbox(store, [message.id], "ops").changed == 0
        assert views.outbox(store)["channels"] == []
    finally:
        store.close()


def test_cancel_takes_a_running_job_and_ends_its_attempt(store_url):
    backend = open_backend(store_url)
    try:
        [running, queued] = [
            r.id
            for r in backend.enqueue(
                [NewJob("ship_order", {"order_id": i}, "default") for i in (1, 2)]
            )
        ]
        [claimed] = backend.claim(ClaimOptions(worker_id="t", lease_seconds=60, limit=1))
        assert claimed.id == running
    finally:
        backend.close()
    store = Store(store_url)
    try:
        assert views.applicable(["running"]) == ["cancel"]
        outcome = actions.on_jobs(store, "cancel", [running, queued], "ops", "wrong address")
        assert (outcome.changed, outcome.asked) == (2, 2)
        record = store.verbs.get(running)
        assert (record.state, record.note) == (
            "cancelled",
            "wrong address (cancelled by ops in the dashboard)",
        )
        [attempt] = store.verbs.attempts(running)
        assert attempt.outcome == "cancelled"
        assert "wrong address (cancelled by ops in the dashboard)" in attempt.error.message
        assert store.verbs.attempts(queued) == []
        again = actions.on_jobs(store, "cancel", [running], "ops")
        assert (again.changed, again.asked) == (0, 1)
    finally:
        store.close()
