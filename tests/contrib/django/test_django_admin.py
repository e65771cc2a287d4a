"""The admin over jobdef's tables, through Django's test client on the real SQLite store.

The lists show jobs, attempts and the outbox; nothing can be added, changed or deleted;
the requeue, resolve and cancel actions go through the backend's verbs.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from jd_support import Project, dead_job

from jobdef.backends.records import ClaimOptions


@pytest.fixture
def admin_client(project: Project) -> Any:
    from django.contrib.auth.models import User
    from django.test import Client

    user = User.objects.create_superuser(f"ops-{uuid.uuid4().hex[:8]}", password="pw-for-tests")
    client = Client()
    client.force_login(user)
    return client


def act(client: Any, action: str, *ids: int) -> str:
    response = client.post(
        "/admin/jobdef/job/",
        {"action": action, "_selected_action": [str(i) for i in ids]},
        follow=True,
    )
    assert response.status_code == 200
    return response.content.decode()


def test_the_changelist_shows_jobs_and_requeue_requeues(
    project: Project, admin_client: Any
) -> None:
    job_id = dead_job(project)
    page = admin_client.get("/admin/jobdef/job/", {"state": "dead"})
    assert page.status_code == 200
    html = page.content.decode()
    assert f"/admin/jobdef/job/{job_id}/change/" in html
    assert "forbidden" in html
    assert "PermissionError: the account is closed" in html

    assert "Requeued 1 of 1 selected jobs" in act(admin_client, "requeue", job_id)
    record = project.backend("default").engine().get(job_id)
    assert record.state == "queued"
    assert record.attempt == 0
    # The history stays: the buried attempt is still listed.
    attempts = admin_client.get("/admin/jobdef/attempt/", {"q": str(job_id)}).content.decode()
    assert "PermissionError: the account is closed" in attempts


def test_resolve_and_cancel_go_through_the_verbs(project: Project, admin_client: Any) -> None:
    from jdproject import tasks

    dead = dead_job(project)
    assert "Resolved 1 of 1 selected jobs" in act(admin_client, "resolve", dead)
    record = project.backend("default").engine().get(dead)
    assert record.state == "resolved"
    assert record.note is not None
    assert record.note.startswith("resolved in the Django admin by ops-")

    queued = int(tasks.send_confirmation.enqueue(uuid.uuid4().int % 2**31 + 1).id)
    assert "Cancelled 1 of 2 selected jobs" in act(admin_client, "cancel", queued, dead)
    engine = project.backend("default").engine()
    assert engine.get(queued).state == "cancelled"
    assert engine.get(dead).state == "resolved"

    # A running job: its attempt ends cancelled, naming the user.
    running = int(tasks.send_confirmation.enqueue(uuid.uuid4().int % 2**31 + 1).id)
    claimed = engine.claim(ClaimOptions(worker_id="admin-test", lease_seconds=30, limit=1000))
    for record in claimed:
        if record.id != running:  # another test's job: give it back untouched
            engine.release(record.lease)
    assert engine.get(running).state == "running"
    assert "Cancelled 1 of 1 selected jobs" in act(admin_client, "cancel", running)
    record = engine.get(running)
    assert record.state == "cancelled"
    assert record.note.startswith("cancelled in the Django admin by ops-")
    assert [a.outcome for a in engine.attempts(running)] == ["cancelled"]


def test_the_admin_is_read_only(project: Project, admin_client: Any) -> None:
    job_id = dead_job(project)
    assert admin_client.get(f"/admin/jobdef/job/{job_id}/change/").status_code == 200
    assert admin_client.get("/admin/jobdef/job/add/").status_code == 403
    assert admin_client.post(f"/admin/jobdef/job/{job_id}/delete/").status_code == 403
    assert admin_client.get("/admin/jobdef/outboxmessage/").status_code == 200
    index = admin_client.get("/admin/").content.decode()
    assert "/admin/jobdef/job/" in index


def test_a_jobs_page_shows_its_secret_args_as_stars(project: Project, admin_client: Any) -> None:
    from jobdef.backends.records import NewJob

    secret = "Hunter2-correct-horse"
    engine = project.backend("default").engine()
    # Stored as a foreign runtime or an old release might have: the admin reads the row.
    [made] = engine.enqueue(
        [
            NewJob(
                "forbidden",
                {"account": 7, "password": secret, "smtp": {"api_key": secret}},
                "default",
            )
        ]
    )
    page = admin_client.get(f"/admin/jobdef/job/{made.id}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert secret not in html
    assert "&quot;password&quot;: &quot;***&quot;" in html
    assert "&quot;account&quot;: 7" in html
    assert engine.get(made.id).args["password"] == secret  # the row keeps it
