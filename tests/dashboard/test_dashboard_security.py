"""Closed by default: auth, CSRF, read-only, the headers, escaping, no secrets.

Requests go to a real uvicorn server over HTTP; the hostile-value test opens the
pages in headless Chromium and checks that nothing ran.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from dashboard_steps import SHEETS, SRC, Client, make_dead

from jobdef.backends.records import ErrorInfo
from jobdef.dashboard import Auth, auth_from_env, create_app
from jobdef.dashboard.security import check_exposure
from jobdef.errors import UsageError

DASHBOARD = [sys.executable, "-m", "jobdef", "dashboard"]
CONNECTION = ErrorInfo("ConnectionError", "carrier timed out", "")


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def _refused(url: str, cwd: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """``jobdef dashboard`` with ``options``, without any credentials in its
    environment, expected to refuse to start (a server that started is killed at 60 s)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBDEF_DASHBOARD_")}
    env["PYTHONPATH"] = str(SRC)
    return subprocess.run(
        [*DASHBOARD, "--db", url, "--sheets", str(SHEETS), *options],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


@pytest.mark.slow
def test_a_public_host_without_auth_refuses_to_start(sqlite_url, tmp_path):
    result = _refused(sqlite_url, tmp_path, "--host", "0.0.0.0")
    assert result.returncode == 2
    assert result.stderr.startswith(
        "jobdef dashboard: error: refusing to serve the dashboard on 0.0.0.0 without "
        "authentication: set JOBDEF_DASHBOARD_USER and JOBDEF_DASHBOARD_PASSWORD_FILE"
    )
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("lease", "says"),
    [
        ("soon", "--lease 'soon' is not a duration; write the lease the worker runs with"),
        ("500ms", "--lease 500ms is shorter than jobdef worker accepts; write 1s or more"),
    ],
)
def test_a_bad_lease_is_one_line_before_anything_starts(sqlite_url, tmp_path, lease, says):
    result = _refused(sqlite_url, tmp_path, "--lease", lease)
    assert result.returncode == 2
    assert result.stderr.startswith(f"jobdef dashboard: error: {says}")
    assert len(result.stderr.strip().splitlines()) == 1


def test_exposure_and_credentials_from_the_environment(tmp_path):
    check_exposure("127.0.0.1", None)
    check_exposure("::1", None)
    check_exposure("localhost", None)
    check_exposure("0.0.0.0", Auth(token="t" * 20))
    for host in ("0.0.0.0", "192.168.1.5", "::", "example.com"):
        with pytest.raises(UsageError, match="without authentication"):
            check_exposure(host, None)
    secret = tmp_path / "password"
    secret.write_text("s3cret-pass\n")
    auth = auth_from_env(
        {"JOBDEF_DASHBOARD_USER": "ops", "JOBDEF_DASHBOARD_PASSWORD_FILE": str(secret)}
    )
    assert auth is not None
    assert auth.who(basic("ops", "s3cret-pass")["Authorization"]) == "ops"
    assert "s3cret" not in repr(auth)
    assert auth_from_env({}) is None
    with pytest.raises(UsageError, match="use at least 16 random ones"):
        auth_from_env({"JOBDEF_DASHBOARD_TOKEN": "short"})
    with pytest.raises(UsageError, match="needs both JOBDEF_DASHBOARD_USER"):
        auth_from_env({"JOBDEF_DASHBOARD_USER": "ops"})
    with pytest.raises(UsageError, match="cannot read it"):
        auth_from_env(
            {"JOBDEF_DASHBOARD_USER": "ops", "JOBDEF_DASHBOARD_PASSWORD_FILE": "/nonexistent"}
        )


def test_wrong_password_or_token_is_refused(sqlite_url, serve):
    auth = Auth(user="ops", password="right horse battery", token="tok-" + "x" * 30)
    served = serve(create_app(sqlite_url, SHEETS, auth))
    for headers in (
        {},
        basic("ops", "wrong"),
        basic("admin", "right horse battery"),
        {"Authorization": "Bearer tok-wrong"},
        {"Authorization": "Basic !!!not-base64"},
    ):
        for path in ("/", "/api/overview", "/static/dashboard.js", "/events"):
            status, _, body = Client(served.url, headers).request(path)
            assert status == 401, (headers, path)
            assert "overview" not in body.lower()
    status, headers, _ = Client(served.url).request("/")
    assert headers["www-authenticate"].startswith("Basic")
    assert Client(served.url, basic("ops", "right horse battery")).request("/")[0] == 200
    assert Client(served.url, {"Authorization": "Bearer tok-" + "x" * 30}).request("/")[0] == 200


