"""What the dashboard offers for a dead job, over HTTP on both engines: the actions
that apply to a job's state (and to a list's), a confirmation that names what it does,
a warning before requeueing a fatal error, this job's rerun procedure, the dead letter's
own actions, and overview counts that say whether they count attempts or jobs."""

from __future__ import annotations

import html
import json
import re

from dashboard_steps import Client, make_dead

from jobdef.backends import open_backend, upgrade
from jobdef.backends.records import OUTCOMES, ClaimOptions, ErrorInfo, JobRecord, NewJob
from jobdef.dashboard import actions
from jobdef.dashboard.store import Store
from support import eventually

CONNECTION = ErrorInfo("ConnectionError", "carrier timed out", "")
# As a worker stores it: the sheet lists ValueError in errors.fatal.
FATAL = ErrorInfo("ValueError", "bad address; dead: ValueError is listed in errors.fatal", "")


def buttons(body: str, form_id: str) -> list[str]:
    """The action values of the buttons of the form ``form_id``, in page order."""
    found = re.search(rf'<form[^>]*id="{form_id}".*?</form>', body, re.S)
    if found is None:
        return []
    return re.findall(r'<button[^>]*name="action" value="([a-z]+)"', found.group(0))


def text(body: str) -> str:
    """The page's words, tags dropped and entities read."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


def ask(client: Client, path: str, form: list[tuple[str, str]]) -> tuple[int, str]:
    status, _, body = client.request(path, [*form, ("csrf", client.csrf())])
    return status, body


def test_a_job_page_offers_only_the_actions_of_its_state_the_right_one_first(
    dashboard, queue, backend
):
    [dead] = make_dead(backend, queue, "ship_order", [{"order_id": 1}], CONNECTION)
    waiting = queue.enqueue("ship_order", {"order_id": 2}).id
    client = Client(dashboard.url)
    _, _, body = client.request(f"/jobs/{dead}")
    assert buttons(body, "job-actions") == ["requeue", "resolve"]
    _, _, body = client.request(f"/jobs/{waiting}")
    assert buttons(body, "job-actions") == ["cancel"]
    assert backend.resolve(dead, "refunded")
    _, _, body = client.request(f"/jobs/{dead}")
    assert buttons(body, "job-actions") == []
    assert "No action applies to a resolved job." in text(body)


def test_a_list_offers_only_the_actions_of_the_states_it_holds(dashboard, queue, backend):
    make_dead(backend, queue, "ship_order", [{"order_id": 1}, {"order_id": 2}], CONNECTION)
    client = Client(dashboard.url)
    _, _, body = client.request("/jobs?state=dead")
    assert buttons(body, "bulk") == ["requeue", "resolve"]
    assert buttons(body, "selection") == ["requeue", "resolve"]
    assert "Cancel" not in text(body)
    queue.enqueue("ship_order", {"order_id": 3})
    _, _, body = client.request("/jobs?state=queued")
    assert buttons(body, "bulk") == ["cancel"]
    _, _, body = client.request("/jobs")  # both states listed
    assert buttons(body, "selection") == ["requeue", "resolve", "cancel"]


def test_the_confirmation_names_the_action_and_the_job_and_its_buttons_cannot_be_confused(
    dashboard, queue, backend
):
    [dead] = make_dead(backend, queue, "ship_order", [{"order_id": 1}], CONNECTION)
    client = Client(dashboard.url)
    status, body = ask(client, "/actions/jobs", [("action", "requeue"), ("ids", str(dead))])
    assert status == 200
    words = text(body)
    assert f"Requeue job {dead}?" in words
    assert re.search(r'<button[^>]*id="confirm"[^>]*>Requeue</button>', body)
    assert re.search(r'<a [^>]*id="back-out"[^>]*>Back</a>', body)
    assert "Confirm" not in words
    assert "Cancel" not in words
    status, body = ask(
        client, "/actions/jobs", [("action", "resolve"), ("ids", str(dead)), ("ids", "77")]
    )
    assert f"Resolve 2 jobs: {dead}, 77?" in text(body)
    assert backend.get(dead).state == "dead"


def test_requeueing_a_fatal_error_warns_and_needs_an_explicit_yes(dashboard, queue, backend):
    [fatal] = make_dead(backend, queue, "ship_order", [{"order_id": 1}], FATAL)
    [dead] = make_dead(backend, queue, "ship_order", [{"order_id": 2}], CONNECTION)
    client = Client(dashboard.url)
    _, _, page = client.request(f"/jobs/{fatal}")
    assert "ValueError is listed in errors.fatal" in text(page)
    status, body = ask(client, "/actions/jobs", [("action", "requeue"), ("ids", str(fatal))])
    words = text(body)
    assert "ValueError is listed in errors.fatal" in words
    assert "fail the same way unless its cause was fixed" in words
    assert re.search(r'<input type="checkbox" name="fatal_ok" value="yes"[^>]*required', body)
    # Confirmed without the tick: refused, the job stays dead.
    form = [("action", "requeue"), ("ids", str(fatal)), ("confirm", "yes")]
    status, body = ask(client, "/actions/jobs", form)
    assert status == 400
    assert "tick" in text(body)
    assert "cause" in text(body)
    assert backend.get(fatal).state == "dead"
    status, body = ask(client, "/actions/jobs", [*form, ("fatal_ok", "yes")])
    assert status == 200
    assert "requeue: 1 of 1 changed" in text(body)
    assert backend.get(fatal).state == "queued"
    # A retryable error asks for no tick.
    status, body = ask(client, "/actions/jobs", [("action", "requeue"), ("ids", str(dead))])
    assert status == 200
    assert "fatal_ok" not in body
    assert (
        ask(
            client, "/actions/jobs", [("action", "requeue"), ("ids", str(dead)), ("confirm", "yes")]
        )[0]
        == 200
    )
    assert backend.get(dead).state == "queued"


def test_the_job_page_shows_this_jobs_rerun_procedure(dashboard, queue, backend):
    [dead] = make_dead(backend, queue, "ship_order", [{"order_id": 1}], CONNECTION)
    _, _, body = Client(dashboard.url).request(f"/jobs/{dead}")
    found = re.search(r'<pre id="rerun-this">(.*?)</pre>', body, re.S)
    assert found is not None
    assert html.unescape(found.group(1)) == f"jobdef requeue {dead}"
    assert "jobdef requeue --job ship_order --state dead" in html.unescape(body)


def test_the_dead_letter_requeues_and_resolves_a_group_and_a_selection(dashboard, queue, backend):
    lost = make_dead(backend, queue, "ship_order", [{"order_id": i} for i in (1, 2)], CONNECTION)
    [bad] = make_dead(backend, queue, "ship_order", [{"order_id": 3}], FATAL)
    [report] = make_dead(backend, queue, "build_report", [{"report_id": 1}], CONNECTION)
    client = Client(dashboard.url)
    _, _, page = client.request("/dead")
    assert page.count('name="action" value="requeue"') >= 3
    group = '["ship_order", "ConnectionError"]'
    status, body = ask(client, "/actions/dead", [("action", "requeue"), ("groups", group)])
    assert "Requeue the 2 dead ship_order jobs that raised ConnectionError?" in text(body)
    form = [("action", "requeue"), ("groups", group), ("confirm", "yes")]
    status, body = ask(client, "/actions/dead", form)
    assert status == 200
    assert "requeue: 2 of 2 changed" in text(body)
    assert {backend.get(i).state for i in lost} == {"queued"}
    assert backend.get(bad).state == backend.get(report).state == "dead"
    # A selection of groups, one of them fatal: the warning and its tick apply.
    fatal = '["ship_order", "ValueError"]'
    other = '["build_report", "ConnectionError"]'
    picked = [("action", "requeue"), ("groups", fatal), ("groups", other)]
    status, body = ask(client, "/actions/dead", picked)
    assert "ValueError is listed in errors.fatal" in text(body)
    assert ask(client, "/actions/dead", [*picked, ("confirm", "yes")])[0] == 400
    status, body = ask(client, "/actions/dead", [*picked, ("confirm", "yes"), ("fatal_ok", "yes")])
    assert "requeue: 2 of 2 changed" in text(body)
    assert backend.get(bad).state == backend.get(report).state == "queued"
    # An unknown job or a group that is not a pair is one line.
    status, body = ask(client, "/actions/dead", [("action", "resolve"), ("groups", "x")])
    assert status == 400
    assert 'a dead letter group is ["JOB", "ERROR TYPE"]' in text(body)


def test_the_overview_counts_failed_attempts_and_dead_jobs_apart(dashboard, queue, backend):
    make_dead(backend, queue, "ship_order", [{"order_id": 1}], CONNECTION)
    retried = queue.enqueue("ship_order", {"order_id": 2}).id
    [record] = backend.claim(ClaimOptions(worker_id="t", lease_seconds=60))
    assert record.id == retried
    assert backend.retry(record.lease, CONNECTION, backend.clock() + 3600, 3600.0)
    client = Client(dashboard.url)
    _, _, body = client.request("/")
    row = re.search(r'<tr data-queue="default">.*?</tr>', body, re.S)
    assert row is not None
    words = text(row.group(0))
    assert "0 done, 2 failed attempts" in words
    assert re.search(r"\b1 dead job\b", words)
    assert "1 dead job of ship_order" in text(body)
    assert "failed attempts" in text(re.search(r"<thead>.*?</thead>", body, re.S).group(0))


def _claim(backend, job_id: int) -> JobRecord:
    """The running record of ``job_id``, the only queued job, once it is claimable."""
    claimed: list[JobRecord] = []

    def got() -> bool:
        claimed.extend(backend.claim(ClaimOptions(worker_id="t", lease_seconds=60)))
        return bool(claimed)

    eventually(got, 10, f"job {job_id} to be claimable")
    [record] = claimed
    assert record.id == job_id
    return record


def test_the_overview_counts_cancelled_and_released_attempts_as_neither_done_nor_failed(
    dashboard, queue, backend
):
    make_dead(backend, queue, "ship_order", [{"order_id": 1}], CONNECTION)
    done = _claim(backend, queue.enqueue("ship_order", {"order_id": 2}).id)
    assert backend.complete([done.lease]) == [True]
    cancelled = _claim(backend, queue.enqueue("ship_order", {"order_id": 3}).id)
    assert backend.cancel(cancelled.id, "duplicate order") == "running"
    released = _claim(backend, queue.enqueue("ship_order", {"order_id": 4}).id)
    assert backend.release(released.lease)
    client = Client(dashboard.url)
    _, _, body = client.request("/")
    row = re.search(r'<tr data-queue="default">.*?</tr>', body, re.S)
    assert row is not None
    # The words and the share: one failure in two attempts that succeeded or failed.
    assert "1 done, 1 failed, 1 released, 1 cancelled attempts" in text(row.group(0))
    assert "50%" in text(row.group(0))
    neither = re.findall(r'height="([0-9.]+)" class="neither"', row.group(0))
    assert sum(float(h) for h in neither) > 0
    status, _, raw = client.request("/api/overview")
    assert status == 200
    [default] = [q for q in json.loads(raw)["queues"] if q["queue"] == "default"]
    assert (default["done_last_hour"], default["failed_last_hour"]) == (1, 1)
    assert default["failure_rate"] == 0.5
    # Keyed as jobdef_jobs_finished_total's outcome label, every outcome present.
    assert default["attempts_last_hour"] == {
        **dict.fromkeys(OUTCOMES, 0),
        "done": 1,
        "dead": 1,
        "released": 1,
        "cancelled": 1,
    }
    assert [sum(part) for part in zip(*default["chart"], strict=True)] == [1, 1, 2]


def test_a_dead_letter_group_goes_in_batches_of_500_and_leaves_the_other_groups(tmp_path):
    # synchronous=off: 1,202 burials, each its own commit, without 1,202 flushes.
    url = f"sqlite:///{tmp_path / 'jobs.db'}?synchronous=off"
    upgrade(url)
    backend = open_backend(url)
    try:
        backend.enqueue([NewJob("ship_order", {"order_id": i}, "default") for i in range(1, 1203)])
        claimed = backend.claim(ClaimOptions(worker_id="t", lease_seconds=60, limit=1202))
        *lost, bad = sorted(claimed, key=lambda r: r.id)
        for record in lost:
            assert backend.bury(record.lease, CONNECTION)
        assert backend.bury(bad.lease, FATAL)
    finally:
        backend.close()
    store = Store(url)
    try:
        group = [("ship_order", "ConnectionError")]
        outcome = actions.on_groups(store, "requeue", group, "ops")
        assert (outcome.changed, outcome.asked, outcome.batches) == (1201, 1201, 3)
        assert {store.verbs.get(r.id).state for r in lost} == {"queued"}
        assert store.verbs.get(bad.id).state == "dead"
        again = actions.on_groups(store, "requeue", group, "ops")
        assert (again.changed, again.asked) == (0, 0)
    finally:
        store.close()
