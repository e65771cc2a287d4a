"""An action's result says what it changed: the same form posted twice changes nothing
the second time, and says "0 of 1 changed" (pause, resume, retry delivery now)."""

from __future__ import annotations

from dashboard_steps import Client

from jobdef.backends.records import ClaimOptions, ErrorInfo, NewJob, Notification

CONNECTION = ErrorInfo("ConnectionError", "carrier timed out", "")


def post(client: Client, path: str, form: list[tuple[str, str]]) -> str:
    status, _, body = client.request(path, [*form, ("confirm", "yes"), ("csrf", client.csrf())])
    assert status == 200, body
    return body


def test_pausing_or_resuming_twice_changes_the_queue_once(dashboard, backend):
    client = Client(dashboard.url)
    pause = [("queue", "reports"), ("paused", "yes")]
    resume = [("queue", "reports"), ("paused", "no")]
    assert "resume: 0 of 1 changed; 1 already moved" in post(client, "/actions/queues", resume)
    assert not any(q.paused for q in backend.queues())
    assert "pause: 1 of 1 changed" in post(client, "/actions/queues", pause)
    assert "pause: 0 of 1 changed; 1 already moved" in post(client, "/actions/queues", pause)
    assert [q.queue for q in backend.queues() if q.paused] == ["reports"]
    assert "resume: 1 of 1 changed" in post(client, "/actions/queues", resume)
    assert "resume: 0 of 1 changed" in post(client, "/actions/queues", resume)
    assert not any(q.paused for q in backend.queues())


def test_retry_delivery_now_twice_makes_the_message_due_once(dashboard, backend):
    [job] = backend.enqueue([NewJob("ship_order", {"order_id": 1}, "default")])
    [record] = backend.claim(ClaimOptions(worker_id="t", lease_seconds=60))
    note = Notification("ops", "dead", "ship_order", {"id": job.id}, f"m-{job.id}")
    assert backend.bury(record.lease, CONNECTION, notifications=[note])
    [message] = backend.outbox_claim(10, 30)
    backend.outbox_failed(message.id, "webhook said 503", backend.clock() + 3600)
    client = Client(dashboard.url)
    form = [("ids", str(message.id)), ("kind", "outbox")]
    assert "retry delivery: 1 of 1 changed" in post(client, "/actions/outbox", form)
    assert "retry delivery: 0 of 1 changed; 1 already moved" in post(
        client, "/actions/outbox", form
    )
    # Held by a sender again (its lease running): a retry frees it, once.
    [held] = backend.outbox_claim(10, 30)
    assert held.id == message.id
    assert "retry delivery: 1 of 1 changed" in post(client, "/actions/outbox", form)
    assert "retry delivery: 0 of 1 changed" in post(client, "/actions/outbox", form)
    backend.outbox_delivered([message.id])
    assert "retry delivery: 0 of 1 changed" in post(client, "/actions/outbox", form)


def test_the_same_pause_posted_at_once_from_many_tabs_is_counted_once(dashboard, backend):
    """Sixteen posts at the same moment (threads, each its own connection to the real
    server): one finds the queue running and pauses it, the others find it paused."""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    clients = [Client(dashboard.url) for _ in range(16)]
    tokens = [client.csrf() for client in clients]
    start = Barrier(len(clients))
    form = [("queue", "reports"), ("paused", "yes"), ("confirm", "yes")]

    def post_at_once(index: int) -> str:
        start.wait()
        status, _, body = clients[index].request(
            "/actions/queues", [*form, ("csrf", tokens[index])]
        )
        assert status == 200, body
        return body

    with ThreadPoolExecutor(len(clients)) as pool:
        bodies = list(pool.map(post_at_once, range(len(clients))))
    assert sum("pause: 1 of 1 changed" in body for body in bodies) == 1
    assert sum("pause: 0 of 1 changed" in body for body in bodies) == len(clients) - 1
    assert [q.queue for q in backend.queues() if q.paused] == ["reports"]