def test_a_post_without_the_csrf_token_is_refused_and_a_double_post_does_nothing_twice(
    sqlite_url, serve, registry
):
    from jobdef.backends import open_backend
    from jobdef.runtime.queue import connect

    backend = open_backend(sqlite_url)
    queue = connect(sqlite_url, registry)
    try:
        [job_id] = make_dead(backend, queue, "ship_order", [{"order_id": 1}], CONNECTION)
        served = serve(create_app(sqlite_url, SHEETS))
        client = Client(served.url)
        token = client.csrf()
        form = [("action", "requeue"), ("ids", str(job_id)), ("confirm", "yes")]
        for extra in ([], [("csrf", "forged-token")]):
            status, _, body = client.request("/actions/jobs", form + extra)
            assert status == 403
            assert "CSRF token is missing or does not match" in body
        assert backend.get(job_id).state == "dead"

        # Without confirm=yes the post only asks.
        status, _, body = client.request("/actions/jobs", [*form[:2], ("csrf", token)])
        assert status == 200
        assert f"Requeue job {job_id}?" in body
        assert backend.get(job_id).state == "dead"

        status, _, body = client.request("/actions/jobs", [*form, ("csrf", token)])
        assert status == 200
        assert "requeue: 1 of 1 changed" in body
        status, _, body = client.request("/actions/jobs", [*form, ("csrf", token)])
        assert "requeue: 0 of 1 changed; 1 already moved" in body
        assert backend.get(job_id).state == "queued"
        assert backend.get(job_id).attempt == 0
        for bad in ("9" * 30, "-1", "x", "\u00b2", "\u0664\u0662", " 1", "1_0"):
            status, _, body = client.request(
                "/actions/jobs",
                [("action", "cancel"), ("ids", bad), ("confirm", "yes"), ("csrf", token)],
            )
            assert status == 400
            assert "ids: " in body
    finally:
        queue.close()
        backend.close()


def test_read_only_hides_actions_and_refuses_posts(sqlite_url, serve, registry):
    from jobdef.backends import open_backend
    from jobdef.runtime.queue import connect

    backend = open_backend(sqlite_url)
    queue = connect(sqlite_url, registry)
    try:
        [job_id] = make_dead(backend, queue, "ship_order", [{"order_id": 1}], CONNECTION)
        served = serve(create_app(sqlite_url, SHEETS, read_only=True))
        client = Client(served.url)
        for path in ("/", f"/jobs/{job_id}", "/jobs", "/outbox"):
            status, _, body = client.request(path)
            assert status == 200
            assert '<form method="post"' not in body
            assert "Requeue" not in body
            assert "Pause" not in body
        for path, form in (
            ("/actions/jobs", [("action", "requeue"), ("ids", str(job_id))]),
            ("/actions/queues", [("queue", "default"), ("paused", "yes")]),
            ("/actions/outbox", [("ids", "1")]),
        ):
            status, _, body = client.request(path, [*form, ("confirm", "yes"), ("csrf", "x")])
            assert status == 403
            assert "read-only" in body
        assert backend.get(job_id).state == "dead"
        assert not any(q.paused for q in backend.queues())
    finally:
        queue.close()
        backend.close()


def test_every_page_has_a_strict_policy_and_no_inline_script(sqlite_url, serve):
    served = serve(create_app(sqlite_url, SHEETS))
    client = Client(served.url)
    for path in ("/", "/jobs", "/dead", "/schedules", "/outbox", "/sheets", "/nope"):
        status, headers, body = client.request(path)
        policy = headers["content-security-policy"]
        assert "script-src 'self'" in policy
        assert "default-src 'none'" in policy
        assert "frame-ancestors 'none'" in policy
        assert "unsafe-inline" not in policy
        assert headers["x-frame-options"] == "DENY"
        assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", body) == [], path
        assert not re.search(r"\son[a-z]+=", body), path
        assert " style=" not in body, path
    status, headers, _ = client.request("/static/dashboard.js")
    assert status == 200
    assert "content-security-policy" in headers


