"""The dashboard under /jobs of the test project's ASGI application, for Django's staff."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from jd_support import Project

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")


def session_cookie(staff: bool) -> str:
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    name = f"{'staff' if staff else 'guest'}-{uuid.uuid4().hex[:8]}"
    user = User.objects.create_user(name, password="pw-for-tests", is_staff=staff)
    client = Client()
    client.force_login(user)
    return str(client.cookies[settings.SESSION_COOKIE_NAME].value)


def get(path: str, cookie: str | None = None) -> Any:
    from django.conf import settings
    from django.core.asgi import get_asgi_application

    from jobdef.contrib.django.dashboard import with_dashboard

    app = with_dashboard(get_asgi_application(), prefix="/jobs")
    cookies = {settings.SESSION_COOKIE_NAME: cookie} if cookie else {}

    async def fetch() -> Any:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://testserver", cookies=cookies
        ) as client:
            return await client.get(path)

    return asyncio.run(fetch())


def test_staff_see_the_dashboard_and_others_are_sent_to_the_login(project: Project) -> None:
    from jdproject import tasks

    job_id = tasks.send_confirmation.enqueue(uuid.uuid4().int % 2**31 + 1).id
    anonymous = get("/jobs/")
    assert anonymous.status_code == 302
    assert anonymous.headers["location"] == "/admin/login/?next=/jobs/"
    assert get("/jobs/", session_cookie(staff=False)).status_code == 302
    assert get("/jobs/", "not-a-session").status_code == 302

    staff = session_cookie(staff=True)
    page = get(f"/jobs/jobs/{job_id}", staff)
    assert page.status_code == 200, page.text
    assert "send_confirmation" in page.text
    assert 'href="/jobs/' in page.text  # links start from the mount point


def test_other_paths_stay_djangos(project: Project) -> None:
    response = get("/admin/")
    assert response.status_code == 302
    assert response.headers["location"].startswith("/admin/login/")
    assert get("/jobsxyz").status_code == 404  # not under /jobs: Django's 404
