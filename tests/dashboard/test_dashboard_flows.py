"""The flows pages and the flow's cancel, on both engines, without a browser: the list
and its filters, a flow's steps by depth with their states and their ends beside the
sheet's worst-case timeline, the link from a step's job page, and the cancel's
confirm and CSRF."""

from __future__ import annotations

import json

import pytest
from dashboard_steps import HERE, Client

from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions
from jobdef.dashboard import create_app
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry

FLOW_SHEETS = HERE / "flow_sheets"
START = 1_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def started(store_url: str, clock: Clock):
    """Two flows of order_out: the first with pick done late and pack queued, the
    second with pick still running, late."""
    queue = Queue(open_backend(store_url, clock=clock), load_registry([FLOW_SHEETS]))
    try:
        first = queue.start("order_out", {"order_id": 1})
        second = queue.start("order_out", {"order_id": 2})
        backend = queue.backend
        clock.now = START + 100_000  # far past pick's latest end
        pick = queue.flow(first).step_ids["pick"]
        claimed = backend.claim(ClaimOptions(worker_id="t", lease_seconds=60, limit=10))
        lease = next(r.lease for r in claimed if r.id == pick)
        assert backend.complete([lease]) == [True]
        yield queue, first.id, second.id
    finally:
        queue.close()


def api(client: Client, path: str) -> dict:
    status, _, body = client.request("/api" + path)
    assert status == 200, body
    return json.loads(body)


def test_the_flows_list_shows_state_and_steps_done_filtered_by_state(
    started, store_url, serve, clock
):
    _queue, first, second = started
    client = Client(serve(create_app(store_url, FLOW_SHEETS, clock=clock)).url)
    listed = api(client, "/flows")["flows"]
    assert [(f["id"], f["workflow"], f["state"]) for f in listed] == [
        (second, "order_out", "running"),
        (first, "order_out", "running"),
    ]
    assert listed[1]["title"] == "An order leaves the warehouse"
    assert (listed[1]["steps_done"], listed[1]["steps_total"]) == (1, 3)
    assert api(client, "/flows?state=done")["flows"] == []
    status, _, body = client.request("/flows?state=sleeping")
    assert status == 400
    assert "a flow is running, done, failed, cancelled" in body
    status, _, body = client.request("/flows")
    assert f'href="/flows/{first}"' in body
    assert 'href="/flows"' in body


def test_a_flows_page_shows_its_steps_by_depth_and_flags_a_late_end(
    started, store_url, serve, clock
):
    _queue, first, second = started
    client = Client(serve(create_app(store_url, FLOW_SHEETS, clock=clock)).url)
    data = api(client, f"/flows/{first}")
    levels = [[(s["name"], s["state"]) for s in level["steps"]] for level in data["levels"]]
    assert levels == [[("pick", "done")], [("pack", "queued")], [("ship", "waiting")]]
    steps = {s["name"]: s for s in data["steps"]}
    assert steps["pick"]["actual_end"] == pytest.approx(100_000)
    assert steps["pick"]["latest_end"] < 100_000
    assert steps["pick"]["late"].startswith("ended ")
    assert steps["pack"]["late"] is None
    assert steps["pack"]["actual_end"] is None
    assert data["critical_path"] == ["pick", "pack", "ship"]
    assert data["can_cancel"] is True
    # Each step links to its job, whose page links back.
    _status, _, body = client.request(f"/flows/{first}")
    pick = steps["pick"]["job_id"]
    assert f'href="/jobs/{pick}"' in body
    assert 'id="cancel-flow"' in body
    _status, _, body = client.request(f"/jobs/{pick}")
    assert f'href="/flows/{first}" id="job-flow"' in body
    assert "step pick" in body
    assert client.request("/flows/999999")[0] == 404
    running = api(client, f"/flows/{second}")
    pick = next(s for s in running["steps"] if s["name"] == "pick")
    assert pick["state"] == "running"
    assert pick["late"].startswith("still running ")
    assert running["late"] == [f"pick: {pick['late']}"]


def test_cancel_flow_asks_first_then_cancels_its_waiting_and_queued_steps(
    started, store_url, serve, clock
):
    queue, first, second = started
    client = Client(serve(create_app(store_url, FLOW_SHEETS, clock=clock)).url)
    form = [("action", "cancel"), ("ids", str(first)), ("note", "customer called")]
    status, _, body = client.request("/actions/flows", form)
    assert status == 403  # no CSRF token
    csrf = ("csrf", client.csrf(f"/flows/{first}"))
    status, _, body = client.request("/actions/flows", [*form, csrf])
    assert status == 200
    assert f"Cancel flow {first}?" in body
    assert queue.flow(first).state == "running"
    status, _, body = client.request("/actions/flows", [*form, csrf, ("confirm", "yes")])
    assert status == 200
    assert "cancel flow: 1 of 1 changed" in body
    flow = queue.flow(first)
    assert flow.state == "cancelled"
    assert flow.steps == {"pick": "done", "pack": "cancelled", "ship": "cancelled"}
    assert queue.flow(second).state == "running"
    data = api(client, f"/flows/{first}")
    assert data["can_cancel"] is False
    note = next(s["note"] for s in data["steps"] if s["name"] == "pack")
    assert "customer called" in note
    # Again: the flow has ended, nothing changes.
    status, _, body = client.request("/actions/flows", [*form, csrf, ("confirm", "yes")])
    assert "cancel flow: 0 of 1 changed" in body
    assert api(client, "/flows?state=cancelled")["flows"][0]["id"] == first


def test_a_read_only_dashboard_offers_no_cancel(started, store_url, serve, clock):
    _queue, first, _ = started
    client = Client(serve(create_app(store_url, FLOW_SHEETS, read_only=True)).url)
    status, _, body = client.request(f"/flows/{first}")
    assert status == 200
    assert 'id="cancel-flow"' not in body


def test_a_filtered_flows_list_searches_a_window_of_ids_per_page(
    store_url, serve, clock, monkeypatch
):
    from jobdef.dashboard import flows

    monkeypatch.setattr(flows, "WINDOW", 2)
    queue = Queue(open_backend(store_url, clock=clock), load_registry([FLOW_SHEETS]))
    try:
        ids = [queue.start("order_out", {"order_id": n}).id for n in range(1, 6)]
        assert queue.cancel_flow(ids[0], "test")
    finally:
        queue.close()
    client = Client(serve(create_app(store_url, FLOW_SHEETS, clock=clock)).url)
    pages, path = [], "/flows?state=cancelled"
    while path:
        data = api(client, path)
        pages.append(([f["id"] for f in data["flows"]], data["searched"]))
        path = f"/flows?state=cancelled&before={data['older']}" if data["older"] else ""
    assert pages == [
        ([], [ids[3], ids[4]]),
        ([], [ids[1], ids[2]]),
        ([ids[0]], [ids[0], ids[0]]),
    ]
    # Unfiltered, a page is the newest flows whatever their ids.
    assert [f["id"] for f in api(client, "/flows")["flows"]] == ids[::-1]
    assert client.request("/flows?before=x")[0] == 400
