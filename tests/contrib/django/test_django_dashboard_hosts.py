"""The dashboard under /jobs answers the project's ALLOWED_HOSTS only, as Django does,
and takes a staff user's post only from its own pages."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import pytest
from jd_support import Project
from test_django_dashboard import session_cookie

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")


def mounted(*allowed_hosts: str) -> Any:
    """The project's ASGI application with the dashboard under /jobs."""
    from django.core.asgi import get_asgi_application

    from jobdef.contrib.django.dashboard import with_dashboard

    return with_dashboard(get_asgi_application(), prefix="/jobs", allowed_hosts=allowed_hosts)


def fetch(
    path: str,
    *,
    app: Any = None,
    host: str = "testserver",
    cookie: str | None = None,
    form: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    """One request to ``app`` (by default a new :func:`mounted`), as from ``host``."""
    from django.conf import settings

    cookies = {settings.SESSION_COOKIE_NAME: cookie} if cookie else {}

    async def go() -> Any:
        transport = httpx.ASGITransport(app=app or mounted())
        async with httpx.AsyncClient(
            transport=transport, base_url=f"http://{host}", cookies=cookies
        ) as client:
            if form is None:
                return await client.get(path, headers=headers)
            return await client.post(path, data=form, headers=headers)

    return asyncio.run(go())


def test_a_host_not_in_allowed_hosts_is_refused_before_the_login(project: Project) -> None:
    staff = session_cookie(staff=True)
    for cookie in (None, staff):
        refused = fetch("/jobs/api/jobs", host="rebind.attacker.example", cookie=cookie)
        assert refused.status_code == 400
        assert refused.text == (
            "host 'rebind.attacker.example' is not in the project's ALLOWED_HOSTS; if it is "
            "this site's name, add it there (or to allowed_hosts= of with_dashboard)\n"
        )
        assert refused.headers["x-frame-options"] == "DENY"
        assert "content-security-policy" in refused.headers
    # The test client's own name is one of the settings' ALLOWED_HOSTS.
    assert fetch("/jobs/api/jobs", cookie=staff).status_code == 200
    assert fetch("/jobs/api/jobs", host="localhost:8000", cookie=staff).status_code == 200
    added = fetch("/jobs/api/jobs", app=mounted(".internal"), host="jobs.internal", cookie=staff)
    assert added.status_code == 200


def test_the_settings_are_read_at_each_request_as_django_reads_them(project: Project) -> None:
    from django.test import override_settings

    staff = session_cookie(staff=True)
    with override_settings(ALLOWED_HOSTS=[".example.org"]):
        assert fetch("/jobs/", host="ops.example.org", cookie=staff).status_code == 200
        assert fetch("/jobs/", cookie=staff).status_code == 400
    with override_settings(ALLOWED_HOSTS=[], DEBUG=True):
        assert fetch("/jobs/", host="localhost", cookie=staff).status_code == 200
        assert fetch("/jobs/", host="ops.example.org", cookie=staff).status_code == 400


def test_a_staff_post_from_another_origin_is_refused(project: Project) -> None:
    from jdproject import tasks

    job_id = tasks.send_confirmation.enqueue(uuid.uuid4().int % 2**31 + 1).id
    staff = session_cookie(staff=True)
    app = mounted()
    page = fetch(f"/jobs/jobs/{job_id}", app=app, cookie=staff)
    assert page.status_code == 200, page.text
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert token is not None
    form = {"action": "cancel", "ids": str(job_id), "confirm": "yes", "csrf": token.group(1)}
    evil = {"Origin": "http://evil.example"}
    foreign = fetch("/jobs/actions/jobs", app=app, cookie=staff, form=form, headers=evil)
    assert foreign.status_code == 403
    assert foreign.text.startswith("the form was posted from another site")
    other = session_cookie(staff=True)  # another staff user: another token
    assert fetch("/jobs/actions/jobs", app=app, cookie=other, form=form).status_code == 403
    mine = {"Origin": "http://testserver"}
    own = fetch("/jobs/actions/jobs", app=app, cookie=staff, form=form, headers=mine)
    assert own.status_code == 200, own.text
    assert "cancel: 1 of 1 changed" in own.text
    assert project.backend("default").engine().get(int(job_id)).state == "cancelled"


def test_a_form_served_by_one_process_of_the_project_posts_to_another(project: Project) -> None:
    """Each process of the project (a server's workers, replicas) mounts a dashboard of
    its own; their CSRF tokens are keyed by the project's SECRET_KEY, so a staff user's
    form posts wherever the balancer sends it. Before, each process drew its own key
    and a post that reached another process than the page's was refused."""
    from jdproject import tasks

    job_id = tasks.send_confirmation.enqueue(uuid.uuid4().int % 2**31 + 1).id
    staff = session_cookie(staff=True)
    one, two = mounted(), mounted()
    page = fetch(f"/jobs/jobs/{job_id}", app=one, cookie=staff)
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert token is not None
    form = {"action": "cancel", "ids": str(job_id), "confirm": "yes", "csrf": token.group(1)}
    mine = {"Origin": "http://testserver"}
    own = fetch("/jobs/actions/jobs", app=two, cookie=staff, form=form, headers=mine)
    assert own.status_code == 200, own.text
    assert "cancel: 1 of 1 changed" in own.text