def test_bad_filters_are_one_line_not_a_traceback(sqlite_url, serve):
    served = serve(create_app(sqlite_url, SHEETS))
    client = Client(served.url)
    for query, message in (
        ("state=zombie", "state: 'zombie' is not one of waiting, queued"),
        ("since=yesterday-ish", "since: 'yesterday-ish' is not a time"),
        ("q=args.", "write args.KEY:VALUE"),
        ("before=abc", "before: a job id"),
        # Digits to str.isdigit() and int() (and a regex's \\d), not to a job id.
        ("before=%C2%B2", "before: a job id (digits 0-9)"),
        ("before=%D9%A4%D9%A2", "before: a job id (digits 0-9)"),
        ("before=4_2", "before: a job id (digits 0-9)"),
        ("before=+42", "before: a job id (digits 0-9)"),
        ("before=0", "before: a job id (digits 0-9)"),
    ):
        status, headers, body = client.request(f"/jobs?{query}")
        assert status == 400, query
        assert message in html.unescape(body)
        assert "Traceback" not in body
        assert "content-security-policy" in {name.lower() for name in headers}
        status, headers, body = client.request(f"/api/jobs?{query}")
        assert status == 400
        assert message in json.loads(body)["error"]
        assert "content-security-policy" in {name.lower() for name in headers}
    # In the search box such a token is words of an error, never a job id nor a 500.
    for q in ("%C2%B2", "%23%C2%B2", "%D9%A4%D9%A2", "%EF%BC%94%EF%BC%92"):
        status, _, body = client.request(f"/api/jobs?q={q}")
        assert status == 200, q
        assert json.loads(body)["searched"] != "job #42"
    assert client.request("/jobs/999999")[0] == 404
    assert client.request("/jobs/" + "9" * 30)[0] == 404
    assert client.request("/jobs?before=" + "9" * 30)[0] == 400


@pytest.mark.slow
def test_hostile_args_and_errors_render_as_text_and_secrets_are_masked(
    sqlite_url, serve, registry, page
):
    from jobdef.backends import open_backend
    from jobdef.runtime.queue import connect

    hostile = "<script>window.pwned = 1</script>{{7*7}}"
    secret = "postgresql://app:hunter2@db.internal/app"
    backend = open_backend(sqlite_url)
    queue = connect(sqlite_url, registry)
    try:
        error = ErrorInfo(
            "ConnectionError", f'<img src=x onerror="window.pwned = 2">{{{{7*7}}}} via {secret}'
        )
        [job_id] = make_dead(
            backend, queue, "ship_order", [{"order_id": 1, "note": f"{hostile} {secret}"}], error
        )
    finally:
        queue.close()
        backend.close()
    served = serve(create_app(sqlite_url, SHEETS))
    for path in ("/jobs", f"/jobs/{job_id}", "/dead"):
        page.goto(served.url + path)
        text = page.locator("main").inner_text()
        assert "{{7*7}}" in text, path
        assert "hunter2" not in page.content(), path
        assert page.evaluate("window.pwned") is None, path
    page.goto(f"{served.url}/jobs/{job_id}")
    assert "<script>window.pwned = 1</script>" in page.locator("#args").inner_text()
    assert '<img src=x onerror="window.pwned = 2">' in page.locator("#last-error").inner_text()
    for api in ("/api/jobs", f"/api/jobs/{job_id}", "/api/dead"):
        assert "hunter2" not in Client(served.url).request(api)[2]


def test_mounted_under_a_prefix_every_link_stays_under_it(sqlite_url, serve):
    from starlette.applications import Starlette
    from starlette.routing import Mount

    outer = Starlette(routes=[Mount("/ops/jobs", app=create_app(sqlite_url, SHEETS))])
    served = serve(outer)
    client = Client(served.url)
    status, headers, body = client.request("/ops/jobs/jobs")
    assert status == 200
    links = re.findall(r'(?:href|src|action|data-events)="(/[^"]*)"', body)
    assert links
    assert all(link.startswith("/ops/jobs/") for link in links), links
    assert "set-cookie" not in {name.lower() for name in headers}  # the CSRF token is in no cookie
    assert client.request("/ops/jobs/static/dashboard.css")[0] == 200


def test_hostile_filters_are_one_line_each_never_a_server_error(dashboard) -> None:
    """A NUL (PostgreSQL's text cannot hold one), a number past a float's range (SQLite
    compares big integers as REALs) and a duration longer than the epoch: each is a
    400 with one line, or simply nothing found, on both engines."""
    client = Client(dashboard.url)
    status, _, body = client.request("/api/jobs?q=args.order_id:4%002")
    assert (status, json.loads(body)) == (
        400,
        {"error": "q: a NUL character matches nothing; remove it"},
    )
    status, _, body = client.request("/api/jobs?job=%00")
    assert status == 400
    assert "NUL" in json.loads(body)["error"]
    status, _, body = client.request("/api/jobs?q=args.order_id:" + "9" * 400)
    assert (status, json.loads(body)["jobs"]) == (200, [])
    status, _, body = client.request("/jobs?since=99999999999d")
    assert status == 200
    assert "Internal Server Error" not in body


def test_a_store_corrupted_under_the_dashboard_is_one_line_not_a_server_error(
    sqlite_url, serve, tmp_path
):
    """A disk that fails under a running dashboard: each page answers 503 with the one
    line the CLI gives (the file is corrupted, how to recover)."""
    import random

    from dashboard_steps import Client

    client = Client(serve(create_app(sqlite_url, SHEETS)).url)
    path = Path(sqlite_url.removeprefix("sqlite:///"))
    noise = random.Random(3)
    with path.open("r+b") as stream:  # every page but the header and the schema
        for page in range(1, path.stat().st_size // 4096):
            stream.seek(page * 4096)
            stream.write(bytes(noise.getrandbits(8) for _ in range(4096)))
    for api in ("/api/overview", "/api/jobs?state=dead", "/api/dead"):
        status, _, body = client.request(api)
        assert status == 503, (api, body)
        message = json.loads(body)["error"]
        assert "is corrupted" in message, message
        assert f'sqlite3 {path} ".recover"' in message
        assert "\n" not in message
    status, _, html = client.request("/")
    assert status == 503
    assert "is corrupted" in html
    assert "Traceback" not in html


def test_a_stored_time_no_date_can_say_is_shown_as_it_is(sqlite_url, serve, capsys):
    """A run_after of 8.64e24 (`--delay 99999999999999999999d` before enqueue refused
    it) must not break the job's page, its JSON, the job list or `jobdef jobs show`."""
    import sqlite3

    from dashboard_steps import Client

    from jobdef.cli import main

    conn = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
    with conn:
        job_id = conn.execute(
            "INSERT INTO jobdef_jobs (job, queue, args, state, attempt, max_attempts, run_after,"
            " created_at, updated_at) VALUES ('ship_order', 'default', '{}', 'queued', 0, 3,"
            " 8.64e24, 1, 1)"
        ).lastrowid
    conn.close()
    client = Client(serve(create_app(sqlite_url, SHEETS)).url)
    status, _, body = client.request(f"/api/jobs/{job_id}")
    assert status == 200
    assert json.loads(body)["run_after"] == "8.64e+24 (epoch seconds)"
    for page in (f"/jobs/{job_id}", "/jobs", "/"):
        assert client.request(page)[0] == 200, page
    capsys.readouterr()
    assert main(["jobs", "show", str(job_id), "--db", sqlite_url]) == 0
    assert "8.64e+24 (epoch seconds)" in capsys.readouterr().out


def test_a_server_error_is_one_line_with_the_security_headers(sqlite_url, serve):
    """Whatever fails inside (here a route that raises, added to the app), the answer is
    the Guard's one line with every security header, not the server's bare 500; the
    traceback goes to the server's log only."""
    from starlette.routing import Route

    from jobdef.dashboard.security import SECURITY_HEADERS

    async def broken(request):
        raise RuntimeError("secret detail of the failure")

    app = create_app(sqlite_url, SHEETS)
    app.router.routes.insert(0, Route("/broken", broken))
    status, headers, body = Client(serve(app).url).request("/broken")
    assert (status, body) == (500, "internal error; the server log says why\n")
    lowered = {name.lower(): value for name, value in headers.items()}
    for name, value in SECURITY_HEADERS.items():
        assert lowered[name] == value, name
